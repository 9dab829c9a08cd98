"""Keep charts light: thin long series in polars before they reach Vega-Lite.

A chart is a few hundred pixels wide, so a 1M-point series carries ~1,000 times
more points than can be seen. :func:`minmax` keeps, per pixel bucket and per
series, the first, last, lowest and highest point (the M4 rule): the drawn line
keeps every visible spike and dip, which plain decimation would lose.
Event markers (retransmissions, SACK blocks, drops) are never thinned that way
-- every marker matters -- but are capped by :func:`cap` with the number left
out reported, so a pathological trace cannot produce a 100 MB page.
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: Points per series a chart keeps (≈ 2 per horizontal pixel of a 1,000 px wide chart).
MAX_POINTS = 2000
#: Markers per layer (retransmissions, SACK blocks, drops) a chart keeps.
MAX_MARKERS = 1500


def minmax(
    df: pl.DataFrame,
    x: str,
    y: str,
    *,
    by: list[str] | None = None,
    max_points: int = MAX_POINTS,
) -> pl.DataFrame:
    """Thin each series to at most ~``max_points`` rows, keeping its extremes (M4).

    The x range of each series is cut into ``max_points // 4`` equal buckets; in
    each bucket the rows holding the first and last x and the lowest and highest
    y are kept (at most four rows, fewer when they coincide).

    Args:
        df: Tidy data, one row per point.
        x: The x column (numeric, e.g. ``time``).
        y: The y column whose extremes must survive.
        by: Columns naming a series (each is thinned on its own).
        max_points: Target size per series.

    Returns:
        The kept rows, in their original order (a subset of ``df``; unchanged when
        every series is already short enough).
    """
    by = list(by or [])
    if df.height <= max_points or x not in df.columns or y not in df.columns:
        return df
    if by:
        # A few series (sources, links, flows): thin each on its own. Bucketing by window
        # expressions over a string key costs ~4x the plain path on 1M rows.
        idx = "__row"
        sizes = df.group_by(by).len()
        if sizes["len"].max() <= max_points:  # type: ignore[operator]
            return df
        if sizes.height == 1:  # one series (a capture's cwnd estimate, say): no split, the same rows
            return _m4(df, x, y, max_points)
        # one filter per series (polars' partition_by costs ~10x more on 1M rows)
        conds = [pl.all_horizontal([pl.col(c).eq_missing(pl.lit(v, dtype=df.schema[c])) for c, v in key.items()])
                 for key in sizes.drop("len").iter_rows(named=True)]
        # (a short series beside a long one is bucketed too, as it always was: pages stay the same)
        rows_kept = _m4_series(df, x, y, conds, max_points)
        if rows_kept is not None:
            return df[rows_kept]
        rows = df.with_row_index(idx)
        kept = [_m4(rows.filter(cond), x, y, max_points) for cond in conds]
        return pl.concat(kept).sort(idx).drop(idx)
    return _m4(df, x, y, max_points)


def _m4_series(df: pl.DataFrame, x: str, y: str, conds: list[pl.Expr], max_points: int) -> np.ndarray | None:
    """The rows :func:`_m4` keeps of each series (``conds`` select them), in frame order; None
    unless every series is in x order without nulls or NaN (:func:`_m4_sorted`).

    Only each series' row numbers and its two columns are taken out, not a copy of its rows;
    the kept rows are gathered once, already in order (no concatenation, no sort).
    """
    buckets = max(1, max_points // 4)
    xs, ys = df[x], df[y]
    kept = []
    for cond in conds:
        pos = df.select(pl.arg_where(cond)).to_series()
        picks = _m4_sorted(xs.gather(pos), ys.gather(pos), buckets)
        if picks is None:
            return None
        kept.append(pos.to_numpy()[picks])
    return np.sort(np.concatenate(kept)) if kept else None


def _m4(df: pl.DataFrame, x: str, y: str, max_points: int) -> pl.DataFrame:
    """:func:`minmax` of one series: the first, last, lowest and highest row of each x bucket."""
    buckets = max(1, max_points // 4)
    kept = _m4_sorted(df[x], df[y], buckets)
    if kept is not None:
        return df[kept]
    idx = "__m4"
    data = df.with_row_index(idx).filter(pl.col(x).is_not_null())
    bucket = _bucket(x, buckets)
    data = data.with_columns(bucket)
    # Rows with a null y still mark the series' extent in x: keep first/last by x only.
    picked = data.group_by("__bucket").agg(
        pl.col(idx).get(pl.col(x).arg_min()).alias("a"),
        pl.col(idx).get(pl.col(x).arg_max()).alias("b"),
        pl.col(idx).get(pl.col(y).arg_min()).alias("c"),
        pl.col(idx).get(pl.col(y).arg_max()).alias("d"),
    )
    keep = pl.concat([picked.select(pl.col(c).alias(idx)) for c in "abcd"]).drop_nulls().unique()
    return (
        df.with_row_index(idx)
        .join(keep, on=idx, how="semi")
        .sort(idx)
        .drop(idx)
    )


def _bucket(x: str, buckets: int) -> pl.Expr:
    """Each row's x bucket: ``buckets`` equal slices of the series' x range."""
    xmin, xmax = pl.col(x).min(), pl.col(x).max()
    span = xmax - xmin
    return (
        pl.when(span > 0)
        .then(((pl.col(x) - xmin) / span * buckets).floor().clip(0, buckets - 1))
        .otherwise(0)
        .cast(pl.Int64)
        .alias("__bucket")
    )


def _finite(s: pl.Series) -> np.ndarray | None:
    """The column as float64 numbers, or None when it has nulls, NaN or infinities (the general path)."""
    if not (s.dtype.is_integer() or s.dtype.is_float()) or s.null_count():
        return None
    a = s.to_numpy()
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        return None
    return a


def _with_nulls(s: pl.Series) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A y column as numbers and where it is not null (None: no nulls), or ``(None, None)`` when it has
    NaN or infinities, or is not numeric (the general path)."""
    if s.null_count() == 0 or not (s.dtype.is_integer() or s.dtype.is_float()):
        return _finite(s), None  # (no nulls; or not numbers, which _finite refuses)
    a = _finite(s.fill_null(0))  # (the nulls filled only to pass _finite's checks; ``valid`` keeps them out)
    return (a, s.is_not_null().to_numpy()) if a is not None else (None, None)


def _m4_sorted(xs: pl.Series, ys: pl.Series, buckets: int) -> np.ndarray | None:
    """:func:`_m4`'s row numbers for a series already in x order (no null x; no NaN or infinity), or None.

    Every series a report thins is sorted by time first, so each bucket is one run of rows and
    the four picks are found with segment reductions in one pass, where the general path
    (a hash group-by, then a join) costs ~10x more on 300,000 rows. The picks are the
    general path's: the bucket of each row comes from the same arithmetic (:func:`_bucket_numbers`),
    and ``arg_min``/``arg_max`` take the first row holding the extreme (polars' rule), so the
    same rows are kept.
    """
    if xs.dtype != pl.Float64 or not xs.len():
        return None
    x, y, valid = _finite(xs), *_with_nulls(ys)
    if x is None or y is None or (x.size > 1 and not (x[1:] >= x[:-1]).all()):
        return None
    b = _bucket_numbers(x, buckets)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], x.size]
    # first row of a bucket holds its smallest x; the first row holding its largest x is
    # where the run of that value begins (equal x values share a bucket)
    last_x = np.searchsorted(x, x[ends - 1], side="left")
    picks = [starts, last_x]
    lengths = ends - starts
    for red, fill in ((np.minimum, "max"), (np.maximum, "min")):
        # a null y takes no part (polars' arg_min/arg_max skip nulls): it is filled with the
        # extreme that never wins, and kept out of the hits; an all-null bucket has no pick
        yf = y if valid is None else np.where(valid, y, getattr(np.iinfo(y.dtype) if y.dtype.kind in "iu"
                                                                else np.finfo(y.dtype), fill))
        same = yf == np.repeat(red.reduceat(yf, starts), lengths)
        hit = np.flatnonzero(same if valid is None else same & valid)
        # the bucket numbers rise along the rows: a hit whose bucket differs from the previous
        # hit's is the first one of its bucket
        bh = b[hit]
        picks.append(hit[np.r_[True, bh[1:] != bh[:-1]]] if hit.size else hit)
    return np.unique(np.concatenate(picks))


def _bucket_numbers(x: np.ndarray, buckets: int) -> np.ndarray:
    """:func:`_bucket` of a sorted, finite x in numpy: the same numbers, without a polars query per series.

    polars divides by a scalar as a product with its inverse, so ``(x - min) * (1 / span) * buckets``
    here is its arithmetic to the last bit (a plain ``/ span`` differs at a few bucket edges).
    The numbers stay floats (whole ones): they are only compared. No clip at 0 is needed, as
    ``x >= min`` makes every product ``>= 0``.
    """
    lo, hi = x[0], x[-1]  # sorted and finite: the min and the max
    span = hi - lo
    if not span > 0:
        return np.zeros(x.size)
    scaled: np.ndarray = np.subtract(x, lo, dtype=np.float64)
    scaled *= 1.0 / span
    scaled *= buckets
    np.floor(scaled, out=scaled)
    np.minimum(scaled, buckets - 1, out=scaled)
    return scaled


def cap(df: pl.DataFrame, *, by: list[str] | None = None, n: int = MAX_MARKERS) -> tuple[pl.DataFrame, int]:
    """Keep at most ``n`` marker rows (per group, evenly spread over the series).

    Markers are not thinned by extremes: a retransmission is an event, not a
    value. An even spread (every k-th row) keeps the chart's picture of *where*
    the events happen, unlike "the first n", which would hide a late burst.

    Args:
        df: Marker rows in time order.
        by: Groups capped separately (e.g. per flow).
        n: Rows kept per group.

    Returns:
        The kept rows and the number of rows left out.
    """
    by = list(by or [])
    if df.height <= n:
        return df, 0
    pos = pl.int_range(pl.len(), dtype=pl.Int64)
    size = pl.len().cast(pl.Int64)
    if by:
        pos, size = pos.over(by), size.over(by)
    # keep row i when floor(i * n / size) steps up: exactly min(n, size) rows per group, evenly spread
    tmp = df.with_columns((pos * n // size).alias("__step"), size.alias("__size"))
    prev = pl.col("__step").shift(1)
    if by:
        prev = prev.over(by)
    out = tmp.filter((pl.col("__size") <= n) | (pl.col("__step") != prev).fill_null(True)).drop("__step", "__size")
    return out, df.height - out.height

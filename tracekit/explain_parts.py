"""The frames the account in words reads, split by connection direction once (:mod:`tracekit.explain`).

An account reads each direction's cwnd series, retransmissions, stalls and drops many times;
filtering the whole frames per direction each time cost most of ``analyze --json`` on large
captures, so :class:`Parts` splits them once and :mod:`tracekit.reports.answers` shares it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit import _core, schema
from tracekit.analysis import _drops as drops_of
from tracekit.analysis.cwnd import chosen, reductions
from tracekit.explain_rules import (
    CONGESTION_AVOIDANCE,
    MAX_EACH,
    NO_STORY,
    RECOVERY,
    RUN_ENDS,
    SLOW_START,
    DirFacts,
    Resent,
    Story,
)

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

__all__ = ["CONGESTION_AVOIDANCE", "MAX_EACH", "NO_SERIES", "RECOVERY", "RUN_ENDS", "SLOW_START", "Cuts", "Parts",
           "Runs", "Series", "frame", "split_series"]

SCHEMAS = {"cwnd": "CWND", "retransmissions": "RETRANSMISSIONS", "stalls": "STALLS", "packets": "PACKETS",
            "fairness": "FAIRNESS"}


def frame(an: Analysis, name: str) -> pl.DataFrame:
    """A frame of the analysis, empty (with its columns) when the object has none (a partial analysis)."""
    df = getattr(an, name, None)
    if isinstance(df, pl.DataFrame):
        return df

    return schema.empty(getattr(schema, SCHEMAS[name]))



@dataclass(frozen=True)
class Runs:
    """A direction's slow-start runs that grew cwnd (the first ``cap``), as arrays.

    Attributes:
        start: The first cwnd of each (bytes).
        top, top_t: The largest cwnd (NaN skipped, the first of equal ones) and its time.
        end: How it ended, an index into :data:`RUN_ENDS`.
        end_t: Its last row's time when still open, else the time of the row that ended it.
    """

    start: np.ndarray
    top: np.ndarray
    top_t: np.ndarray
    end: np.ndarray
    end_t: np.ndarray


@dataclass(frozen=True)
class Cuts:
    """The rows of a direction's first ``cap + 1`` reductions, as arrays (NaN: no such row).

    Each reduction anchors at its series' first row at or after its time: ``before`` is the
    cwnd of the row before (the row's own at the first row), ``after`` the lowest of the fall
    starting at it, ``phase`` its phase code, ``tol`` its reach back to the row before
    (``t[k] − t[k−1] + 1e-6``; ``1e-6`` at the first row) and ``prev_t`` that row's time (NaN
    at the first row).
    """

    before: np.ndarray
    after: np.ndarray
    phase: np.ndarray
    tol: np.ndarray
    prev_t: np.ndarray


@dataclass(frozen=True)
class Series:
    """A direction's chosen cwnd series (:func:`tracekit.analysis.cwnd.chosen`) told as events:
    one pass of the core over its rows (``tracekit._core.cwnd_story``, src/state/cwnd/story.rs).

    Attributes:
        rows: How many rows the series has (0: none).
        source: ``trace`` or ``estimate`` (None: no series).
        losses: Times of the series' reductions (:func:`tracekit.analysis.cwnd.reductions`), ascending.
        backed: Per reduction, whether loss evidence backs it (its ``loss_event``; None: all do).
        runs: Its slow-start runs that grew cwnd.
        cuts: Its first reductions' rows.
        ca_start: The first congestion-avoidance time (NaN skipped), None without one.
    """

    rows: int
    source: str | None
    losses: np.ndarray
    backed: np.ndarray | None = None
    runs: Runs | None = None
    cuts: Cuts | None = None
    ca_start: float | None = None

    @property
    def empty(self) -> bool:
        return self.rows == 0


NO_SERIES = Series(0, None, np.zeros(0))


class Parts:
    """The frames an account reads, split once by (flow, dir): reading them flow by flow with a
    filter would cost a pass over the whole frame per direction (thousands in a busy capture)."""

    def __init__(self, an: Analysis) -> None:
        self.an = an
        self._split: dict[str, dict[Any, pl.DataFrame]] = {}
        self._empty: dict[str, pl.DataFrame] = {}
        self._series: dict[tuple[int, int], Series] | None = None

    def get(self, name: str, flow: int, d: int) -> pl.DataFrame:
        if name not in self._split:
            df: pl.DataFrame
            if name == "drops":  # a simulator's drops of data (captures have none), as the loss evidence counts
                df = drops_of(self.an.trace.packets)  # them (a lost SYN lowers the first window: no loss)
            elif name == "zero_windows":  # advertisements of a zero window, RFC 9293 §3.8.6.1 (not SYN/RST)
                df = frame(self.an, "packets").lazy().filter(pl.col("win") == 0, (pl.col("flags") & 0x06) == 0).select(
                    "flow", "dir", "time").collect()
            else:
                df = frame(self.an, name)
            self._empty[name] = df.clear()
            self._split[name] = df.partition_by("flow", "dir", as_dict=True) if df.height else {}
        return self._split[name].get((flow, d), self._empty[name])

    def series(self, flow: int, d: int) -> Series:
        """The direction's cwnd series from the tool when it wrote one, else tracekit's estimate."""
        if self._series is None:
            self._series = split_series(self.an, MAX_EACH)
        return self._series.get((flow, d), NO_SERIES)

    def facts(self, flow: int, d: int) -> DirFacts:
        """What the account's rules read of the direction (:class:`tracekit.explain_rules.DirFacts`), of the frames."""
        rt = self.get("retransmissions", flow, d)
        told = rt.select("time", "kind").sort("time", maintain_order=True)
        resent = Resent(rt.height, float(rt["time"].min()) if rt.height else math.nan,  # type: ignore[arg-type]
                        float(rt["time"].max()) if rt.height else math.nan,  # type: ignore[arg-type]
                        int((rt["kind"] == "fast").sum()), int((rt["kind"] == "rto").sum()),
                        list(zip(told["time"].to_list(), told["kind"].to_list(), strict=True)))
        st = self.get("stalls", flow, d).sort("start", maintain_order=True)
        ads = self.get("zero_windows", flow, 1 - d)  # the other direction's advertisements
        zero = (ads.height, float(ads["time"].min()) if ads.height else math.nan,  # type: ignore[arg-type]
                float(ads["time"].max()) if ads.height else math.nan)  # type: ignore[arg-type]
        return DirFacts(story_of(self.series(flow, d)), resent, self.get("drops", flow, d)["time"].to_list(),
                        list(zip(st["start"].to_list(), st["end"].to_list(), st["cause"].cast(pl.String).to_list(),
                                 strict=True)), zero)


def story_of(s: Series) -> Story:
    """A :class:`Series` as the account's rules read it (plain lists)."""
    if s.empty:
        return NO_STORY if s.source is None else Story(0, s.source, s.losses.tolist())
    r, c = s.runs, s.cuts
    runs = None if r is None else list(zip(r.start.tolist(), r.top.tolist(), r.top_t.tolist(), r.end.tolist(),
                                           r.end_t.tolist(), strict=True))
    cuts = None if c is None else list(zip(c.before.tolist(), c.after.tolist(), c.phase.tolist(), c.tol.tolist(),
                                           c.prev_t.tolist(), strict=True))
    return Story(s.rows, s.source, s.losses.tolist(), None if s.backed is None else s.backed.tolist(), runs, cuts)


def _phase_code(dtype: pl.DataType) -> pl.Expr:
    """The phase as :data:`SLOW_START` ... codes; the schema's Enum already holds them as its physical
    integers (its categories are in that order), which spares a comparison of every row with three names."""
    ph = pl.col("phase")
    if dtype == schema.PHASE and list(schema.PHASES) == ["slow_start", "congestion_avoidance", "recovery"]:
        return ph.to_physical().cast(pl.Int8).fill_null(-1).alias("phase")
    return (pl.when(ph == "slow_start").then(SLOW_START).when(ph == "congestion_avoidance").then(CONGESTION_AVOIDANCE)
            .when(ph == "recovery").then(RECOVERY).otherwise(-1).cast(pl.Int8).alias("phase"))


def _source(dtype: pl.DataType) -> pl.Expr:
    """The source column, as text only where it is not (an Enum's values read as text already:
    only one per direction is read, so the whole column is not cast)."""
    src = pl.col("source")
    return src if isinstance(dtype, (pl.Enum, pl.Categorical, pl.String)) else src.cast(pl.String)


def _by_dir(cols: dict[str, Any], key: str, prefix: str, names: tuple[str, ...]) -> dict[int, tuple[np.ndarray, ...]]:
    """The ``prefix`` arrays of :func:`tracekit._core.cwnd_story`'s answer sliced per direction index."""
    at = cols[key]
    if at.size == 0:
        return {}
    starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
    ends = [*starts[1:].tolist(), at.size]
    return {int(at[a]): tuple(cols[prefix + n][a:b] for n in names) for a, b in zip(starts.tolist(), ends, strict=True)}


def split_series(an: Analysis, cap: int) -> dict[tuple[int, int], Series]:
    """Every direction's :class:`Series`: one pass of the core over the cwnd frame's chosen rows
    (``cap``: runs told and reductions detailed per direction)."""
    cw = frame(an, "cwnd")
    if cw.is_empty():
        return {}
    red = getattr(an, "reductions", None)
    red = reductions(cw) if red is None else red  # an analysis built by hand: found here
    red = red.drop_nulls(["flow", "dir"])  # a null key matches no series
    parts = red.partition_by("flow", "dir", as_dict=True)
    times = {k: g["time"].to_numpy() for k, g in parts.items()}
    backed = {k: g["loss_event"].fill_null(True).to_numpy() for k, g in parts.items()} \
        if "loss_event" in red.columns else {}
    cols = chosen(cw).select(
        pl.col("flow").cast(pl.Int64).fill_null(-1), pl.col("dir").cast(pl.Int64).fill_null(-1), "time",
        pl.col("cwnd_bytes").cast(pl.Float64), _source(cw.schema["source"]), _phase_code(cw.schema["phase"]))
    if cols.is_empty():
        return {}
    r_backed = (red["loss_event"].fill_null(True) if "loss_event" in red.columns
                else pl.repeat(True, red.height, eager=True))
    f64 = np.float64
    got = _core.cwnd_story(
        cols["flow"].to_numpy(), cols["dir"].to_numpy(), np.ascontiguousarray(cols["time"].to_numpy(), dtype=f64),
        np.ascontiguousarray(cols["cwnd_bytes"].to_numpy(), dtype=f64), cols["phase"].to_numpy(),
        red["flow"].cast(pl.Int64).to_numpy(), red["dir"].cast(pl.Int64).to_numpy(),
        np.ascontiguousarray(red["time"].cast(pl.Float64).to_numpy(), dtype=f64),
        np.ascontiguousarray(r_backed.to_numpy(), dtype=bool), cap)
    runs = _by_dir(got, "run_dir", "run_", ("from", "top", "top_t", "end", "end_t"))
    cuts = _by_dir(got, "cut_dir", "cut_", ("before", "after", "phase", "tol", "prev_t"))
    rows, ca, ca_start = got["rows"].tolist(), got["ca"].tolist(), got["ca_start"].tolist()
    firsts = np.r_[0, np.cumsum(got["rows"])[:-1]].tolist()
    no_runs, no_cuts = Runs(*(np.zeros(0),) * 5), Cuts(*(np.zeros(0),) * 5)
    out = {}
    for i, (f, d) in enumerate(zip(got["flow"].tolist(), got["dir"].tolist(), strict=True)):
        key = (f, d)
        out[key] = Series(rows[i], cols["source"][firsts[i]], times.get(key, np.zeros(0)), backed.get(key),
                          Runs(*runs[i]) if i in runs else no_runs, Cuts(*cuts[i]) if i in cuts else no_cuts,
                          ca_start[i] if ca[i] else None)
    return out

"""Jain's fairness index over the data directions: the ``fairness`` frame.

``J = (Σ xᵢ)² / (n · Σ xᵢ²)`` over the ``n`` directions that carried data (total goodput
above zero; pure-ACK directions are left out), from 1/n (one direction takes
everything) to 1 (all equal) — Jain, Chiu & Hawe, DEC-TR-301, 1984.

* per bin: over the data directions that have a row in that bin (a direction is present
  from its first to its last packet, idle bins as zeros), ``xᵢ`` = their rate in the bin;
* overall (``time`` null): ``xᵢ`` = each direction's mean rate over its own active bins,
  so a flow that starts late is judged on the share it got while it ran.

The index is null when every ``xᵢ`` is zero (no data moved: fairness is undefined).

:func:`tracekit.analysis.analyze` gives :func:`fairness` only the directions that compete for
the path (:func:`competing`): one application-limited most of the time took what it asked for.
"""

from __future__ import annotations

import polars as pl

from tracekit import schema
from tracekit._shared import APP_LIMITED_SHARE

KEYS = ["flow", "dir"]


def _jain(x: pl.Expr) -> pl.Expr:
    """Jain's index of the values of ``x`` (null when they are all zero)."""
    sq = (x * x).sum()
    return pl.when(sq > 0).then(x.sum() ** 2 / (pl.len() * sq))


def competing(flows: pl.DataFrame, views: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``views`` (``flow, dir``) whose connection direction takes part in Jain's index:
    all but those whose flows row is limited by the application more than
    :data:`tracekit._shared.APP_LIMITED_SHARE` of the time (the rule of
    :func:`tracekit._shared.competes`, which the account applies to the same flows rows). A
    connection seen in several captures has one flows row (its sender-side view's limits) and a
    view per capture, matched by ``connection, dir``."""
    if "limited_app_share" not in flows.columns:
        return views.select(KEYS)
    share = pl.col("limited_app_share")
    # (polars orders NaN above every number: NaN, like null, is unknown and competes)
    idle = (share > APP_LIMITED_SHARE) & share.is_not_nan()
    on = ["connection", "dir"] if "connection" in flows.columns and "connection" in views.columns else KEYS
    return views.join(flows.filter(idle.fill_null(False)).select(on), on=on, how="anti").select(KEYS)


def fairness(throughput_df: pl.DataFrame, metric: str = "goodput_bps") -> pl.DataFrame:
    """Jain's index per time bin and over the whole trace.

    Args:
        throughput_df: A :data:`tracekit.schema.THROUGHPUT` frame (one bin width).
        metric: The rate compared: ``goodput_bps`` (default: new data, what applications get)
            or ``throughput_bps`` (everything on the wire, retransmissions included).

    Returns:
        A :data:`tracekit.schema.FAIRNESS` frame: one row per bin (sorted by time), then the
        overall row with ``time`` null.
    """
    if throughput_df.is_empty():
        return schema.empty(schema.FAIRNESS)
    tp = throughput_df.filter(pl.col("flow").is_not_null())
    # groups and joins in input order: the sums below then add in one order, run after run
    active = (tp.group_by(KEYS, maintain_order=True).agg(pl.col("goodput_bps").sum().alias("_g"))
              .filter(pl.col("_g") > 0).select(KEYS))
    tp = tp.join(active, on=KEYS, maintain_order="left")
    if tp.is_empty():
        return schema.empty(schema.FAIRNESS)
    x = pl.col(metric)
    per_bin = (tp.group_by("time", maintain_order=True).agg(pl.len().alias("flows"), _jain(x).alias("jain"))
               .sort("time"))
    means = tp.group_by(KEYS, maintain_order=True).agg(x.mean().alias("_m"))
    overall = means.select(pl.lit(None, pl.Float64).alias("time"), pl.len().alias("flows"),
                           _jain(pl.col("_m")).alias("jain"))
    out = pl.concat([schema.conform(per_bin, schema.FAIRNESS), schema.conform(overall, schema.FAIRNESS)])
    return out

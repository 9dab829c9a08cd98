"""The frames the account in words reads, split by connection direction once (:mod:`tracekit.explain`).

An account reads each direction's cwnd series, retransmissions, stalls and drops many times;
filtering the whole frames per direction each time cost most of ``analyze --json`` on large
captures, so :class:`Parts` splits them once and :mod:`tracekit.reports.answers` shares it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit import schema
from tracekit.analysis.cwnd import chosen, reductions

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

__all__ = ["CONGESTION_AVOIDANCE", "NO_SERIES", "RECOVERY", "SLOW_START", "Parts", "Series", "frame", "split_series"]

SCHEMAS = {"cwnd": "CWND", "retransmissions": "RETRANSMISSIONS", "stalls": "STALLS", "packets": "PACKETS",
            "fairness": "FAIRNESS"}


def frame(an: Analysis, name: str) -> pl.DataFrame:
    """A frame of the analysis, empty (with its columns) when the object has none (a partial analysis)."""
    df = getattr(an, name, None)
    if isinstance(df, pl.DataFrame):
        return df

    return schema.empty(getattr(schema, SCHEMAS[name]))


#: ``Series.phase`` codes.
SLOW_START, CONGESTION_AVOIDANCE, RECOVERY = 0, 1, 2


@dataclass(frozen=True)
class Series:
    """A direction's chosen cwnd series (:func:`tracekit.analysis.cwnd.chosen`) in time order, as arrays.

    Attributes:
        t: Times (s).
        v: cwnd (bytes).
        phase: :data:`SLOW_START`, :data:`CONGESTION_AVOIDANCE`, :data:`RECOVERY` (-1: none).
        source: ``trace`` or ``estimate`` (None: no series).
        losses: Times of the series' reductions (:func:`tracekit.analysis.cwnd.reductions`), ascending.
        backed: Per reduction, whether loss evidence backs it (its ``loss_event``; None: all do).
    """

    t: np.ndarray
    v: np.ndarray
    phase: np.ndarray
    source: str | None
    losses: np.ndarray
    backed: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        return self.t.size == 0


NO_SERIES = Series(np.zeros(0), np.zeros(0), np.zeros(0, np.int8), None, np.zeros(0))


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
            if name == "drops":  # a simulator's drop events (captures have none)
                df = self.an.trace.packets.lazy().filter(pl.col("event") == "drop").select(
                    "flow", "dir", "time").collect()
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
            self._series = split_series(self.an)
        return self._series.get((flow, d), NO_SERIES)


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


def split_series(an: Analysis) -> dict[tuple[int, int], Series]:
    """Every direction's :class:`Series`: one pass over the cwnd frame, each direction a slice of it."""
    cw = frame(an, "cwnd")
    if cw.is_empty():
        return {}
    red = getattr(an, "reductions", None)
    red = reductions(cw) if red is None else red  # an analysis built by hand: found here
    parts = red.partition_by("flow", "dir", as_dict=True)
    times = {k: g["time"].to_numpy() for k, g in parts.items()}
    backed = {k: g["loss_event"].fill_null(True).to_numpy() for k, g in parts.items()} \
        if "loss_event" in red.columns else {}
    cols = chosen(cw).select(
        pl.col("flow").cast(pl.Int64).fill_null(-1), pl.col("dir").cast(pl.Int64).fill_null(-1), "time",
        pl.col("cwnd_bytes").cast(pl.Float64), _source(cw.schema["source"]), _phase_code(cw.schema["phase"]))
    if cols.is_empty():
        return {}
    f, d = cols["flow"].to_numpy(), cols["dir"].to_numpy()
    t, v, phase = cols["time"].to_numpy(), cols["cwnd_bytes"].to_numpy(), cols["phase"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (f[1:] != f[:-1]) | (d[1:] != d[:-1])])
    out = {}
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), f.size], strict=True):
        key = (int(f[a]), int(d[a]))
        out[key] = Series(t[a:b], v[a:b], phase[a:b], cols["source"][a], times.get(key, np.zeros(0)),
                          backed.get(key))
    return out

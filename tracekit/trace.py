"""The :class:`Trace` every parser returns, and the warning log parsers fill.

``meta`` keys (documented in docs/schema.md):

* ``format`` (str): the reader's registry name, e.g. ``"pcap"``, ``"ns2"``.
* ``tool`` (str): what produced the file: ``"tcpdump"``, ``"ns-2"``, ``"ns-3"``, ...
* ``paths`` (list[str]): the file(s) read.
* ``linktypes`` (list[int]): capture link types (captures only).
* ``t0_ns`` (int | None): epoch of ``time == 0`` in ns, where the format knows it.
* ``units`` (dict[str, str]): the original units of converted quantities.
* ``segment_size`` (int | None): payload bytes per segment where the format counts packets.
* ``warnings`` (list[dict]): ``{"code", "message", "count", "offset", "line"}``.
* ``counts`` (dict[str, int]): records seen but not turned into rows (non-IP frames, ...).
* ``captures`` (list[dict], run directories): one entry per file that carried packets,
  ``{"file", "first_flow", "last_flow"}``: the flow ids its packets got in the combined trace
  (:mod:`tracekit.analysis.connections` names each flow's capture from it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from tracekit import schema
from tracekit._shared import WarningLog as WarningLog
from tracekit._shared import with_defaults


@dataclass(frozen=True)
class Trace:
    """One trace in the tracekit schema.

    Attributes:
        packets: One row per packet event (:data:`tracekit.schema.PACKETS`).
        samples: One row per tool-reported sample (:data:`tracekit.schema.SAMPLES`).
        meta: Provenance and units; see the module docstring for the keys.
    """

    packets: pl.DataFrame
    samples: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """The warnings the reader raised (code, message, count, location)."""
        return list(self.meta.get("warnings", []))

    @property
    def path(self) -> str:
        """The file(s) read, joined for messages."""
        return ", ".join(self.meta.get("paths", []))

    def with_meta(self, **updates: Any) -> Trace:
        """Return a copy with ``meta`` keys updated."""
        return replace(self, meta={**self.meta, **updates})


def make_trace(
    packets: pl.DataFrame | None,
    samples: pl.DataFrame | None,
    meta: dict[str, Any],
    warnings: WarningLog | None = None,
) -> Trace:
    """Conform frames to the schema, attach warnings and validate.

    Args:
        packets: The packet columns the format has (others become null).
        samples: The sample columns the format has.
        meta: Provenance; must hold ``format`` and ``paths``.
        warnings: The reader's warning log.

    Returns:
        A validated :class:`Trace`.

    Raises:
        SchemaError: if the frames cannot be made to conform.
    """
    pk = schema.conform(packets if packets is not None else pl.DataFrame(), schema.PACKETS)
    sm = schema.conform(samples if samples is not None else pl.DataFrame(), schema.SAMPLES)
    meta = with_defaults(meta, warnings.to_list() if warnings is not None else list(meta.get("warnings", [])))
    return schema.validate(Trace(pk, sm, meta))


#: Sample metrics counted in packets that have a byte equivalent (x segment size).
_PACKET_METRICS = ("cwnd", "ssthresh", "inflight")


def _merge_counts(into: dict[str, Any], add: dict[str, Any]) -> None:
    """Add counts (numbers, or nested dicts of numbers) from one reader into another's."""
    for k, v in add.items():
        if isinstance(v, dict):
            sub = into.setdefault(k, {})
            if isinstance(sub, dict):
                _merge_counts(sub, v)
        elif isinstance(v, (int, float)) and isinstance(into.get(k, 0), (int, float)):
            into[k] = into.get(k, 0) + v


#: A capture whose first record is earlier than this (ns since 1970, ~11.6 days) was not
#: stamped by a wall clock: ns-3 writes its pcaps on the simulation clock (epoch 0).
SIM_EPOCH_MAX_NS = 10**15


def _common_clock(traces: list[Trace]) -> tuple[list[Trace], int | None]:
    """Shift the parts of one run onto one clock; returns them and the combined ``t0_ns``.

    Captures count time from their first record (``t0_ns`` = its absolute time), simulator
    text traces and series from the simulation's zero (``t0_ns`` None). ns-3 pcaps are
    stamped on the simulation clock, so a run directory's ``dumbbell-0-0.pcap`` (first packet
    at 1.0 s) and its ``cwnd.data`` (from 1.0 s) only line up once the capture is moved by
    its ``t0_ns``. Several wall-clock captures (tcpdump on both hosts, Flent + tcpdump) are
    aligned on the earliest one.
    """
    timed = [t for t in traces if t.meta.get("t0_ns") is not None and (t.packets.height or t.samples.height)]
    if not timed:
        return traces, None
    untimed = any(t.meta.get("t0_ns") is None and (t.packets.height or t.samples.height) for t in traces)
    starts = [int(t.meta["t0_ns"]) for t in timed]
    if untimed and all(0 <= s < SIM_EPOCH_MAX_NS for s in starts):
        base = 0  # everything on the simulation clock
    elif untimed:
        return traces, None  # a wall-clock capture beside simulator files: no common clock to find
    else:
        base = min(starts)
    out = []
    for t in traces:
        t0 = t.meta.get("t0_ns")
        shift = (int(t0) - base) / 1e9 if t0 is not None else 0.0
        if shift:
            t = replace(t, packets=t.packets.with_columns(pl.col("time") + shift),
                        samples=t.samples.with_columns(pl.col("time") + shift))
        out.append(t)
    return out, base


def combine(traces: list[Trace], *, path: str, skipped: list[str] | None = None) -> Trace:
    """Combine the traces of one run (e.g. ns-2 ``out.tr`` + ``Window.tr`` + ``WindowMon.tr``).

    All parts are first put on one clock (:func:`_common_clock`). Packets are
    concatenated (flow ids of later files are offset so they stay distinct) and
    stably sorted by time; samples are concatenated. Where a
    packet trace gives the segment size, sample series counted in packets
    (cwnd, ssthresh, inflight) gain a byte series beside them.

    Args:
        traces: The traces read from the run's files.
        path: The directory, for ``meta``.
        skipped: Files that were not recognised.

    Returns:
        One validated Trace with ``meta["format"] == "dir"``.

    (ss logs and nstat snapshots of the run are attached by :func:`tracekit.kernel.combine_run`.)
    """
    log = WarningLog(path)
    traces, t0_ns = _common_clock(traces)
    packets = []
    captures: list[dict[str, Any]] = []
    offset = 0
    for t in traces:
        log.extend(t.warnings)
        if t.packets.height:
            pk = t.packets.with_columns(pl.col("flow") + offset)
            fmax = t.packets["flow"].max()
            step = int(fmax) + 1 if fmax is not None else 0  # type: ignore[arg-type]
            name = os.path.basename(t.path) or t.path
            captures.append({"file": name, "first_flow": offset, "last_flow": offset + step - 1})
            offset += step
            packets.append(pk)
    if len(packets) > 1:
        log.add("W-MULTIPLE-PACKET-FILES", f"{len(packets)} files carry packets; each connection is counted "
                "once, from one capture (the others are in the views frame)")
    if skipped:
        log.add("W-SKIPPED-FILE", "files not recognised as traces: " + ", ".join(skipped[:10]),
                count=len(skipped))
    pk_all = pl.concat(packets) if packets else schema.empty(schema.PACKETS)
    if len(packets) > 1:
        pk_all = pk_all.sort("time", maintain_order=True)
    samples = pl.concat([t.samples for t in traces])
    seg = next((t.meta.get("segment_size") for t in traces if t.meta.get("segment_size")), None)
    if seg and samples.height:
        have_bytes = set(samples.filter(pl.col("unit") == "bytes")["metric"].unique().to_list())
        extra = samples.filter(
            (pl.col("unit") == "packets") & pl.col("metric").is_in(_PACKET_METRICS)
            & ~pl.col("metric").is_in(list(have_bytes))
        ).with_columns(value=pl.col("value") * seg, unit=pl.lit("bytes"))
        samples = pl.concat([samples, extra])
    units: dict[str, str] = {}
    counts: dict[str, int] = {}
    for t in traces:
        units.update(t.meta.get("units", {}))
        _merge_counts(counts, t.meta.get("counts", {}))
    meta = {
        "format": "dir",
        "tool": next((t.meta.get("tool") for t in traces if t.packets.height), traces[0].meta.get("tool")),
        "formats": [t.meta.get("format") for t in traces],
        "paths": [p for t in traces for p in t.meta.get("paths", [])],
        "dir": path,
        "units": units,
        "counts": counts,
        "segment_size": seg,
        "t0_ns": t0_ns,
        "captures": captures,
        "parts": [{k: v for k, v in t.meta.items() if k not in ("warnings",)} for t in traces],
    }
    return make_trace(pk_all, samples, meta, log)

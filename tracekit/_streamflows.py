"""The ``flows`` list of ``analyze --json`` from the streamed summary (``tracekit._core.stream_summary``, issue 21).

No polars, no numpy: the stream's per-direction columns become the flows frame's records (its
stand-ins for a missing value turned into None), and every other value comes from the rule the
frames path applies, in plain Python: the arithmetic and the models (:mod:`tracekit._flowrows`,
as :func:`tracekit.analysis.flows.directions` and ``finish`` apply it), the one-capture labels
(:func:`tracekit._flowrows.capture_name`, ``one_view``, as
:func:`tracekit.analysis.connections.one_per_connection`), the address text
(:func:`tracekit.parsers._address.address_text`, the reader's), the lab units
(:func:`tracekit._flowrows.lab_units`, as :func:`tracekit.reports.answers.lab_flows`) and the cwnd
reductions in congestion avoidance (:func:`tracekit._flowrows.reductions_in_ca`, as
:func:`tracekit.explain.cwnd_reductions`, over the stream's ``_ca_start`` and ``_red_t``).
"""

from __future__ import annotations

from itertools import accumulate, repeat
from typing import Any

from tracekit import _flowrows
from tracekit._shared import MISSING
from tracekit.parsers._address import address_text

#: The stream's columns that are -1 where the frame has none.
_NEG1 = ("mss", "wscale", "flight_max_bytes")
#: The stream's columns that are :data:`~tracekit._shared.MISSING` (or NaN) where the frame has none.
_MISSING = ("start", "end", "wire_bytes", "unique_bytes", "data_packets", "retrans_packets", "retrans_spurious",
            "max_rwnd_bytes", "init_window_bytes", "init_window_segments", "loss_events", "rtt_mean_s")
#: The records' inputs by the stream's name (the models' smoothed RTT at the end), each MISSING or NaN for none.
_INPUTS = {"_data_t0": "_data_t0", "_acked_t": "_acked_t", "_ack_t": "_ack_t", "_ack_bytes": "_ack_bytes",
           "_syn_t": "_syn_t", "_smss": "_smss", "_srtt": "srtt", "_rttvar": "rttvar"}
#: The columns the one-capture labels fill.
_LABELS = ("capture", "connection", "views", "goodput_capture")


def _column(out: dict[str, Any], name: str) -> list[Any]:
    """The stream's column ``name`` with its stand-ins for none (-1, MISSING, NaN, 0 samples) as None."""
    v = out[name]
    if name in _NEG1:
        return [None if x == -1 else x for x in v]
    if name in _MISSING or name in _INPUTS:
        return [None if x == MISSING or x != x else x for x in v]
    if name == "rtt_samples":
        return [x if x > 0 else None for x in v]
    return [None if x != x else x for x in v]  # (NaN: the only float that is not itself)


def _addresses(out: dict[str, Any], end: str) -> list[str]:
    """The stream's raw addresses (``_{end}_v6``, ``_hi``, ``_lo``) as text, each distinct one formatted once."""
    keys = list(zip(out[f"_{end}_v6"], out[f"_{end}_hi"], out[f"_{end}_lo"], strict=True))
    texts = {k: address_text(not k[0], k[1], k[2]) for k in dict.fromkeys(keys)}
    return list(map(texts.__getitem__, keys))


def records(out: dict[str, Any], meta: dict[str, Any]) -> list[_flowrows.Row]:
    """One flows record per direction, in the flows frame's column and row order (``analysis.flows.to_dicts()``).

    Args:
        out: ``_core.stream_summary(path)``.
        meta: The analysed trace's meta (:func:`tracekit.streamed.trace_meta`): its ``paths`` name the capture.
    """
    n = len(out["flow"])
    capture = _flowrows.capture_name(meta.get("paths") or [])
    views = [_flowrows.one_view(f, capture) for f in out["flow"]]
    labels = dict(zip(_LABELS[1:], zip(*views, strict=True), strict=True)) if n else {}
    cols: dict[str, Any] = {}
    for c in _flowrows.COLUMNS:  # (each record's keys in the frame's order; the computed ones filled below)
        if c in ("src", "dst"):
            cols[c] = _addresses(out, c)
        elif c in _LABELS:  # (the stream's own ``capture`` is the reader's facts)
            cols[c] = labels[c] if c in labels else repeat(capture, n)
        elif c in out:
            cols[c] = _column(out, c)
        else:
            cols[c] = repeat(None, n)
    cols.update({name: _column(out, c) for c, name in _INPUTS.items()})
    keys = list(cols)
    rows = [dict(zip(keys, v, strict=True)) for v in zip(*cols.values(), strict=True)] if n else []
    # (a pcap or pcapng file is a capture: no simulator's drop or receive events)
    rows = _flowrows.with_models([_flowrows.derived(r, simulator=False) for r in rows])
    inputs = list(_INPUTS.values())
    for r in rows:  # (the records without their inputs; in place: a second set of records would double the memory)
        for c in inputs:
            del r[c]
    at = list(zip(out["flow"], out["dir"], strict=True))
    if at != sorted(at):
        rows.sort(key=lambda r: (r["flow"], r["dir"]))
    return rows


def flows(out: dict[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``flows`` of ``analyze --json`` (:func:`tracekit.reports.answers.json_flows`, before ``_clean``).

    :func:`records`, with the lab units where ``meta`` knows the segment size, and
    ``cwnd_reductions`` from each direction's cwnd series (the stream's ``_story_rows``,
    ``_ca_start`` and its reductions' times ``_red_t``).
    """
    rows = records(out, meta)
    seg = _flowrows.lab_segment(meta)
    if seg is not None:
        rows = [_flowrows.lab_units(r, seg) for r in rows]
    red_t, series = out["_red_t"], _series(out)

    def count(flow: int, d: int, end: float | None) -> int | None:
        n, ca, a, b = series.get((flow, d), _NO_SERIES)
        return _flowrows.reductions_in_ca(n, red_t[a:b], ca, end)

    return [_flowrows.with_reductions(r, count) for r in rows]


#: A direction without a cwnd series: no rows, no congestion avoidance, no reductions.
_NO_SERIES = (0, None, 0, 0)


def _series(out: dict[str, Any]) -> dict[tuple[int, int], tuple[int, float | None, int, int]]:
    """Per direction (``flow, dir``): its cwnd series' rows, first congestion-avoidance time, and where
    its reductions' times begin and end in ``_red_t``."""
    ends = list(accumulate(out["_reductions"]))
    return dict(zip(zip(out["flow"], out["dir"], strict=True),
                    zip(out["_story_rows"], out["_ca_start"], [0, *ends][:-1], ends, strict=True), strict=True))

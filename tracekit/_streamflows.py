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

import math
from collections.abc import Callable
from typing import Any

from tracekit import _flowrows
from tracekit._shared import MISSING
from tracekit.parsers._address import address_text

#: The stream's columns that are -1 where the frame has none.
_NEG1 = ("mss", "wscale", "flight_max_bytes")
#: The stream's columns that are :data:`~tracekit._shared.MISSING` (or NaN) where the frame has none.
_MISSING = ("start", "end", "wire_bytes", "unique_bytes", "data_packets", "retrans_packets", "retrans_spurious",
            "max_rwnd_bytes", "init_window_bytes", "init_window_segments",
            "_data_t0", "_acked_t", "_ack_t", "_ack_bytes", "_syn_t", "_smss", "loss_events", "rtt_mean_s")
#: The records' inputs by the stream's name (the models' smoothed RTT at the end).
_INPUTS = {"_data_t0": "_data_t0", "_acked_t": "_acked_t", "_ack_t": "_ack_t", "_ack_bytes": "_ack_bytes",
           "_syn_t": "_syn_t", "_smss": "_smss", "_srtt": "srtt", "_rttvar": "rttvar"}
#: The flows columns the stream gives as they are (NaN: none).
_GIVEN = [c for c in _flowrows.COLUMNS if c not in ("src", "dst", "capture", "connection", "views",
                                                    "goodput_capture")]


def _none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def _missing(v: Any) -> Any:
    return None if v == MISSING else _none(v)


def _neg1(v: Any) -> Any:
    return None if v == -1 else v


def _converter(name: str) -> Callable[[Any], Any]:
    if name in _NEG1:
        return _neg1
    if name in _MISSING or name in _INPUTS:
        return _missing
    if name == "rtt_samples":
        return lambda v: v if v > 0 else None
    return _none


def _addresses(out: dict[str, Any], end: str) -> list[str]:
    """The stream's raw addresses (``_{end}_v6``, ``_hi``, ``_lo``) as text, each distinct one formatted once."""
    texts: dict[tuple[bool, int, int], str] = {}
    got = []
    for key in zip(out[f"_{end}_v6"], out[f"_{end}_hi"], out[f"_{end}_lo"], strict=True):
        t = texts.get(key)
        if t is None:
            t = texts[key] = address_text(not key[0], key[1], key[2])
        got.append(t)
    return got


def records(out: dict[str, Any], meta: dict[str, Any]) -> list[_flowrows.Row]:
    """One flows record per direction, in the flows frame's column and row order (``analysis.flows.to_dicts()``).

    Args:
        out: ``_core.stream_summary(path)``.
        meta: The analysed trace's meta (:func:`tracekit.streamed.trace_meta`): its ``paths`` name the capture.
    """
    names = [c for c in _GIVEN if c in out] + list(_INPUTS)
    cols = {_INPUTS.get(c, c): list(map(_converter(c), out[c])) for c in names}
    cols["src"], cols["dst"] = _addresses(out, "src"), _addresses(out, "dst")
    n = len(out["flow"])
    rows = [{c: v[i] for c, v in cols.items()} for i in range(n)]
    rows = _flowrows.with_models([_flowrows.derived(r, simulator=False) for r in rows])
    capture = _flowrows.capture_name(meta.get("paths") or [])
    done = []
    for r in rows:
        r["capture"] = capture
        r["connection"], r["views"], r["goodput_capture"] = _flowrows.one_view(r["flow"], capture)
        done.append({c: r.get(c) for c in _flowrows.COLUMNS})
    done.sort(key=lambda r: (r["flow"], r["dir"]))
    return done


def flows(out: dict[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``flows`` of ``analyze --json`` (:func:`tracekit.reports.answers.json_flows`, before ``_clean``).

    :func:`records`, with the lab units where ``meta`` knows the segment size, and
    ``cwnd_reductions``.
    """
    rows = records(out, meta)
    seg = _flowrows.lab_segment(meta)
    if seg is not None:
        rows = [_flowrows.lab_units(r, seg) for r in rows]
    series = _series(out)

    def count(flow: int, d: int, end: float | None) -> int | None:
        n, ca, losses = series.get((flow, d), (0, None, []))
        return _flowrows.reductions_in_ca(n, losses, ca, end)

    return [_flowrows.with_reductions(r, count) for r in rows]


def _series(out: dict[str, Any]) -> dict[tuple[int, int], tuple[int, float | None, list[float]]]:
    """Per direction: its cwnd series' rows, first congestion-avoidance time and reduction times."""
    got = {}
    at, red_t = 0, out["_red_t"]
    for f, d, n, ca, k in zip(out["flow"], out["dir"], out["_story_rows"], out["_ca_start"], out["_reductions"],
                              strict=True):
        got[(f, d)] = (n, ca, red_t[at:at + k])
        at += k
    return got

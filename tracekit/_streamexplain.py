"""The account in words (``analyze --json``'s ``explain``) from the streamed summary, without polars or numpy.

:func:`explain_from_stream` feeds :func:`tracekit.explain_account.account`, the rules
:func:`tracekit.explain.explain` feeds from an analysis' frames, with what
``_core.stream_summary`` gives per data direction (``src/stream/cwndstory.rs``: the cwnd events;
``src/stream/account.rs``: the retransmissions, stalls and the other direction's zero windows) and
over the trace (``capture``: the last packet time, data packets and those captured short).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tracekit import _core
from tracekit.explain_account import account, data_rows, vantage_kinds
from tracekit.explain_rules import MAX_EACH, NO_STORY, DirFacts, Resent, Story, TraceFacts
from tracekit.phrases import Sentence

__all__ = ["explain_from_stream"]

#: A stall's ``cause`` by the core's code (``Cause`` and its names in src/state/stalls.rs).
CAUSES = _core.STALL_CAUSES
#: A retransmission's ``kind`` by the core's code (``KIND_NAMES`` in src/state/retrans.rs).
KINDS = _core.RETRANS_KINDS


def _cuts(counts: list[int]) -> list[tuple[int, int]]:
    """(start, end) of each row's share of a flat list, ``counts`` per row."""
    out, at = [], 0
    for n in counts:
        out.append((at, at + n))
        at += n
    return out


def _story(out: dict[str, Any], i: int, runs: tuple[int, int], cuts: tuple[int, int],
           reds: tuple[int, int]) -> Story:
    """Row ``i``'s cwnd events (``explain_parts.Series`` as lists; a capture's series is tracekit's estimate)."""
    if out["_story_rows"][i] == 0:
        return NO_STORY
    ra, rb = runs
    ca, cb = cuts
    a, b = reds
    return Story(out["_story_rows"][i], "estimate", out["_red_t"][a:b], out["_red_backed"][a:b],
                 list(zip(*(out[f"_run_{k}"][ra:rb] for k in ("from", "top", "top_t", "end", "end_t")), strict=True)),
                 list(zip(*(out[f"_cut_{k}"][ca:cb] for k in ("before", "after", "phase", "tol", "prev_t")),
                          strict=True)))


def _facts(out: dict[str, Any]) -> Callable[[int, int], DirFacts]:
    """A data direction's :class:`DirFacts`, from the stream's per-row and flat columns, built when asked (the
    account asks only for the directions it tells)."""
    runs, reds = _cuts(out["_story_runs"]), _cuts(out["_reductions"])
    cuts = _cuts([min(n, MAX_EACH + 1) for n in out["_reductions"]])
    picked, stalls = _cuts(out["_rt_picked"]), _cuts(out["_stalls"])
    index = {(int(f), int(d)): i for i, (f, d) in enumerate(zip(out["flow"], out["dir"], strict=True))}

    def of(flow: int, d: int) -> DirFacts:
        i = index.get((flow, d))
        if i is None:
            return _NONE
        a, b = picked[i]
        told = sorted(zip(out["_rt_t"][a:b], (KINDS[k] for k in out["_rt_kind"][a:b]), strict=True),
                      key=lambda r: r[0])
        resent = Resent(out["_rt_n"][i], out["_rt_t0"][i], out["_rt_t1"][i], out["_rt_fast"][i], out["_rt_rto"][i],
                        told)
        a, b = stalls[i]
        st = list(zip(out["_stall_start"][a:b], out["_stall_end"][a:b],
                      (CAUSES[c] for c in out["_stall_cause"][a:b]), strict=True))
        zero = (out["_zw_n"][i], out["_zw_t0"][i], out["_zw_t1"][i])
        return DirFacts(_story(out, i, runs[i], cuts[i], reds[i]), resent, [], st, zero)

    return of


_NONE = DirFacts(NO_STORY, Resent(0, math.nan, math.nan, 0, 0, []), [], [], (0, math.nan, math.nan))


def _trace_facts(out: dict[str, Any], meta: dict[str, Any], rows: list[dict[str, Any]]) -> TraceFacts:
    cap = out["capture"]
    n = cap["rows"]
    return TraceFacts(warnings=list(meta.get("warnings", [])), packets=n, last_t=cap["last_t"] if n else None,
                      caplen=n > 0, data=cap["data"], data_cut=cap["data_cut"],
                      cut_t=cap["data_cut_t"] if cap["data_cut"] else None,
                      vantage=vantage_kinds([r["flow"] for r in rows], [r.get("vantage_point") for r in rows]),
                      mixed=meta.get("vantage_point") == "mixed", segment_size=meta.get("segment_size"))


def explain_from_stream(out: dict[str, Any], meta: dict[str, Any], rows: list[dict[str, Any]], *,
                        link_bps: float | None = None) -> list[Sentence]:
    """``tracekit.explain.explain(analyze(read(path)), link_bps=link_bps)`` from the stream, sentence for sentence.

    Args:
        out: ``_core.stream_summary(path)``.
        meta: The analysed trace's ``meta`` (:func:`tracekit.streamed.trace_meta`).
        rows: The flows rows (``tracekit.reports.answers.lab_flows(an).to_dicts()``).
        link_bps: The bottleneck's rate in bit/s, when known.
    """
    return account(_trace_facts(out, meta, rows), data_rows(rows), _facts(out), link_bps=link_bps)

"""TCP analyses: pure functions over a Trace's polars frames, gathered in :class:`Analysis`.

One analysis per module; each is a pure function (no I/O, no plotting) that
returns a frame declared in :mod:`tracekit.schema`. :func:`analyze` runs them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracekit.analysis.flows import flows as _flows
from tracekit.analysis.vantage import vantage
from tracekit.trace import Trace


@dataclass(frozen=True)
class Analysis:
    """Everything tracekit reconstructs from one trace.

    Attributes:
        trace: The analysed trace.
        packets: The packet events at the analysis vantage point (one row per packet).
        flows: One row per connection direction that carried data.
        extra: Further frames by name (flight, cwnd, rtt, retransmissions, stalls, queue, fairness).
    """

    trace: Trace
    packets: pl.DataFrame
    flows: pl.DataFrame
    extra: dict[str, pl.DataFrame] = field(default_factory=dict)

    def __getattr__(self, name: str) -> pl.DataFrame:
        extra = object.__getattribute__(self, "extra")
        if name in extra:
            return extra[name]  # type: ignore[no-any-return]
        raise AttributeError(name)


def analyze(trace: Trace, **options: Any) -> Analysis:
    """Run every analysis on a trace.

    Args:
        trace: A validated Trace.
        **options: Reserved for analysis options.

    Returns:
        The Analysis.
    """
    pk = vantage(trace.packets)
    fl = _flows(pk)
    return Analysis(trace=trace, packets=pk, flows=fl)

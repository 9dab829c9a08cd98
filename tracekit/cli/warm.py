"""Importing a command's chart library on a thread of its own while the command reads its inputs.

``tracekit report`` (and ``analyze --report``) needs altair only once its captures are read and
analysed, and importing it costs about 0.3 s of pure Python (jsonschema, referencing, narwhals,
jinja2: see ``python -X importtime``). Reading and analysing a capture run in the core and in polars with
the GIL released, so the import can run on the other core meanwhile: on big.pcap both commands
take about 0.13-0.15 s less (bench/README.md, "tracekit report on big.pcap").

Why this is safe: CPython imports under a lock per module, so the command's own
``import altair`` later waits until this thread's is done and never sees a half-built module.
A deadlock between two importing threads needs each to hold a module the other wants; the
modules warmed here are third-party libraries whose imports share no module with what
reading and analysing import lazily (``tests/test_cli_warm.py`` checks that altair's import
brings in no ``tracekit``, polars or numpy module).
"""

from __future__ import annotations

import importlib
import threading

#: The libraries a chart-drawing command warms (none of them imports tracekit, polars or numpy).
CHARTS = ("altair",)


def warm(modules: tuple[str, ...] = CHARTS) -> threading.Thread:
    """Start importing ``modules`` on a thread, and return it (joined at exit like any other).

    Args:
        modules: Module names, imported in order.

    Returns:
        The started thread. The caller need not join it: its own ``import`` of the same module
        waits for this one. An error is left for that import to raise where it belongs (a
        missing library is then the command's error, not this thread's).
    """
    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the command's own import raises it again
                continue

    t = threading.Thread(target=run, name="tracekit-warm", daemon=False)
    t.start()
    return t

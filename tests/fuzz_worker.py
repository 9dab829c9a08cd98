"""A worker process for the robustness tests: reads files named on stdin, one JSON result per line.

Run as ``python tests/fuzz_worker.py TIMEOUT_S``. For each path it resets the
peak-RSS counter (``/proc/self/clear_refs``), reads the file with
``tracekit.read`` under a SIGALRM time bound, and prints
``{"path", "outcome", "detail", "seconds", "peak_rss_mb"}`` where outcome is
``ok`` (a Trace), ``error`` (a TracekitError, the documented refusal),
``crash`` (any other exception: a bug) or ``hang`` (over the time bound).
A hard address-space limit backs the RSS measurement up: a runaway allocation
kills the worker, which the harness reports as a crash of that file.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import sys
import time
import traceback


class _Hang(Exception):
    pass


def _alarm(_sig: int, _frm: object) -> None:
    raise _Hang()


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        m = re.search(r"VmHWM:\s+(\d+)", fh.read())
    return int(m.group(1)) / 1024 if m else 0.0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # 5 = reset the peak RSS (VmHWM) to the current RSS
    except OSError:
        pass


def main() -> None:
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    import tracekit  # noqa: F401 - import before timing so imports do not count
    import tracekit.analysis  # noqa: F401
    from tracekit.errors import TracekitError

    signal.signal(signal.SIGALRM, _alarm)
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        _reset_peak()
        t = time.monotonic()
        outcome, detail = "ok", ""
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            tr = tracekit.read(path)
            detail = ",".join(w["code"] for w in tr.warnings)
            tracekit.analyze(tr)
        except _Hang:
            outcome, detail = "hang", f"over {timeout} s"
        except TracekitError as exc:
            outcome, detail = "error", f"{type(exc).__name__}: {exc}"
        except BaseException as exc:  # noqa: BLE001 - the point is to catch everything
            outcome = "crash"
            detail = "".join(traceback.format_exception(exc))[-3000:]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps({"path": path, "outcome": outcome, "detail": detail,
                          "seconds": round(time.monotonic() - t, 3), "peak_rss_mb": round(_peak_rss_mb(), 1)}),
              flush=True)


if __name__ == "__main__":
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    main()

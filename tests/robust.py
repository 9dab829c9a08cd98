"""Run many files through fuzz_worker.py subprocesses and collect their outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "fuzz_worker.py"


def run_files(paths: list[Path], timeout_s: float = 5.0, workers: int = 2) -> list[dict]:
    """Read every path in worker subprocesses; a worker that dies is restarted for the rest.

    Returns:
        One result dict per path (see fuzz_worker.py), in input order.
    """
    results: dict[str, dict] = {}
    pending = [str(p) for p in paths]
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    while pending:
        chunks = [pending[i::workers] for i in range(workers)]
        procs = []
        for chunk in chunks:
            if not chunk:
                continue
            p = subprocess.Popen([sys.executable, str(WORKER), str(timeout_s)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            procs.append((p, chunk))
        retry: list[str] = []
        for p, chunk in procs:
            # generous overall bound: per-file timeout + import time, per file
            try:
                out, err = p.communicate("\n".join(chunk) + "\n", timeout=(timeout_s + 2) * len(chunk) + 30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            done = {}
            for line in out.splitlines():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                done[r["path"]] = r
            results.update(done)
            missing = [c for c in chunk if c not in done]
            if missing:
                # the worker died on the first missing file: record it, retry the rest
                first = missing[0]
                results[first] = {"path": first, "outcome": "crash",
                                  "detail": f"worker died (rc={p.returncode}): {err[-2000:]}",
                                  "seconds": None, "peak_rss_mb": None}
                retry.extend(missing[1:])
        pending = retry
    return [results[str(p)] for p in paths]

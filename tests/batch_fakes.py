"""Fake readers injected into batch/grade workers by tests (``initializer="batch_fakes:install"``).

* ``TRACEKIT-HANG`` files make the reader sleep forever (a parser stuck on a pathological file);
  it first writes its process id to the file named on the first line, so a test can check
  that the worker was really killed.
* ``TRACEKIT-HOG`` files make the reader allocate 4 GiB at once (over ``--max-memory``).
"""

from __future__ import annotations

import os
import sys
import time
import types
from typing import Any

NAME = "fake"
DESCRIPTION = "test-only fake reader"
DETECT = "starts with TRACEKIT-HANG or TRACEKIT-HOG"


def sniff(head: bytes) -> bool:
    return head.startswith((b"TRACEKIT-HANG", b"TRACEKIT-HOG"))


def read(source: Any, *, limits: Any = None, strict: bool = False, name: str | None = None) -> Any:
    with open(source, "rb") as fh:
        first = fh.readline().decode().split()
    if first[0] == "TRACEKIT-HANG":
        if len(first) > 1:
            with open(first[1], "w") as out:
                out.write(str(os.getpid()))
        while True:
            time.sleep(3600)
    hog = bytearray(4 << 30)
    return hog


def install() -> None:
    """Register this module as the first reader of tracekit's registry (in this process only)."""
    import tracekit.parsers as parsers

    mod = types.ModuleType("tracekit.parsers.fake")
    for k in ("NAME", "DESCRIPTION", "DETECT", "sniff", "read"):
        setattr(mod, k, globals()[k])
    sys.modules["tracekit.parsers.fake"] = mod
    parsers.READERS = {"fake": "fake", **parsers.READERS}

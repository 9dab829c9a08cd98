"""Files tracekit writes or fingerprints: atomic writes, joins that stay inside a folder, content hashes,
spreadsheet-safe CSV. The one copy every layer uses (reports, grading, batch, cli).

Only the standard library is imported, so any module may use these helpers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracekit.errors import OutputError

_CHUNK = 1 << 20


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file and ``os.replace`` (never half-written), mode 0666 & ~umask.

    (``mkstemp`` creates 0600 files; outputs are meant to be shared like any other file.)
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_output(path: Path, text: str, *, what: str = "cannot write", hint: str | None = None) -> None:
    """Text written atomically; an OS error becomes an :class:`OutputError` naming the file.

    Raises:
        OutputError: ``"{what}: {reason}"`` with ``path`` and ``hint``.
    """
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise OutputError(f"{what}: {exc.strerror or exc}", path=str(path), hint=hint) from None


def safe_join(out: Path, *parts: str) -> Path:
    """``out/parts…`` resolved, refusing anything that would land outside ``out`` (or on ``out`` itself).

    Raises:
        OutputError: when the result escapes the folder.
    """
    root = out.resolve()
    p = root.joinpath(*parts).resolve()
    if not p.is_relative_to(root) or p == root:
        raise OutputError("refusing to write outside the output folder", path=os.fspath(p))
    return p


def _feed(h: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB chunks (comparable with ``hashlib.sha256(data)``)."""
    h = hashlib.sha256()
    _feed(h, path)
    return h.hexdigest()


def content_hash(path: Path) -> str:
    """sha256 of a file, or of a run directory's file names and contents (hidden files skipped).

    Each file's bytes are followed by a NUL (and, in a directory, preceded by its name and a NUL),
    so moving bytes from one file to the next changes the hash.
    """
    h = hashlib.sha256()
    if path.is_file():
        files = [path]
    else:
        files = sorted(c for c in path.iterdir() if c.is_file() and not c.name.startswith("."))
    for f in files:
        if path.is_dir():
            h.update(f.name.encode("utf-8", "surrogateescape") + b"\0")
        try:
            _feed(h, f)
        except OSError:
            h.update(b"<unreadable>")
        h.update(b"\0")
    return h.hexdigest()


def neutralise(value: Any) -> Any:
    """Make a CSV cell safe for spreadsheets: text starting with = + - @ tab CR gets a leading '.

    (OWASP "CSV injection": a spreadsheet runs a cell that starts with one of these as a formula.)
    """
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return ";".join(str(x) for x in v)
    if isinstance(v, dict):
        return str(v.get("message", ""))
    return str(v)


def csv_text(rows: list[dict[str, Any]], columns: Iterable[str]) -> str:
    """CSV of ``rows`` with every text cell neutralised (lists joined with ``;``, errors by message)."""
    cols = list(columns)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([neutralise(_cell(r.get(c))) for c in cols])
    return buf.getvalue()

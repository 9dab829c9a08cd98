"""Reading one student's submission (a file, a folder or a zip) into a Trace, keeping which file each
reader warning is about, and naming documents handed in instead of traces.

Zip members are read as streams, never extracted (docs/security.md rule 8); the uncompressed bytes
actually read are capped by ``Limits.max_archive_bytes`` and each member by ``max_input_bytes``.
Finding the submissions is :mod:`tracekit.batch.submissions`' job.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit._files import file_sha256
from tracekit.batch.submissions import check_archive, is_noise
from tracekit.errors import CorruptTraceError, LimitError, TracekitError, UnknownFormatError
from tracekit.grading.submissions import Submission, printable
from tracekit.limits import DEFAULT, Limits
from tracekit.pipeline import NOT_TRACES, NamedBytes, combine, read


def _read_members(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], label: str, limits: Limits,
                  budget: list[int]) -> list[tuple[str, bytes]]:
    """Read members as streams, counting the bytes really produced against the archive cap."""
    out = []
    for info in infos:
        buf = io.BytesIO()
        try:
            with zf.open(info) as fh:
                while chunk := fh.read(1 << 20):
                    budget[0] += len(chunk)
                    if budget[0] > limits.max_archive_bytes:
                        raise LimitError(f"more than {limits.max_archive_bytes:,} uncompressed bytes — a zip bomb?",
                                         path=f"{label}:{printable(info.filename)}",
                                         hint="raise max_archive_bytes in [limits] if the archive is genuine")
                    if buf.tell() + len(chunk) > limits.max_input_bytes:
                        raise LimitError("member over max_input_bytes", path=f"{label}:{printable(info.filename)}")
                    buf.write(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
            raise CorruptTraceError(f"damaged zip member: {exc}", path=f"{label}:{printable(info.filename)}",
                                    hint="re-create the zip") from None
        out.append((info.filename, buf.getvalue()))
    return out


def what_is(data: bytes) -> str | None:
    """Name a document that is not a trace from its first bytes (never its name), or None.

    Students rename a report to ``.pcap``; telling them "a zip archive" for a ``.docx``
    would not help. Magic numbers: ``%PDF-`` (ISO 32000-1 §7.5.2), OLE2 compound files
    ``D0 CF 11 E0 A1 B1 1A E1`` (MS-CFB §2.2: Word .doc, Excel .xls, PowerPoint .ppt), and
    zip files whose members name an Office Open XML or OpenDocument part (ECMA-376 Part 2).
    """
    if data.startswith(b"%PDF"):
        return "a PDF document"
    if data.startswith(bytes.fromhex("D0CF11E0A1B11AE1")):
        return "a Microsoft Office document (Word .doc, Excel .xls or PowerPoint .ppt)"
    if data.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                what = office_zip(zf.namelist())
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            return None
        if what:
            return what
    for magic, what in ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image")):
        if data.startswith(magic):
            return what
    return None


def office_zip(names: list[str]) -> str | None:
    """Name an Office Open XML / OpenDocument file from its zip member names, or None."""
    for prefix, what in (("word/", "a Word document (.docx)"), ("xl/", "an Excel workbook (.xlsx)"),
                         ("ppt/", "a PowerPoint presentation (.pptx)")):
        if any(n.startswith(prefix) for n in names):
            return what
    if "mimetype" in names and "content.xml" in names:
        return "an OpenDocument file (.odt/.ods)"
    return None


_HAND_IN = "hand in the trace files your simulation wrote (out.tr, Window.tr) or your capture (.pcap or .pcapng)"


@dataclass
class RunFiles:
    """One submission as read: its Trace and what each of its files was.

    Attributes:
        trace: The combined Trace.
        notes: Members refused (``{"member", "reason"}``).
        files: ``{"name", "sha256", "bytes", "format"}`` per file (``format`` None: not a trace;
            then ``what`` may name the document).
        warnings: The readers' warnings, each with the ``file`` it is about.
    """

    trace: Any
    notes: list[dict[str, str]]
    files: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)


#: Files of a folder above this size are read from disk, not held in memory (hash streamed, no line detail).
IN_MEMORY_BYTES = 64 << 20


def _source(name: str, data: bytes | Path) -> tuple[Any, bytes, dict[str, Any], bytes | None]:
    """What to read (bytes or path), its first bytes, its size and hash, and its bytes when in memory."""
    if isinstance(data, Path):
        with open(data, "rb") as fh:
            head = fh.read(1 << 20)
        return data, head, {"sha256": file_sha256(data), "bytes": data.stat().st_size}, None
    return NamedBytes(data, name), data, {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, data


def _read_parts(files: Sequence[tuple[str, bytes | Path]], label: str, limits: Limits, strict: bool,
                notes: list[dict[str, str]], where: str) -> RunFiles:
    """Read each file on its own (so that warnings keep their file) and combine the traces."""
    traces, skipped, infos, warns = [], [], [], []
    for name, data in sorted(files, key=lambda f: f[0]):
        short = printable(name.replace("\\", "/").rsplit("/", 1)[-1])
        source, head, digest, body = _source(short, data)
        info: dict[str, Any] = {"name": short, **digest, "format": None}
        infos.append(info)
        what = what_is(head)
        if what:
            info["what"] = what
            skipped.append(f"{short} ({what})")
            continue
        try:
            t = read(source, limits=limits, strict=strict)
        except UnknownFormatError:
            skipped.append(short)
            continue
        info["format"] = t.meta.get("format")
        warns += [{**w, "file": short, "detail": line_detail(body, w.get("line"), t.meta.get("format"))
                   if body is not None else None} for w in t.warnings]
        traces.append(t)
    if not traces:
        listed = ("; skipped: " + ", ".join(skipped[:12]) + (", …" if len(skipped) > 12 else "")) if skipped \
            else "; it is empty"
        raise UnknownFormatError(f"your {where} holds no packet trace{listed}", path=label, hint=_HAND_IN)
    # run folders hold scripts, notes and parameters beside the traces: only other files are worth a warning
    odd = [n for n in skipped if Path(n.split(" (")[0]).suffix.lower() not in NOT_TRACES]
    trace = traces[0] if len(traces) == 1 and not odd else combine(traces, path=label, skipped=odd)
    codes = {w["code"] for w in warns}
    warns += [w for w in trace.warnings if w["code"] not in codes]
    return RunFiles(trace, notes, infos, warns)


#: Fields of a line in a trace format that has a fixed count (ns-2 wired: 12, or 16 with show_tcphdr_).
_FIELDS = {"ns2": (12, 16)}


def line_detail(data: bytes, line: int | None, fmt: str | None) -> str | None:
    """``expected 12 columns, found 7`` for line ``line`` of a fixed-column text trace, or None."""
    if not line or fmt not in _FIELDS or line < 1:
        return None
    parts = data.split(b"\n", line)
    if len(parts) < line:
        return None
    n = len(parts[line - 1].split())
    counts = _FIELDS[fmt]
    if n in counts:
        return None
    return f"expected {counts[0]} columns, found {n}"


def _dir_files(d: Path) -> list[tuple[str, bytes | Path]]:
    entries = [c for c in d.iterdir() if not c.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        d = entries[0]  # a folder wrapping the run
    root = d.resolve()
    return [(c.name, c.read_bytes() if c.stat().st_size <= IN_MEMORY_BYTES else c) for c in sorted(d.iterdir())
            if c.is_file() and not c.name.startswith(".") and not is_noise(c.name)
            and c.resolve().is_relative_to(root)]


def read_run(sub: Submission, limits: Limits = DEFAULT, strict: bool = False) -> RunFiles:
    """Read one submission into a Trace, keeping which file each warning is about.

    Raises:
        TracekitError: when nothing usable can be read (phrased for the student).
    """
    notes = list(sub.notes)
    label = sub.id
    if sub.kind == "file":
        return _read_file(sub, limits, strict)
    if sub.kind == "dir":
        return _read_parts(_dir_files(Path(sub.path)), label, limits, strict, notes, "folder")
    budget = [0]
    try:
        with zipfile.ZipFile(sub.path) as zf:
            infos, bad = check_archive(zf, label, limits) if sub.kind == "zip" else \
                ([zf.getinfo(m) for m in sub.members], [])
            notes.extend(bad)
            office = office_zip(zf.namelist()) if sub.kind == "zip" else None
            if office:
                raise UnknownFormatError(f"{sub.original} is {office}, not a packet trace", path=label,
                                         hint=_HAND_IN)
            files = _read_members(zf, infos, label, limits, budget)
        if sub.nested:
            with zipfile.ZipFile(io.BytesIO(files[0][1])) as inner:
                infos, bad = check_archive(inner, label, limits)
                notes.extend(bad)
                files = _read_members(inner, infos, label, limits, budget)
        return _read_parts(files, label, limits, strict, notes, "zip")
    except TracekitError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError) as exc:
        raise UnknownFormatError(f"cannot read the zip: {exc}", path=label, hint="re-create the zip") from None


def _read_file(sub: Submission, limits: Limits, strict: bool) -> RunFiles:
    """A single-file submission: named if it is a document, read from disk, hashed by streaming."""
    p = Path(sub.path)
    name = printable(p.name)
    with open(p, "rb") as fh:
        head = fh.read(1 << 16)
    what = what_is(head)
    if what:
        raise UnknownFormatError(f"{name} is {what}, not a packet trace", path=sub.id, hint=_HAND_IN)
    trace = read(sub.path, limits=limits, strict=strict)
    size = p.stat().st_size
    info = {"name": name, "sha256": file_sha256(p), "bytes": size, "format": trace.meta.get("format")}
    small = size <= 64 << 20
    warns = [{**w, "file": name, "detail": line_detail(p.read_bytes(), w.get("line"), trace.meta.get("format"))
              if small else None} for w in trace.warnings]
    return RunFiles(trace, list(sub.notes), [info], warns)


def read_submission(sub: Submission, limits: Limits = DEFAULT,
                    strict: bool = False) -> tuple[Any, list[dict[str, str]]]:
    """Read one submission into a Trace (see :func:`read_run`).

    Returns:
        The Trace and the members refused while reading it (``{"member", "reason"}``).

    Raises:
        TracekitError: when nothing usable can be read.
    """
    got = read_run(sub, limits, strict)
    return got.trace, got.notes

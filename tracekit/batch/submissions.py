"""Finding student submissions and reading each one as a Trace, without trusting any name in them.

A submissions folder holds one entry per student:

* a trace file (``alice.pcap``) — id ``alice``;
* a directory (``bob/`` with ``out.tr``, ``Window.tr``, ...) — its files are read
  together as one run (a directory holding only one sub-folder is entered);
* a zip (``carol.zip``) — its members are read together as one run.

``--submissions`` may also be one zip holding all of them (an LMS download): its
top-level files, folders and inner zips are the submissions (a single top-level
folder wrapping everything is entered).

The records (:class:`~tracekit.grading.submissions.Submission`, ids, output paths) are in
:mod:`tracekit.grading.submissions`. Zip members are read as streams, never extracted (RELIABILITY.md §7.5): members
with absolute paths, ``..``, drive letters, NUL bytes, links or other non-regular
types, and encrypted ones are refused and reported; the member count and the
uncompressed bytes actually read are capped by ``Limits.max_archive_members`` /
``max_archive_bytes``. Submission ids are derived from names but always match
``^[A-Za-z0-9._-]{1,64}$``; output paths are checked to stay in the output folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tracekit._files import file_sha256
from tracekit.errors import CorruptTraceError, LimitError, TracekitError, UnknownFormatError, UsageError
from tracekit.grading.rubric import valid_id
from tracekit.grading.submissions import Discovery, Submission, make_id, printable
from tracekit.limits import DEFAULT, Limits
from tracekit.pipeline import NOT_TRACES, NamedBytes, combine, read

#: Files every zip tool adds that are never traces.
_NOISE = ("__MACOSX/", ".DS_Store", "Thumbs.db", "desktop.ini")


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member may not be read, or None. Directory entries are not members."""
    name = info.filename
    if "\x00" in name:
        return "NUL byte in the name"
    norm = name.replace("\\", "/")
    if norm.startswith("/"):
        return "absolute path"
    if re.match(r"^[A-Za-z]:", norm):
        return "drive letter in the path"
    if ".." in PurePosixPath(norm).parts:
        return "'..' in the path"
    ftype = stat.S_IFMT(info.external_attr >> 16)
    # Made on Unix, the high 16 bits are st_mode; many writers (Python's writestr) set only the
    # permission bits, so no type at all means a plain file.
    if info.create_system == 3 and ftype:
        if ftype == stat.S_IFLNK:
            return "symbolic link"
        if ftype not in (stat.S_IFREG, stat.S_IFDIR):
            return "not a regular file"
    if info.flag_bits & 0x1:
        return "encrypted"
    return None


def _noise(name: str) -> bool:
    norm = name.replace("\\", "/")
    base = norm.rsplit("/", 1)[-1]
    return norm.startswith(_NOISE[0]) or base in _NOISE[1:] or base.startswith(".")


def check_archive(zf: zipfile.ZipFile, label: str,
                  limits: Limits) -> tuple[list[zipfile.ZipInfo], list[dict[str, str]]]:
    """The readable file members of an archive and the refused ones.

    Raises:
        LimitError: too many members, or declared sizes over the cap.
    """
    infos = zf.infolist()
    if len(infos) > limits.max_archive_members:
        raise LimitError(f"the archive has {len(infos):,} members, over the limit of {limits.max_archive_members:,}",
                         path=label, hint="raise max_archive_members in [limits] if this is intended")
    ok: list[zipfile.ZipInfo] = []
    bad: list[dict[str, str]] = []
    seen: set[str] = set()
    for info in infos:
        why = member_problem(info)
        if why:
            bad.append({"member": printable(info.filename), "reason": why})
            continue
        if info.is_dir() or _noise(info.filename):
            continue
        norm = info.filename.replace("\\", "/")
        if norm in seen:
            bad.append({"member": printable(info.filename), "reason": "duplicate name"})
            continue
        seen.add(norm)
        ok.append(info)
    declared = sum(i.file_size for i in ok)
    if declared > limits.max_archive_bytes:
        raise LimitError(f"the archive declares {declared:,} uncompressed bytes, over the limit of "
                         f"{limits.max_archive_bytes:,}", path=label,
                         hint="raise max_archive_bytes in [limits] if this is intended")
    return ok, bad


def discover(path: str | os.PathLike[str], limits: Limits = DEFAULT) -> Discovery:
    """Find the submissions in a folder or in one zip of them (see the module docstring).

    Raises:
        UsageError: when ``path`` does not exist. LimitError: an archive over its caps.
    """
    p = Path(path)
    found = Discovery()
    taken: set[str] = set()
    if p.is_file() and zipfile.is_zipfile(p):
        return _discover_zip(p, limits, taken)
    if p.is_file():
        found.submissions.append(Submission(make_id(p.name, taken), "zip" if zipfile.is_zipfile(p) else "file",
                                            os.fspath(p), original=printable(p.name)))
        return found
    if not p.is_dir():
        raise UsageError("no such submissions folder or zip", path=os.fspath(p))
    root = p.resolve()
    for child in sorted(p.iterdir()):
        if child.name.startswith(".") or child.name in ("__MACOSX", *_NOISE[1:]):
            continue
        if child.is_symlink() or not child.resolve().is_relative_to(root):
            found.rejected.append({"member": printable(child.name), "reason": "symbolic link"})
            continue
        if child.is_dir():
            kind = "dir"
        elif child.is_file():
            kind = "zip" if zipfile.is_zipfile(child) else "file"
        else:
            found.rejected.append({"member": printable(child.name), "reason": "not a regular file"})
            continue
        found.submissions.append(Submission(make_id(child.name, taken), kind, os.fspath(child),
                                            original=printable(child.name)))
    return found


def _discover_zip(p: Path, limits: Limits, taken: set[str]) -> Discovery:
    found = Discovery()
    try:
        with zipfile.ZipFile(p) as zf:
            members, found.rejected = check_archive(zf, os.fspath(p), limits)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise UnknownFormatError(f"cannot read the submissions zip: {exc}", path=os.fspath(p)) from None
    names = [m.filename.replace("\\", "/") for m in members]
    tops = {n.split("/", 1)[0] for n in names}
    prefix = ""
    if len(tops) == 1 and all("/" in n for n in names):
        top = next(iter(tops)) + "/"
        inner = [n[len(top):] for n in names]
        # one folder wrapping every submission (folders or zips inside it): enter it; a single
        # folder with trace files directly in it is one student's run
        if all("/" in n or n.lower().endswith(".zip") for n in inner):
            prefix = top
    groups: dict[str, list[str]] = {}
    for m, n in zip(members, names, strict=True):
        rest = n[len(prefix):]
        head, sep, _ = rest.partition("/")
        groups.setdefault(head + sep, []).append(m.filename)
    for head in sorted(groups):
        nested = not head.endswith("/") and head.lower().endswith(".zip")
        found.submissions.append(Submission(make_id(head, taken), "members", os.fspath(p),
                                            members=tuple(groups[head]), nested=nested,
                                            original=printable(prefix + head)))
    return found


# ---- reading (in a worker) ---------------------------------------------------------------------------------


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
            if c.is_file() and not c.name.startswith(".") and not _noise(c.name)
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


def single(path: str | os.PathLike[str], sub_id: str | None = None) -> Submission:
    """One submission given directly (``--submission``: e.g. Gradescope's ``/autograder/submission``).

    Raises:
        UsageError: when the path does not exist.
    """
    p = Path(path)
    if not p.exists():
        raise UsageError("no such submission", path=os.fspath(p))
    kind = "dir" if p.is_dir() else ("zip" if zipfile.is_zipfile(p) else "file")
    sid = sub_id if sub_id and valid_id(sub_id) else make_id(p.name, set())
    return Submission(sid, kind, os.fspath(p), original=printable(p.name))

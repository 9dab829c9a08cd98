"""Finding student submissions without trusting any name in them (reading one: :mod:`tracekit.batch.handins`).

A submissions folder holds one entry per student:

* a trace file (``alice.pcap``) — id ``alice``;
* a directory (``bob/`` with ``out.tr``, ``Window.tr``, ...) — its files are read
  together as one run (a directory holding only one sub-folder is entered);
* a zip (``carol.zip``) — its members are read together as one run.

``--submissions`` may also be one zip holding all of them (an LMS download): its
top-level files, folders and inner zips are the submissions (a single top-level
folder wrapping everything is entered).

The records (:class:`~tracekit.grading.submissions.Submission`, ids, output paths) are in
:mod:`tracekit.grading.submissions`. Zip members with absolute paths, ``..``, drive letters, NUL bytes, links or other
non-regular types, and encrypted ones are refused and reported; the member count is capped
by ``Limits.max_archive_members``. Submission ids are derived from names but always match
``^[A-Za-z0-9._-]{1,64}$``; output paths are checked to stay in the output folder.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from tracekit.errors import LimitError, UnknownFormatError, UsageError
from tracekit.grading.rubric import valid_id
from tracekit.grading.submissions import Discovery, Submission, make_id, printable
from tracekit.limits import DEFAULT, Limits

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


def is_noise(name: str) -> bool:
    """True for what zip tools and desktops add beside a hand-in (``__MACOSX/``, ``.DS_Store``, hidden files)."""
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
        if info.is_dir() or is_noise(info.filename):
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

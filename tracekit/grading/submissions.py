"""A student's submission as the grader knows it: its safe id, kind and where it is, and where its
outputs go. Finding submissions and reading them is :mod:`tracekit.batch.submissions`' job.

Submission ids are derived from names but always match ``^[A-Za-z0-9._-]{1,64}$``
(:func:`tracekit.grading.rubric.valid_id`); output paths are checked to stay in the output folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tracekit._files import safe_join
from tracekit.errors import OutputError
from tracekit.grading.rubric import valid_id

#: Compression suffixes dropped from a submission's name before its extension.
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")


@dataclass(frozen=True)
class Submission:
    """One student's submission.

    Attributes:
        id: Safe id (file and CSV name); unique within the batch.
        kind: ``file``, ``dir``, ``zip`` (a zip file) or ``members`` (a group inside a submissions zip).
        path: The file, folder or zip on disk.
        members: For ``members``: the member names (already checked) in the zip at ``path``.
        nested: For ``members``: the single member is itself a zip to read from memory.
        original: The name it was found under (display only; may be anything).
        notes: Members refused while discovering it, ``{"member", "reason"}``.
    """

    id: str
    kind: str
    path: str
    members: tuple[str, ...] = ()
    nested: bool = False
    original: str = ""
    notes: tuple[dict[str, str], ...] = ()


@dataclass
class Discovery:
    """The submissions found, and what was refused on the way."""

    submissions: list[Submission] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)


def printable(name: str, limit: int = 120) -> str:
    """A name fit for messages: control characters replaced, length capped."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", "?", name)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_id(name: str, taken: set[str]) -> str:
    """A safe, unique id from a file or folder name (extension and compression suffix dropped)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    for suf in _COMPRESSED:
        if base.lower().endswith(suf):
            base = base[: -len(suf)]
    stem, dot, ext = base.rpartition(".")
    if dot and stem and len(ext) <= 8:
        base = stem
    sid = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._-")[:60] or "submission"
    cand, n = sid, 2
    while cand in taken or not valid_id(cand):
        cand = f"{sid[:56]}-{n}"
        n += 1
    taken.add(cand)
    return cand


def output_path(outdir: Path, sub_id: str, filename: str) -> Path:
    """``outdir/sub_id/filename``, refusing an unsafe id or a path leaving ``outdir``.

    Raises:
        OutputError: for an invalid id or an escaping path.
    """
    if not valid_id(sub_id) or not valid_id(filename):
        raise OutputError(f"unsafe output name {printable(sub_id)!r}/{printable(filename)!r}", path=str(outdir))
    return safe_join(outdir, sub_id, filename)

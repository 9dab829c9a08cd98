"""Reader registry: pick a reader from a file's content and read it into a Trace.

Each reader is one module named for its format, exposing::

    NAME: str            registry name (``--format NAME``)
    DESCRIPTION: str     one line for ``tracekit formats``
    DETECT: str          the detection rule, in words
    def sniff(head: bytes) -> bool          # head = first 64 KiB, decompressed
    def read(source, *, limits, strict, name, <its own options>) -> Trace

A reader's keyword parameters are its options: :func:`read` refuses any other name with a
:class:`~tracekit.errors.UsageError` (``tracekit.read(p, stirct=True)`` must not pass silently).
Readers are imported lazily so that ``tracekit --help`` stays fast.
Order matters: binary magics first, then the more specific text formats.
"""

from __future__ import annotations

import importlib
import inspect
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tracekit._source import NamedBytes, Source, compression_of, describe, read_raw
from tracekit.errors import LimitError, TracekitError, UnknownFormatError, UsageError
from tracekit.limits import DEFAULT, Limits

#: Registry names in sniffing order -> module name under tracekit.parsers.
READERS: dict[str, str] = {
    "pcap": "pcap",
    "pcapng": "pcapng",
    "snoop": "snoop",
    "flent": "flent",
    "flowmon": "flowmon",
    "ss": "ss",
    "nstat": "nstat",
    "ns3-ascii": "ns3_ascii",
    "ns2-wireless": "ns2_wireless",
    "ns2": "ns2",
    "ns2-monitor": "ns2_monitor",
    "ns3-series": "ns3_series",
    "netsim": "netsim",
    "opnet": "opnet",
    "peekclassic": "peekclassic",
    "erf": "erf",
    "tshark": "tshark",
}

HEAD_BYTES = 64 * 1024

#: File endings in a run directory that are not traces and are skipped without a warning.
_NOT_TRACES = {".json", ".md", ".py", ".sh", ".tcl", ".cc", ".plot", ".toml", ".html", ".png", ".svg",
               ".pdf", ".nam", ".gp", ".txt~", ".log"}


@dataclass(frozen=True)
class ReaderInfo:
    """What ``tracekit formats`` prints about one reader."""

    name: str
    description: str
    detect: str


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"tracekit.parsers.{READERS[name]}")
    except ModuleNotFoundError as exc:
        # A reader not written yet (or an optional dependency missing) is simply not offered.
        if exc.name and exc.name.startswith("tracekit.parsers."):
            return None
        raise


def available() -> list[ReaderInfo]:
    """The readers this installation offers, in sniffing order."""
    out = []
    for name in READERS:
        mod = _module(name)
        if mod is not None:
            out.append(ReaderInfo(name, mod.DESCRIPTION, mod.DETECT))
    return out


def reader_options(mod: ModuleType) -> frozenset[str]:
    """The option names a reader's ``read`` takes: its keyword parameters, ``source`` aside.

    A ``**kwargs`` catch-all adds no name, so a reader that still has one gets the same check.
    """
    params = inspect.signature(mod.read).parameters.values()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(p.name for p in params if p.kind in kinds and p.name != "source")


def _check_options(who: str, accepted: frozenset[str], options: dict[str, Any]) -> None:
    """Refuse option names ``who`` (a reader, or the readers of a directory) does not take."""
    unknown = sorted(set(options) - accepted)
    if unknown:
        listed = ", ".join(repr(u) for u in unknown)
        raise UsageError(f"{who}: unknown option {listed}", hint=f"valid options: {', '.join(sorted(accepted))}")


def head_of(data: bytes) -> bytes:
    """The first 64 KiB of ``data``, decompressed if it is gzip/bz2/xz."""
    kind = compression_of(data[:8])
    if kind == "gzip":
        try:
            return zlib.decompressobj(47).decompress(data[: 4 * HEAD_BYTES], HEAD_BYTES)
        except zlib.error:
            return b""
    if kind in ("bz2", "xz"):
        import bz2
        import lzma

        try:
            dec: bz2.BZ2Decompressor | lzma.LZMADecompressor = (
                bz2.BZ2Decompressor() if kind == "bz2" else lzma.LZMADecompressor())
            return dec.decompress(data[: 4 * HEAD_BYTES], HEAD_BYTES)
        except (OSError, EOFError, lzma.LZMAError, ValueError):
            return b""
    return data[:HEAD_BYTES]


def sniff_bytes(head: bytes) -> str | None:
    """Name the reader that recognises these first bytes, or None."""
    for name in READERS:
        mod = _module(name)
        if mod is not None and mod.sniff(head):
            return name
    return None


def sniff(path: str | os.PathLike[str]) -> str | None:
    """Name the reader for a file, from its content (never its extension)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(4 * HEAD_BYTES)
    except OSError:
        return None
    return sniff_bytes(head_of(data))


def _unknown(name: str, data: bytes) -> UnknownFormatError:
    if not data:
        return UnknownFormatError("empty file (0 bytes)", path=name,
                                  hint="the trace was not written; check the simulator or capture run")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return UnknownFormatError(
            "looks like UTF-16 text, which no reader accepts as is", path=name, offset=0,
            hint="re-save as UTF-8 (Excel: 'CSV UTF-8') or pass --encoding utf-16")
    if data[:4] == b"PK\x03\x04":
        return UnknownFormatError("is a zip archive, not a trace", path=name, offset=0,
                                  hint="unzip it, or pass the archive to `tracekit grade` as a submission")
    names = ", ".join(r.name for r in available())
    return UnknownFormatError(f"not a recognised trace format (first bytes {data[:8].hex(' ')})",
                              path=name, offset=0, hint=f"tracekit reads: {names}; force one with --format")


def read(source: Source, format: str | None = None, *, limits: Limits = DEFAULT, **options: Any) -> Any:
    """Read a trace file (or a directory holding one run) into a :class:`~tracekit.trace.Trace`.

    Args:
        source: A path, a directory, bytes or a binary stream.
        format: A registry name to skip detection.
        limits: Resource limits.
        **options: Passed to the reader (e.g. ``strict=True``).

    Returns:
        The validated Trace.

    Raises:
        TracekitError: for any input the readers cannot accept.
    """
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        return read_dir(Path(source), limits=limits, **options)
    if isinstance(source, (str, os.PathLike)) and _is_pipe(source):
        # a pipe can be read once only (sniffing, then the reader) and not mapped: all of it now
        source = NamedBytes(*read_raw(source, limits))
    if format is not None:
        if format not in READERS:
            raise UnknownFormatError(f"unknown format {format!r}", hint=f"choose one of {', '.join(READERS)}")
        mod = _module(format)
        if mod is None:
            raise UnknownFormatError(f"reader {format!r} is not available in this installation")
        return _call(mod, source, limits, options, format)
    if isinstance(source, (str, os.PathLike)):
        # Sniff from the head only; the reader reads the file itself (no second copy in memory).
        name = describe(source)
        try:
            size = os.stat(source).st_size
            with open(source, "rb") as fh:
                data = fh.read(4 * HEAD_BYTES)
        except OSError:
            data, name = read_raw(source, limits)  # raises the proper error
            size = len(data)
        if size > limits.max_input_bytes:
            read_raw(source, limits)  # raises LimitError
        target: Any = source
    else:
        data, name = read_raw(source, limits)
        target = NamedBytes(data, name)
    head = head_of(data)
    found = sniff_bytes(head)
    if found is None:
        raise _unknown(name, head if compression_of(data[:8]) else data)
    mod = _module(found)
    assert mod is not None
    return _call(mod, target, limits, {**options, "name": name}, found)


def _is_pipe(path: str | os.PathLike[str]) -> bool:
    """A pipe (``<(zcat x.gz)``, ``/dev/stdin`` fed by one): neither seekable nor mappable.

    Not character devices: ``/dev/zero`` would be read up to ``max_input_bytes`` (4 GiB) before
    being refused, where its first bytes already say that it is no trace.
    """
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _call(mod: ModuleType, source: Any, limits: Limits, options: dict[str, Any], reader: str) -> Any:
    """Run a reader, turning any escaped low-level exception into a TracekitError."""
    _check_options(f"the {reader} reader", reader_options(mod), options)
    name = options.get("name") or describe(source)
    try:
        return mod.read(source, limits=limits, **options)
    except TracekitError:
        raise
    except MemoryError:
        raise LimitError("ran out of memory while reading", path=name,
                         hint="the file is larger than this machine can analyse; lower max_packets") from None
    except RecursionError:
        raise LimitError("input nests too deeply", path=name) from None
    except Exception as exc:  # noqa: BLE001 - the contract: no other exception type escapes a reader
        from tracekit.errors import CorruptTraceError

        raise CorruptTraceError(f"could not be read ({type(exc).__name__}: {exc})", path=name,
                                hint="the file may be damaged; run with --debug and report it if not") from exc


def read_dir(path: Path, *, limits: Limits = DEFAULT, **options: Any) -> Any:
    """Read every recognised file of one run's directory and combine them into one Trace.

    Files that are not traces (scripts, plots, notes) are skipped with a warning.
    Symlinks pointing outside the directory are not followed. Each file's reader gets the
    options it takes (``mapping`` goes to an OPNET export, not to the capture beside it); an
    option no file's reader takes is a UsageError, as for a single file.
    """
    from tracekit.kernel import combine_run

    root = path.resolve()
    options = {k: v for k, v in options.items() if k != "name"}
    traces = []
    skipped: list[str] = []
    every = frozenset().union(*(reader_options(m) for m in map(_module, READERS) if m is not None))
    _check_options("tracekit's readers", every, options)  # a misspelt option fails before any file is read
    used: set[str] = set()
    for p in sorted(path.iterdir()):
        if not p.is_file() or p.name.startswith("."):
            continue
        if not p.resolve().is_relative_to(root):
            skipped.append(f"{p.name} (link out of the directory)")
            continue
        fmt = sniff(p)
        if fmt is None:
            # Run folders hold scripts, notes and parameters beside the traces; only other
            # unrecognised files are worth a warning. (Detection itself never uses the name.)
            if p.suffix.lower() not in _NOT_TRACES:
                skipped.append(p.name)
            continue
        mod = _module(fmt)
        accepted = reader_options(mod) if mod is not None else frozenset()
        used |= accepted
        traces.append(read(p, fmt, limits=limits, **{k: v for k, v in options.items() if k in accepted}))
    if not traces:
        raise UnknownFormatError("directory holds no recognised trace file", path=str(path),
                                 hint="pass the trace file itself, or check `tracekit formats`")
    _check_options(f"the readers of the files in {path}", frozenset(used), options)
    try:
        return combine_run(traces, path=str(path), skipped=skipped)
    except TracekitError:
        raise
    except Exception as exc:  # noqa: BLE001 - the contract: no other exception type escapes a reader
        from tracekit.errors import CorruptTraceError

        raise CorruptTraceError(f"the files of this directory cannot be combined ({type(exc).__name__}: {exc})",
                                path=str(path), hint="read the files one by one") from exc

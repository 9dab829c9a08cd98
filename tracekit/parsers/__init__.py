"""Reader registry: pick a reader from a file's content and read it into a Trace.

Each reader is one module named for its format, exposing::

    NAME: str            registry name (``--format NAME``)
    DESCRIPTION: str     one line for ``tracekit formats``
    DETECT: str          the detection rule, in words
    def sniff(head: bytes) -> bool          # head = first 64 KiB, decompressed
    def read(source, **options) -> Trace

Readers are imported lazily so that ``tracekit --help`` stays fast.
Order matters: binary magics first, then the more specific text formats.
"""

from __future__ import annotations

import importlib
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tracekit._source import NamedBytes, Source, compression_of, describe, read_raw
from tracekit.errors import LimitError, TracekitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits

#: Registry names in sniffing order -> module name under tracekit.parsers.
READERS: dict[str, str] = {
    "pcap": "pcap",
    "pcapng": "pcapng",
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
        return _call(mod, source, limits, options)
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
    return _call(mod, target, limits, {**options, "name": name})


def _is_pipe(path: str | os.PathLike[str]) -> bool:
    """A pipe (``<(zcat x.gz)``, ``/dev/stdin`` fed by one): neither seekable nor mappable.

    Not character devices: ``/dev/zero`` would be read up to ``max_input_bytes`` (4 GiB) before
    being refused, where its first bytes already say that it is no trace.
    """
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _call(mod: ModuleType, source: Any, limits: Limits, options: dict[str, Any]) -> Any:
    """Run a reader, turning any escaped low-level exception into a TracekitError."""
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
    Symlinks pointing outside the directory are not followed.
    """
    from tracekit.kernel import combine_run

    root = path.resolve()
    traces = []
    skipped: list[str] = []
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
        traces.append(read(p, fmt, limits=limits, **{k: v for k, v in options.items() if k != "name"}))
    if not traces:
        raise UnknownFormatError("directory holds no recognised trace file", path=str(path),
                                 hint="pass the trace file itself, or check `tracekit formats`")
    try:
        return combine_run(traces, path=str(path), skipped=skipped)
    except TracekitError:
        raise
    except Exception as exc:  # noqa: BLE001 - the contract: no other exception type escapes a reader
        from tracekit.errors import CorruptTraceError

        raise CorruptTraceError(f"the files of this directory cannot be combined ({type(exc).__name__}: {exc})",
                                path=str(path), hint="read the files one by one") from exc

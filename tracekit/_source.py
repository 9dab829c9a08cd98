"""Loading an input's bytes: files, bytes or streams, with transparent, capped decompression.

Compression is recognised by magic bytes, never by extension. Decompression is
streamed with a byte cap so that a small bomb is refused after reading at most
the cap (see :class:`tracekit.limits.Limits`).
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tracekit.errors import CorruptTraceError, LimitError, TracekitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

_CHUNK = 1 << 20


class NamedBytes(bytes):
    """Bytes that remember the file they came from, so errors name it (``describe`` reads ``.name``)."""

    name: str

    def __new__(cls, data: bytes, name: str) -> NamedBytes:
        obj = super().__new__(cls, data)
        obj.name = name
        return obj


@dataclass(frozen=True)
class Loaded:
    """An input's (decompressed) bytes and where they came from."""

    data: bytes
    path: str
    compression: str | None


def describe(source: Source) -> str:
    """A printable name for a source (its path, or ``<bytes>``/``<stream>``)."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, NamedBytes):
        return source.name
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<bytes>"
    return str(getattr(source, "name", "<stream>"))


def read_raw(source: Source, limits: Limits = DEFAULT) -> tuple[bytes, str]:
    """Read a source's stored bytes (no decompression), enforcing ``max_input_bytes``.

    Raises:
        UnknownFormatError: for a directory or a missing file.
        LimitError: if the input is larger than allowed.
    """
    name = describe(source)
    data: bytes
    if isinstance(source, NamedBytes):
        data = source
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, (str, os.PathLike)):
        p = Path(source)
        try:
            if p.is_dir():
                raise UnknownFormatError("is a directory, expected a file", path=name,
                                         hint="directories are read with tracekit.read(path)")
            size = p.stat().st_size
            if size > limits.max_input_bytes:
                raise LimitError(f"file is {size:,} bytes, over the limit of {limits.max_input_bytes:,}",
                                 path=name, hint="raise max_input_bytes in [limits] if this is intended")
            with open(p, "rb") as fh:
                # a regular file: read(size + 1), not read(limit + 1): CPython sizes its buffer
                # from the argument, which under an address-space cap (batch workers) fails
                # before reading anything. A pipe (`tracekit analyze <(zcat x.pcap.gz)`) has
                # size 0 until it ends.
                regular = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
                data = fh.read(size + 1) if regular else _read_stream(fh, limits)
        except TracekitError:
            raise
        except FileNotFoundError:
            raise UnknownFormatError("no such file", path=name) from None
        except OSError as exc:
            raise UnknownFormatError(f"cannot read file: {exc.strerror or exc}", path=name) from None
    else:
        data = _read_stream(source, limits)
    if len(data) > limits.max_input_bytes:
        raise LimitError(f"input is over the limit of {limits.max_input_bytes:,} bytes", path=name)
    return data, name


def _read_stream(fh: BinaryIO, limits: Limits) -> bytes:
    """A stream's bytes up to one past ``max_input_bytes`` (the caller refuses that), 1 MiB at a time."""
    chunks: list[bytes] = []
    total = 0
    while total <= limits.max_input_bytes:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def compression_of(head: bytes) -> str | None:
    """Name the compression whose magic starts ``head`` (``gzip``, ``bz2``, ``xz``, ``zstd``) or None."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZ2_MAGIC) and len(head) > 3 and head[3:4].isdigit():
        return "bz2"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def _cap(limits: Limits, stored: int) -> tuple[int, int]:
    """(hard cap, ratio cap) in bytes for an input of ``stored`` compressed bytes."""
    ratio_cap = max(limits.ratio_floor_bytes, int(stored * limits.max_ratio))
    return limits.max_decompressed_bytes, ratio_cap


def decompress(data: bytes, kind: str, name: str, limits: Limits = DEFAULT) -> bytes:
    """Decompress ``data`` in chunks, refusing output beyond the limits.

    Raises:
        LimitError: when the output passes ``max_decompressed_bytes`` or the ratio cap.
        CorruptTraceError: when the compressed stream is damaged or cut short.
        UnknownFormatError: for zstd (no decompressor in the standard library).
    """
    hard, ratio_cap = _cap(limits, len(data))
    cap = min(hard, ratio_cap)
    if kind == "gzip":
        # wbits 47 = auto header detection + max window; handles concatenated members below.
        d: object = zlib.decompressobj(47)
    elif kind == "bz2":
        d = bz2.BZ2Decompressor()
    elif kind == "xz":
        d = lzma.LZMADecompressor()
    else:
        raise UnknownFormatError(f"{kind}-compressed input is not supported", path=name,
                                 hint=f"decompress it first (e.g. `{kind} -d`)")
    out = io.BytesIO()
    pos = 0
    total = 0
    buf = data
    try:
        while True:
            if kind == "gzip":
                chunk = d.decompress(buf[pos:pos + _CHUNK], cap + 1 - total)  # type: ignore[attr-defined]
                # unconsumed_tail holds input not yet processed because of max_length.
                tail = d.unconsumed_tail  # type: ignore[attr-defined]
                consumed = min(_CHUNK, len(buf) - pos) - len(tail)
                pos += consumed
            else:
                chunk = d.decompress(buf[pos:pos + _CHUNK], cap + 1 - total)  # type: ignore[attr-defined]
                pos += min(_CHUNK, len(buf) - pos)
            total += len(chunk)
            out.write(chunk)
            if total > cap:
                which = "hard limit" if cap == hard else f"{limits.max_ratio:g}x the compressed size"
                raise LimitError(
                    f"decompressed size exceeds {cap:,} bytes ({which}) — a decompression bomb?",
                    path=name,
                    hint="raise max_decompressed_bytes / max_ratio in [limits] if the file is genuine",
                )
            if getattr(d, "eof", False):
                rest = getattr(d, "unused_data", b"")
                if kind == "gzip" and rest and rest.startswith(GZIP_MAGIC):
                    # Concatenated gzip members (gzip -c a >> b): continue with a fresh decompressor.
                    buf = rest
                    pos = 0
                    d = zlib.decompressobj(47)
                    continue
                break
            if pos >= len(buf) and not chunk:
                needs = getattr(d, "needs_input", True)
                if needs or kind == "gzip":
                    raise CorruptTraceError(
                        f"{kind} stream ends early after {total:,} decompressed bytes",
                        path=name, offset=len(data),
                        hint="the file was cut short; re-copy or re-download it")
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise CorruptTraceError(f"damaged {kind} stream: {exc}", path=name,
                                hint="the compressed file is corrupt; re-copy it") from None
    return out.getvalue()


def load(source: Source, limits: Limits = DEFAULT) -> Loaded:
    """Read a source and decompress it if its magic says so.

    Args:
        source: A path, bytes, or a binary stream.
        limits: Size limits.

    Returns:
        The bytes to parse, the name for messages, and the compression found.
    """
    data, name = read_raw(source, limits)
    kind = compression_of(data[:8])
    if kind is None:
        return Loaded(data, name, None)
    return Loaded(decompress(data, kind, name, limits), name, kind)

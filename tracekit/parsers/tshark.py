"""The slow path: any capture Wireshark reads, decoded by tshark (found through pyshark).

Used for link types the vectorized fast path does not decode (802.11, Cisco HDLC, ...):
automatically by the pcap/pcapng readers (with a ``W-SLOW-PATH`` warning), or on request with
``--format tshark``. It never claims a file by sniffing.

Why not ``pyshark.FileCapture``: it builds one Python object per packet from tshark's PDML
(~1-2 k packets/s) and its asyncio plumbing is fragile on damaged files (pyshark #437, #628).
pyshark's own tshark lookup (``config.ini``, then ``PATH``) is used to find the binary, and
tshark is run once with ``-T fields``: one tab-separated line per frame, parsed by polars.
Sequence numbers are requested raw (``-o tcp.relative_sequence_numbers:FALSE``) and made
relative by the same code as the fast path, so both paths agree.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from tracekit._source import NamedBytes, Source, describe, load
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.trace import Trace, WarningLog

NAME = "tshark"
DESCRIPTION = "any capture Wireshark reads, decoded slowly through tshark (needs pyshark + tshark)"
DETECT = "never detected: used with --format tshark, or by pcap/pcapng for link types the fast path lacks"

#: tshark fields, in output order -> column name.
FIELDS: dict[str, str] = {
    "frame.number": "frame",
    "frame.time_epoch": "_time",
    "frame.len": "size",
    "frame.cap_len": "caplen",
    "ip.src": "_src4",
    "ip.dst": "_dst4",
    "ipv6.src": "_src6",
    "ipv6.dst": "_dst6",
    "tcp.srcport": "_tsport",
    "tcp.dstport": "_tdport",
    "udp.srcport": "_usport",
    "udp.dstport": "_udport",
    "udp.length": "_ulen",
    "tcp.len": "_tlen",
    "tcp.seq_raw": "seq_raw",
    "tcp.ack_raw": "ack_raw",
    "tcp.flags": "_flags",
    "tcp.window_size_value": "win_raw",
    "tcp.options.mss_val": "mss",
    "tcp.options.wscale.shift": "wscale",
    "tcp.options.timestamp.tsval": "ts_val",
    "tcp.options.timestamp.tsecr": "ts_ecr",
    "tcp.options.sack_le": "_sack_l",
    "tcp.options.sack_re": "_sack_r",
    "ip.fragment": "_frag4",
    "ipv6.fragment": "_frag6",
    "ip.ttl": "_ttl4",
    "ipv6.hlim": "_ttl6",
}
#: Preferences: raw numbers (tracekit makes them relative), no TCP reassembly (one row per frame,
#: fields of the frame itself), no sequence analysis (not needed, and the slowest part). IP
#: reassembly stays on (its default), as the fast path reassembles (src/capture/reasm.rs).
_PREFS = (
    "tcp.relative_sequence_numbers:FALSE",
    "tcp.analyze_sequence_numbers:FALSE",
    "tcp.desegment_tcp_streams:FALSE",
)


def sniff(head: bytes) -> bool:
    """Never: this reader is only used on request or as the capture readers' fallback."""
    return False


def tshark_path() -> str | None:
    """The tshark binary pyshark would use, or None when pyshark or tshark is missing."""
    if importlib.util.find_spec("pyshark") is None:
        return None
    try:
        from pyshark.tshark.tshark import TSharkNotFoundException, get_process_path
    except Exception:  # noqa: BLE001 - a broken pyshark install is the same as none
        return None
    try:
        return str(get_process_path())
    except (TSharkNotFoundException, OSError):
        return None


def available() -> bool:
    """True when pyshark and tshark are installed."""
    return tshark_path() is not None


def _run(cmd: list[str], out: Path, timeout: float, path: str) -> tuple[int, str]:
    """Run tshark into ``out``; kill its whole process group on timeout."""
    with open(out, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise LimitError(f"tshark took longer than {timeout:g} s", path=path,
                             hint="raise timeout_s in [limits], or cut the capture (editcap -c)") from None
    return proc.returncode, err.decode("utf-8", errors="replace")


def _first(col: str) -> pl.Expr:
    """First occurrence of a field tshark may repeat (tunnels, ICMP errors quoting a packet)."""
    return pl.col(col).str.split(",").list.first()


def _int(col: str) -> pl.Expr:
    return _first(col).cast(pl.Int64, strict=False)


def _epoch_ns(col: str) -> pl.Expr:
    """``frame.time_epoch`` text (``1700000000.123456789``) to exact int64 ns."""
    s = pl.col(col)
    neg = s.str.starts_with("-")
    parts = s.str.strip_prefix("-").str.split_exact(".", 1)
    sec = parts.struct.field("field_0").cast(pl.Int64, strict=False)
    frac = parts.struct.field("field_1").fill_null("").str.slice(0, 9).str.pad_end(9, "0").cast(pl.Int64, strict=False)
    ns = sec * 1_000_000_000 + frac
    return pl.when(neg).then(-ns).otherwise(ns)


def _container_linktypes(data: bytes) -> list[int]:
    """The link type a pcap header names (pcapng: none here; meta only)."""
    if len(data) >= 24 and data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\x34\xcd\xb2\xa1"):
        return [struct.unpack_from("<I", data, 20)[0] & 0x03FFFFFF]
    if len(data) >= 24 and data[:4] in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d", b"\xa1\xb2\xcd\x34"):
        return [struct.unpack_from(">I", data, 20)[0] & 0x03FFFFFF]
    return []


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    container: str | None = None,
    slow_linktypes: list[int] | None = None,
) -> Trace:
    """Read a capture through tshark.

    Args:
        source: Path, bytes or binary stream (compressed input is decompressed with the usual
            caps first and handed to tshark through a temporary file).
        limits: Resource limits (``timeout_s`` bounds tshark; ``max_packets`` bounds its output).
        strict: Turn warnings into errors (the slow path itself is not one).
        name: Name for messages when ``source`` is bytes.
        container: Set by the pcap/pcapng readers when they fall back (kept as ``meta["format"]``).
        slow_linktypes: The link types that sent the file here (for the warning).

    Returns:
        The capture as a Trace, the same columns as the fast path.

    Raises:
        UnknownFormatError: pyshark/tshark missing, or tshark does not understand the file.
        CorruptTraceError: tshark failed on the file.
        LimitError: tshark ran over ``timeout_s``.
    """
    exe = tshark_path()
    path = name or describe(source)
    if exe is None:
        raise UnknownFormatError("reading through tshark needs pyshark and tshark, which are not installed",
                                 path=path,
                                 hint="pip install 'tracekit[pyshark]' (the pyshark extra); apt install tshark")
    log = WarningLog(path, strict)
    with tempfile.TemporaryDirectory(prefix="tracekit-tshark-") as tmp:
        target, head = _target(source, limits, path, Path(tmp))
        raw = _fields(exe, target, Path(tmp) / "fields.tsv", limits, path, slow_linktypes, log)
    if raw.width != len(FIELDS):
        raise CorruptTraceError(f"unexpected tshark output ({raw.width} columns, {len(FIELDS)} expected)",
                                path=path, hint="is this tshark version supported? (tested with 4.0)")
    # polars pads short lines with nulls; tshark always prints every field, so a null frame
    # number means a line that is not tshark's.
    if raw["frame"].null_count():
        raise CorruptTraceError("tshark printed lines without a frame number", path=path)
    if raw.height > limits.max_packets:
        raise LimitError(f"over {limits.max_packets:,} packets", path=path,
                         hint="raise max_packets in [limits] or split the capture (editcap -c)")
    return _to_trace(raw, log, limits, path, container, slow_linktypes, _container_linktypes(head))


def _target(source: Source, limits: Limits, path: str, tmp: Path) -> tuple[Path, bytes]:
    """The file tshark reads, and its first bytes: a plain file as it is, anything else (bytes, a
    stream, compressed input: decompressed with the usual caps) written to ``tmp`` first.

    Raises:
        UnknownFormatError: the file cannot be read.
        LimitError: the file is over ``max_input_bytes``.
    """
    if isinstance(source, (str, os.PathLike)) and not isinstance(source, NamedBytes):
        loaded = None
        target = Path(source)
        try:
            size = target.stat().st_size
            with open(target, "rb") as fh:
                head = fh.read(32)
        except OSError as exc:
            raise UnknownFormatError(f"cannot read file: {exc.strerror or exc}", path=path) from None
        if size > limits.max_input_bytes:
            raise LimitError(f"file is {size:,} bytes, over the limit of {limits.max_input_bytes:,}", path=path,
                             hint="raise max_input_bytes in [limits] if this is intended")
        if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00":
            loaded = load(source, limits)  # capped decompression before tshark sees it
    else:
        loaded = load(source, limits)
    if loaded is not None:
        head = loaded.data[:32]
        target = tmp / "capture"
        target.write_bytes(loaded.data)
    return target, head


def _fields(exe: str, target: Path, out: Path, limits: Limits, path: str, slow_linktypes: list[int] | None,
            log: WarningLog) -> pl.DataFrame:
    """Run tshark over ``target`` and read its :data:`FIELDS` (one String column each) from ``out``.

    tshark's complaints become errors when it wrote nothing, else warnings (W-TRUNCATED for a
    capture cut short, W-TSHARK otherwise); its messages name ``path``, not the temporary file.

    Raises:
        UnknownFormatError: tshark does not understand the file.
        CorruptTraceError: tshark failed without output.
        LimitError: tshark ran over ``timeout_s``.
    """
    cmd = [exe, "-n", "-r", str(target), "-c", str(limits.max_packets + 1), "-T", "fields",
           "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,", "-E", "quote=n"]
    for p in _PREFS:
        cmd += ["-o", p]
    for f in FIELDS:
        cmd += ["-e", f]
    rc, err = _run(cmd, out, limits.timeout_s, path)
    lines = [ln for ln in err.splitlines() if ln.strip() and "Running as user" not in ln]
    text = " ".join(lines).replace(str(target), path)[:300]
    if rc != 0:
        if (
            "unknown or unsupported" in text
            or "format TShark understands" in text
            or "isn't a capture file" in text
        ):
            lt = f" (link type {slow_linktypes[0]})" if slow_linktypes else ""
            raise UnknownFormatError(f"neither tracekit nor tshark can decode this capture{lt}: {text}",
                                     path=path, hint="convert it to Ethernet or raw IP first")
        if "cut short" in text:
            log.add("W-TRUNCATED", "the capture is cut short (tshark kept the packets before the cut)")
        elif out.stat().st_size == 0:
            raise CorruptTraceError(f"tshark could not read the file: {text}", path=path,
                                    hint="the file may be damaged")
        else:
            log.add("W-TSHARK", f"tshark reported: {text}")
    if out.stat().st_size == 0:
        return pl.DataFrame(schema={c: pl.String for c in FIELDS.values()})
    return pl.read_csv(out, separator="\t", has_header=False, new_columns=list(FIELDS.values()),
                       schema_overrides={c: pl.String for c in FIELDS.values()}, quote_char=None)


def _datagram_sizes(df: pl.DataFrame) -> pl.DataFrame:
    """A reassembled datagram's row counts the lengths of all its frames (``ip.fragment`` lists
    them on the completing frame), as the fast path does."""
    parts = pl.coalesce(pl.col("_frag4"), pl.col("_frag6"))
    if df.height == 0 or df.select(parts.is_null().all()).item():
        return df
    sums = (
        df.select(pl.col("frame").alias("_done"), parts.str.split(",").alias("_part"))
        .drop_nulls("_part").explode("_part")
        .with_columns(pl.col("_part").cast(pl.UInt64, strict=False))
        .join(df.select(pl.col("frame").alias("_part"), "size", "caplen"), on="_part", how="inner")
        .group_by("_done").agg(pl.col("size").sum().alias("_wsize"), pl.col("caplen").sum().alias("_wcap"))
    )
    df = df.join(sums, left_on="frame", right_on="_done", how="left", maintain_order="left")
    return df.with_columns(size=pl.coalesce("_wsize", "size"), caplen=pl.coalesce("_wcap", "caplen")).drop(
        "_wsize", "_wcap")


def _to_trace(raw: pl.DataFrame, log: WarningLog, limits: Limits, path: str, container: str | None,
              slow: list[int] | None, linktypes: list[int]) -> Trace:
    """Turn tshark's text fields into the raw columns the fast path produces, then finish alike."""
    from tracekit.parsers._capture import finish

    df = raw.with_columns(
        frame=pl.col("frame").cast(pl.UInt64, strict=False),
        _ts=_epoch_ns("_time"),
        size=_int("size"),
        caplen=_int("caplen"),
        # (the header whose addresses the row takes)
        ttl=pl.coalesce(_int("_ttl4"), _int("_ttl6")).cast(pl.UInt8, strict=False),
        src=pl.coalesce(_first("_src4"), _first("_src6")),
        dst=pl.coalesce(_first("_dst4"), _first("_dst6")),
    )
    df = _datagram_sizes(df)
    ts = df["_ts"].fill_null(strategy="forward").fill_null(0).to_numpy()
    non_ip = df["src"].is_null()
    counts = {"non_ip": int(non_ip.sum())} if non_ip.any() else {}
    is_tcp = pl.col("_tsport").is_not_null()
    is_udp = ~is_tcp & pl.col("_usport").is_not_null()
    df = df.filter(pl.col("src").is_not_null()).with_columns(
        proto=pl.when(is_tcp).then(pl.lit("tcp")).when(is_udp).then(pl.lit("udp")).otherwise(pl.lit("other")),
        sport=pl.when(is_tcp).then(_int("_tsport")).otherwise(_int("_usport")),
        dport=pl.when(is_tcp).then(_int("_tdport")).otherwise(_int("_udport")),
        payload=pl.when(is_tcp).then(_int("_tlen"))
        .when(is_udp).then((_int("_ulen") - 8).clip(0)).otherwise(0),
        seq_raw=pl.when(is_tcp).then(_int("seq_raw")),
        ack_raw=pl.when(is_tcp).then(_int("ack_raw")),
        flags=pl.when(is_tcp).then(_first("_flags").str.strip_prefix("0x").str.to_integer(base=16, strict=False)),
        win_raw=pl.when(is_tcp).then(_int("win_raw")),
        mss=_int("mss"),
        wscale=_int("wscale"),
        ts_val=_int("ts_val"),
        ts_ecr=_int("ts_ecr"),
    )
    if df.height and (df["wscale"] > 14).any():
        log.add("W-WSCALE", "window scale options above 14 (clamped to 14, RFC 7323)",
                count=int((df["wscale"] > 14).sum()))
    df = df.with_columns(pl.col("wscale").clip(upper_bound=14), flags=pl.col("flags").cast(pl.UInt8))
    # SACK: tshark lists every block's left edges in one field and right edges in another.
    sk = (
        df.select(pl.int_range(pl.len()).alias("_i"), "_sack_l", "_sack_r")
        .filter(pl.col("_sack_l").is_not_null() & pl.col("_sack_r").is_not_null())
        .with_columns(pl.col("_sack_l").str.split(","), pl.col("_sack_r").str.split(","))
        .filter(pl.col("_sack_l").list.len() == pl.col("_sack_r").list.len())
        .explode("_sack_l", "_sack_r")
        .with_columns(pl.concat_arr(pl.col("_sack_l").cast(pl.Int64), pl.col("_sack_r").cast(pl.Int64)).alias("b"))
        .group_by("_i", maintain_order=True)
        .agg(pl.col("b").alias("sack_raw"))
    )
    df = (
        df.with_row_index("_i").with_columns(pl.col("_i").cast(pl.Int64))
        .join(sk.with_columns(pl.col("_i").cast(pl.Int64)), on="_i", how="left", maintain_order="left")
        .drop("_i")
    )
    df = df.select("frame", "_ts", "proto", "size", "caplen", "ttl", "payload", "sport", "dport", "src", "dst",
                   "seq_raw", "ack_raw", "flags", "win_raw", "mss", "wscale", "ts_val", "ts_ecr", "sack_raw")
    if slow:
        # Not damage, so not refused in strict mode: the log is made lenient for this one note.
        strict, log.strict = log.strict, False
        names = ", ".join(str(lt) for lt in slow)
        log.add("W-SLOW-PATH", f"link type {names} is not decoded by the fast reader; the file was read "
                "through tshark instead (much slower)")
        log.strict = strict
    meta = {
        "format": container or NAME,
        "tool": "tshark",
        "reader": "tshark",
        "paths": [path],
        "linktypes": slow or linktypes,
        "counts": counts,
    }
    return finish(df, np.asarray(ts, dtype=np.int64), meta=meta, log=log, limits=limits)

"""The libpcap container: magics, byte orders, Kuznetzov, compression, damaged files, the CLI on
a bad file, and real captures from samples/."""

from __future__ import annotations

import bz2
import gzip
import resource
import struct
import subprocess
import sys
from pathlib import Path

import craft
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import SAMPLES, sample

import tracekit
from tracekit import _core
from tracekit._source import NamedBytes
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, TruncatedError, UnknownFormatError
from tracekit.limits import Limits

PKTS, EXPECTED = craft.conversation()
FRAMES = [craft.ether(p) for p in PKTS]
GOOD = craft.pcap(FRAMES)
COLS = ["frame", "flow", "dir", "src", "dst", "sport", "dport", "seq", "ack", "flags", "win", "payload", "sack"]


def _same(a: tracekit.Trace, b: tracekit.Trace, cols: list[str] = COLS) -> None:
    assert a.packets.select(cols).equals(b.packets.select(cols))


@pytest.mark.parametrize("endian", ["<", ">"], ids=["little", "big"])
@pytest.mark.parametrize("nanos", [False, True], ids=["usec", "nsec"])
def test_magics_and_byte_orders(endian: str, nanos: bool) -> None:
    ts = [(craft.T0 + i, (123456789 if nanos else 123456) + i) for i in range(len(FRAMES))]
    t = tracekit.read(craft.pcap(FRAMES, endian=endian, nanos=nanos, ts=ts))
    _same(t, tracekit.read(GOOD))
    frac = 1e-9 if nanos else 1e-6
    assert t.packets["time"].to_list() == pytest.approx([i + i * frac for i in range(len(FRAMES))], abs=1e-12)
    start = ts[0][1] * (1 if nanos else 1000)
    assert t.meta["t0_ns"] == craft.T0 * 10**9 + start
    assert t.meta["time_resolution"] == ("ns" if nanos else "us")


def test_nanosecond_timestamps_stay_exact() -> None:
    ts = [(craft.T0, 1), (craft.T0, 2), (craft.T0 + 1, 999_999_999)]
    t = tracekit.read(craft.pcap(FRAMES[:3], nanos=True, ts=ts))
    assert t.meta["t0_ns"] == craft.T0 * 10**9 + 1
    assert t.packets["time"].to_list() == [0.0, 1e-9, 1.999999998]


def test_kuznetzov_records_have_24_byte_headers() -> None:
    t = tracekit.read(craft.pcap(FRAMES, kuznetzov=True))
    _same(t, tracekit.read(GOOD))


@pytest.mark.parametrize("pack", [gzip.compress, bz2.compress], ids=["gzip", "bz2"])
def test_compressed_capture(tmp_path: Path, pack: object) -> None:
    p = tmp_path / "c.pcap.gz"
    p.write_bytes(pack(GOOD))  # type: ignore[operator]
    t = tracekit.read(p)
    _same(t, tracekit.read(GOOD))
    assert t.meta["compression"] in ("gzip", "bz2") and t.meta["paths"] == [str(p)]


def test_file_and_bytes_give_the_same_trace(tmp_path: Path) -> None:
    p = tmp_path / "x.pcap"
    p.write_bytes(GOOD)
    a, b = tracekit.read(p), tracekit.read(GOOD)
    assert a.packets.equals(b.packets)


def test_fcs_length_in_the_linktype_field_is_stripped() -> None:
    with_fcs = [f + b"\xde\xad\xbe\xef" for f in FRAMES]
    t = tracekit.read(craft.pcap(with_fcs, fcs_bits=2))  # 2 x 16-bit words
    assert t.packets["size"].to_list() == [len(f) for f in FRAMES]
    _same(t, tracekit.read(GOOD))


def test_old_versions_have_caplen_and_length_swapped() -> None:
    data = bytearray(GOOD)
    struct.pack_into("<HH", data, 4, 2, 2)
    # write the lengths of every record the 2.2 way: original length first
    off = 24
    frames_cut = []
    out = bytearray(data[:24])
    for f in FRAMES:
        cut = f[:60]
        frames_cut.append(cut)
        out += struct.pack("<IIII", craft.T0, 0, len(f), len(cut)) + cut
        off += 16 + len(cut)
    t = tracekit.read(bytes(out))
    assert t.packets["caplen"].to_list() == [len(c) for c in frames_cut]
    assert t.packets["size"].to_list() == [len(f) for f in FRAMES]


# ---- damaged input ------------------------------------------------------------------------------

def test_empty_file_is_one_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.pcap"
    p.write_bytes(b"")
    with pytest.raises(UnknownFormatError) as err:
        tracekit.read(p)
    assert str(err.value).startswith(f"{p}: empty file")


def test_not_a_capture(tmp_path: Path) -> None:
    p = tmp_path / "notes.pcap"
    p.write_bytes(b"this is a lab report, not a capture\n" * 4)
    with pytest.raises(UnknownFormatError) as err:
        tracekit.read(p)
    assert err.value.path == str(p) and err.value.offset == 0
    assert "not a recognised trace format" in str(err.value) and "pcap" in str(err.value.hint)


@pytest.mark.parametrize("cut", [4, 10, 23])
def test_truncated_file_header(tmp_path: Path, cut: int) -> None:
    p = tmp_path / "short.pcap"
    p.write_bytes(GOOD[:cut])
    with pytest.raises(CorruptTraceError) as err:
        tracekit.read(p, "pcap")
    assert err.value.offset == cut
    assert str(err.value).startswith(f"{p}: at byte {cut}: truncated file header: {cut} of 24 bytes")


@pytest.mark.parametrize("cut", [1, 10, 16, 40], ids=["in-header", "in-header-10", "after-header", "in-data"])
def test_truncated_last_record_keeps_every_packet_before_it(tmp_path: Path, cut: int) -> None:
    last = len(FRAMES[-1]) + 16
    p = tmp_path / "cut.pcap"
    p.write_bytes(GOOD[: len(GOOD) - last + cut])
    t = tracekit.read(p)
    assert t.packets["frame"].to_list() == list(range(1, len(FRAMES)))
    (w,) = [w for w in t.warnings if w["code"] == "W-TRUNCATED"]
    assert w["offset"] == len(GOOD) - last and w["frame"] == len(FRAMES)
    with pytest.raises(TruncatedError) as err:
        tracekit.read(p, strict=True)
    assert err.value.offset == len(GOOD) - last and str(p) in str(err.value)


def test_huge_caplen_is_refused_without_a_huge_allocation() -> None:
    data = bytearray(GOOD)
    rec = 24 + sum(16 + len(f) for f in FRAMES[:3])  # the 4th record
    struct.pack_into("<I", data, rec + 8, 0xFFFFFFF0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CorruptTraceError) as err:
        tracekit.read(NamedBytes(bytes(data), "bad.pcap"))
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 100_000  # a 4 GiB buffer was never allocated
    e = err.value
    assert (e.frame, e.offset) == (4, rec)
    assert str(e).startswith(f"bad.pcap: frame 4 at byte {rec}: record claims a captured length of 4,294,967,280")


def test_caplen_over_the_limit_is_refused_even_when_the_record_fits() -> None:
    big = craft.ether(PKTS[0]) + b"\0" * 300_000
    with pytest.raises(CorruptTraceError, match="262,144"):
        tracekit.read(craft.pcap([FRAMES[0], big, FRAMES[1]]))
    t = tracekit.read(craft.pcap([FRAMES[0], big]), limits=tracekit.Limits(max_caplen=400_000))
    assert t.packets.height == 2


def test_non_monotonic_timestamps_warn_and_keep_frame_order() -> None:
    ts = craft.times(len(FRAMES))
    ts[3], ts[7] = (craft.T0 - 5, 0), (craft.T0 - 1, 0)
    t = tracekit.read(craft.pcap(FRAMES, ts=ts))
    assert t.packets["frame"].to_list() == list(range(1, len(FRAMES) + 1))
    (w,) = [w for w in t.warnings if w["code"] == "W-NONMONOTONIC"]
    assert w["count"] == 2
    assert t.packets["time"][3] == -5.0
    # located at the largest step back: frame 4 falls 5.002 s below frame 3 (frame 8 only 1.006 s)
    assert w["frame"] == 4
    assert w["message"] == "timestamps go backwards (frame order kept); the largest step back is 5 s, at frame 4"
    # the tshark path's readers give the compiled reader's own warning for the same stamps
    ns = np.array([(s * 1_000_000 + us) * 1000 for s, us in ts], dtype=np.int64)
    assert _core.time_back_warning(ns) == (w["code"], w["message"], 2, None, 4, None)
    assert _core.time_back_warning(np.sort(ns)) is None


def test_zero_length_records_advance_the_walk() -> None:
    t = tracekit.read(craft.pcap([b""] * 500 + FRAMES))
    assert t.meta["counts"]["records"] == 500 + len(FRAMES) and t.meta["counts"]["non_ip"] == 500
    assert t.packets["frame"][0] == 501


def test_record_walk_reports_where_it_stopped() -> None:
    """The record chain: a clean end, a cut header, cut data and a caplen over the maximum are
    told apart, located (offset and frame) and the records before them kept."""
    expect = np.cumsum([24] + [16 + len(f) for f in FRAMES[:-1]])
    t = tracekit.read(GOOD, "pcap")
    assert t.meta["counts"]["records"] == len(FRAMES) and t.warnings == []
    t = tracekit.read(GOOD + b"\x01\x02", "pcap")
    (w,) = t.warnings
    assert "(truncated-header)" in w["message"] and (w["offset"], w["frame"]) == (len(GOOD), len(FRAMES) + 1)
    assert t.meta["counts"]["records"] == len(FRAMES)
    t = tracekit.read(GOOD[:-1], "pcap")
    (w,) = t.warnings
    assert "(truncated-data)" in w["message"] and (w["offset"], w["frame"]) == (int(expect[-1]), len(FRAMES))
    assert t.meta["counts"]["records"] == len(FRAMES) - 1
    with pytest.raises(CorruptTraceError) as e:
        tracekit.read(GOOD, "pcap", limits=Limits(max_caplen=100))
    assert (e.value.offset, e.value.frame) == (int(expect[3]), 4)  # frames 1-3 are 54-78 bytes


@pytest.mark.parametrize("endian", ["<", ">"], ids=["little", "big"])
def test_record_walk_same_in_both_byte_orders_from_a_file_or_bytes(endian: str, tmp_path: Path) -> None:
    """Records of every length modulo 4, in either byte order, read from a file (through the
    reader's window: several windows here) or from bytes, give the same rows and warnings."""
    frames = [FRAMES[i % len(FRAMES)] + b"x" * (i % 7) for i in range(400)]
    frames += [FRAMES[i % len(FRAMES)] + b"y" * 3000 for i in range(400)]  # > 1 MiB: several windows
    data = craft.pcap(frames, endian=endian) + b"\x00\x01"  # a truncated header at the end
    path = tmp_path / "x.pcap"
    path.write_bytes(data)
    got, ref = tracekit.read(path), tracekit.read(NamedBytes(data, str(path)))
    assert got.packets.equals(ref.packets) and got.warnings == ref.warnings
    assert got.meta["counts"]["records"] == len(frames)
    assert got.warnings[0]["offset"] == len(data) - 2


def test_cli_analyze_on_a_bad_file_exits_1_with_one_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.pcap"
    data = bytearray(GOOD)
    struct.pack_into("<I", data, 24 + 8, 0xFFFFFFF0)
    p.write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["analyze", str(p)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"tracekit: error: {p}: frame 1 at byte 24: ")
    assert result.stdout == ""


# ---- real captures ------------------------------------------------------------------------------

def _captures() -> list[Path]:
    # samples/field holds deliberately odd captures (damaged, one-way, encrypted): test_field_decode.py
    return sorted(p for p in SAMPLES.glob("**/*.pcap*") if p.is_file() and "field" not in p.parts)


@pytest.mark.parametrize("path", _captures(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_every_sample_capture_reads_cleanly(path: Path) -> None:
    t = tracekit.read(path)
    assert t.meta["format"] in ("pcap", "pcapng")
    # W-OFFLOAD: segments captured on a sending host with BIG TCP (samples/linux/offload/)
    assert t.warnings == [] or {w["code"] for w in t.warnings} <= {"W-TRUNCATED", "W-OFFLOAD"}
    tcp = t.packets.filter(pl.col("proto") == "tcp")
    assert tcp.height >= 20
    # every TCP row belongs to a connection, with a direction and relative numbers
    assert tcp.select(pl.col("flow", "dir", "seq", "win").null_count()).row(0) == (0, 0, 0, 0)
    assert (tcp["seq"] >= 0).all()


def test_linux_bulk_sample_handshake() -> None:
    t = tracekit.read(sample("linux", "headers_only.pcap"))
    syn = t.packets.row(0, named=True)
    assert (syn["flags"], syn["seq"], syn["dir"], syn["sport"], syn["dport"]) == (0x02, 0, 0, 40000, 5001)
    assert syn["mss"] == 1460 and syn["wscale"] is not None and syn["ts_val"] is not None
    data = t.packets.filter((pl.col("dir") == 0) & (pl.col("payload") > 0))
    assert data["seq"].min() == 1
    end = data.select((pl.col("seq") + pl.col("payload")).max()).item()
    assert end == 750_001  # 750,000 bytes sent (samples/linux/README.md)
    fin = t.packets.filter((pl.col("dir") == 0) & (pl.col("flags") & 0x01 != 0))
    assert (fin["seq"] + fin["payload"]).unique().to_list() == [end]  # the FIN may carry the last data


def test_ns3_ppp_sample() -> None:
    t = tracekit.read(sample("ns3", "dumbbell", "dumbbell-0-0.pcap"))
    assert t.meta["linktypes"] == [9] and t.meta["counts"]["records"] == 437
    assert t.packets["flow"].n_unique() == 1


# ---- memory-lean reading: file read through a window, dense ids --------------------------------------

def _mixed_frames() -> list[bytes]:
    """Two interleaved connections plus the frames the fast path leaves to the generic one."""
    other, _ = craft.conversation(sport=40001, isn_c=7, ws_c=None)
    frames: list[bytes] = []
    for i, (a, b) in enumerate(zip(PKTS, other, strict=False)):
        frames += [craft.ether(a), craft.ether(b)]
        if i % 3 == 0:
            frames.append(craft.arp_frame())  # not IP: dropped, so later rows move up
        if i % 4 == 1:
            frames.append(craft.ether(b, tags=(7,)))  # VLAN: generic path
        if i % 5 == 2:
            frames.append(craft.ether(a)[:40])  # cut inside the IP header: skipped
        if i % 5 == 4:
            frames.append(craft.ether(craft.udp_packet()))
    return frames


def test_file_read_equals_bytes_read(tmp_path: Path) -> None:
    """A file (read by its path through the reader's window) reads exactly as the same bytes in memory."""
    data = craft.pcap(_mixed_frames())[:-5]  # ends in a cut record
    p = tmp_path / "mixed.pcap"
    p.write_bytes(data)
    ref = tracekit.read(NamedBytes(data, str(p)))
    got = tracekit.read(p)
    assert got.packets.equals(ref.packets)
    assert got.warnings == ref.warnings and got.meta["counts"] == ref.meta["counts"]
    assert {"W-TRUNCATED", "W-MALFORMED"} <= {w["code"] for w in got.warnings}
    assert got.meta["counts"]["non_ip"] > 0


def _large_capture(path: Path, packets: int) -> int:
    """Write a capture of at least ``packets`` records: headers_only.pcap's (-s 96, like the bench capture) repeated."""
    raw = sample("linux", "headers_only.pcap").read_bytes()
    head, body = raw[:24], raw[24:]
    t = tracekit.read(sample("linux", "headers_only.pcap"))
    reps = -(-packets // t.packets.height)
    with path.open("wb") as fh:
        fh.write(head)
        for _ in range(reps):  # same bytes each time: a big file, built in well under a second
            fh.write(body)
    return reps * t.packets.height


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status (Linux)")
def test_a_large_capture_is_read_without_holding_the_file(tmp_path: Path) -> None:
    """Peak memory of a read in a fresh process: the mapped file is released as it is parsed, and
    the frame takes the decoded arrays over (on the 1.17 M-packet bench capture: ~175 MB over the
    imports for a 158 MB file, where keeping the file resident alone would add 158 MB to the 107 MB
    frame). Here on a 1 M-packet file made from a sample."""
    big = tmp_path / "big.pcap"
    n = _large_capture(big, 1_000_000)
    code = (
        "import re, tracekit\n"
        "tracekit.read(tracekit.__file__.rsplit('/', 2)[0] + '/samples/linux/slow_reader.pcap')\n"
        "base = int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        f"t = tracekit.read({str(big)!r})\n"
        "print(t.packets.height, base, re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
    )
    # VmHWM, not getrusage's ru_maxrss: a forked child's ru_maxrss starts at the parent's RSS at the
    # fork (Linux keeps it across execve), so in a large pytest process it measured pytest, not the read
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    height, base_kb, peak_kb = map(int, out.stdout.split())
    assert height == n
    grown = (peak_kb - base_kb) * 1024
    # released behind the parse: ~1.9x the file here (the frame is ~1x: 99 B per packet from 102 B
    # records); a mapping that stayed resident would add another 1x (measured 2.9x)
    assert grown < 2.4 * big.stat().st_size, f"peak grew by {grown / 2**20:.0f} MB for {big.stat().st_size >> 20} MB"


def test_many_addresses_of_both_families_keep_every_row_s_own() -> None:
    """The reader numbers the distinct addresses (src/capture/addrs.rs); every row's src/dst text is
    the address its packet was written with, and equal addresses share an id in src and dst."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6

    rng = np.random.default_rng(7)
    v4 = [f"10.{a}.{b}.{c}" for a, b, c in rng.integers(0, 256, (60, 3))] + ["255.255.255.255", "0.0.0.0"]
    v6 = [f"2001:db8::{a:x}:{b:x}" for a, b in rng.integers(0, 65536, (40, 2))] + ["::1", "ff02::1", "::ffff:0:1"]
    pkts = []
    for k in range(400):
        fam = v4 if k % 3 else v6
        s, d = (fam[int(i)] for i in rng.integers(0, len(fam), 2))
        ip = IP(src=s, dst=d) if fam is v4 else IPv6(src=s, dst=d)
        pkts.append((s, d, ip / TCP(sport=1000 + k % 7, dport=80, flags="A")))
    trace = tracekit.read(NamedBytes(craft.pcap([craft.ether(p) for _, _, p in pkts]), "many.pcap"))
    got = trace.packets.select(pl.col("src").cast(pl.String), pl.col("dst").cast(pl.String))
    import ipaddress

    want = [(str(ipaddress.ip_address(s)), str(ipaddress.ip_address(d))) for s, d, _ in pkts]
    assert list(zip(got["src"].to_list(), got["dst"].to_list(), strict=True)) == want
    from tracekit._core import read_capture

    out = read_capture(craft.pcap([craft.ether(p) for _, _, p in pkts]), "pcap", Limits(), "30")
    src_id, dst_id, addr4, hi, lo = out["ids"]
    texts = [str(ipaddress.IPv4Address(int(a))) for a in addr4] + [
        str(ipaddress.IPv6Address((int(h) << 64) | int(low))) for h, low in zip(hi, lo, strict=True)]
    assert len(set(texts)) == len(texts) == len({a for pair in want for a in pair})
    assert [(texts[s], texts[d]) for s, d in zip(src_id, dst_id, strict=True)] == want
    assert list(addr4) == sorted(addr4)  # IPv4 ascending, before the IPv6 ones


def test_port_pairs_are_numbered_by_first_appearance() -> None:
    from tracekit.parsers._tcp import connections

    rng = np.random.default_rng(3)
    n = 3000
    src, dst = rng.integers(0, 30, n).astype(np.uint32), rng.integers(0, 30, n).astype(np.uint32)
    sport, dport = rng.integers(0, 3, n).astype(np.int32), rng.integers(0, 3, n).astype(np.int32)
    udp = rng.random(n) < 0.3
    z32, z8 = np.zeros(n, dtype=np.uint32), np.zeros(n, dtype=np.uint8)
    c = connections(src, dst, sport, dport, np.ones(n, dtype=bool), ~udp, udp, z8, z32, z32,
                    np.zeros(n, dtype=np.uint16), z8, np.zeros(n, dtype=bool))
    assert c is not None
    seen: dict[tuple[object, ...], int] = {}
    first: dict[tuple[object, ...], tuple[int, int]] = {}
    for i, (a, b, p, q, u) in enumerate(zip(src.tolist(), dst.tolist(), sport.tolist(), dport.tolist(),
                                             udp.tolist(), strict=True)):
        key = (*sorted([(a, p), (b, q)]), u)  # the endpoint pair, both ways, and the protocol
        assert c.flow[i] == seen.setdefault(key, len(seen))
        # no SYN: the first packet's sender is the initiator (direction 0)
        assert c.direction[i] == int((a, p) != first.setdefault(key, (a, p)))
    assert c.nflows == len(seen)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_unknown_reader_options_are_refused(fmt: str) -> None:
    from tracekit.errors import UsageError

    data = GOOD if fmt == "pcap" else craft.pcapng(FRAMES)
    with pytest.raises(UsageError, match="snaplen"):
        tracekit.read(data, fmt, snaplen=96)  # a misspelt or made-up option is not ignored

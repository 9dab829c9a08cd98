"""The pcapng container: interfaces, time resolutions, sections of either byte order, packet block
kinds, unknown blocks, and every way a block can be broken."""

from __future__ import annotations

import gzip
import resource
import shutil
import struct
import subprocess
from pathlib import Path

import craft
import polars as pl
import pytest
from conftest import need_tool, sample

import tracekit
from tracekit._source import NamedBytes
from tracekit.errors import CorruptTraceError, TruncatedError, UnknownFormatError
from tracekit.parsers import pcapng

PKTS, EXPECTED = craft.conversation()
FRAMES = [craft.ether(p) for p in PKTS]
US = craft.T0 * 1_000_000  # epoch µs of the first packet
COLS = ["frame", "time", "flow", "dir", "src", "dst", "sport", "dport", "seq", "ack", "flags", "win",
        "payload", "size", "caplen", "mss", "wscale", "ts_val", "ts_ecr", "sack"]


def _same_as_pcap(t: tracekit.Trace, cols: list[str] = COLS) -> None:
    ref = tracekit.read(craft.pcap(FRAMES))
    assert t.packets.select(cols).equals(ref.packets.select(cols))


def _codes(t: tracekit.Trace) -> list[str]:
    return [w["code"] for w in t.warnings]


@pytest.mark.parametrize("e", ["<", ">"], ids=["little", "big"])
def test_one_section_equals_the_pcap(e: str) -> None:
    t = tracekit.read(craft.pcapng(FRAMES, e=e))
    _same_as_pcap(t)
    assert t.meta["format"] == "pcapng" and t.meta["sections"] == 1 and t.warnings == []
    assert t.meta["t0_ns"] == US * 1000


def test_sniff_needs_the_section_header_and_a_byte_order_magic() -> None:
    data = craft.pcapng(FRAMES)
    assert pcapng.sniff(data[:64])
    assert not pcapng.sniff(b"\x0a\x0d\x0d\x0a" + data[4:8] + b"\x00\x00\x00\x00")
    assert not pcapng.sniff(craft.pcap(FRAMES))


def test_several_interfaces_with_their_own_link_type_and_resolution() -> None:
    blocks = [craft.shb(app="Dumpcap (Wireshark) 4.0.17"),
              craft.idb(1, tsresol=6, name="eth0"),
              craft.idb(101, tsresol=9),
              craft.idb(276, tsresol=0x80 | 20)]
    lt_wrap = [craft.ether, bytes, craft.sll2]
    for i, p in enumerate(PKTS):
        k = i % 3
        us = US + i * 1000
        ts = [us, us * 1000, (us << 20) // 1_000_000][k]  # µs, ns, 2^-20 s ticks
        blocks.append(craft.epb(lt_wrap[k](p), iface=k, ts=ts))
    t = tracekit.read(b"".join(blocks))
    pk = t.packets
    assert pk.select("dir", "seq", "ack", "flags", "win", "payload").rows() == [
        (e.dir, e.seq, e.ack, e.flags, e.win, e.payload) for e in EXPECTED]
    assert t.meta["linktypes"] == [1, 101, 276]
    assert [i["tsresol"] for i in t.meta["interfaces"]] == ["10^-6", "10^-9", "2^-20"]
    assert t.meta["interfaces"][0]["name"] == "eth0"
    assert t.meta["tool"] == "Dumpcap (Wireshark) 4.0.17"
    # 2^-20 s ticks are exact to the ns they round down to
    assert pk["time"].to_list() == pytest.approx([i * 1e-3 for i in range(len(PKTS))], abs=1e-6)


def test_binary_resolution_is_exact_integer_math() -> None:
    ts = (craft.T0 << 10) + 512  # 2^-10 s ticks: exactly half a second past T0
    t = tracekit.read(b"".join([craft.shb(), craft.idb(1, tsresol=0x80 | 10), craft.epb(FRAMES[0], ts=ts)]))
    assert t.meta["t0_ns"] == craft.T0 * 10**9 + 500_000_000


def test_finest_resolutions_do_not_overflow() -> None:
    # 10^-19 s ticks since the epoch do not fit in 64 bits for today's date; 1 s after the epoch do.
    t = tracekit.read(b"".join([craft.shb(), craft.idb(1, tsresol=19),
                                craft.epb(FRAMES[0], ts=10**19 + 123_456_789_000),
                                craft.epb(FRAMES[1], ts=10**19 + 1_123_456_789_000)]))
    assert t.meta["t0_ns"] == 10**9 + 12
    assert t.packets["time"].to_list() == pytest.approx([0.0, 1e-7], abs=1e-12)
    t = tracekit.read(b"".join([craft.shb(), craft.idb(1, tsresol=0x80 | 63), craft.epb(FRAMES[0], ts=3 << 62)]))
    assert t.meta["t0_ns"] == 1_500_000_000


@pytest.mark.parametrize("resol", [20, 127, 0x80 | 64, 0xFF])
def test_absurd_time_resolution_is_refused(resol: int) -> None:
    data = b"".join([craft.shb(), craft.idb(1, tsresol=resol), craft.epb(FRAMES[0])])
    with pytest.raises(CorruptTraceError) as err:
        tracekit.read(NamedBytes(data, "r.pcapng"))
    assert str(err.value).startswith("r.pcapng: at byte 28: block 2: interface time resolution")


def test_time_offset_and_fcs_length_are_per_interface() -> None:
    blocks = [craft.shb(), craft.idb(1), craft.idb(1, tsoffset=-3600, fcslen=4)]
    for i, f in enumerate(FRAMES):
        k = i % 2
        blocks.append(craft.epb(f + (b"\xaa\xbb\xcc\xdd" if k else b""), iface=k, ts=US + i * 1000 + k * 3600 * 10**6))
    t = tracekit.read(b"".join(blocks))
    _same_as_pcap(t)


def test_sections_of_either_byte_order_restart_interface_ids() -> None:
    half = len(FRAMES) // 2
    blocks = [craft.shb("<"), craft.idb(101, "<"), craft.idb(1, "<")]
    blocks += [craft.epb(f, iface=1, ts=US + i * 1000, e="<") for i, f in enumerate(FRAMES[:half])]
    # section 2 is big-endian; its interface 0 is Ethernet although section 1's interface 0 was raw IP
    blocks += [craft.shb(">"), craft.idb(1, ">")]
    blocks += [craft.epb(f, iface=0, ts=US + (half + i) * 1000, e=">") for i, f in enumerate(FRAMES[half:])]
    t = tracekit.read(b"".join(blocks))
    _same_as_pcap(t)
    assert t.meta["sections"] == 2 and [i["section"] for i in t.meta["interfaces"]] == [0, 0, 1]


def test_interface_ids_are_per_section() -> None:
    # interface 1 of the second section does not exist (ids restart at every SHB): that section
    # is damaged; the first one is kept (issue 24 point 8), strict mode refuses the file
    first = b"".join([craft.shb(), craft.idb(1), craft.idb(1), craft.epb(FRAMES[0], iface=1)])
    data = first + b"".join([craft.shb(), craft.idb(1), craft.epb(FRAMES[1], iface=1)])
    t = tracekit.read(data)
    (w,) = t.warnings
    assert w["code"] == "W-SECTION" and w["offset"] == len(first + craft.shb() + craft.idb(1))
    assert "block 7" in w["message"] and "interface 1" in w["message"]
    assert t.meta["counts"]["records"] == 1
    with pytest.raises(CorruptTraceError):
        tracekit.read(data, strict=True)


def test_obsolete_packet_blocks() -> None:
    blocks = [craft.shb(), craft.idb(1)] + [craft.pb(f, ts=US + i * 1000) for i, f in enumerate(FRAMES)]
    t = tracekit.read(b"".join(blocks))
    _same_as_pcap(t)
    assert t.meta["counts"]["obsolete_packet_blocks"] == len(FRAMES)


def test_simple_packet_blocks_have_no_time() -> None:
    blocks = [craft.shb(), craft.idb(1, snaplen=0), craft.epb(FRAMES[0], ts=US + 5000)]
    blocks += [craft.spb(f) for f in FRAMES[1:]]
    t = tracekit.read(b"".join(blocks))
    _same_as_pcap(t, [c for c in COLS if c != "time"])
    assert t.packets["time"].to_list() == [0.0] * len(FRAMES)  # the EPB's time carried forward
    (w,) = [w for w in t.warnings if w["code"] == "W-NO-TIMESTAMP"]
    assert w["count"] == len(FRAMES) - 1


def test_simple_packet_block_caplen_follows_the_snaplen() -> None:
    t = tracekit.read(
        b"".join([craft.shb(), craft.idb(1, snaplen=60), craft.spb(FRAMES[3][:60], origlen=len(FRAMES[3]))])
    )
    assert t.packets.select("caplen", "size", "payload").row(0) == (60, len(FRAMES[3]), 1000)


def test_unknown_and_custom_blocks_are_skipped_with_a_count() -> None:
    nrb = craft.block(4, b"\0" * 4)  # name resolution: known, skipped quietly
    isb = craft.block(5, struct.pack("<III", 0, 0, 0))
    blocks = [craft.shb(), craft.idb(1), craft.block(0x0BAD, b"custom"), nrb, isb]
    blocks += [craft.epb(f, ts=US + i * 1000) for i, f in enumerate(FRAMES)]
    blocks.insert(5, craft.block(0x12345, b"future block type"))
    t = tracekit.read(b"".join(blocks))
    _same_as_pcap(t)
    (w,) = t.warnings
    assert (w["code"], w["count"]) == ("W-UNKNOWN-BLOCK", 2)
    assert w["offset"] == len(craft.shb() + craft.idb(1))


def test_option_running_past_its_block_is_a_warning() -> None:
    idb = bytearray(craft.idb(1, tsresol=9))
    struct.pack_into("<H", idb, 18, 200)  # if_tsresol claims 200 bytes
    t = tracekit.read(b"".join([craft.shb(), bytes(idb), craft.epb(FRAMES[0])]))
    assert _codes(t) == ["W-OPTION"]
    assert t.meta["interfaces"][0]["tsresol"] == "10^-6"  # the broken option was ignored


def test_empty_section_warns() -> None:
    t = tracekit.read(craft.shb() + craft.idb(1))
    assert t.packets.height == 0 and _codes(t) == ["W-EMPTY"]


def test_gzip_pcapng(tmp_path: Path) -> None:
    p = tmp_path / "c.pcapng.gz"
    p.write_bytes(gzip.compress(craft.pcapng(FRAMES)))
    t = tracekit.read(p)
    _same_as_pcap(t)
    assert t.meta["compression"] == "gzip"


# ---- broken blocks ---------------------------------------------------------------------------------

HEAD = craft.shb() + craft.idb(1)
EPB0 = craft.epb(FRAMES[0])


def _refused(data: bytes, block: int, offset: int, words: str) -> CorruptTraceError:
    with pytest.raises(CorruptTraceError) as err:
        tracekit.read(NamedBytes(data, "b.pcapng"))
    e = err.value
    assert e.offset == offset
    assert str(e).startswith(f"b.pcapng: at byte {offset:,}: block {block}: ")
    assert words in str(e)
    return e


def test_block_length_below_12() -> None:
    _refused(HEAD + EPB0 + struct.pack("<II", 6, 8) + b"\0" * 8, 4, len(HEAD + EPB0), "less than 12")


def test_block_length_not_a_multiple_of_4() -> None:
    _refused(HEAD + struct.pack("<II", 6, 37) + b"\0" * 40, 3, len(HEAD), "not a multiple of 4")


def test_trailer_differs_from_header() -> None:
    bad = craft.block(6, EPB0[8:-4], trailer=1000)
    _refused(HEAD + EPB0 + bad, 4, len(HEAD + EPB0), "trailing length 1,000")


def test_epb_caplen_beyond_its_block() -> None:
    _refused(HEAD + craft.epb(FRAMES[0], caplen=100_000), 3, len(HEAD), "100,000 captured bytes")


def test_epb_below_its_minimum_length() -> None:
    _refused(HEAD + craft.block(6, b"\0" * 8), 3, len(HEAD), "less than its minimum 32")


def test_packet_for_an_interface_never_described() -> None:
    _refused(HEAD + craft.epb(FRAMES[0], iface=3), 3, len(HEAD), "interface 3")


def test_huge_block_is_refused_before_anything_is_allocated() -> None:
    data = HEAD + struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 64
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    e = _refused(data, 3, len(HEAD), "over the maximum of 16,777,216")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000
    assert "max_block_bytes" in str(e.hint)
    # a block just over the limit, complete in the file, is refused the same way
    big = craft.block(6, b"\0" * (17 << 20))
    _refused(HEAD + big, 3, len(HEAD), "over the maximum")
    t = tracekit.read(HEAD + big[:100], limits=tracekit.Limits(max_block_bytes=32 << 20))
    assert _codes(t) == ["W-TRUNCATED", "W-EMPTY"]


def test_bad_byte_order_magic_in_a_later_section() -> None:
    bad = bytearray(craft.shb())
    bad[8:12] = b"\x11\x22\x33\x44"
    t = tracekit.read(HEAD + EPB0 + bytes(bad))  # the first section is kept (issue 24 point 8)
    (w,) = t.warnings
    assert w["code"] == "W-SECTION" and w["offset"] == len(HEAD + EPB0) and "byte-order magic" in w["message"]
    assert t.meta["counts"]["records"] == 1
    bad_first = bytearray(HEAD + EPB0)
    bad_first[8:12] = b"\x11\x22\x33\x44"
    with pytest.raises(CorruptTraceError, match="byte-order magic") as err:  # no section before it: refused
        tracekit.read(bytes(bad_first), "pcapng")
    assert err.value.offset == 0


@pytest.mark.parametrize("cut", [1, 8, 20, len(craft.epb(FRAMES[-1])) - 1])
def test_truncated_final_block_keeps_the_packets_before_it(cut: int) -> None:
    body = [craft.epb(f, ts=US + i * 1000) for i, f in enumerate(FRAMES)]
    full = HEAD + b"".join(body)
    data = full[: len(full) - len(body[-1]) + cut]
    t = tracekit.read(data)
    assert t.packets["frame"].to_list() == list(range(1, len(FRAMES)))
    (w,) = [w for w in t.warnings if w["code"] == "W-TRUNCATED"]
    assert w["offset"] == len(full) - len(body[-1])
    with pytest.raises(TruncatedError):
        tracekit.read(data, strict=True)


def test_truncated_section_header() -> None:
    with pytest.raises(CorruptTraceError, match="truncated section header"):
        tracekit.read(craft.shb()[:10], "pcapng")


def test_not_pcapng_when_forced() -> None:
    with pytest.raises(UnknownFormatError, match="not a pcapng file"):
        tracekit.read(craft.pcap(FRAMES), "pcapng")
    with pytest.raises(UnknownFormatError, match="empty"):
        tracekit.read(b"", "pcapng")


def test_timestamps_beyond_int64_nanoseconds_are_clamped_with_a_warning() -> None:
    t = tracekit.read(
        b"".join([craft.shb(), craft.idb(1), craft.epb(FRAMES[0]), craft.epb(FRAMES[1], ts=(1 << 64) - 1)])
    )
    assert "W-TIMESTAMP" in _codes(t)
    assert t.packets.height == 2


# ---- real files -------------------------------------------------------------------------------------

def test_editcap_pcapng_of_a_real_capture_reads_like_the_pcap(tmp_path: Path) -> None:
    editcap = need_tool("editcap")
    src = sample("linux", "bulk_lossy.pcap")
    out = tmp_path / "bulk.pcapng"
    subprocess.run([editcap, "-F", "pcapng", str(src), str(out)], check=True, capture_output=True)
    a, b = tracekit.read(src), tracekit.read(out)
    assert b.meta["format"] == "pcapng" and a.meta["format"] == "pcap"
    cols = [c for c in a.packets.columns]
    assert a.packets.select(cols).equals(b.packets.select(cols))
    assert b.meta["interfaces"][0]["linktype"] == 1


def test_mergecap_of_two_link_types(tmp_path: Path) -> None:
    mergecap = need_tool("mergecap")
    if shutil.which("editcap") is None:
        pytest.skip("editcap is not installed")
    a, b = sample("linux", "any_sll2.pcap"), sample("linux", "bulk_lossy.pcap")
    out = tmp_path / "merged.pcapng"
    subprocess.run([mergecap, "-F", "pcapng", "-w", str(out), str(a), str(b)], check=True, capture_output=True)
    t = tracekit.read(out)
    ta, tb = tracekit.read(a), tracekit.read(b)
    assert t.meta["linktypes"] == [1, 276]
    assert t.packets.height == ta.packets.height + tb.packets.height
    # the two runs used the same port pair at different times: two connections, as tshark says
    assert t.packets.filter(pl.col("proto") == "tcp")["flow"].n_unique() == 2


# ---- mixed sections; a file read through the reader's window ----------------------------------

def _mixed_sections() -> bytes:
    """Two sections of either byte order, several interfaces, every packet block kind, odd blocks."""
    half = len(FRAMES) // 2
    blocks = [craft.shb("<"), craft.idb(101, "<"), craft.idb(1, "<", tsresol=9), craft.block(0x0BAD, b"custom")]
    blocks += [craft.epb(f, iface=1, ts=(US + i * 1000) * 1000, e="<") for i, f in enumerate(FRAMES[:half])]
    blocks += [craft.shb(">"), craft.idb(1, ">"), craft.block(4, b"\0" * 4, ">")]
    for i, f in enumerate(FRAMES[half:]):
        us = US + (half + i) * 1000
        blocks.append(craft.pb(f, ts=us, e=">") if i % 3 == 0 else craft.epb(f, ts=us, e=">"))
    blocks += [craft.spb(FRAMES[0], e=">"), craft.epb(FRAMES[1], ts=US, e=">")]
    return b"".join(blocks)


@pytest.mark.parametrize("cut", [0, 7])
def test_block_walk_of_mixed_sections(cut: int) -> None:
    """Both byte orders, every packet block kind and odd blocks: the sections, interfaces and
    packets are all found; a cut last block is located at its start and the blocks before kept."""
    full = _mixed_sections()
    data = full[:len(full) - cut]
    t = tracekit.read(data, "pcapng")
    assert t.meta["sections"] == 2 and len(t.meta["interfaces"]) == 3
    assert [i["section"] for i in t.meta["interfaces"]] == [0, 0, 1]
    n = len(FRAMES) + 2 - (1 if cut else 0)
    assert t.meta["counts"]["records"] == n
    if cut:
        w = {x["code"]: x for x in t.warnings}["W-TRUNCATED"]
        assert w["offset"] == len(full) - len(craft.epb(FRAMES[1], ts=US, e=">"))


def test_file_read_equals_bytes_read(tmp_path: Path) -> None:
    """A pcapng read by its path (through the reader's window) reads exactly as the same bytes in memory."""
    data = _mixed_sections()[:-9]
    p = tmp_path / "mixed.pcapng"
    p.write_bytes(data)
    ref = tracekit.read(NamedBytes(data, str(p)))
    got = tracekit.read(p)
    assert got.packets.equals(ref.packets)
    assert got.warnings == ref.warnings and got.meta == ref.meta
    assert {"W-TRUNCATED", "W-UNKNOWN-BLOCK", "W-NO-TIMESTAMP"} <= set(_codes(got))
    assert got.meta["counts"]["obsolete_packet_blocks"] > 0 and got.meta["sections"] == 2


# ---- issue 24 point 8: a damaged later section keeps the sections before it ----------------------

def test_damaged_later_section_keeps_the_packets_before_it_as_tshark_does(tmp_path: Path) -> None:
    """Two sections (two editcap -F pcapng files concatenated, as `cat` makes them); a block of
    the second is damaged. tshark prints the first section's packets, then its error; tracekit
    keeps the same packets and says where the damage is (W-SECTION). Damage in the first
    section is still refused."""
    tool = need_tool("tshark")
    editcap = need_tool("editcap")
    one = tmp_path / "one.pcapng"
    subprocess.run([editcap, "-F", "pcapng", str(sample("linux", "slow_reader.pcap")), str(one)], check=True)
    first = one.read_bytes()
    data = bytearray(first + first)
    # the second section's third block (an EPB): a length that is not a multiple of 4
    off = len(first)
    for _ in range(2):
        off += struct.unpack_from("<I", data, off + 4)[0]
    struct.pack_into("<I", data, off + 4, 1001)
    bad = tmp_path / "damaged.pcapng"
    bad.write_bytes(bytes(data))
    run = subprocess.run([tool, "-n", "-r", str(bad), "-T", "fields", "-e", "frame.number"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode != 0  # tshark reports the damage after the packets it read
    shown = len(run.stdout.split())
    t = tracekit.read(bad)
    assert t.meta["counts"]["records"] == shown == tracekit.read(one).meta["counts"]["records"]
    (w,) = t.warnings
    assert w["code"] == "W-SECTION" and w["offset"] == off and "block length 1,001" in w["message"]
    with pytest.raises(CorruptTraceError):
        tracekit.read(bad, strict=True)
    head = bytearray(first)
    struct.pack_into("<I", head, off - len(first) + 4, 1001)
    with pytest.raises(CorruptTraceError):
        tracekit.read(bytes(head), "pcapng")

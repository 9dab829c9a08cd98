"""make_encap.py's non-tunnel cases: offloads (point 2), IP length beyond the frame (point 3),
sequence-space cases (point 5), damaged pcapng sections (point 8) and editcap formats (point 7)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

from encap_io import HERE, SNAP, Inner, Rec, csum, epb, idb, ip4_fix, read_pcap, shb, write_pcap

Files = dict[str, tuple[int, list[Rec], int | None]]
BIG = 1514  # frames above an Ethernet MTU are the TSO/GSO ones


def offloads() -> Files:
    """Point 2: TSO frames of tso_v4/tso_v6.pcap (snaplen 200) with the length fields Linux writes.

    IPv4: total length 0 on frames > 1514 bytes (BIG TCP's iph_set_totlen(0)), header checksum
    recomputed (the IPv4 header checksum is always computed by the stack, never offloaded).
    IPv6: payload length 0, (a) with an RFC 2675 hop-by-hop jumbo payload option (8 bytes inserted,
    the jumbo length = TCP header + data), (b) without it (Linux >= 6.5 strips the HBH before the tap).
    """
    v4 = []
    for r in read_pcap(HERE / "tso_v4.pcap"):
        if r.orig > BIG:
            d = r.data
            r = r.with_data(d[:14] + ip4_fix(d[14:], total_len=0), grow=0)
        v4.append(r)
    jumbo, zero = [], []
    for r in read_pcap(HERE / "tso_v6.pcap"):
        if r.orig <= BIG:
            jumbo.append(r)
            zero.append(r)
            continue
        d = r.data
        plen = struct.unpack_from("!H", d, 18)[0]
        hdr = bytearray(d[14:54])
        struct.pack_into("!H", hdr, 4, 0)
        zero.append(r.with_data(d[:14] + bytes(hdr) + d[54:], grow=0))
        hdr[6] = 0  # next header: hop-by-hop options
        hbh = struct.pack("!BBBBI", 6, 0, 0xC2, 4, plen + 8)
        jumbo.append(r.with_data(d[:14] + bytes(hdr) + hbh + d[54:], grow=8))
    return {
        "tso_v4_len0.pcap": (1, v4, 200),
        "tso_v6_jumbo.pcap": (1, jumbo, 200),
        "tso_v6_len0.pcap": (1, zero, 200),
    }


def tcp_csum_v4(ip: bytes) -> bytes:
    """Recompute the TCP checksum of an IPv4 packet whose header length fields are true."""
    ihl = (ip[0] & 0x0F) * 4
    tcp = bytearray(ip[ihl:])
    struct.pack_into("!H", tcp, 16, 0)
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 6, len(tcp))
    struct.pack_into("!H", tcp, 16, csum(pseudo + bytes(tcp)))
    return ip[:ihl] + bytes(tcp)


def _flags(r: Rec) -> int:
    ihl = (r.data[14] & 0x0F) * 4
    return r.data[14 + ihl + 13]


def _seq(r: Rec) -> int:
    ihl = (r.data[14] & 0x0F) * 4
    return struct.unpack_from("!I", r.data, 14 + ihl + 4)[0]


def oddities(inner: Inner) -> Files:
    """Points 3 and 5 on the real IPv4 connection (vxlan.pcap's inner frames)."""
    v4 = inner.v4_eth
    synack = next(i for i, r in enumerate(v4) if _flags(r) & 0x12 == 0x12)
    files: Files = {}
    # 3a: an old writer recorded the snaplen cut (128 bytes) as the original length too.
    files["iplen_snapcut.pcap"] = (1, [Rec(r.sec, r.usec, r.data[:128], min(r.orig, 128), r.outbound)
                                       for r in v4], 128)
    # 3b: the SYN-ACK's options cut to 12 bytes (MSS, NOP, NOP, SACK-perm, NOP, WS: 66-byte frame) and
    # its IPv4 total length set to 4096; header and TCP checksums recomputed over the true bytes.
    d = v4[synack].data
    ihl = (d[14] & 0x0F) * 4
    tcp = bytearray(d[14 + ihl : 14 + ihl + 20])
    tcp[12] = 8 << 4
    # the real options: MSS 20..24, SACK-perm 24..26, timestamps 26..36, NOP 36, window scale 37..40
    opts = d[14 + ihl + 20 : 14 + ihl + 24] + b"\x01\x01\x04\x02\x01" + d[14 + ihl + 37 : 14 + ihl + 40]
    ip = tcp_csum_v4(ip4_fix(d[14 : 14 + ihl], total_len=ihl + 32) + bytes(tcp) + opts)
    bad = v4[synack].with_data(d[:14] + ip4_fix(ip, total_len=4096))
    files["iplen_damaged.pcap"] = (1, v4[:synack] + [bad] + v4[synack + 1 :], SNAP)
    files.update(seq_cases(v4, synack))
    return files


def seq_cases(v4: list[Rec], synack: int) -> Files:
    """Point 5: a stray SYN-ACK, a mid-connection start with ACKs below the peer's base, a bad nibble."""
    files: Files = {}
    mid = len(v4) // 2
    a, b = v4[mid - 1], v4[mid]
    t = (a.sec * 1_000_000 + a.usec + b.sec * 1_000_000 + b.usec) // 2
    d = bytearray(v4[synack].data)
    ihl = (d[14] & 0x0F) * 4
    struct.pack_into("!I", d, 14 + ihl + 4, (_seq(v4[synack]) + 99_310_614) % 2**32)  # another ISN
    stray = Rec(t // 1_000_000, t % 1_000_000, d[:14] + tcp_csum_v4(bytes(d[14:])), len(d), False)
    files["stray_synack.pcap"] = (1, v4[:mid] + [stray] + v4[mid:], SNAP)
    # A capture started at the client's data segment with relative seq 47533 (vxlan.pcap frame 64):
    # it sees 9 more data segments and the receiver's one ACK (29359), which lies below that base.
    isn = _seq(v4[0])
    start = next(i for i, r in enumerate(v4) if r.outbound and (_seq(r) - isn) % 2**32 == 47533)
    end = next(i for i, r in enumerate(v4) if i > start and not r.outbound and
               (struct.unpack_from("!I", r.data, 42)[0] - isn) % 2**32 > 47533)
    files["ack_below_base.pcap"] = (1, v4[start:end], SNAP)
    # The 20th data segment's IPv4 version nibble flipped to 6 (ethertype still 0x0800), checksum as is.
    data = [i for i, r in enumerate(v4) if r.outbound and r.orig > 100]
    k = data[19]
    d = bytearray(v4[k].data)
    d[14] = 0x60 | (d[14] & 0x0F)
    files["ipver_mismatch.pcap"] = (1, v4[:k] + [v4[k].with_data(bytes(d))] + v4[k + 1 :], SNAP)
    # Point 1: a SPAN port (or asymmetric routing) that sees only the client's side.
    files["oneway_data.pcap"] = (1, [r for r in v4 if r.outbound], SNAP)
    return files


def pcapng_damaged(inner: Inner) -> list[str]:
    """Point 8: section 1 holds the whole IPv4 connection; section 2's packet block is damaged."""
    first = shb() + idb(1) + b"".join(epb(r) for r in inner.v4_eth)
    second = shb() + idb(1)
    block = epb(inner.v4_eth[0])
    bad = bytearray(block)
    struct.pack_into("<I", bad, len(bad) - 4, len(block) + 4)  # trailing length != leading length
    (HERE / "pcapng_bad_blocklen.pcapng").write_bytes(first + second + bytes(bad))
    (HERE / "pcapng_truncated.pcapng").write_bytes(first + second + block[: len(block) // 2])
    return ["pcapng_bad_blocklen.pcapng", "pcapng_truncated.pcapng"]


def editcap_formats(inner: Inner) -> list[str]:
    """Point 7: `editcap -F snoop` / `-F erf` (Wireshark's writers) from real captures."""
    editcap = shutil.which("editcap")
    if editcap is None:
        raise SystemExit("make_encap.py: editcap (Wireshark) is needed for the snoop/ERF files")
    with tempfile.TemporaryDirectory() as tmp:
        dec = Path(tmp) / "vxlan_inner.pcap"
        write_pcap(dec, 1, inner.v4_eth, snap=None)
        jobs = [(dec, "vxlan_inner.snoop"), (HERE / "plain_v6.pcap", "plain_v6.snoop"),
                (HERE / "tso_v4.pcap", "tso_v4.snoop")]
        for src, name in jobs:
            subprocess.run([editcap, "-F", "snoop", str(src), str(HERE / name)], check=True)
    # `editcap -F erf` of Wireshark 4.0.17 (Debian 12) writes its 128-byte provenance record and then
    # fails on every pcap packet ("has a record type that can't be saved in a "erf" file"), so the
    # ERF files are written here the way erf.c's erf_dump() converts a non-ERF packet.
    write_erf(HERE / "tso_v4.erf", read_pcap(HERE / "tso_v4.pcap"))
    write_erf(HERE / "vxlan_inner.erf", inner.v4_eth)
    return [j[1] for j in jobs] + ["tso_v4.erf", "vxlan_inner.erf"]


def write_erf(path: Path, recs: list[Rec]) -> None:
    """Endace ERF type 2 (ETH) records, as Wireshark's erf_dump() writes a non-ERF Ethernet packet.

    Header (16 bytes): timestamp (little-endian 32.32 fixed point), type 2, flags 0x04 (varying
    length, interface 0), rlen, lctr 0, wlen (big-endian); then 2 bytes of offset/pad and the frame.
    Whole frames get an FCS (CRC-32) appended (wlen + 4) and rlen padded to 8; snapped frames get no
    FCS and rlen rounded down to 8 (the cut bytes dropped), as erf_dump() does."""
    out = []
    for r in recs:
        ts = (r.sec << 32) + ((r.usec * 1000 << 32) // 1_000_000_000)
        snapped = len(r.data) < r.orig
        body = b"\0\0" + r.data
        wlen = r.orig
        if not snapped:
            body += struct.pack("<I", zlib.crc32(r.data))
            wlen += 4
            body += b"\0" * (-(16 + len(body)) % 8)
        else:
            body = body[: len(body) - (16 + len(body)) % 8]
        out.append(struct.pack("<Q", ts) + struct.pack("!BBHHH", 2, 0x04, 16 + len(body), 0, wlen) + body)
    path.write_bytes(b"".join(out))

"""What each sample is (for expected.json): issue-24 point, description, tshark notes.

`tracekit_after_24`: tracekit is expected to read the file (and find its TCP connection) once
issue 24 is built. `reference`: "tshark" when tshark's reading is the truth; otherwise the name of a
file whose tshark reading holds the same packets decoded the intended way (tshark is wrong or
refuses there: `tshark_note` says why). `alt_options`: extra readings with a tshark preference.
"""

from __future__ import annotations

from typing import Any

V4 = "the real IPv4 connection of vxlan.pcap (decapsulated)"
V6 = "the real IPv6 connection of plain_v6.pcap"


def _f(point: int, what: str, reference: str = "tshark", note: str = "", **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"point": point, "what": what, "reference": reference, "tracekit_after_24": True}
    if note:
        d["tshark_note"] = note
    d.update(kw)
    return d


FILES: dict[str, dict[str, Any]] = {
    # real captures (make_field.sh)
    "vxlan.pcap": _f(4, "real: 60 kB TCP inside VXLAN (RFC 7348) captured on the underlay, tcpdump"),
    "plain_v6.pcap": _f(4, "real: 60 kB TCP over IPv6 on a veth, tcpdump"),
    "tso_v4.pcap": _f(2, "real: 3 MB TCP/IPv4 with TSO/GSO on, captured on the sender (-s 200)"),
    "tso_v6.pcap": _f(2, "real: 3 MB TCP/IPv6 with TSO/GSO on, captured on the sender (-s 200)"),
    # point 4: tunnels
    "geneve.pcap": _f(4, f"GENEVE (UDP 6081, RFC 8926, one 4-byte option, VNI 42) around {V4}; whole frames"),
    "gre.pcap": _f(4, f"GRE (RFC 2784, 0x0800) around {V4}; whole frames"),
    "gre_keyseq.pcap": _f(4, f"GRE with key 42 and sequence numbers (RFC 2890) around {V4}"),
    "gre_teb.pcap": _f(4, f"GRE transparent Ethernet bridging (0x6558) around {V4}"),
    "erspan2.pcap": _f(4, f"ERSPAN type II (GRE 0x88BE, S bit, 8-byte header, session 7) around {V4}"),
    "erspan3.pcap": _f(4, f"ERSPAN type III (GRE 0x22EB, S bit, 12-byte header, session 7) around {V4}"),
    "wccp.pcap": _f(4, f"WCCP redirect (GRE 0x883E + 4-byte redirect header) around {V4}"),
    "gtpu.pcap": _f(4, f"GTP-U G-PDU (UDP 2152, TS 29.281, 8-byte header) around {V4}"),
    "gtpu_seq.pcap": _f(4, f"GTP-U with the S flag (12-byte header, sequence numbers) around {V4}"),
    "ip4in4.pcap": _f(4, f"IPv4 in IPv4 (protocol 4, RFC 2003) around {V4}"),
    "ip4in6.pcap": _f(4, f"IPv4 in IPv6 (next header 4, RFC 2473) around {V4}"),
    "ip6in4.pcap": _f(4, f"IPv6 in IPv4 (protocol 41, RFC 4213) around {V6}; whole frames"),
    "ip6in6.pcap": _f(4, f"IPv6 in IPv6 (next header 41, RFC 2473) around {V6}"),
    "mpls1.pcap": _f(4, f"MPLS, one label (100, RFC 3032) on {V4}"),
    "mpls2.pcap": _f(4, f"MPLS, two-label stack (200, 100) on {V4}"),
    "l2tp.pcap": _f(4, f"L2TPv2 data (UDP 1701, RFC 2661, L bit) carrying PPP/IPv4: {V4}"),
    "ah.pcap": _f(4, f"IPsec AH transport mode (RFC 4302, 12-byte ICV) in {V4}"),
    "ppp_chdlc.pcap": _f(4, f"Cisco HDLC framing (0F 00 0800) inside link type 9 (PPP): {V4}"),
    "capwap.pcap": _f(4, f"CAPWAP data (UDP 5247, RFC 5415, T=0: 802.3 frame) carrying {V4}"),
    # point 2: offloads
    "tso_v4_len0.pcap": _f(2, "tso_v4.pcap with IPv4 total length 0 on frames > 1514 bytes (checksum redone)"),
    "tso_v6_jumbo.pcap": _f(
        2, "tso_v6.pcap with payload length 0 + RFC 2675 hop-by-hop jumbo option on frames > 1514 bytes",
        reference="tso_v6.pcap",
        note="tshark 4.0 calls these frames malformed: ipv6_check_jumbo_plen() accepts a jumbo length only "
             "above 65535 (RFC 2675 section 3) and the real GSO frames here are at most 31,448 bytes"),
    "tso_v6_len0.pcap": _f(
        2, "tso_v6.pcap with payload length 0 (no hop-by-hop option) on frames > 1514 bytes",
        reference="tso_v6.pcap", alt_options=["ipv6.tso_support:TRUE"],
        note="with default preferences (ipv6.tso_support FALSE) tshark calls the frames malformed; "
             "alt_readings gives ipv6.tso_support:TRUE, which takes the length from the frame"),
    # point 3: IP length beyond the frame
    "iplen_snapcut.pcap": _f(
        3, f"{V4}, records cut at 128 bytes with orig_len = 128 too (an old writer); IP lengths true",
        reference="vxlan_inner.snoop",
        note="tshark takes the 62 captured payload bytes as the segment and reports gaps; the next "
             "segment's sequence number confirms the IP length (1398 bytes)"),
    "iplen_damaged.pcap": _f(3, f"{V4} with the SYN-ACK cut to 66 bytes and its IPv4 total length set to 4096"),
    # point 5: sequence space
    "stray_synack.pcap": _f(
        5, f"{V4} with a stray SYN-ACK (ISN + 99,310,614) inserted mid-connection",
        note="tshark rebases the server's sequence space on the stray ISN (later server seq 4195656683)"),
    "ack_below_base.pcap": _f(
        5, f"{V4} from the data segment at relative seq 47533 (a mid-connection start): the one ACK "
           "lies 18,174 bytes below the peer's first seq",
        note="tshark shows that ACK as 4294949123 (not unwrapped to -18,173 relative to its base)"),
    "oneway_data.pcap": _f(1, f"only the client's side of {V4} (a one-way capture: no ACK ever seen)"),
    "ipver_mismatch.pcap": _f(5, f"{V4} with one data segment's version nibble 6 under ethertype 0x0800"),
    # point 6: link types
    "wlan_105.pcap": _f(6, f"802.11 data (ToDS/FromDS, LLC/SNAP) carrying {V4} + 3 protected frames (2 CCMP, 1 WEP)"),
    "wlan_radiotap_127.pcap": _f(6, "wlan_105.pcap's frames behind a 16-byte radiotap header"),
    "wlan_ppi_192.pcap": _f(6, "wlan_105.pcap's frames behind a PPI header with an 802.11-Common field"),
    "chdlc_104.pcap": _f(6, f"Cisco HDLC (link type 104) carrying {V4}"),
    "frelay_107.pcap": _f(6, f"Frame Relay (107), DLCI 100, UI + NLPID 0xCC (RFC 2427) carrying {V4}"),
    "arcnet_129.pcap": _f(6, f"Linux ARCNET (129), RFC 1201 header (protocol 0xD4) carrying {V4}"),
    "fddi_10.pcap": _f(6, f"FDDI (10), LLC/SNAP carrying {V4}"),
    "ipoib_242.pcap": _f(6, f"IP over InfiniBand (242): 40-byte address pseudo-header + RFC 4391 type, {V4}"),
    "nflog_239.pcap": _f(6, f"Linux NFLOG (239): header + PACKET_HDR, PREFIX, PAYLOAD TLVs, {V4}; whole frames"),
    "juniper_178.pcap": _f(6, f"Juniper Ethernet (178): MGC magic, flags, one extension TLV, then {V4}"),
    "slip_8.pcap": _f(
        6, f"SLIP (8) with the 16-byte BSD pseudo-header (direction, TYPE_IP) carrying {V4}",
        reference="chdlc_104.pcap",
        note="tshark 4.0 has no dissector for WTAP_ENCAP_SLIP (frames shown as data); tcpdump "
             "(print-sl.c) decodes the BSD header and the TCP connection"),
    # point 7: formats
    "vxlan_inner.snoop": _f(7, f"`editcap -F snoop` of {V4} (whole frames)"),
    "plain_v6.snoop": _f(7, "`editcap -F snoop` of plain_v6.pcap (IPv6)"),
    "tso_v4.snoop": _f(7, "`editcap -F snoop` of tso_v4.pcap (records cut at 200 bytes)"),
    "tso_v4.erf": _f(7, "ERF type 2 (ETH) of tso_v4.pcap, as erf_dump() converts snapped packets (no FCS)"),
    "vxlan_inner.erf": _f(7, f"ERF type 2 (ETH) of {V4}, with the FCS erf_dump() adds to whole frames"),
    "etherpeek_v7.pkt": _f(7, f"EtherPeek classic V7 (Ethernet, µs timestamps) of {V4}"),
    "etherpeek_v6.pkt": _f(7, f"EtherPeek classic V6 (26-byte records, ms timestamps) of {V4}"),
    "airopeek_v7.pkt": _f(7, "AiroPeek classic V7 (802.11 + 4-byte radio info) of wlan_105.pcap's frames"),
    # point 8: damaged later section
    "pcapng_bad_blocklen.pcapng": _f(
        8, f"pcapng: section 1 = {V4}; section 2's packet block has a trailing length != its leading one",
        note="tshark prints the first section's packets, then exits 2 (block lengths don't match)"),
    "pcapng_truncated.pcapng": _f(
        8, f"pcapng: section 1 = {V4}; section 2 ends in the middle of its packet block",
        note="tshark prints the first section's packets, then exits 2 (cut short in the middle of a packet)"),
}

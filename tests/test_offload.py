"""Segments captured on the sending host with segmentation offload (issue 24 point 2), against tshark.

``samples/linux/offload/big_tcp.pcap`` (made by ``samples/linux/offload/make.sh``): an upload
over a veth with TSO/GSO on and BIG TCP for IPv4, captured by tcpdump on the sender. Its GSO
super-segments over 64 KB carry an IPv4 total length of 0 (tcpdump prints "bad-len 0").
Wireshark takes the length from the frame (its default TSO support); so does the reader now,
and it counts them (W-OFFLOAD).
"""

from __future__ import annotations

import subprocess

import polars as pl
from conftest import need_tool, sample

import tracekit


def test_big_tcp_segments_take_their_length_from_the_frame_as_tshark_does() -> None:
    tool = need_tool("tshark")
    path = sample("linux", "offload", "big_tcp.pcap")
    out = subprocess.run([tool, "-n", "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "frame.len",
                          "-e", "tcp.len"], capture_output=True, text=True, check=True, timeout=60).stdout
    ws = [tuple(int(v) for v in line.split("\t")) for line in out.splitlines()]
    t = tracekit.read(path)
    tcp = t.packets.filter(pl.col("proto") == "tcp")
    assert tcp["frame"].to_list() == [f for f, _, _ in ws]  # every segment is a TCP row
    assert tcp["payload"].to_list() == [n for _, _, n in ws]
    big = sum(1 for _, flen, _ in ws if flen - 14 > 65535)  # no 16-bit total length can say it
    assert big > 0
    assert {w["code"]: w["count"] for w in t.warnings} == {"W-OFFLOAD": big}
    # the sequence numbers confirm the lengths: each data segment starts where the last one ended
    data = tcp.filter((pl.col("dir") == 0) & (pl.col("payload") > 0))
    ends = (data["seq"] + data["payload"]).to_list()
    assert data["seq"].to_list()[1:] == ends[:-1]

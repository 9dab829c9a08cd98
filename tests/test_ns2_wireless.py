"""ns-2 wireless (CMU) traces (tracekit.parsers.ns2_wireless): the same real run in the old and new formats."""

from __future__ import annotations

import contextlib
import gzip
import re

import numpy as np
import polars as pl
import pytest
from conftest import sample

import tracekit
from tracekit.errors import CorruptTraceError, TracekitError, UnknownFormatError
from tracekit.parsers import ns2, ns2_wireless, sniff_bytes
from tracekit.schema import ACK, PSH, SYN

OLD = sample("ns2", "wireless", "wireless.tr")
NEW = sample("ns2", "wireless", "wireless_new.tr.gz")


def test_old_format_keeps_agent_events_and_tcp_drops() -> None:
    """Every AGT s/r line, plus the TCP drops at other levels, counted straight from the file."""
    text = OLD.read_bytes().decode()
    agt = re.findall(r"^([srD]) \S+ _\d+_ AGT ", text, flags=re.M)
    tcp_drops = re.findall(r"^D \S+ _\d+_ (?!AGT)\S+ +\S+ \d+ (?:tcp|ack) ", text, flags=re.M)
    tr = ns2_wireless.read(OLD)
    pk = tr.packets
    assert pk.height == len(agt) + len(tcp_drops) == 1041
    assert pk.filter(pl.col("event") == "send").height == agt.count("s") == 521
    assert pk.filter(pl.col("event") == "recv").height == agt.count("r") == 517
    assert pk.filter(pl.col("event") == "drop")["link"].to_list() == ["IFQ"] * 3
    assert tr.meta["drop_reasons"] == {"IFQ END": 3, "MAC COL": 4}  # as in the samples README
    assert tr.meta["wireless_format"] == "old" and tr.warnings == []
    assert tr.meta["counts"]["records"] == 11529 and tr.meta["segment_size"] == 512


def test_values_by_hand() -> None:
    """Lines of the real run, converted by hand (packetSize_ 512 -> 552 bytes at the sender's agent)."""
    pk = ns2_wireless.read(OLD).packets
    row = lambda frame: pk.filter(pl.col("frame") == frame).row(0, named=True)  # noqa: E731
    # s 10.000000000 _0_ AGT  --- 3 tcp 40 [0 0 0 0] ------- [0:0 1:0 32 0] [0 0] 0 0
    r = row(15)
    assert (r["time"], r["event"], r["node"], r["link"], r["src"], r["dst"], r["size"]) == \
        (10.0, "send", "0", "AGT", "0", "1", 40)
    assert (r["flags"], r["seq"], r["payload"], r["pkt_id"], r["dir"]) == (SYN, 0, 0, 3, 0)
    # s 13.635768742 _0_ AGT  --- 9 tcp 552 [0 0 0 0] ------- [0:0 1:0 32 0] [1 0] 0 0
    r = row(116)
    assert (r["seq"], r["payload"], r["flags"], r["pkt_seq"], r["time"]) == (1, 512, ACK | PSH, 1, 13.635768742)
    # r 13.650629409 _1_ AGT  --- 9 tcp 572 … : the same packet received, 20 bytes of IP header larger
    r = row(147)
    assert (r["event"], r["node"], r["size"], r["payload"], r["seq"]) == ("recv", "1", 572, 512, 1)
    # s 13.650629409 _1_ AGT  --- 10 ack 40 … [1 0] 0 0 : acks segment 1 -> next byte 513
    r = row(148)
    assert (r["dir"], r["ack"], r["flags"], r["payload"]) == (1, 513, ACK, 0)
    # s 12.636154746 _1_ AGT  --- 5 ack 40 … [0 0]: the ACK of the SYN
    assert row(63)["flags"] == SYN | ACK


def test_new_format_is_the_same_run() -> None:
    old, new = ns2_wireless.read(OLD), ns2_wireless.read(NEW)
    assert new.meta["wireless_format"] == "new"
    assert old.packets.equals(new.packets)
    assert new.meta["drop_reasons"] == old.meta["drop_reasons"]


def test_sniff_and_analyze() -> None:
    for path in (OLD, NEW):
        head = path.read_bytes()
        head = gzip.decompress(head)[:65536] if head[:2] == b"\x1f\x8b" else head[:65536]
        assert ns2_wireless.sniff(head) and not ns2.sniff(head)
        assert sniff_bytes(head) == "ns2-wireless"
    wired = gzip.decompress(sample("ns2", "lab_reno", "out.tr.gz").read_bytes())[:65536]
    assert not ns2_wireless.sniff(wired)
    # a movement trace opens with one `M` line per node: still recognised, and skipped when read
    moved = b"M 0.00000 0 (50.00, 250.00, 0.00), (50.00, 250.00), 0.00\n" * 100 + OLD.read_bytes()
    assert ns2_wireless.sniff(moved[:65536])
    tr = ns2_wireless.read(moved, name="moved.tr")
    assert tr.meta["counts"]["skipped"] == 101 and tr.packets.height == 1041 and tr.warnings == []
    an = tracekit.analyze(tracekit.read(OLD))
    (flow,) = an.flows.filter(pl.col("dir") == 0).rows(named=True)
    # grep -cE "^s \S+ _0_ AGT +--- [0-9]+ tcp 552 " wireless.tr -> 260 data segments sent
    assert (flow["src"], flow["dst"], flow["data_packets"]) == ("0", "1", 260)
    # first SYN at 10.0, retransmitted at 13.0; its ACK reaches node 0 at 13.635768742: the round trip
    # runs from the SYN sent again (Wireshark's ts_mru_syn), the connection from the first one
    assert flow["handshake_rtt_s"] == pytest.approx(0.635768742)
    assert flow["start"] == pytest.approx(10.0) and flow["data_start"] > 13.0


def test_bad_lines_and_errors() -> None:
    lines = OLD.read_bytes().split(b"\n")[:200]
    edited = list(lines)
    edited[14] = b"s 10.000000000 _0_ AGT  --- 3 tcp"  # an agent line cut short: no IP part
    edited[20] = b"\xff\xfe garbage \x00"
    tr = ns2_wireless.read(b"\n".join(edited), name="w.tr")
    w = {x["code"]: x for x in tr.warnings}
    assert (w["W-BADLINE"]["count"], w["W-BADLINE"]["line"]) == (2, 15)
    assert "W-TRUNCATED" in w  # no newline at the end
    assert 15 not in tr.packets["frame"].to_list()
    with pytest.raises(CorruptTraceError) as exc:
        ns2_wireless.read(b"\n".join(edited), name="w.tr", strict=True)
    assert exc.value.line == 15
    with pytest.raises(CorruptTraceError):
        ns2_wireless.read(b"junk\nmore junk\n", name="j.tr")
    with pytest.raises(UnknownFormatError):
        ns2_wireless.read(b"", name="e.tr")
    rng = np.random.default_rng(5)
    base = np.frombuffer(b"\n".join(lines) + b"\n", dtype=np.uint8)
    for _ in range(30):
        data = base.copy()
        pos = rng.integers(0, len(data), size=int(rng.integers(1, 30)))
        data[pos] = rng.integers(0, 256, size=len(pos))
        with contextlib.suppress(TracekitError):
            ns2_wireless.read(data.tobytes(), name="mutant")

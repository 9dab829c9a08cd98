"""The streamed summary's warnings and refusals are the reader's (``src/stream/source.rs``).

``_core.stream_summary`` reads with the capture reader's own container walks, decoder and
default limits, batch by batch: on every sample capture, every bad input of
``tests/badinputs.py`` and a set of ``tests/test_fuzz.py``'s mutants, it never panics, and
either gives exactly the warnings ``_core.read_capture`` gives for the file (code, located
message, count, offset, frame, hint; in its order) or raises a ``TracekitError`` naming the
file: the reader's own error when the reader refuses the file.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from badinputs import cases
from conftest import CAPTURES, SAMPLES
from test_fuzz import PREFIX, mutate

import tracekit
from tracekit import _core
from tracekit.errors import CorruptTraceError, LimitError, TracekitError, UnknownFormatError
from tracekit.limits import Limits

#: The stream's own refusals (a file the reader takes but the stream does not).
# (the stream's own refusals: the frames path reads such a file; the second where a cwnd estimate
# run as the rows came read a value its batch does not confirm, stream/cwndgo.rs)
OWN = ("link type not decoded by tracekit itself", "the streamed summary cannot answer for this capture")
ERRORS = {"corrupt": CorruptTraceError, "unknown": UnknownFormatError, "limit": LimitError}


def _read(path: Path) -> dict[str, Any]:
    """The compiled reader's outcome for the file, with its container sniffed as tracekit does."""
    data = path.read_bytes()
    container = "pcapng" if data[:4] == b"\x0a\x0d\x0d\x0a" else "pcap"
    limits = Limits()
    return _core.read_capture(str(path), container, limits, f"{limits.frag_timeout_s:g}")


def _check(path: Path) -> str:
    """Stream `path` and compare with the reader: "ok", "refused" or "own" (the stream's refusal)."""
    want = _read(path)
    try:
        got = _core.stream_summary(path)
    except TracekitError as e:
        assert e.path == str(path) and str(path) in str(e)
        assert "internal error" not in e.message, e.message
        if "error" in want:
            kind, message, *_ = want["error"]
            assert type(e) is ERRORS[kind] and e.message.startswith(message), (e.message, want["error"])
            return "refused"
        assert any(r in e.message for r in OWN) or want["unsupported"], e.message
        return "own"
    assert "error" not in want, want["error"]
    assert not want["unsupported"]
    assert [tuple(w) for w in got["warnings"]] == [tuple(w) for w in want["warnings"]]
    return "ok"


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_samples_warn_as_the_reader(path: Path) -> None:
    _check(path)


def test_pcapng_samples_stream() -> None:
    ng = [p for p in CAPTURES if p.suffix == ".pcapng"]
    assert ng and all(_check(p) == "ok" for p in ng)


def test_bad_inputs_warn_or_refuse_as_the_reader(tmp_path: Path) -> None:
    seen: dict[str, int] = {}
    for c in cases():
        p = tmp_path / f"{c.name}.bin"
        p.write_bytes(c.data)
        out = _check(p)
        seen[out] = seen.get(out, 0) + 1
    assert seen.get("ok", 0) >= 20 and seen.get("refused", 0) >= 10, seen


def test_mutants_warn_or_refuse_as_the_reader(tmp_path: Path) -> None:
    rng = np.random.default_rng(20261127)
    bases = [p.read_bytes()[:PREFIX] for p in CAPTURES]
    for k in range(150):
        data, _ = mutate(bases[k % len(bases)], rng)
        p = tmp_path / f"m{k}.bin"
        p.write_bytes(data)
        _check(p)


def _pcap(records: list[tuple[int, bytes]]) -> bytes:
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for sec, pkt in records:
        out += [struct.pack("<IIII", sec, 0, len(pkt), len(pkt)), pkt]
    return b"".join(out)


def test_nonmonotonic_and_truncated(tmp_path: Path) -> None:
    from badinputs import eth, ipv4, tcp

    pkt = eth(ipv4(tcp(payload=b"x" * 10)))
    p = tmp_path / "back.pcap"
    p.write_bytes(_pcap([(5, pkt), (3, pkt), (4, pkt)])[:-4])
    assert _check(p) == "ok"
    codes = [w[0] for w in _core.stream_summary(p)["warnings"]]
    assert codes == ["W-TRUNCATED", "W-NONMONOTONIC"]


def test_warnings_located_across_batches(tmp_path: Path) -> None:
    """Frames and counts of the decoder's warnings run on across batches (16,384 records each)."""
    from badinputs import eth, ipv4, tcp

    good = eth(ipv4(tcp(flags=0x10, payload=b"x" * 10)))
    recs = [(10 + k // 1000, good) for k in range(40_000)]
    recs[18_000] = (28, eth(b"\x45\x00"))  # too short for its IP header
    recs[33_000] = (43, eth(ipv4(tcp(flags=0x10), frag=0x2000)))  # a fragment never completed
    recs[35_000] = (1, good)  # back in time
    p = tmp_path / "long.pcap"
    p.write_bytes(_pcap(recs))
    assert _check(p) == "ok"
    ws = {w[0]: w for w in _core.stream_summary(p)["warnings"]}
    assert ws["W-MALFORMED"][4] == 18_001 and ws["W-FRAGMENT"][4] == 33_001
    # (count, frame and message: record 35,001 falls 43 s below the one before it)
    assert ws["W-NONMONOTONIC"][2] == 1 and ws["W-NONMONOTONIC"][4] == 35_001
    assert ws["W-NONMONOTONIC"][1].endswith("the largest step back is 43 s, at frame 35,001")


def test_max_flows_refused_as_the_reader(tmp_path: Path) -> None:
    """100,000 connections and a row without ports: one over ``max_flows``, for both readers."""
    from badinputs import eth, ipv4, tcp

    import tracekit

    recs = [(1, eth(ipv4(tcp(sport=1024 + k % 60_000, dport=1 + k // 60_000)))) for k in range(100_000)]
    recs.append((2, eth(ipv4(b"\x08\x00\x00\x00\x00\x00\x00\x00", proto=1))))
    p = tmp_path / "scan.pcap"
    p.write_bytes(_pcap(recs))
    with pytest.raises(LimitError) as want:
        tracekit.read(p)
    with pytest.raises(LimitError) as got:
        _core.stream_summary(p)
    assert got.value.message == want.value.message == "100,001 connections, over the limit of 100,000"
    assert got.value.path == str(p)



def _long_ip_capture(path: Path, at: int, ack_after: int | None, n: int = 20_000) -> None:
    """A TCP transfer of ``n`` 100-byte segments whose segment ``at`` has an IP length of 1,050
    payload bytes in a 100-byte frame (an old writer's snap-cut original length); the peer
    acknowledges its IP length's end ``ack_after`` packets later (None: never)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])

    def packet(k: int, src: bytes, dst: bytes, ports: tuple[int, int], seq: int, ack: int, claimed: int,
               payload: int) -> bytes:
        tcp = struct.pack("!HHIIBBHHH", *ports, seq, ack, 5 << 4, 0x18 if payload else 0x10, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + claimed, k & 0xFFFF, 0, 64, 6, 0, src, dst)
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + bytes(payload)
        return struct.pack("<IIII", k // 1000, (k % 1000) * 1000, len(frame), len(frame)) + frame

    seq, end = 1, None
    for k in range(n):
        claimed = 1050 if k == at else 100
        out.append(packet(k, a, b, (40000, 5001), seq, 1, claimed, 100))
        if k == at:
            end = seq + claimed
        seq += 100  # the next segment continues at the frame's end: only the ACK can confirm
        if ack_after is not None and end is not None and k == at + ack_after - 1:
            out.append(packet(k, b, a, (5001, 40000), 1, end, 0, 0))
    path.write_bytes(b"".join(out))


@pytest.mark.parametrize(("at", "ack_after"), [(10, None), (6000, 1), (6000, 3000), (6000, 4095), (6000, 4096),
                                               (19_999, None)])
def test_ip_lengths_settle_across_batches(tmp_path: Path, at: int, ack_after: int | None) -> None:
    """A segment whose IP length runs past its frame is settled by the 4,095 rows after it, also
    when they lie in later batches (a batch holds about 1 MiB, some 6,800 of these frames: the
    stream holds a batch back until enough rows follow): the payload and W-IPLEN are the
    reader's, at the start, across a batch edge, at the horizon's edge and at the end of the file."""
    p = tmp_path / "long_ip.pcap"
    _long_ip_capture(p, at, ack_after)
    assert _check(p) == "ok"
    got = _core.stream_summary(p)
    want = tracekit.analyze(tracekit.read(p)).flows.filter(dir=0)
    assert [b for b, d in zip(got["data_bytes"], got["dir"], strict=True) if d == 0] == want["data_bytes"].to_list()
    iplen = [w for w in got["warnings"] if w[0] == "W-IPLEN"]
    assert len(iplen) == (0 if ack_after is not None and ack_after <= 4095 else 1), got["warnings"]

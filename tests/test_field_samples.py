"""samples/field (issue 24): the samples exist, stay small, and expected.json is tshark's reading.

expected.json is written by samples/field/tshark_expect.py; here a fresh tshark reading of each
file must agree with it (frames, tcp.stream count, per-stream endpoints/packets/payload bytes and
per-frame bytes in flight), so a changed sample or a changed tshark is caught. tracekit itself is
not run on these files yet: its decoder for them is issue 24's work.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES, need_tool

FIELD = SAMPLES / "field"
EXPECTED = json.loads((FIELD / "expected.json").read_text())
NAMES = sorted(EXPECTED["files"])


def _reading(path: Path, options: list[str]) -> dict:
    sys.path.insert(0, str(FIELD))
    try:
        import tshark_expect
    finally:
        sys.path.remove(str(FIELD))
    return tshark_expect.reading(path, options)


def test_every_sample_is_listed_and_small() -> None:
    on_disk = {p.name for p in FIELD.iterdir() if p.suffix in {".pcap", ".pcapng", ".pkt", ".snoop", ".erf"}}
    assert on_disk == set(NAMES), "expected.json and the files in samples/field differ"
    sizes = {n: (FIELD / n).stat().st_size for n in NAMES}
    assert all(s < 100_000 for s in sizes.values()), {n: s for n, s in sizes.items() if s >= 100_000}
    assert sum(sizes.values()) < 2_000_000


def test_expected_json_is_consistent() -> None:
    """Each entry says what it is and, where tshark is not the truth, names the file that is."""
    for name, e in EXPECTED["files"].items():
        assert e["tracekit_after_24"] is True and e["what"], name
        assert len(e["bytes_in_flight"]) == e["frames"], name
        assert e["tcp_streams"] == len(e["streams"]), name
        if e["reference"] != "tshark":
            assert e["reference"] in EXPECTED["files"] and e.get("tshark_note"), name


def test_tunnelled_connection_is_the_inner_one() -> None:
    """tshark's own reading: every tunnel file holds exactly the decapsulated connection."""
    base = EXPECTED["files"]["vxlan_inner.snoop"]
    for name, e in EXPECTED["files"].items():
        if e["point"] == 4 and "IPv4 connection" in e["what"]:
            assert e["streams"] == base["streams"], name
            assert e["bytes_in_flight"] == base["bytes_in_flight"], name


@pytest.mark.parametrize("name", NAMES)
def test_tshark_reading_matches_expected(name: str) -> None:
    need_tool("tshark")
    e = EXPECTED["files"][name]
    got = _reading(FIELD / name, e.get("tshark_options", []))
    for key in ("frames", "tcp_streams", "streams", "bytes_in_flight", "tshark_exit"):
        assert got[key] == e[key], f"{name}: {key}"
    for opt, alt in e.get("alt_readings", {}).items():
        got_alt = _reading(FIELD / name, [opt])
        assert got_alt["streams"] == alt["streams"] and got_alt["bytes_in_flight"] == alt["bytes_in_flight"]


def test_slip_header_is_what_tcpdump_reads() -> None:
    """tshark 4.0 cannot decode link type 8, so tcpdump (print-sl.c, BSD SLIP header) checks it."""
    import subprocess

    tcpdump = need_tool("tcpdump")
    # no filter expression: libpcap's "tcp" filter matches nothing on this link type
    out = subprocess.run([tcpdump, "-nr", str(FIELD / "slip_8.pcap")], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    ref = EXPECTED["files"][EXPECTED["files"]["slip_8.pcap"]["reference"]]["streams"][0]
    assert len(out) == ref["packets"]
    assert all("10.242.0.1.58182 > 10.242.0.2.5001" in line or "10.242.0.2.5001 > 10.242.0.1.58182" in line
               for line in out)


@pytest.mark.parametrize("name", ["vxlan_inner.snoop", "plain_v6.snoop", "tso_v4.snoop", "tso_v4.erf",
                                  "vxlan_inner.erf", "etherpeek_v7.pkt", "etherpeek_v6.pkt"])
def test_formats_are_what_tcptrace_reads(name: str) -> None:
    """tcptrace (the issue's peer for point 7) reads the snoop, ERF and EtherPeek files like tshark."""
    import re
    import subprocess

    tcptrace = need_tool("tcptrace")
    out = subprocess.run([tcptrace, "-n", str(FIELD / name)], capture_output=True, text=True,
                         check=True).stdout
    e = EXPECTED["files"][name]
    m = re.search(r"(\d+) packets seen, (\d+) TCP packets traced", out)
    assert m is not None, out
    assert int(m.group(1)) == e["frames"] == int(m.group(2))
    conns = re.findall(r"^\s*\d+: (\S+) - (\S+) \(\w+\)\s+(\d+)>\s+(\d+)<", out, re.M)
    assert len(conns) == e["tcp_streams"] == 1
    assert int(conns[0][2]) + int(conns[0][3]) == e["streams"][0]["packets"]

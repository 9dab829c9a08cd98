"""Hypothesis properties of the pcap, pcapng and ns-2 readers.

Any prefix of a valid file, and any valid file with a few bytes changed, is
either read (a Trace) or refused with a TracekitError — never another
exception. Reads happen in-process here (fast, many examples); the bounded
subprocess runs are in test_fuzz.py and test_bad_inputs.py.
"""

from __future__ import annotations

import dpkt
from badinputs import epb, idb, pcapng, shb
from conftest import sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracekit
from tracekit.errors import TracekitError
from tracekit.trace import Trace

PCAP = sample("linux", "slow_reader.pcap").read_bytes()


def _pcapng_from(pcap_bytes: bytes) -> bytes:
    """Re-frame a pcap's packets as a pcapng with a µs interface (dpkt only splits records)."""
    import io

    blocks = [shb(), idb(1, tsresol=6)]
    for ts, buf in dpkt.pcap.Reader(io.BytesIO(pcap_bytes)):
        blocks.append(epb(bytes(buf), ts=int(round(ts * 1e6))))
    return pcapng(blocks)


PCAPNG = _pcapng_from(PCAP)
NS2 = b"".join(sample("ns2", "lab_lossy", "out.tr").read_bytes().splitlines(keepends=True)[:400])

FILES = {"pcap": PCAP, "pcapng": PCAPNG, "ns2": NS2}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_clean(data: bytes, fmt: str | None) -> Trace | None:
    try:
        return tracekit.read(data, fmt)
    except TracekitError:
        return None


def test_the_valid_files_read() -> None:
    for fmt, data in FILES.items():
        tr = tracekit.read(data)
        assert tr.meta["format"] == fmt and tr.packets.height > 0


@SETTINGS
@given(fmt=st.sampled_from(sorted(FILES)), frac=st.floats(0, 1))
def test_any_prefix_reads_or_refuses_cleanly(fmt: str, frac: float) -> None:
    data = FILES[fmt]
    cut = int(len(data) * frac)
    tr = _read_clean(data[:cut], fmt)
    if tr is not None:
        # a prefix never invents packets
        assert tr.packets.height <= tracekit.read(data).packets.height


@SETTINGS
@given(fmt=st.sampled_from(sorted(FILES)), data=st.data())
def test_byte_changes_read_or_refuse_cleanly(fmt: str, data: st.DataObject) -> None:
    raw = bytearray(FILES[fmt])
    n = data.draw(st.integers(1, 16))
    for _ in range(n):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    _read_clean(bytes(raw), fmt)
    _read_clean(bytes(raw), None)

"""The command's C-heap handling (tracekit._heap): the packet estimate and the pre-faulted heap."""

from __future__ import annotations

import gzip
import os
import platform
import struct
import subprocess
import sys
from pathlib import Path

import craft
import pytest
from conftest import ROOT, sample
from hypothesis import given, settings
from hypothesis import strategies as st

import tracekit
from tracekit import _heap

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
TWO_CPUS = hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


def _records(path: Path) -> int:
    return int(tracekit.read(path).meta["counts"]["records"])


@pytest.mark.parametrize("parts", [("linux", "bulk_lossy.pcap"), ("linux", "any_sll2.pcap"),
                                   ("ns3", "dumbbell", "dumbbell-0-0.pcap")])
def test_estimate_counts_every_record_of_a_small_capture(parts: tuple[str, ...]) -> None:
    """A file shorter than the walked head is counted, not estimated."""
    path = sample(*parts)
    assert _heap.packets_estimate(path) == _records(path)


@pytest.mark.parametrize("variant", ["pcap-le", "pcap-be-ns", "pcapng-le", "pcapng-be"])
def test_estimate_reads_each_container_and_byte_order(tmp_path: Path, variant: str) -> None:
    frames = [craft.ether(p) for p in craft.conversation(n_data=30, mss=700)[0]]
    kind, order = variant.split("-")[:2]
    e = "<" if order == "le" else ">"
    data = craft.pcap(frames, endian=e, nanos=variant.endswith("ns")) if kind == "pcap" else craft.pcapng(frames, e=e)
    path = tmp_path / "c.cap"
    path.write_bytes(data)
    assert _heap.packets_estimate(path) == len(frames) == _records(path)


def test_estimate_scales_the_head_to_the_whole_file() -> None:
    """From the first 16 kB, within a quarter of the true count (records differ in size)."""
    path = sample("linux", "bulk_lossy.pcap")
    assert path.stat().st_size > 8 * (16 << 10)
    true = _records(path)
    est = _heap.packets_estimate(path, head=16 << 10)
    assert abs(est - true) <= true / 4, (est, true)


def test_estimate_is_zero_for_what_is_not_an_uncompressed_capture(tmp_path: Path) -> None:
    pcap = sample("linux", "bulk_lossy.pcap").read_bytes()
    cases = {
        "empty": b"",
        "text": b"+ 0.1 0 2 tcp 1040 ------- 1 0.0 3.0 0 0\n" * 100,
        "gzip": gzip.compress(pcap),
        "header only": pcap[:24],
        "huge caplen": pcap[:24] + struct.pack("<IIII", 0, 0, 1 << 31, 60) + b"\0" * 64,
        "pcapng, block length 0": craft.shb() + struct.pack("<II", 6, 0) + b"\0" * 64,
        "pcapng, bad byte order": b"\x0a\x0d\x0d\x0a" + struct.pack("<I", 28) + b"\0" * 20,
    }
    for name, data in cases.items():
        p = tmp_path / name.replace(" ", "_").replace(",", "")
        p.write_bytes(data)
        assert _heap.packets_estimate(p) == 0, name
    assert _heap.packets_estimate(tmp_path) == 0  # a directory (a run directory for analyze)
    assert _heap.packets_estimate(tmp_path / "missing") == 0
    if hasattr(os, "mkfifo"):  # opening a FIFO without a writer would block for ever
        os.mkfifo(tmp_path / "fifo")
        assert _heap.packets_estimate(tmp_path / "fifo") == 0


@settings(max_examples=200, deadline=None)
@given(magic=st.sampled_from([b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"]),
       body=st.binary(max_size=4096))
def test_estimate_never_fails_on_hostile_bytes(tmp_path_factory: pytest.TempPathFactory, magic: bytes,
                                               body: bytes) -> None:
    p = tmp_path_factory.mktemp("h") / "x"
    p.write_bytes(magic + body)
    n = _heap.packets_estimate(p)
    assert isinstance(n, int) and 0 <= n <= len(body) // 12


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_glibc_accepts_the_commands_heap_settings() -> None:
    """glibc refuses an mmap threshold above 32 MB (HEAP_MAX_SIZE / 2) by returning 0 and
    keeping its own: the values the command sets must be ones it takes. In a child process, so
    that this one keeps its allocator as it was."""
    out = subprocess.run([sys.executable, "-c", "import tracekit._heap as h; print(h.keep_freed_memory())"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


def test_prefault_does_nothing_outside_the_command() -> None:
    """A program that imports the library keeps its allocator and gets no helper thread."""
    assert not _heap._STATE["tuned"]  # only tracekit.cli's process tuning sets it
    assert _heap.prefault(1 << 30) is None
    assert not _heap._STATE["pending"]


# In a child process: the settings and the heap are process-wide. Page faults are counted on the
# main thread only (the helper takes its own); 48 arrays of 1 MB stay below numpy's 4 MB
# huge-page advice, so that every 4 kB page is one fault when the heap is cold.
_CHILD = """
import resource, sys
import tracekit._heap as h
assert h.keep_freed_memory()
mode = sys.argv[1]
helper = None if mode == "cold" else h.prefault(64 << 20)
if mode != "cold":
    assert helper is not None
    helper.join()
import numpy as np
import tracekit
tracekit.read(sys.argv[2])  # trims the heap as a read does, except right after a prefault
if mode == "trimmed":
    h.trim()
before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
keep = [np.ones(1 << 17) for _ in range(48)]
print(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
"""


@pytest.mark.skipif(not GLIBC, reason="pre-faulting uses glibc's heap")
@pytest.mark.skipif(not TWO_CPUS, reason="the command pre-faults only with two or more CPUs")
def test_prefaulted_heap_serves_the_next_read_without_page_faults() -> None:
    capture = str(sample("linux", "bulk_lossy.pcap"))
    faults = {}
    for mode in ("cold", "warm", "trimmed"):
        out = subprocess.run([sys.executable, "-c", _CHILD, mode, capture], capture_output=True, text=True,
                             cwd=ROOT, check=False)
        assert out.returncode == 0, out.stderr
        faults[mode] = int(out.stdout.split()[-1])
    pages = 48 * (1 << 20) // 4096
    assert faults["cold"] >= pages // 2, faults
    assert faults["warm"] <= pages // 10, faults
    # the skip is for one read only: a later trim gives the heap back as before
    assert faults["trimmed"] >= pages // 2, faults


def test_prefault_stays_within_a_containers_memory_limit(tmp_path: Path) -> None:
    """/proc/meminfo in a container shows the host; the cgroup's memory.max is the real bound."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 33554432 kB\nMemAvailable: 16777216 kB\n")
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/docker/abc\n")
    assert _heap._available(str(tmp_path)) == 16 << 30  # no cgroup files: the host's figure
    cg = tmp_path / "sys" / "fs" / "cgroup" / "docker" / "abc"
    cg.mkdir(parents=True)
    (cg / "memory.max").write_text("max\n")
    (cg / "memory.current").write_text(f"{1 << 30}\n")
    assert _heap._available(str(tmp_path)) == 16 << 30
    (cg / "memory.max").write_text(f"{4 << 30}\n")  # docker run --memory 4g
    assert _heap._available(str(tmp_path)) == 3 << 30
    assert _heap._available(str(tmp_path / "nowhere")) == 0


def test_prefault_counts_the_cpus_a_container_may_use(tmp_path: Path) -> None:
    """`docker run --cpus 1` keeps every host CPU in the affinity mask; cpu.max has the quota."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/docker/abc\n")
    mask = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert _heap._cpus(str(tmp_path)) == mask  # no cpu.max: the affinity mask
    cg = tmp_path / "sys" / "fs" / "cgroup" / "docker" / "abc"
    cg.mkdir(parents=True)
    (cg / "cpu.max").write_text("max 100000\n")
    assert _heap._cpus(str(tmp_path)) == mask
    (cg / "cpu.max").write_text("100000 100000\n")  # --cpus 1
    assert _heap._cpus(str(tmp_path)) == 1
    (cg / "cpu.max").write_text("50000 100000\n")  # --cpus 0.5: still one CPU's worth of turns
    assert _heap._cpus(str(tmp_path)) == 1
    (cg / "cpu.max").write_text("garbage\n")
    assert _heap._cpus(str(tmp_path)) == mask

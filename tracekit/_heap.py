"""The C heap of a ``tracekit`` process: glibc's thresholds, trimming, and pre-faulting.

numpy allocates through glibc's malloc, and on the VMs the benchmarks run on the first touch
of a fresh page costs 2-13 µs: ``tracekit analyze`` on the 1.17M-packet benchmark capture
spends a fifth of its wall time taking ~70k such page faults. Three things here deal with the
heap. Only the command turns on the first and the last (:func:`keep_freed_memory`, called by
``tracekit.cli``): a program that imports the library keeps its allocator as it was, and
:func:`prefault` does nothing there. :func:`trim` runs in every process (glibc only).

* :func:`keep_freed_memory`: freed arrays stay in the heap for the next ones.
* :func:`trim`: a read gives back what earlier work left free (a batch of many files does not
  hold its largest file's memory), except right after :func:`prefault`.
* :func:`prefault`: while the main thread imports numpy and polars and reads the file, a
  helper thread faults in the heap the read and the analysis will use, on the other core.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
import threading
from typing import Any

#: Size of one pre-faulted block: below glibc's mmap threshold as :func:`keep_freed_memory`
#: sets it (32 MB), so the blocks come from the heap (brk) and stay in it when freed.
BLOCK = 16 << 20
#: Heap to pre-fault per packet: ~80 % of what a read and an analysis hold at their peak
#: (~205 B per packet on the benchmark capture); the rest is churn that reuses it.
HEAP_PER_PACKET = 160
#: Below this, pre-faulting saves less than starting the helper costs.
MIN_PREFAULT = 2 * BLOCK
#: The file's head that :func:`packets_estimate` walks, and its most records.
_HEAD, _MAX_RECORDS = 1 << 20, 8192

_STATE: dict[str, Any] = {"tuned": False, "pending": False}


def _libc() -> Any:
    """glibc's functions through ctypes, or None (macOS, Windows, musl without ``mallopt``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        for name in ("mallopt", "malloc_trim", "malloc", "free", "memset"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.memset.restype = ctypes.c_void_p
    return libc


_LIBC = _libc()


def keep_freed_memory() -> bool:
    """Set glibc's mmap threshold to 32 MB and its trim threshold to 1 GB (the command only).

    glibc returns every freed block above a moving threshold to the system, and the next
    array of that size is fresh memory. A fixed 32 MB threshold (arrays below it come from the
    heap and are reused) and no trimming of the heap's top take ``analyze`` on the benchmark
    capture from ~90k to ~70k page faults, for ~10 MB more peak RSS. Also allows
    :func:`prefault`, whose blocks rely on both settings.

    Returns:
        False when this is not glibc (nothing changed).
    """
    if _LIBC is None:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    ok = bool(_LIBC.mallopt(m_mmap_threshold, 32 << 20)) and bool(_LIBC.mallopt(m_trim_threshold, 1 << 30))
    _STATE["tuned"] = ok
    return ok


def trim() -> None:
    """Give the heap's free memory back to the system before a read maps its file.

    A read and an analysis free hundreds of MB, most of it below the heap's top, where glibc
    keeps it: without this a batch would go on holding its largest file's memory. Skipped
    once after :func:`prefault`, whose free blocks are there for this read.
    """
    if _STATE["pending"]:
        _STATE["pending"] = False
        return
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def packets_estimate(path: str | os.PathLike[str], head: int = _HEAD) -> int:
    """Roughly how many packets a pcap or pcapng file holds, from the records in its head.

    Args:
        path: The file (anything else: 0).
        head: How many bytes to walk at most.

    Returns:
        The packet records in the head, scaled to the file's size; 0 for a compressed or
        other file, an unreadable one, or a head without a whole packet record.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            return 0
        size = info.st_size
        with open(path, "rb") as fh:
            buf = fh.read(head)
    except (OSError, ValueError):
        return 0
    n, used = _pcap_records(buf)
    if not n:
        n, used = _pcapng_records(buf)
    if not n:
        return 0
    return n if used >= size else n * size // used


# A loop over records, but only over the head's first ones, once per command and before numpy
# is imported (the point is to start the helper before the imports): at most _MAX_RECORDS steps.
_PCAP_ORDER = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}


def _pcap_records(buf: bytes) -> tuple[int, int]:
    """Whole records from the start of a classic pcap's ``buf``, and the bytes they end at."""
    order = _PCAP_ORDER.get(buf[:4])
    if order is None:
        return 0, 0
    caplen = struct.Struct(order + "I")
    n, off = 0, 24
    while n < _MAX_RECORDS and off + 16 <= len(buf):
        end = off + 16 + caplen.unpack_from(buf, off + 8)[0]
        if end > len(buf):
            break
        n, off = n + 1, end
    return n, off


def _pcapng_records(buf: bytes) -> tuple[int, int]:
    """Packet blocks (EPB, SPB, obsolete PB) from the start of a pcapng's ``buf``, and where they end."""
    n, off, order = 0, 0, "<"
    for _ in range(_MAX_RECORDS):
        if off + 12 > len(buf):
            break
        if buf[off:off + 4] == b"\x0a\x0d\x0d\x0a":  # a section header: its own byte order
            magic = buf[off + 8:off + 12]
            order = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}.get(magic, "")
            if not order:
                break
        elif off == 0:
            break  # not pcapng
        kind, length = struct.unpack_from(order + "II", buf, off)
        if length < 12 or length % 4 or off + length > len(buf):
            break
        n += kind in (2, 3, 6)
        off += length
    return n, off


def prefault(nbytes: int) -> threading.Thread | None:
    """Fault in about ``nbytes`` of the heap on a helper thread and leave it free for the next read.

    Blocks are allocated here, on the main thread, because glibc serves each thread from its
    own arena and the main thread's is the heap numpy's arrays will come from; the helper
    writes each block (page faults on the other core, while the main thread imports and
    reads) and frees it into that heap, where the next allocations find it. ``memset`` rather
    than ``madvise(MADV_POPULATE_WRITE)``: the kernel holds the address-space lock for the
    whole range on the latter, and the main thread's own mappings (the imports' shared
    libraries) waited for it (measured: slower).

    Args:
        nbytes: Heap to fault in (rounded up to whole 16 MB blocks; capped at a quarter of
            the available memory, or of what a container's memory limit leaves).

    Returns:
        The running daemon thread, or None when nothing was started: not a command process
        tuned by :func:`keep_freed_memory`, fewer than two usable CPUs (affinity mask or a
        container's CPU quota: the helper would only take turns with the main thread), or too
        little to be worth it.
    """
    if not _STATE["tuned"] or _LIBC is None or nbytes < MIN_PREFAULT or _cpus() < 2:
        return None
    nbytes = min(nbytes, _available() // 4)
    if nbytes < MIN_PREFAULT:
        return None
    blocks = []
    for _ in range(-(-nbytes // BLOCK)):
        b = _LIBC.malloc(BLOCK)
        if not b:
            break
        blocks.append(b)
    if not blocks:
        return None
    _STATE["pending"] = True
    helper = threading.Thread(target=_touch, args=(blocks, _LIBC), name="tracekit-prefault", daemon=True)
    helper.start()
    return helper


def prefault_for(path: str | os.PathLike[str]) -> threading.Thread | None:
    """:func:`prefault` what reading and analysing the capture at ``path`` will need (see there)."""
    return prefault(packets_estimate(path) * HEAP_PER_PACKET)


def _touch(blocks: list[int], libc: Any) -> None:
    for b in blocks:
        libc.memset(b, 0, BLOCK)  # ctypes releases the GIL for the call: the main thread goes on
        libc.free(b)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read()
    except (OSError, ValueError):
        return None


def _cgroup(root: str) -> str | None:
    """This process's cgroup v2 directory under ``root`` (None: none, or cgroup v1 only)."""
    text = _read(os.path.join(root, "proc/self/cgroup")) or ""
    rel = next((ln[3:] for ln in text.splitlines() if ln.startswith("0::")), None)
    return None if rel is None else os.path.join(root, "sys/fs/cgroup", rel.lstrip("/"))


def _cpus(root: str = "/") -> int:
    """CPUs this process may use: its affinity, or fewer under a cgroup quota.

    ``docker run --cpus 1`` leaves every host CPU in the affinity mask and sets cgroup v2
    ``cpu.max`` (quota and period, µs): the helper would then take turns with the main thread.
    ``root``: where /proc and /sys are (tests).
    """
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    base = _cgroup(root)
    quota = (_read(os.path.join(base, "cpu.max")) or "").split() if base else []
    if len(quota) == 2 and quota[0] != "max":
        try:
            n = min(n, max(1, int(quota[0]) // max(int(quota[1]), 1)))
        except ValueError:
            pass
    return n


def _available(root: str = "/") -> int:
    """Memory this process may still take, in bytes: MemAvailable, or less under a cgroup limit.

    A container's /proc/meminfo shows the host's memory, not its ``--memory`` limit (cgroup v2
    ``memory.max``). 0 when neither can be read. ``root``: where /proc and /sys are (tests).
    """
    meminfo = _read(os.path.join(root, "proc/meminfo")) or ""
    line = next((ln for ln in meminfo.splitlines() if ln.startswith("MemAvailable:")), "")
    try:
        avail = int(line.split()[1]) * 1024
    except (IndexError, ValueError):
        return 0
    base = _cgroup(root)
    limit = (_read(os.path.join(base, "memory.max")) or "max").strip() if base else "max"
    current = (_read(os.path.join(base, "memory.current")) or "0").strip() if base else "0"
    try:
        if limit != "max":
            avail = min(avail, int(limit) - int(current))
    except ValueError:
        pass
    return max(avail, 0)

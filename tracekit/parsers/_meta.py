"""A capture's ``meta`` from the compiled reader's facts: plain values in, no polars, no numpy.

``tracekit.parsers._capture`` makes a pcap or pcapng trace's ``meta`` with these from
``_core.read_capture``'s output, and :mod:`tracekit.streamed` from ``_core.stream_summary``'s
``capture`` (the same facts, from the same reader code): one rule for both.
"""

from __future__ import annotations

from typing import Any


def pcap_meta(m: dict[str, Any], path: str, compression: str | None) -> dict[str, Any]:
    """A pcap file's ``meta`` from the reader's header facts (``read_capture``'s or ``stream_summary``'s)."""
    vmaj, vmin = m["version"]
    return {
        "format": "pcap",
        "tool": "libpcap",
        "paths": [path],
        "compression": compression,
        "linktypes": [m["linktype"]],
        "snaplen": m["snaplen"],
        "time_resolution": "ns" if m["nanos"] else "us",
        "version": f"{vmaj}.{vmin}",
    }


def text(value: bytes | None, limit: int = 120) -> str | None:
    """A printable, bounded string from an option value (student files are hostile input)."""
    if value is None:
        return None
    s = value.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    s = "".join(ch for ch in s if ch.isprintable())
    return s[:limit] or None


def tsresol(r: int) -> str:
    """if_tsresol as a unit: MSB 0 -> 10^-n s, MSB 1 -> 2^-n s."""
    return f"2^-{r & 0x7F}" if r & 0x80 else f"10^-{r}"


def pcapng_meta(m: dict[str, Any], path: str, compression: str | None) -> dict[str, Any]:
    """A pcapng file's ``meta`` from the reader's block facts (``read_capture``'s or ``stream_summary``'s)."""
    shb: dict[str, Any] = {}
    if "shb" in m:
        major, minor, app, os_, hw = m["shb"]
        shb = {"version": f"{major}.{minor}", "application": text(app), "os": text(os_), "hardware": text(hw)}
    return {
        "format": "pcapng",
        "tool": shb.get("application") or "pcapng",
        "paths": [path],
        "compression": compression,
        "linktypes": m["used"],
        "sections": m["sections"],
        "interfaces": [
            {"linktype": lt, "snaplen": snap, "name": text(nm), "section": sec, "tsresol": tsresol(res),
             "tsoffset": off, "fcslen": fcs}
            for lt, snap, nm, sec, res, off, fcs in m["interfaces"]
        ],
        "shb": shb,
        "counts": {"blocks": m["blocks"], "simple_packet_blocks": m["simple"],
                   "obsolete_packet_blocks": m["obsolete"]},
    }


def headers_only(cut: int, rows: int) -> bool | None:
    """Whether most rows were captured short of their size (``cut`` of ``rows`` have ``caplen < size``):
    a headers-only capture; None when no row was cut."""
    return cut * 2 > rows if cut else None


def capture_meta(meta: dict[str, Any], counts: list[tuple[str, int]], records: int, t0_ns: int | None, *,
                 cut: int, rows: int) -> dict[str, Any]:
    """The container's ``meta`` completed with the reader's counts (``counts`` gains ``records``), the first
    record's time ``t0_ns``, the units and ``headers_only`` (:func:`headers_only` of ``cut`` and ``rows``)."""
    merged: dict[str, int] = dict(meta.get("counts", {}))
    merged.update(dict(counts))
    merged["records"] = records
    meta = {**meta, "counts": merged}  # (key order as _capture.finish() makes it)
    meta = {**meta, "t0_ns": t0_ns, "counts": merged, "units": {"time": "s", "size": "bytes"}}
    short = headers_only(cut, rows)
    if short is not None:
        meta["headers_only"] = short
    return meta

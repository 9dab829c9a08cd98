"""Digests of every analysis frame of every bundled sample, to prove a refactor changes no number.

``python tests/frames_snapshot.py --write`` records them in ``tests/data/frames.json``;
``tests/test_frames_snapshot.py`` recomputes and compares. A digest is the SHA-256 of the frame's
CSV text with floats rounded to 10 significant digits (polars' parallel sums move the last bit
of a float from one call to the next), beside its shape, so a failure says which frame of which sample moved and
by how many rows. Re-record only for a change made on purpose, and say why in docs/analysis.md.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
RECORD = Path(__file__).resolve().parent / "data" / "frames.json"

#: Reader inputs: capture files, run directories and single simulator files (relative to samples/).
INPUTS = (
    "linux/bulk_lossy.pcap", "linux/rwnd_limited.pcap", "linux/slow_reader.pcap", "linux/stall_cut.pcap",
    "linux/any_sll.pcap", "linux/any_sll2.pcap", "linux/ipv6_bulk.pcap", "linux/headers_only.pcap",
    "ns2/lab_tahoe", "ns2/lab_reno", "ns2/lab_lossy", "ns2/dumbbell", "ns2/sweep/win8", "ns2/sweep/win64",
    "ns2/wireless/wireless.tr", "ns3/dumbbell", "netsim/Packet_Trace_ftp_tcp.csv",
    "linux/kernel_truth/outage_reno.pcap", "linux/kernel_truth/shaper_bbr.pcap", "linux/kernel/reno",
    "ns2/big_queue", "ns3/dumbbell10", "ns3/fragments/fragments-0-0.pcap", "ns2/outage",
    "linux/app_chunks/chunks.pcap",
)


def digests(rel: str) -> dict[str, list[object]]:
    """``{frame name: [rows, columns, sha256]}`` for one sample input."""
    import polars.selectors as cs

    import tracekit

    analysis = tracekit.analyze(tracekit.read(SAMPLES / rel))
    out: dict[str, list[object]] = {}
    for name, df in sorted(analysis.frames().items()):
        text = df.with_columns(cs.float().round_sig_figs(10)).write_csv().encode()
        out[name] = [df.height, df.width, hashlib.sha256(text).hexdigest()]
    return out


def main(argv: list[str]) -> int:
    """Print the digests, or record them with ``--write``."""
    table = {rel: digests(rel) for rel in INPUTS}
    if "--write" in argv:
        RECORD.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RECORD}")
    else:
        print(json.dumps(table, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Inputs for docker/build-test.sh's in-container checks, and the checks of what the container wrote.

    python3 docker/check_outputs.py prepare TREE IN     copy samples from TREE (a clean git archive)
                                                        into IN and craft the broken and ATM LLC files
    python3 docker/check_outputs.py check RESULTS OUT   check the containers' stdout (RESULTS) and
                                                        their output folder (OUT); exit 1 on a failure

Standard library only: it runs on the host, which need not have tracekit installed. The expected
numbers come from outside tracekit: samples/linux/README.md (920 frames, 750,000 B sent by the
generator, 29 tbf drops counted by tc), samples/ns2/README.md (what each grading submission changed),
how the broken file is made here (cut 10 bytes into its 24-byte header), and for the tshark fallback
the fast path's reading of the very same packets with their Ethernet header.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path

FRAMES_KEPT = 300  # packets of bulk_lossy.pcap re-framed as ATM RFC 1483 LLC/SNAP (well past the handshake)
BATCH = {"bulk_lossy.pcap", "any_sll.pcap", "lab_tahoe", "broken.pcap"}
# the grading submissions and the items each must fail (samples/ns2/README.md: what each one changed)
FAILS = {
    "same": set(),                            # only the seed differs
    "window": {"window_cap"},                 # window_ 16 instead of 32
    "reno": {"tahoe_backoff"},                # Reno halves the window, Tahoe restarts from 1 segment
    "queue": {"no_buffer_overflow"},          # queue-limit 5: 9 queue overflows
    "truncated": {"run_length", "goodput_curve"},  # out.tr cut at 11 s of 20 s
}


def atm_llc(src: Path, dst_atm: Path, dst_eth: Path) -> None:
    """The first FRAMES_KEPT Ethernet frames of ``src`` as link type 100 (ATM RFC 1483), and as is.

    LINKTYPE_ATM_RFC1483 (RFC 2684 LLC encapsulation, Wireshark's llc dissector): LLC AA AA 03, SNAP
    OUI 00 00 00, then the EtherType -- 8 bytes where Ethernet has 14. The compiled reader does not
    decode it, so tracekit reads it through tshark (pyshark); the Ethernet copy is the reference.
    """
    data = src.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    assert linktype == 1, f"{src} is not Ethernet"
    atm, eth, off = [], [], 24
    while off + 16 <= len(data) and len(eth) < FRAMES_KEPT:
        sec, frac, caplen, wirelen = struct.unpack(endian + "IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + caplen]
        eth.append(data[off:off + 16 + caplen])
        body = b"\xaa\xaa\x03\x00\x00\x00" + frame[12:14] + frame[14:]
        atm.append(struct.pack(endian + "IIII", sec, frac, len(body), wirelen - 6) + body)
        off += 16 + caplen
    header = data[:20]
    dst_eth.write_bytes(header + struct.pack(endian + "I", 1) + b"".join(eth))
    dst_atm.write_bytes(header + struct.pack(endian + "I", 100) + b"".join(atm))


def prepare(tree: Path, into: Path) -> None:
    samples = tree / "samples"
    (into / "batch").mkdir(parents=True)
    (into / "fallback").mkdir()
    shutil.copy(samples / "linux/bulk_lossy.pcap", into)
    for name in ("bulk_lossy.pcap", "any_sll.pcap"):
        shutil.copy(samples / "linux" / name, into / "batch")
    shutil.copytree(samples / "ns2/lab_tahoe", into / "batch/lab_tahoe")
    (into / "batch/broken.pcap").write_bytes((samples / "linux/slow_reader.pcap").read_bytes()[:10])
    shutil.copytree(samples / "ns2/grading", into / "grading")
    atm_llc(samples / "linux/bulk_lossy.pcap", into / "fallback/atm_llc.pcap", into / "fallback/ethernet.pcap")
    for p in into.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)


class Checks:
    def __init__(self, results: Path, out: Path) -> None:
        self.results, self.out, self.failed = results, out, 0

    def expect(self, ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        self.failed += not ok

    def rc(self, name: str) -> int:
        return int((self.results / f"{name}.rc").read_text())

    def show(self, name: str, lines: int = 12) -> str:
        """The command's output, as the report quotes it."""
        text = (self.results / name).read_text(encoding="utf-8")
        err = (self.results / f"{name}.err").read_text(encoding="utf-8")
        print(f"-- {name} (exit {self.rc(name)}):")
        for line in (text.splitlines() + err.splitlines())[:lines]:
            print(f"   | {line[:160]}")
        return text

    def analyze(self) -> None:
        text = self.show("analyze.json", 0)
        doc = json.loads(text)
        flow = doc["flows"][0]
        print(f"   | trace: {doc['trace']['format']} {doc['trace']['packets']} packets; flow 0: "
              f"unique_bytes {flow['unique_bytes']}, retrans_packets {flow['retrans_packets']}, "
              f"goodput_bps {flow['goodput_bps']:.0f}, rtt_p50_s {flow['rtt_p50_s']}")
        self.expect(self.rc("analyze.json") == 0, "analyze --json exits 0")
        self.expect(doc["trace"]["packets"] == 920, "920 packets (the capture's frame count)")
        self.expect(flow["unique_bytes"] == 750_000, "750,000 unique bytes (the generator's transfer)")
        self.expect(flow["retrans_packets"] == 29, "29 retransmissions (tc's tbf drop count)")

    def batch(self) -> None:
        self.show("batch.txt")
        summary = json.loads((self.out / "batch/summary.json").read_text(encoding="utf-8"))
        traces = {Path(t["path"]).name: t for t in summary["traces"]}
        self.expect(self.rc("batch.txt") == 4, "batch exits 4 (finished, some traces failed)")
        self.expect(set(traces) == BATCH, f"every input listed: {sorted(traces)}")
        self.expect(summary["counts"]["ok"] == 3 and summary["counts"]["failed"] == 1, f"counts {summary['counts']}")
        err = traces["broken.pcap"]["error"] or {}
        self.expect(err.get("code") == "E-CORRUPT" and err.get("offset") == 10 and err.get("path", "").endswith(
                    "batch/broken.pcap"), f"broken.pcap: {err.get('code')} at byte {err.get('offset')}")
        bulk = traces["bulk_lossy.pcap"]
        self.expect(bulk["packets"] == 920 and bulk["retrans_packets"] == 29, "bulk_lossy: 920 packets, 29 rtx")
        self.expect(traces["lab_tahoe"]["format"] == "dir" and traces["lab_tahoe"]["tool"] == "ns-2",
                    "lab_tahoe/ read as one ns-2 run")
        reports = [self.out / "batch" / t["report"] for t in traces.values() if t["status"] == "ok"]
        self.expect(len(reports) == 3 and all(r.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
                                              for r in reports), "an HTML report per analysed trace")
        self.expect((self.out / "batch/index.html").is_file() and (self.out / "batch/summary.csv").is_file(),
                    "index.html and summary.csv written")

    def grade(self) -> None:
        self.show("grade.txt", 6)
        summary = json.loads((self.out / "grades/summary.json").read_text(encoding="utf-8"))
        self.expect(self.rc("grade.txt") == 0, "grade exits 0")
        self.expect(summary["counts"]["graded"] == 5 and summary["counts"]["errors"] == 0, f"{summary['counts']}")
        for sub in summary["submissions"]:
            failed = {v["item"] for v in sub["verdicts"] if v["status"] != "passed"}
            self.expect(failed == FAILS.get(sub["id"]),
                        f"{sub['id']}: {sub['score']:g}/{sub['max_score']:g}, failed {sorted(failed)}")
            self.expect((self.out / "grades" / sub["feedback"]).is_file(), f"{sub['id']}: feedback page written")

    def fallback(self) -> None:
        slow = json.loads(self.show("fallback.json", 0))
        fast = json.loads((self.results / "fast.json").read_text(encoding="utf-8"))
        t = slow["trace"]
        print(f"   | trace: {t['format']} linktypes {t['linktypes']} {t['packets']} packets; warnings: "
              + "; ".join(f"{w['code']}: {w['message']}" for w in t["warnings"]))
        print(f"   | flow 0: unique_bytes {slow['flows'][0]['unique_bytes']}, retrans_packets "
              f"{slow['flows'][0]['retrans_packets']}, rtt_p50_s {slow['flows'][0]['rtt_p50_s']}")
        self.expect(self.rc("fallback.json") == 0 and self.rc("fast.json") == 0, "both analyses exit 0")
        self.expect(t["linktypes"] == [100] and [w["code"] for w in t["warnings"]] == ["W-SLOW-PATH"],
                    "link type 100 read through tshark (W-SLOW-PATH)")
        self.expect(t["packets"] == FRAMES_KEPT == fast["trace"]["packets"], f"{FRAMES_KEPT} packets")
        # every number equal but those counting link-layer bytes (Ethernet's header is 6 bytes
        # longer) and the columns naming the capture file each row came from
        link = {"wire_bytes", "throughput_bps", "capture", "goodput_capture"}
        same = [{k: v for k, v in f.items() if k not in link} for f in slow["flows"]]
        self.expect(same == [{k: v for k, v in f.items() if k not in link} for f in fast["flows"]],
                    "its flows equal the fast path's on the Ethernet copy (but wire_bytes, throughput_bps)")
        self.expect(all(e["wire_bytes"] - s["wire_bytes"] == 6 * s["packets"]
                        for s, e in zip(slow["flows"], fast["flows"], strict=False)),
                    "wire_bytes: 6 bytes fewer per packet than with Ethernet (8-byte LLC/SNAP header)")

    def image(self) -> None:
        probe = json.loads(self.show("image.json", 1))
        user = (self.results / "user.txt").read_text().strip()
        print(f"   | image USER {user}")
        self.expect(user == "10001:10001" and probe["uid"] == 10001, "runs as uid 10001, not root")
        self.expect(not probe["setuid"] and not probe["capabilities"],
                    f"{probe['dumpcap']} {probe['mode']}: no setuid/setgid bit, no file capabilities")

    def output_folder(self) -> None:
        top = sorted(p.name for p in self.out.iterdir())
        self.expect(top == ["batch", "grades"], f"only the commands' -o folders in the output folder: {top}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["prepare"] and len(argv) == 3:
        prepare(Path(argv[1]), Path(argv[2]))
        return 0
    if argv[:1] != ["check"] or len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    checks = Checks(Path(argv[1]), Path(argv[2]))
    for step in (checks.analyze, checks.batch, checks.grade, checks.fallback, checks.image,
                 checks.output_folder):
        try:
            step()
        except (OSError, KeyError, IndexError, TypeError, ValueError) as exc:  # a missing or odd output
            checks.expect(False, f"{step.__name__}: {type(exc).__name__}: {exc}")
    print(f"{'all checks passed' if not checks.failed else f'{checks.failed} check(s) FAILED'}")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Record tshark's reading of every sample in samples/field/ as expected.json (re-runnable).

    /work/main/.venv/bin/python samples/field/tshark_expect.py        (after make_encap.py)

Per file: frames, the `tcp.stream` count, per stream its endpoints (the innermost IP layer
under TCP, i.e. the tunnelled connection), packets and payload bytes (sum of `tcp.len`), and per
frame `tcp.analysis.bytes_in_flight` (null where tshark gives none). tshark runs with an empty
configuration directory so personal preferences never change the reading.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expect_meta import FILES  # noqa: E402

FIELDS = ["frame.number", "frame.protocols", "tcp.stream", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
          "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.analysis.bytes_in_flight"]


def run_tshark(path: Path, options: list[str]) -> tuple[int, str, list[list[str]]]:
    """tshark -T fields (last occurrence of each field: the innermost layer) -> rc, error, rows."""
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=l", "-E", "separator=/t"]
    for opt in options:
        cmd += ["-o", opt]
    for f in FIELDS:
        cmd += ["-e", f]
    with tempfile.TemporaryDirectory() as conf:
        env = {**os.environ, "WIRESHARK_CONFIG_DIR": conf, "HOME": conf}
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    err = " ".join(line for line in p.stderr.splitlines() if "Running as user" not in line).strip()
    err = err.replace(str(path), path.name)  # no machine-specific paths in expected.json
    rows = [line.split("\t") for line in p.stdout.splitlines()]
    return p.returncode, err, rows


def _endpoint(row: dict[str, str], side: str) -> str:
    """The IP address of the innermost IP layer that carries TCP, with its port."""
    protos = row["frame.protocols"].split(":")
    upto = protos[: protos.index("tcp")] if "tcp" in protos else protos
    fam = next((p for p in reversed(upto) if p in ("ip", "ipv6")), "ip")
    addr = row[f"{fam}.{side}"]
    port = row[f"tcp.{'srcport' if side == 'src' else 'dstport'}"]
    return f"[{addr}]:{port}" if fam == "ipv6" else f"{addr}:{port}"


def reading(path: Path, options: list[str]) -> dict[str, Any]:
    """tshark's reading of one file, summarised."""
    rc, err, raw = run_tshark(path, options)
    rows = [dict(zip(FIELDS, (r + [""] * len(FIELDS))[: len(FIELDS)], strict=True)) for r in raw]
    streams: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row["tcp.stream"] == "":
            continue
        s = streams.setdefault(int(row["tcp.stream"]), {
            "stream": int(row["tcp.stream"]), "a": _endpoint(row, "src"), "b": _endpoint(row, "dst"),
            "packets": 0, "payload_bytes": 0})
        s["packets"] += 1
        s["payload_bytes"] += int(row["tcp.len"] or 0)
    return {
        "tshark_exit": rc,
        "tshark_error": err,
        "frames": len(rows),
        "tcp_streams": len(streams),
        "streams": [streams[k] for k in sorted(streams)],
        "bytes_in_flight": [int(r["tcp.analysis.bytes_in_flight"]) if r["tcp.analysis.bytes_in_flight"]
                            else None for r in rows],
    }


def tshark_version() -> str:
    out = subprocess.run(["tshark", "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0]


def main() -> None:
    result: dict[str, Any] = {"tshark": tshark_version(), "files": {}}
    for name, meta in FILES.items():
        entry: dict[str, Any] = {**meta}
        entry.update(reading(HERE / name, meta.get("tshark_options", [])))
        for opt in meta.get("alt_options", []):
            entry.setdefault("alt_readings", {})[opt] = reading(HERE / name, [opt])
        result["files"][name] = entry
        print(f"{name}: {entry['frames']} frames, {entry['tcp_streams']} streams"
              + (f" ({entry['tshark_error']})" if entry["tshark_error"] else ""))
    text = json.dumps(result, indent=1)
    # one line per per-frame list, so that the file stays readable in a diff
    text = re.sub(r"\[\n\s*((?:(?:-?\d+|null),\n\s*)*(?:-?\d+|null))\n\s*\]",
                  lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)
    (HERE / "expected.json").write_text(text + "\n")


if __name__ == "__main__":
    main()

"""Write the OPNET/Riverbed spreadsheet-export samples in this folder (deterministic).

Constructed from documentation (statistic names from OPNET TCP lab material, layout as
described for "Export Graph Data to Spreadsheet"), NOT exported from the real tool.
The same table is written in four spellings students produce:

* tcp_reno_tab.txt         tab-separated UTF-8, LF (the export as written)
* tcp_reno_excel_de.csv    ';' + decimal comma + UTF-8 BOM + CRLF (European Excel "CSV UTF-8")
* tcp_reno_unicode.txt     UTF-16 LE with BOM, tab, CRLF (Excel "Unicode text")
* tcp_reno_quoted.csv      ',' with every cell quoted, a comma inside an object name and
                           thousands separators in some cells (Excel with number formatting)

Run: python samples/opnet/make_samples.py
"""

from __future__ import annotations

import codecs
from pathlib import Path

HERE = Path(__file__).resolve().parent

MSS = 1460
RTT = 0.1
CAP_SEGMENTS = 24  # the bottleneck queue overflows when cwnd passes this many segments
END = 12.0

SERVER = "Campus Network.Server.TCP Connection"
HEADERS = [
    "time (sec)",
    f"{SERVER}.Congestion Window Size (bytes)",
    f"{SERVER}.Sent Segment Sequence Number",
    f"{SERVER}.Received Segment Ack Number",
    f"{SERVER}.Segment Round Trip Time (sec)",
    f"{SERVER}.Retransmission Count",
    f"{SERVER}.Flight Size (bytes)",
    "Campus Network.Client.Client FTP.Traffic Received (bytes/sec)",
    "Global Statistics.FTP.Download Response Time (sec)",
    "Campus Network.Router.IP.Queuing Delay (sec)",  # not in the built-in map: kept by header name
]


def simulate() -> dict[float, dict[int, float]]:
    """A toy Reno sender: one row per event time, cells only where a statistic has a sample."""
    rows: dict[float, dict[int, float]] = {}

    def put(t: float, col: int, v: float) -> None:
        rows.setdefault(round(t, 6), {})[col] = v

    cwnd, ssthresh, seq, retx, t = 1.0, 64.0, 1, 0, 0.5
    received = 0
    while t < END:
        segs = int(cwnd)
        put(t, 1, cwnd * MSS)
        for i in range(segs):
            put(t + i * 0.004, 2, float(seq))
            seq += MSS
        put(t, 6, segs * MSS)
        rtt = RTT + 0.002 * max(0, segs - 8)
        put(t + rtt, 4, round(rtt, 4))
        put(t + rtt, 3, float(seq))
        put(t + rtt, 9, round(0.002 * max(0, segs - 8), 4))
        received += segs * MSS
        if segs > CAP_SEGMENTS:
            retx += 1
            ssthresh = max(cwnd / 2, 2.0)
            cwnd = ssthresh
            put(t + rtt, 5, float(retx))
        elif cwnd < ssthresh:
            cwnd *= 2
        else:
            cwnd += 1
        t = round(t + rtt, 6)
    second = 1.0
    got = 0.0
    for tt in sorted(rows):
        while tt >= second + 1.0:
            put(second, 7, round(got / 1.0, 1))
            got = 0.0
            second += 1.0
        if 2 in rows[tt]:
            got += MSS
    put(END, 8, 11.5)
    return dict(sorted(rows.items()))


def fmt(v: float, decimal_comma: bool = False, thousands: bool = False) -> str:
    s = f"{v:.6g}" if abs(v) < 1e6 else f"{v:.0f}"
    if thousands and abs(v) >= 1000 and float(v).is_integer():
        s = f"{int(v):,}"
    if decimal_comma:
        s = s.replace(".", ",")
    return s


def table(decimal_comma: bool = False, thousands: bool = False) -> list[list[str]]:
    out = [HEADERS]
    for t, cells in simulate().items():
        out.append([fmt(t, decimal_comma)] + [
            fmt(cells[c], decimal_comma, thousands and c in (1, 6)) if c in cells else ""
            for c in range(1, len(HEADERS))])
    return out


def main() -> None:
    rows = table()
    (HERE / "tcp_reno_tab.txt").write_bytes("".join("\t".join(r) + "\n" for r in rows).encode("utf-8"))
    de = table(decimal_comma=True)
    (HERE / "tcp_reno_excel_de.csv").write_bytes(
        codecs.BOM_UTF8 + "".join(";".join(r) + "\r\n" for r in de).encode("utf-8"))
    (HERE / "tcp_reno_unicode.txt").write_bytes(
        codecs.BOM_UTF16_LE + "".join("\t".join(r) + "\r\n" for r in rows).encode("utf-16-le"))
    quoted = table(thousands=True)
    quoted[0] = [h.replace("Campus Network.Router", "Campus Network.Router, Floor 2") for h in quoted[0]]
    (HERE / "tcp_reno_quoted.csv").write_bytes(
        "".join(",".join(f'"{c}"' for c in r) + "\n" for r in quoted).encode("utf-8"))


if __name__ == "__main__":
    main()

"""Write the NetSim samples in this folder (deterministic).

Constructed from documentation (column list of a real v12/13-era Packet Trace header and the
Tetcos/v14.4 manual's Application Metrics fields), NOT exported from the real tool.

* Packet_Trace_ftp_tcp.csv          FTP over TCP, NODE-1 -> SWITCH-3 -> NODE-2 (10 Mbit/s links): a
                                    TCP_SYN / TCP_SYN_ACK / TCP_ACK handshake, 12 data segments of
                                    1460 bytes (PACKET_ID 1, SEGMENT_ID 1..12), TCP_ACK control rows
                                    back, one segment Errored on the second hop and sent again with the
                                    same ids; the user-added ",,End-End Delay" columns of the real
                                    excerpt are kept (they must be ignored). Rows ordered by arrival.
* Application_Metrics_v13.csv       the short v12/v13 table
* Application_Metrics_v14.csv       the v14 table (source/destination, transmitted, payload columns)
* plot_throughput.csv               a plot's source data: Time (ms), Throughput (Mbps)

Run: python samples/netsim/make_samples.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

HEADER = ("PACKET_ID,SEGMENT_ID,PACKET_TYPE,CONTROL_PACKET_TYPE/APP_NAME,SOURCE_ID,DESTINATION_ID,TRANSMITTER_ID,"
          "RECEIVER_ID,APP_LAYER_ARRIVAL_TIME(US),TRX_LAYER_ARRIVAL_TIME(US),NW_LAYER_ARRIVAL_TIME(US),"
          "MAC_LAYER_ARRIVAL_TIME(US),PHY_LAYER_ARRIVAL_TIME(US),PHY_LAYER_START_TIME(US),PHY_LAYER_END_TIME(US),"
          "APP_LAYER_PAYLOAD(Bytes),TRX_LAYER_PAYLOAD(Bytes),NW_LAYER_PAYLOAD(Bytes),MAC_LAYER_PAYLOAD(Bytes),"
          "PHY_LAYER_PAYLOAD(Bytes),PHY_LAYER_OVERHEAD(Bytes),PACKET_STATUS,SOURCE_IP,DESTINATION_IP,GATEWAY_IP,"
          "NEXT_HOP_IP,,End-End Delay")
RATE_BPS = 10e6
IP = {"NODE-1": "10.0.1.2", "NODE-2": "10.0.1.3"}


def tx_us(phy_bytes: int) -> float:
    return phy_bytes * 8 / RATE_BPS * 1e6


def fmt(t: float) -> str:
    return f"{t:.2f}".rstrip("0").rstrip(".")


def hop_rows(pid: int, seg: int, ptype: str, name: str, src: str, dst: str, t_app: float, trx: int,
             status2: str = "Successful") -> list[tuple[float, str]]:
    """Rows of one packet over src -> SWITCH-3 -> dst (NetSim writes a row at each reception)."""
    nw = trx + 20
    mac = nw + 20
    phy = mac + 26
    rows = []
    t = t_app
    for hop, (tx, rx) in enumerate(((src, "SWITCH-3"), ("SWITCH-3", dst))):
        start = t + tx_us(phy)
        end = start
        status = "Successful" if hop == 0 else status2
        app_payload = trx if ptype != "Control_Packet" else 0
        cells = [pid, seg, ptype, name, src, dst, tx, rx, fmt(t_app), fmt(t_app), fmt(t_app), fmt(t_app),
                 fmt(t), fmt(start), fmt(end), app_payload, trx, nw, mac, phy, 0, status, IP[src], IP[dst],
                 IP[src], IP[dst], "", fmt(end - t_app) if hop == 1 else ""]
        rows.append((end, ",".join(str(c) for c in cells)))
        t = end
    return rows


def packet_trace() -> str:
    rows: list[tuple[float, str]] = []
    t0 = 10_000_000.0  # the FTP application starts at 10 s, as in the real excerpt
    rows += hop_rows(0, 0, "Control_Packet", "TCP_SYN", "NODE-1", "NODE-2", t0, 0)
    t = rows[-1][0]
    rows += hop_rows(0, 0, "Control_Packet", "TCP_SYN_ACK", "NODE-2", "NODE-1", t, 0)
    t = rows[-1][0]
    rows += hop_rows(0, 0, "Control_Packet", "TCP_ACK", "NODE-1", "NODE-2", t, 0)
    t = rows[-1][0]
    errored = 5
    for seg in range(1, 13):
        status = "Errored" if seg == errored else "Successful"
        r = hop_rows(1, seg, "FTP", "APP1_FTP", "NODE-1", "NODE-2", t + (seg - 1) * tx_us(1526), 1460, status)
        rows += r
        if seg % 2 == 0:
            rows += hop_rows(0, 0, "Control_Packet", "TCP_ACK", "NODE-2", "NODE-1", r[-1][0], 0)
    # the errored segment again (same PACKET_ID / SEGMENT_ID), after the duplicate ACKs
    rows += hop_rows(1, errored, "FTP", "APP1_FTP", "NODE-1", "NODE-2", max(r[0] for r in rows) + 100.0, 1460)
    rows += hop_rows(0, 0, "Control_Packet", "TCP_ACK", "NODE-2", "NODE-1", max(r[0] for r in rows), 0)
    rows.sort(key=lambda r: r[0])
    return HEADER + "\n" + "".join(line + "\n" for _t, line in rows)


V13 = """Application Id,Application Name,Packet generated,Packet received,Throughput (Mbps),Delay(microsec),Jitter(microsec)
1,APP1_FTP,12,12,8.456,2671.64,0.00
2,APP2_CBR,500,498,0.584,1234.50,12.25
"""  # noqa: E501 -- NetSim's CSV header row verbatim
V14 = """Application Id,Application Name,Source Id,Destination Id,Packet generated,Packets Transmitted,Packet received,Payload Transmitted (bytes),Payload Received (bytes),Throughput (Mbps),Delay (microsec),Jitter (microsec)
1,APP1_FTP,1,2,12,13,12,18980,17520,8.456,2671.64,0.00
2,APP2_CBR,1,2,500,500,498,730000,727080,0.584,1234.50,12.25
"""  # noqa: E501 -- V13/V14 are NetSim's CSV header rows verbatim


def plot() -> str:
    out = ["Time (ms),Throughput (Mbps)"]
    for i in range(1, 21):
        t = i * 100
        out.append(f"{t},{(8.4 if 2 <= i <= 18 else 2.1) + (i % 3) * 0.01:.3f}")
    return "\n".join(out) + "\n"


def main() -> None:
    (HERE / "Packet_Trace_ftp_tcp.csv").write_text(packet_trace(), encoding="utf-8")
    (HERE / "Application_Metrics_v13.csv").write_text(V13, encoding="utf-8")
    (HERE / "Application_Metrics_v14.csv").write_text(V14, encoding="utf-8")
    (HERE / "plot_throughput.csv").write_text(plot(), encoding="utf-8")


if __name__ == "__main__":
    main()

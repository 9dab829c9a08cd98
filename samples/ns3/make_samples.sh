#!/bin/sh
# Rebuild the ns-3 samples under samples/ns3/dumbbell/ from scratch.
# Needs g++ and ns-3.37 development files (Debian package libns3-dev); ns3_build.sh compiles.
# Deterministic: running it twice gives byte-identical outputs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
MAXSIZE=1000000
. "$HERE/ns3_build.sh"

ns3_build dumbbell

rm -rf dumbbell
mkdir dumbbell
(cd dumbbell && "$BUILD/dumbbell" --flows=2 --duration=8 --queue=10p --segsize=1448 --prefix=dumbbell > flows.txt)

# one flow into a 100-packet bottleneck queue for 3 s: when the run stops ~130 kB sent are still
# queued, never delivered (a goodput counted from the bytes sent exceeds the 1 Mb/s link). Kept: the
# sender's pcap, the pcap after the bottleneck (n3 dev 0), FlowMonitor's counts, run.json.
rm -rf one_flow
mkdir one_flow
(cd one_flow && "$BUILD/dumbbell" --flows=1 --duration=3 --queue=100p --segsize=1448 --prefix=dumbbell > /dev/null)
(cd one_flow && rm -f dumbbell-2-2.pcap dumbbell.tr dumbbell.cwnd dumbbell-*.data)
cat > one_flow/run.json <<JSON
{
  "simulator": "ns-3.37",
  "program": "dumbbell.cc",
  "command": "dumbbell --flows=1 --duration=3 --queue=100p --segsize=1448 --prefix=dumbbell",
  "purpose": "goodput must count delivered bytes: a full 100-packet bottleneck queue when the run stops",
  "bottleneck": {"nodes": [2, 3], "bandwidth": "1Mbps", "delay": "20ms", "queue": "DropTailQueue 100p"},
  "flows": [{"app": "BulkSend (SendSize 512, unlimited)", "src": "10.1.1.1:49153", "dst": "10.3.1.2:50000", "start_s": 0.5, "stop_s": 3}],
  "files": {"pcap_sender0": "dumbbell-0-0.pcap", "pcap_bottleneck_router1": "dumbbell-3-0.pcap", "flowmon": "flowmon.xml"}
}
JSON

for f in dumbbell/*; do
	if [ "$(stat -c %s "$f")" -gt "$MAXSIZE" ]; then gzip -9 -n -f "$f"; fi
done
TR=dumbbell.tr; [ -f dumbbell/$TR ] || TR=$TR.gz

cat > dumbbell/run.json <<JSON
{
  "simulator": "ns-3.37",
  "program": "dumbbell.cc",
  "command": "dumbbell --flows=2 --duration=8 --queue=10p --segsize=1448 --prefix=dumbbell",
  "tcp": "ns3::TcpNewReno (ns3::TcpL4Protocol::SocketType), SegmentSize 1448, defaults otherwise (SACK, timestamps, window scaling on; delayed ACK 2 segments)",
  "nodes": {"sender0": 0, "sender1": 1, "router0": 2, "router1": 3, "receiver0": 4, "receiver1": 5},
  "access_links": {"bandwidth": "5Mbps", "delay": "10ms", "queue": "DropTailQueue 100p (default), FqCoDel root qdisc (default)"},
  "bottleneck": {"nodes": [2, 3], "devices": ["node 2 device 2", "node 3 device 0"], "bandwidth": "1Mbps", "delay": "20ms", "queue": "DropTailQueue 10p", "qdisc": "none", "subnet": "10.2.1.0/24"},
  "flows": [
    {"app": "BulkSend (SendSize 512, unlimited)", "src": "10.1.1.1:49153", "dst": "10.3.1.2:50000", "start_s": 0.5, "stop_s": 8},
    {"app": "BulkSend (SendSize 512, unlimited)", "src": "10.1.2.1:49153", "dst": "10.3.2.2:50001", "start_s": 0.6, "stop_s": 8}
  ],
  "duration_s": 8,
  "files": {
    "pcap_sender0": "dumbbell-0-0.pcap",
    "pcap_bottleneck_router0": "dumbbell-2-2.pcap",
    "pcap_bottleneck_router1": "dumbbell-3-0.pcap",
    "ascii": "$TR",
    "cwnd_sixth": "dumbbell.cwnd",
    "cwnd": "dumbbell-cwnd.data",
    "ssthresh": "dumbbell-ssth.data",
    "rtt": "dumbbell-rtt.data",
    "inflight": "dumbbell-inflight.data",
    "flowmon": "flowmon.xml",
    "stdout": "flows.txt"
  },
  "traced_socket": "node 0, SocketList/0 (flow 1 sender)",
  "ascii_devices": ["/NodeList/0/DeviceList/0", "/NodeList/2/DeviceList/2", "/NodeList/3/DeviceList/0"]
}
JSON
ls -l dumbbell

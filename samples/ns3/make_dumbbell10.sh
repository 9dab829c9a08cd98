#!/bin/sh
# Rebuild samples/ns3/dumbbell10/ (ten flows, one bottleneck, pcaps of four devices) from scratch.
# Needs g++ and ns-3.37 development files (Debian package libns3-dev); ns3_build.sh compiles.
# Deterministic: running it twice gives byte-identical outputs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
. "$HERE/ns3_build.sh"
ARGS="--flows=10 --duration=5 --rate=2Mbps --queue=20p --segsize=1448 --snaplen=96 --prefix=db10"

ns3_build dumbbell10

rm -rf dumbbell10
mkdir dumbbell10
# shellcheck disable=SC2086
(cd dumbbell10 && "$BUILD/dumbbell10" $ARGS > flows.txt)

cat > dumbbell10/run.json <<JSON
{
  "simulator": "ns-3.37",
  "program": "dumbbell10.cc",
  "command": "dumbbell10 $ARGS",
  "tcp": "ns3::TcpNewReno, SegmentSize 1448, defaults otherwise (SACK, timestamps, window scaling on; delayed ACK 2 segments)",
  "senders": 10,
  "access_links": {"bandwidth": "10Mbps", "delay_ms": "2 + 2 i (sender i), 2 (receivers)"},
  "bottleneck": {"nodes": [10, 11], "bandwidth": "2Mbps", "rate_bps": 2000000, "delay": "10ms", "queue": "DropTailQueue 20p", "qdisc": "none"},
  "flows": "BulkSend 10.1.(i+1).1:49153 -> 10.3.(i+1).2:(50000+i), start 0.5 + 0.05 i s, stop 5 s",
  "pcap_snaplen": 96,
  "duration_s": 5,
  "files": {
    "pcap_sender0": "db10-0-0.pcap",
    "pcap_bottleneck_r0": "db10-10-10.pcap",
    "pcap_bottleneck_r1": "db10-11-0.pcap",
    "pcap_receiver0": "db10-12-0.pcap",
    "flowmon": "flowmon.xml",
    "stdout": "flows.txt"
  }
}
JSON
ls -l dumbbell10

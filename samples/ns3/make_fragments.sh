#!/bin/sh
# Rebuild samples/ns3/fragments/ from scratch: a bulk TCP transfer whose every data segment is
# IP-fragmented (SegmentSize 1460 + 32-byte TCP header with timestamps + 20 > 1500-byte MTU).
# Needs g++ and ns-3.37 development files (Debian package libns3-dev); ns3_build.sh compiles.
# Deterministic: running it twice gives byte-identical outputs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
. "$HERE/ns3_build.sh"

ns3_build fragments

rm -rf fragments
mkdir fragments
(cd fragments && "$BUILD/fragments" --segsize=1460 --maxbytes=200000 --duration=5 --prefix=fragments > stdout.txt)
# the same path, 30,000 bytes: no loss (no retransmission hides the 12 bytes per segment)
(cd fragments && "$BUILD/fragments" --segsize=1460 --maxbytes=30000 --duration=5 --prefix=short >> stdout.txt)
gzip -9 -n -f fragments/fragments.tr fragments/short.tr

cat > fragments/run.json <<JSON
{
  "simulator": "ns-3.37",
  "program": "fragments.cc",
  "command": "fragments --segsize=1460 --maxbytes=200000 --duration=5 --prefix=fragments",
  "command_short": "fragments --segsize=1460 --maxbytes=30000 --duration=5 --prefix=short (no loss)",
  "tcp": "ns3::TcpNewReno, SegmentSize 1460, defaults otherwise (timestamps, SACK, window scaling on)",
  "links": {"n0-n1": "10Mbps 2ms MTU 1500", "n1-n2": "2Mbps 20ms MTU 1500 DropTailQueue 20p"},
  "flow": {"app": "BulkSend (SendSize 512, MaxBytes 200000)", "src": "10.1.1.1:49153", "dst": "10.1.2.2:50000", "start_s": 0.1},
  "fragmentation": "every full segment: 1460 + 32 + 20 = 1512 > 1500, sent as 1500 + 72 bytes (IP payload 1480 + 52)",
  "files": {"pcap_sender": "fragments-0-0.pcap", "ascii_sender": "fragments.tr.gz",
            "short_pcap_sender": "short-0-0.pcap", "short_ascii_sender": "short.tr.gz", "stdout": "stdout.txt"}
}
JSON
ls -l fragments

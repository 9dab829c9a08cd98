#!/bin/sh
# Rebuild samples/ns3/lab_sweep/ (the ns-3 lab runs of docs/labs.md) from scratch: one bulk TCP flow
# through a 1 Mb/s bottleneck, (a) receiver window 4, 8, 16, 32 KB (NewReno, segment 536 B, 100-packet
# queue: loss-free, so goodput is window-limited until the link is full) and (b) TcpLinuxReno against
# TcpNewReno (ns-3.37 has no Tahoe; 128 KB window, 10-packet queue: losses).
# Needs g++ and ns-3.37 development files (Debian package libns3-dev); ns3_build.sh compiles.
# Deterministic (fixed seed 1, run 1): running it twice gives byte-identical outputs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
. "$HERE/ns3_build.sh"

ns3_build lab_sweep

rm -rf lab_sweep
mkdir lab_sweep

# run DIR RWND_BYTES VARIANT QUEUE
run() {
	dir=$1 rwnd=$2 variant=$3 queue=$4
	args="--duration=3 --queue=$queue --variant=$variant --segsize=536 --rwnd=$rwnd --snaplen=96 --prefix=lab"
	mkdir "lab_sweep/$dir"
	# shellcheck disable=SC2086
	(cd "lab_sweep/$dir" && "$BUILD/lab_sweep" $args > flows.txt)
	cat > "lab_sweep/$dir/run.json" <<JSON
{
  "rwnd_bytes": $rwnd,
  "variant": "$variant",
  "segsize": 536,
  "queue_packets": ${queue%p},
  "bottleneck_bps": 1000000,
  "simulator": "ns-3.37",
  "program": "lab_sweep.cc",
  "command": "lab_sweep $args",
  "tcp": "ns3::$variant, SegmentSize 536, RcvBufSize $rwnd, defaults otherwise (SACK, timestamps, window scaling on; delayed ACK 2 segments)",
  "links": {"access": "10Mbps 5ms", "bottleneck": "1Mbps 50ms, DropTailQueue $queue, no qdisc"},
  "flow": "BulkSend 10.1.1.1:49153 -> 10.1.2.2:50000, start 0.1 s, stop 3 s",
  "seed": 1,
  "pcap_snaplen": 96,
  "duration_s": 3,
  "files": {"pcap_sender": "lab-0-0.pcap", "flowmon": "flowmon.xml", "stdout": "flows.txt"}
}
JSON
}

for kb in 4 8 16 32; do
	run "rwnd${kb}k" $((kb * 1024)) TcpNewReno 100p
done
run linuxreno 131072 TcpLinuxReno 10p
run newreno 131072 TcpNewReno 10p
du -ab lab_sweep

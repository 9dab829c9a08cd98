#!/usr/bin/env bash
# Cut samples/linux/app_limited/cubic_tail.pcap out of bench/data/big.pcap (made by
# bench/make_capture.sh: 4 Linux CUBIC flows written by a Python loop of 64 KiB send() calls,
# through a tbf on a bridge, captured at the senders with tcpdump -s 128): the third connection
# (tcp.stream 2, port 41002), its first 70 ms. It holds a fast retransmission (0.0490 s) that
# the receiver's ACK ends at 0.0559 s, after which the sender sends only the 376-byte tail of
# the application's write and then nothing for more than 3 ms: an application-limited burst
# (docs/analysis.md, "Application-limited bursts"). 1,365 packets, 181 KB.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${SRC:-$HERE/../../bench/data/big.pcap}
mkdir -p "$HERE/app_limited"
tshark -r "$SRC" -Y "tcp.stream==2 && frame.time_relative <= 0.07" -w "$HERE/app_limited/cubic_tail.pcap"
capinfos -c "$HERE/app_limited/cubic_tail.pcap"

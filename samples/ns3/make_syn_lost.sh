#!/bin/sh
# Rebuild samples/ns3/syn_lost/lost1/ and lost2/: the sender's capture and ns-3's own cwnd and
# ssthresh traces when the receiver drops the first SYN (lost1) or the first two (lost2), one run
# directory each. See syn_lost.cc.
# Needs g++ and ns-3.37 development files (Debian package libns3-dev). Deterministic.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
. "$HERE/ns3_build.sh"

ns3_build syn_lost

rm -rf syn_lost
for n in 1 2; do
	mkdir -p syn_lost/lost$n
	(cd syn_lost/lost$n && "$BUILD/syn_lost" --lost=$n --prefix=syn_lost)
done

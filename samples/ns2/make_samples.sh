#!/bin/sh
# Rebuild every ns-2 sample under samples/ns2/ from scratch (needs `ns`, ns-2.35: Debian package ns2).
# Deterministic: running it twice gives byte-identical files (gzip -n, fixed seeds).
# Usage: sh make_samples.sh            (from anywhere)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
NS=${NS:-ns}
MAXSIZE=1000000   # files above this are gzipped (gzip -9 -n); tracekit reads .gz transparently

# gzip FILE if it is larger than MAXSIZE; fix the file name in run.json of its directory
shrink() {
	f=$1
	if [ "$(stat -c %s "$f")" -gt "$MAXSIZE" ]; then
		gzip -9 -n -f "$f"
		j=$(dirname "$f")/run.json
		b=$(basename "$f")
		if [ -f "$j" ]; then sed -i "s/\"$b\"/\"$b.gz\"/" "$j"; fi
	fi
}

# add_json DIR KEY JSONVALUE  -- insert one key (own line) right after the opening brace of run.json
add_json() {
	sed -i "1a\\  \"$2\": $3," "$1/run.json"
}

# tp DIR WINDOW DELAY VARIANT QUEUE DURATION ERRRATE SEED BYTES
tp() {
	d=$1; shift
	rm -rf "$d"; mkdir -p "$d"
	(cd "$d" && "$NS" "$HERE/tpwindow.tcl" "$@" >/dev/null)
	add_json "$d" command "\"ns tpwindow.tcl $*\""
}

if [ "${ONLY:-}" = oscillation ]; then rm -rf oscillation
else rm -rf lab_tahoe lab_reno lab_lossy big_queue sweep oscillation grading dumbbell wireless outage
fi

# ---- 1b. the lab's "largest window without oscillation": the lab run (Tahoe, 100 ms, queue 20, 20 s)
# at several windows (packets); bandwidth-delay product 1 Mb/s x 0.2 s / 540 B = 46 packets, + 20 queued = 66
if [ "${ONLY:-}" = "" ] || [ "${ONLY:-}" = oscillation ]; then
for P in 50 60 66 72 90; do
	tp oscillation/w$P $P 100ms Tahoe 20 20 0 1 0
	shrink oscillation/w$P/out.tr
done
fi
[ "${ONLY:-}" = oscillation ] && exit 0


# ---- 1. the lab itself (window 66 pkts, 100 ms, queue 20 -> queue overflow drops), 20 s
tp lab_tahoe 66 100ms Tahoe 20 20 0 1 0
tp lab_reno  66 100ms Reno  20 20 0 1 0
tp lab_lossy 66 100ms Reno  20 20 0.02 1 0

# ---- 1b. a short Reno transfer into a 300-packet queue (window 400, 50 ms, 3 s): at the end ~190 kB
# sent sit in the queue and on the wire, never delivered -- a goodput counted from the bytes sent
# (1.38 Mbit/s) exceeds the 1 Mb/s link; counted from the receiver's r events it cannot
tp big_queue 400 50ms Reno 300 3 0 1 0
add_json big_queue purpose '"goodput must count delivered bytes: undelivered data in a long queue at the end"'

# ---- 2. window sweep: fixed-size transfer of 500000 bytes (1000 x 500 B), Tahoe, 100 ms, queue 20.
# window_ (packets) = round(W * 1024 / 500) for W in KB
for W in 8 16 24 32 48 64; do
	P=$(( (W * 1024 + 250) / 500 ))
	tp sweep/win$W $P 100ms Tahoe 20 20 0 1 500000
	add_json sweep/win$W window_conversion '"window_pkts = round(window_kb * 1024 / 500)"'
	add_json sweep/win$W window_kb $W
done

# ---- 3. grading: reference = Tahoe, window 32, 50 ms, queue 20, 1 % packet error, 20 s, seeds 1..3
REF="32 50ms Tahoe 20 20 0.01"
for s in 1 2 3; do
	tp grading/ref_seed$s $REF $s 0
	add_json grading/ref_seed$s role '"reference"'
done
S=grading/submissions
tp $S/same      32 50ms Tahoe 20 20 0.01 7 0
add_json $S/same differs_from_reference '"nothing but the seed (7)"'
add_json $S/same role '"submission"'
tp $S/window    16 50ms Tahoe 20 20 0.01 1 0
add_json $S/window differs_from_reference '"window_ 16 instead of 32"'
add_json $S/window role '"submission"'
tp $S/reno      32 50ms Reno  20 20 0.01 1 0
add_json $S/reno differs_from_reference '"Agent/TCP/Reno instead of Agent/TCP (Tahoe)"'
add_json $S/reno role '"submission"'
tp $S/queue     32 50ms Tahoe 5 20 0.01 1 0
add_json $S/queue differs_from_reference '"queue-limit 5 instead of 20"'
add_json $S/queue role '"submission"'
# truncated: the ref_seed1 run, out.tr cut in the middle of a line (as if the simulator was killed
# before flush/close). Window.tr and WindowMon.tr are left complete.
tp $S/truncated $REF 1 0
f=$S/truncated/out.tr
full=$(stat -c %s $f)
n=$(( full * 6 / 10 ))
# move the cut until neither the last kept byte nor the first removed byte is a newline
while [ "$(head -c $n $f | tail -c 1 | od -An -tx1 | tr -d ' ')" = "0a" ] || \
      [ "$(head -c $((n + 1)) $f | tail -c 1 | od -An -tx1 | tr -d ' ')" = "0a" ]; do
	n=$((n + 7))
done
head -c $n $f > $f.cut && mv $f.cut $f
add_json $S/truncated full_size_bytes $full
add_json $S/truncated truncated_at_byte $n
add_json $S/truncated truncated true
add_json $S/truncated differs_from_reference '"same settings as ref_seed1; out.tr truncated mid-line (simulated killed simulator)"'
add_json $S/truncated role '"submission"'

for d in lab_tahoe lab_reno lab_lossy sweep/win* grading/ref_seed* $S/*; do shrink $d/out.tr; done

# ---- 4. dumbbell: 4 flows (Reno, NewReno, Sack1, Tahoe/DelAck) over a 1.5 Mb/s bottleneck, 10 s
mkdir -p dumbbell
(cd dumbbell && "$NS" "$HERE/dumbbell.tcl" 10 >/dev/null)
add_json dumbbell command '"ns dumbbell.tcl 10"'
shrink dumbbell/out.tr

# ---- 4b. outage: one Reno flow whose link drops everything from 2 s to 6 s: the timer fires 5 times
# for one segment (backed off); the agent traces cwnd_ and ssthresh_ (ns-2 halves ssthresh every time)
mkdir -p outage
(cd outage && "$NS" "$HERE/outage.tcl" >/dev/null)
add_json outage command '"ns outage.tcl"'
shrink outage/out.tr

# ---- 5. wireless: 3 mobile nodes, DSDV, one TCP flow, old and new trace formats, 18 s
mkdir -p wireless
(cd wireless && "$NS" "$HERE/wireless.tcl" old 18 >/dev/null 2>&1 && "$NS" "$HERE/wireless.tcl" new 18 >/dev/null 2>&1)
cat > wireless/run.json <<'EOF'
{
  "simulator": "ns-2.35",
  "script": "wireless.tcl",
  "commands": ["ns wireless.tcl old 18", "ns wireless.tcl new 18"],
  "nodes": 3,
  "routing": "DSDV",
  "mac": "Mac/802_11",
  "propagation": "Propagation/TwoRayGround",
  "ifq": "Queue/DropTail/PriQueue 50",
  "topography": [500, 500],
  "positions": {"0": [50, 250], "1": [450, 250], "2": [250, 250]},
  "movement": "at 14 s node 1 setdest 150 260 at 30 m/s",
  "flow": {"tcp_agent": "Agent/TCP/Reno", "sink_agent": "Agent/TCPSink", "src": "0.0", "dst": "1.0", "class_": 2, "packetSize_": 512, "window_": 4, "ftp_start_s": 10.0},
  "traces": {"agentTrace": "ON", "routerTrace": "ON", "macTrace": "ON", "movementTrace": "OFF"},
  "duration_s": 18,
  "seed": "defaultRNG seed 12345",
  "files": {"old_format": "wireless.tr", "new_format": "wireless_new.tr"}
}
EOF
shrink wireless/wireless.tr
shrink wireless/wireless_new.tr

sh "$HERE/make_feedback_example.sh" >/dev/null
sh "$HERE/make_readme.sh" > README.md
echo "done"

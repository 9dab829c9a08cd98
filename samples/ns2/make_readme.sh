#!/bin/sh
# Print samples/ns2/README.md (called by make_samples.sh; counts are computed from the files).
set -eu
cd "$(dirname "$0")"

# trace file of a run dir (out.tr or out.tr.gz)
tr_of() { if [ -f "$1/out.tr" ]; then echo "$1/out.tr"; else echo "$1/out.tr.gz"; fi; }
lines() { zcat -f "$1" | wc -l | tr -d ' '; }
size() { stat -c %s "$1"; }
# "d total (q queue, e error-model)" for a wired trace: a d whose uid had a + on the same link = queue drop
dstat() {
	zcat -f "$1" | awk '
		$1=="+" { seen[$3" "$4" "$12]=1 }
		$1=="d" { n++; if (($3" "$4" "$12) in seen) q++; else e++ }
		END { printf "%d d (%d queue overflow, %d error model)", n, q, e }'
}
# value of a simple key in run.json
jv() { sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1/run.json" | head -1; }
partial() { if [ -n "$(zcat -f "$1" | tail -c 1 | tr -d '\n')" ]; then echo " + 1 partial line (no final newline)"; fi; }

cat <<'EOF'
# ns-2 samples (real ns-2.35 runs)

Rebuild everything with `sh make_samples.sh` (deterministic; needs `ns` from the Debian `ns2` package).
Each run directory has `run.json` with its parameters (and the exact command). Traces above 1 MB
are stored as `*.gz` (`gzip -9 -n`).

Scripts:
- `tpwindow.tcl` — the "TCP window" lab (tpWindow.tcl) parameterised: `ns tpwindow.tcl WINDOW DELAY ?VARIANT? ?QUEUE? ?DURATION? ?ERRRATE? ?SEED? ?BYTES?`.
  Procs `plotWindow` / `plotTPut` are the lab's verbatim. Check: `ns tpwindow.tcl 66 100ms Reno 20 60`
  reproduces the corpus files `Window.tr`, `WindowMon.tr` and `outWindow.head10000.tr` byte for byte.
  Trace file is `out.tr` (the lab calls it `outWindow.tr`); no nam file.
- `dumbbell.tcl` — 4 TCP flows through a 1.5 Mb/s bottleneck; trace-all + cwnd_ agent trace + queue monitor.
- `outage.tcl` — one Reno flow whose link drops everything from 2 s to 6 s (backed-off timer); cwnd_ and ssthresh_ agent trace.
- `wireless.tcl` — 3 mobile nodes, DSDV, one TCP flow; old CMU format or `use-newtrace`.
- `make_readme.sh` — writes this file.

Conventions of the tpwindow runs: link n0->n1 1 Mb/s, DropTail, packetSize_ 500 (540 B on the wire),
fid 1, FTP from 0.5 s, Window.tr every 0.02 s and WindowMon.tr every 1 s from 0.1 s, node 0 -> node 1.
Error model (if any): `ErrorModel`, `unit pkt`, `RandomVariable/Uniform`, installed with `$ns lossmodel`
before the flow monitor, so error losses are `d` lines with no `+` before them, and are counted in
WindowMon.tr's drops. RNG: base seed 12345 + SEED x `next-substream`.
"d" counts below: a drop whose uid had a `+` on the same link is a queue overflow, otherwise it
was dropped by the error model.

## tpwindow runs

| dir | what | variant | window (pkts) | delay | queue | err rate | seed | dur (s) | out.tr lines | d events | Window.tr / WindowMon.tr lines |
|---|---|---|---|---|---|---|---|---|---|---|---|
EOF

row() {
	d=$1; what=$2
	t=$(tr_of "$d")
	echo "| \`$d/\` ($(basename "$t")) | $what | $(jv "$d" variant) | $(jv "$d" window_pkts) | $(jv "$d" delay) | $(jv "$d" queue_limit_pkts) | $(jv "$d" error_rate) | $(jv "$d" seed) | $(jv "$d" duration_s) | $(lines "$t")$(partial "$t") | $(dstat "$t") | $(lines "$d/Window.tr") / $(lines "$d/WindowMon.tr") |"
}
row lab_tahoe "lab, Tahoe (Agent/TCP)"
row lab_reno  "lab, Reno (same as the corpus student run, 20 s)"
row lab_lossy "lab, Reno + 2 % packet error model"
row big_queue "short Reno transfer into a 300-packet queue: data still queued at the end (goodput test)"
for P in 50 60 66 72 90; do
	row oscillation/w$P "the lab at window $P (largest window without oscillation: 66)"
done
for W in 8 16 24 32 48 64; do
	d=sweep/win$W
	row $d "window sweep ${W} KB, 500000-byte transfer, download time $(jv $d download_time_s) s"
done
for s in 1 2 3; do row grading/ref_seed$s "grading reference, seed $s"; done
for s in same window reno queue truncated; do
	row grading/submissions/$s "submission \`$s\`: $(jv grading/submissions/$s differs_from_reference)"
done
# feedback/: the worked example of docs/grading.md (sh make_feedback_example.sh)
row feedback/ref "feedback example: the reference"
row feedback/submissions/alice "feedback example: \`alice\`, the reference's own command"
row feedback/submissions/bob "feedback example: \`bob\`, window_ 16"
row feedback/submissions/carol "feedback example: \`carol\`, a copy of bob's folder"
row feedback/submissions/dave "feedback example: \`dave\`, seed 2, out.tr cut mid-line"

cat <<EOF

## dumbbell/ (\`ns dumbbell.tcl 10\`)

Nodes s0..s3 = 0..3, routers r0 = 4, r1 = 5, receivers d0..d3 = 6..9; access links 10 Mb/s with
5/10/15/20 ms; bottleneck 4->5 1.5 Mb/s 20 ms DropTail queue 20; packetSize_ 1000 (1040 B), window_ 64;
flows fid 0 Reno, 1 NewReno, 2 Sack1 (TCPSink/Sack1: 48/56/64-byte ACKs), 3 Tahoe (TCPSink/DelAck);
starts 0.1/0.6/1.1/1.6 s; 10 s.

| file | what | lines | d events |
|---|---|---|---|
| \`$(tr_of dumbbell)\` | trace-all | $(lines $(tr_of dumbbell)) | $(dstat $(tr_of dumbbell)); per fid: $(zcat -f $(tr_of dumbbell) | awk '$1=="d"{c[$8]++} END{for(k in c) printf "%s:%d ", k, c[k]}' | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ *$//') |
| \`dumbbell/cwnd.tr\` | agent trace of cwnd_ (4 senders; col 2 = sender node) | $(lines dumbbell/cwnd.tr) | - |
| \`dumbbell/queue.tr\` | queue monitor r0->r1, \`q -t T -s 4 -d 5 -l BYTES -p PKTS\` | $(lines dumbbell/queue.tr) | - |
| \`dumbbell/run.json\` | parameters | | |

## outage/ (\`ns outage.tcl\`)

Node 0 -> node 1, 5 Mb/s 20 ms DropTail queue 50, Agent/TCP/Reno (packetSize_ 1000, window_ 60) from 0.1 s;
an \`ErrorModel\` on 0->1 drops every packet from 2 s to 6 s, so the retransmission timer fires for one
segment at 2.30, 2.70, 3.50, 5.10 and 8.30 s (doubling); ns-2 sets \`ssthresh_\` to 30 at the first
expiry and to 2 at every later one (\`TcpAgent::timeout\` → \`closecwnd(0)\`); 12 s.

| file | what | lines | d events |
|---|---|---|---|
| \`$(tr_of outage)\` | trace-all | $(lines $(tr_of outage)) | $(dstat $(tr_of outage)) |
| \`outage/cwnd.tr\` | agent trace of cwnd_ and ssthresh_ | $(lines outage/cwnd.tr) | - |
| \`outage/run.json\` | parameters | | |

## wireless/ (\`ns wireless.tcl old|new 18\`)

3 nodes, 802.11, TwoRayGround, DSDV; TCP Reno node 0 -> node 1 (packetSize_ 512, window_ 4) from 10 s;
node 1 moves at 14 s; 18 s. agent/router/MAC traces on.

EOF
wo=wireless/wireless.tr; [ -f $wo ] || wo=$wo.gz
wn=wireless/wireless_new.tr; [ -f $wn ] || wn=$wn.gz
echo "| file | what | lines | drop events |"
echo "|---|---|---|---|"
echo "| \`$wo\` | old CMU wireless format | $(lines $wo) | $(zcat -f $wo | grep -c '^D ') \`D\` ($(zcat -f $wo | awk '$1=="D"{c[$4" "$5]++} END{for(k in c) printf "%s:%d, ", k, c[k]}' | sed 's/, $//')) |"
echo "| \`$wn\` | new wireless format (use-newtrace) | $(lines $wn) | $(zcat -f $wn | grep -c '^d ') \`d\` |"
echo "| \`wireless/run.json\` | parameters | | |"

#!/bin/sh
# Rebuild samples/ns2/feedback/: the small worked example of docs/grading.md (needs `ns`, ns-2.35).
# One reference run and four students of the tpWindow lab (tpwindow.tcl), 6 simulated seconds each
# so that the files stay small. Deterministic: running it twice gives byte-identical files.
#
#   ref/          the instructor's reference: Tahoe, window_ 32, 50 ms, queue 20, 1 % loss, seed 1
#   submissions/alice/  the same command as the reference (so: byte-identical to it)
#   submissions/bob/    window_ 16 instead of 32 (seed 3)
#   submissions/carol/  a copy of bob's folder (cp): what copy detection must flag
#   submissions/dave/   the reference settings with seed 2, out.tr cut in the middle of a line
#                       (as if the simulator had been killed before flushing its trace)
# Usage: sh make_feedback_example.sh   (from anywhere)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
NS=${NS:-ns}
D=feedback
S=$D/submissions

# run DIR ARGS...  -- one tpwindow.tcl run in a fresh DIR (run.json gets the command line)
run() {
	d=$1; shift
	rm -rf "$d"; mkdir -p "$d"
	(cd "$d" && "$NS" "$HERE/tpwindow.tcl" "$@" >/dev/null)
	sed -i "1a\\  \"command\": \"ns tpwindow.tcl $*\"," "$d/run.json"
}

rm -rf "$D/ref" "$S"
REF="32 50ms Tahoe 20 6 0.01"
run $D/ref $REF 1 0
run $S/alice $REF 1 0
run $S/bob 16 50ms Tahoe 20 6 0.01 3 0
mkdir -p $S/carol && cp $S/bob/* $S/carol/
run $S/dave $REF 2 0
f=$S/dave/out.tr
n=$(( $(stat -c %s $f) * 6 / 10 ))
# move the cut until neither the last kept byte nor the first removed byte is a newline
while [ "$(head -c $n $f | tail -c 1 | od -An -tx1 | tr -d ' ')" = "0a" ] || \
      [ "$(head -c $((n + 1)) $f | tail -c 1 | od -An -tx1 | tr -d ' ')" = "0a" ]; do
	n=$((n + 7))
done
head -c $n $f > $f.cut && mv $f.cut $f
sed -i "1a\\  \"truncated_at_byte\": $n," $S/dave/run.json
echo "done"

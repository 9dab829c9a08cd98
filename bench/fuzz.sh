#!/bin/sh
# Fuzz the compiled capture reader (src/capture) with cargo-fuzz for a given time (seconds,
# default 60), keeping the corpus under bench/fuzz-corpus/capture/ (git keeps only the seeds).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP lets a stable toolchain take
# the sanitizer flags it passes. A crash leaves its input under fuzz/artifacts/capture/.
set -eu
secs=${1:-60}
cd "$(dirname "$0")/.."
mkdir -p bench/fuzz-corpus/capture
RUSTC_BOOTSTRAP=1 cargo fuzz run capture bench/fuzz-corpus/capture -- -max_total_time="$secs" -rss_limit_mb=1024

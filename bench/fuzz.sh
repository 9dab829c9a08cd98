#!/bin/sh
# Fuzz the compiled core with cargo-fuzz for a given time (seconds, default 60): the target
# `capture` (the capture reader, src/capture; the default) or `stream` (the streamed summary,
# src/stream, which `analyze --json` runs on a plain capture), keeping the corpus under
# bench/fuzz-corpus/TARGET/ (git keeps only the seeds).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP lets a stable toolchain take
# the sanitizer flags it passes. A crash leaves its input under fuzz/artifacts/TARGET/.
set -eu
secs=${1:-60}
target=${2:-capture}
cd "$(dirname "$0")/.."
mkdir -p "bench/fuzz-corpus/$target"
RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "bench/fuzz-corpus/$target" -- -max_total_time="$secs" -rss_limit_mb=1024

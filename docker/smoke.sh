#!/usr/bin/env bash
# The Docker image's install and smoke steps, runnable without Docker (CI: tests/test_docker.py).
#
#   docker/smoke.sh [WORKDIR]              build the wheel as docker/build-test.sh does outside the
#                                          image (pip wheel --no-deps .), install it with [pyshark]
#                                          into a fresh venv as the image's first stage does, then
#                                          run the smoke checks below
#   smoke.sh --installed SAMPLE.pcap       only the smoke checks, with the `tracekit` on PATH
#                                          (the Dockerfile runs this at build time)
#
# Environment: PYTHON (default python3) for the fresh venv; pip's own PIP_* variables apply.
set -euo pipefail

checks() {
  # $1 = tracekit command, $2 = a small pcap, $3 = scratch folder
  local tk="$1" pcap="$2" tmp="$3"
  "$tk" --help >/dev/null
  "$tk" --version
  # every reader module made it into the wheel
  local readers
  readers="$("$tk" formats)"
  grep -q '^pcap ' <<<"$readers" && grep -q '^ns2 ' <<<"$readers"
  "$tk" analyze "$pcap" --json >"$tmp/smoke.json"
  # the interpreter beside the command: the image's /usr/local/bin/python, or the venv's
  "$(dirname "$tk")/python" - "$tmp/smoke.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["flows"] and doc["flows"][0]["unique_bytes"] > 0, doc
PY
  # the HTML report needs vl-convert and the fonts: render one
  "$tk" analyze "$pcap" --report "$tmp/smoke.html" >/dev/null
  grep -q '<!DOCTYPE html>' "$tmp/smoke.html"
  echo "tracekit smoke test OK"
}

if [[ "${1:-}" == "--installed" ]]; then
  tmp="$(mktemp -d)"
  checks "$(command -v tracekit)" "$2" "$tmp"
  rm -rf "$tmp"
  exit 0
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
py="${PYTHON:-python3}"
# the wheel, as docker/build-test.sh builds it into the build context's dist/
"$py" -m pip wheel --no-deps --wheel-dir "$work/wheels" "$repo"
# stage 1 of the Dockerfile: a fresh environment with nothing but the wheel and its dependencies
"$py" -m venv "$work/venv"
wheels=("$work"/wheels/tracekit-*.whl)
"$work/venv/bin/python" -m pip install --quiet "${wheels[0]}[pyshark]"
export XDG_CACHE_HOME="$work/cache" MPLCONFIGDIR="$work/cache"
checks "$work/venv/bin/tracekit" "$repo/samples/linux/bulk_lossy.pcap" "$work"

#!/usr/bin/env bash
# Build the Docker image for real (podman, no registry needed) and run tracekit in it with the
# README's hardening flags: analyze --json, a batch with a broken file, the bundled grading example,
# and the tshark fallback for a link type only tshark decodes. CI runs it from .ci/run.
#
#   sudo docker/build-test.sh            build, check, then remove everything this run created
#   sudo KEEP=1 docker/build-test.sh     keep the images (the next run reuses the base images)
#   sudo docker/build-test.sh clean      remove kept images and the private storage
#
# Environment: KEEP=1 (keep images and storage), TRACEKIT_PODMAN_DIR (podman's private storage and
# this script's state; default /var/tmp/tracekit-podman), PYTHON (the host interpreter that builds the
# wheel; default python3, same minor version as the image's), MIRROR (a Debian mirror URL, default:
# the one apt uses, read from /etc/apt/sources.list.d/ or /etc/apt/sources.list).
#
# Steps (each base image is reused when it already exists in the private storage):
#   1. base image: debootstrap --variant=minbase bookworm, apt's sources copied in, podman import;
#   2. a stand-in for the python:*-slim image: Debian's python3 + python3-venv on that base, passed to
#      the Dockerfile as PYTHON_IMAGE (no registry is reachable from CI);
#   3. a stand-in for the rust:*-slim image: gcc (the linker rustc calls) on that base, plus the
#      host's own Rust toolchain (cargo, rustc and the standard library: `rustc --print sysroot`),
#      copied to /usr/local as the official image has it -- no toolchain is downloaded;
#   4. the build context: `git archive HEAD` (committed files only); the Dockerfile's first stage
#      compiles the wheel (maturin) from it, fetching the locked crates from crates.io;
#   5. podman build --pull=never --format docker (the OCI format ignores SHELL) --network host (no
#      bridge or NAT rules left behind); pip in the build trusts the host pip's CA bundle through a
#      read-only mount of a pip config folder (-v DIR:/etc/xdg/pip:ro), never a layer;
#   6. the checks (docker/check_outputs.py), each in a fresh container, then `podman diff` (the
#      container's file system must be unchanged) and a checksum of the read-only input folder.
# podman runs as root with its own --root/--runroot, so it never touches other images on the machine.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${TRACEKIT_PODMAN_DIR:-/var/tmp/tracekit-podman}"
keep="${KEEP:-0}"
py="${PYTHON:-python3}"
base_image="localhost/tracekit-base/debian:bookworm-minbase"
python_image="localhost/tracekit-base/python:3-bookworm"
rust_image="localhost/tracekit-base/rust:host-bookworm"
image="localhost/tracekit:build-test"
marker=".tracekit-build-test"

say() { printf '\n== %s\n' "$*"; }
die() { printf 'build-test: %s\n' "$*" >&2; exit 1; }

mode="${1:-build}"
[[ "$mode" == build || "$mode" == clean ]] || die "usage: $0 [clean]"
[[ $(id -u) == 0 ]] || die "run as root (debootstrap and rootful podman): sudo $0"
for tool in podman runc debootstrap git rustc "$py"; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install podman runc debootstrap)"
done

mkdir -p "$state"
[[ -e "$state/$marker" || -z "$(ls -A "$state")" ]] || die "$state exists and is not this script's"
touch "$state/$marker"
exec 9>"$state/lock"
flock -n 9 || die "another build-test.sh is running on $state"
mkdir -p "$state/storage" "$state/run" "$state/tmp" "$state/pip"

# crun refuses this machine's hybrid cgroup layout: runc. Root here cannot raise its hard limits to
# podman's defaults (nofile 1048576): ask for less. Events to a file (no journald in CI containers).
cat >"$state/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=8192:8192"]

[engine]
runtime = "runc"
events_logger = "file"
EOF
export CONTAINERS_CONF="$state/containers.conf"
pm() { podman --root "$state/storage" --runroot "$state/run" --tmpdir "$state/tmp" "$@"; }

remove_state() {  # every container and image in the private storage, then the folder itself
  pm system reset --force >/dev/null 2>&1 || true
  [[ -e "$state/$marker" ]] && rm -rf "$state"
  say "removed $state"
}
if [[ "$mode" == clean ]]; then
  remove_state
  exit 0
fi

work="$(mktemp -d /var/tmp/tracekit-build-test.XXXXXX)"
created=()  # images this run made (removed at exit unless KEEP=1)
cleanup() {
  local rc=$?
  pm rm --all --force >/dev/null 2>&1 || true
  [[ -n "$work" ]] && rm -rf "$work"
  if [[ "$keep" == 1 ]]; then
    say "KEEP=1: images kept in $state (podman --root $state/storage images)"
  elif [[ " ${created[*]} " == *" $base_image "* ]]; then
    # this run made the base images too: nothing of the state was there before, remove it all
    remove_state
  else
    pm rmi --force "${created[@]}" >/dev/null 2>&1 || true
    pm image prune --force >/dev/null 2>&1 || true
    say "removed ${created[*]:-nothing}; base images kept in $state"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A Debian mirror: the one apt is configured with (deb822 .sources first, then one-line .list).
apt_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |\n|$)/ && /Types:[^\n]*deb( |\n|$)/ {
           if (match($0, /URIs:[ \t]*[^ \t\n]+/)) { u=substr($0,RSTART,RLENGTH); sub(/URIs:[ \t]*/,"",u);
             if (u !~ /security/) { print u; exit } } }' "$f"
  done | head -n1
  grep -hsE '^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[a-z]+://[^ ]+[[:space:]]+bookworm[[:space:]]' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{for(i=2;i<=NF;i++) if ($i ~ /:\/\//) {print $i; exit}}' || true
}

# What Debian's official images do to a debootstrapped tree (debuerreotype): apt keeps no package
# caches in layers (docker-clean), and the -slim images that python:*-slim builds on also drop
# documentation, manual pages and translations, now and for every later install. $1 is the new
# tree (never /): everything here is relative to it.
slim() {
  local root="$1"
  [[ -n "$root" && "$root" != / && -d "$root/etc/apt" && "$root" == "$work"/* ]] || die "slim: bad root '$root'"
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' >"$root/etc/apt/apt.conf.d/docker-clean"
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/linda/*' \
    'path-exclude /usr/share/lintian/overrides/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/man/*' >"$root/etc/dpkg/dpkg.cfg.d/docker"
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "${root:?}"/usr/share/{groff,info,linda,locale,man}/* "${root:?}"/usr/share/lintian/overrides/*
  rm -rf "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/cache/apt/*.bin "${root:?}"/var/lib/apt/lists/*
  rm -f "${root:?}"/var/log/*.log
}

build_base() {
  local mirror root="$work/rootfs"
  mirror="${MIRROR:-$( (apt_mirror || true) | head -n1)}"
  [[ -n "$mirror" ]] || die "no Debian bookworm mirror in /etc/apt: set MIRROR=http://.../debian"
  say "debootstrap --variant=minbase bookworm (mirror from apt's configuration)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
    rm -f "$root/etc/apt/sources.list"
  fi
  slim "$root"
  tar -C "$root" --numeric-owner -cf - . | pm import --change 'CMD ["/bin/bash"]' - "$base_image" >/dev/null
  rm -rf "$root"
  created+=("$base_image")
}

build_python_base() {
  say "the python base image: Debian's python3 + python3-venv (python-is-python3 for \`python\`)"
  mkdir -p "$work/python-base"
  cat >"$work/python-base/Containerfile" <<EOF
FROM $base_image
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      python3 python3-venv python-is-python3 \\
 && rm -rf /var/lib/apt/lists/*
CMD ["python3"]
EOF
  pm build --pull=never --format docker --network host -q -t "$python_image" "$work/python-base" >/dev/null
  created+=("$python_image")
}

build_rust_base() {
  local sysroot
  sysroot="$(rustc --print sysroot)"
  [[ -x "$sysroot/bin/cargo" && -d "$sysroot/lib/rustlib" ]] || die "no cargo/rustlib under $sysroot"
  say "the rust base image: gcc + the host's Rust toolchain ($(rustc --version))"
  mkdir -p "$work/rust-base/toolchain/bin"
  cp "$sysroot/bin/cargo" "$sysroot/bin/rustc" "$work/rust-base/toolchain/bin/"
  cp -a "$sysroot/lib" "$work/rust-base/toolchain/"
  cat >"$work/rust-base/Containerfile" <<EOF
FROM $base_image
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
COPY toolchain/ /usr/local/
CMD ["bash"]
EOF
  pm build --pull=never --format docker --network host -q -t "$rust_image" "$work/rust-base" >/dev/null
  rm -rf "$work/rust-base"
  created+=("$rust_image")
}

# pip in the build trusts what the host's pip trusts: its CA bundle (cert) and index, copied into a
# folder mounted read-only at /etc/xdg/pip (a global pip config location) for the build only.
pip_config() {
  local cert index
  cert="$("$py" -m pip config get global.cert 2>/dev/null || true)"
  cert="${PIP_CERT:-${cert:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}}"
  index="${PIP_INDEX_URL:-$("$py" -m pip config get global.index-url 2>/dev/null || true)}"
  rm -f "$state/pip/"*
  {
    echo "[global]"
    if [[ -n "$cert" && -f "$cert" ]]; then
      cp "$cert" "$state/pip/ca-bundle.pem"
      echo "cert = /etc/xdg/pip/ca-bundle.pem"
    fi
    [[ -z "$index" ]] || echo "index-url = $index"
    echo "disable-pip-version-check = true"
  } >"$state/pip/pip.conf"
}

t_start=$SECONDS
pm image exists "$base_image" || build_base
pm image exists "$python_image" || build_python_base
pm image exists "$rust_image" || build_rust_base
t_bases=$((SECONDS - t_start))

say "build context: git archive HEAD ($(git -C "$repo" -c safe.directory="$repo" rev-parse --short HEAD))"
ctx="$work/context"
mkdir -p "$ctx"
git -C "$repo" -c safe.directory="$repo" archive --format=tar HEAD | tar -x -C "$ctx"
pip_config

say "podman build (PYTHON_IMAGE=$python_image RUST_IMAGE=$rust_image)"
t_build=$SECONDS
pm build --pull=never --format docker --network host --build-arg "PYTHON_IMAGE=$python_image" --build-arg "RUST_IMAGE=$rust_image" \
  -v "$state/pip:/etc/xdg/pip:ro" -t "$image" "$ctx" >"$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log" >&2; die "podman build failed"; }
created+=("$image")
grep -E 'tracekit smoke test OK|^tracekit' "$work/build.log" || true
t_build=$((SECONDS - t_build))
cached="$(grep -c '^--> Using cache' "$work/build.log" || true)"
size="$(pm image inspect --format '{{.Size}}' "$image")"

# ---- the checks ----------------------------------------------------------------------------------
in="$work/in" out="$work/out"
"$py" "$repo/docker/check_outputs.py" prepare "$repo" "$in"
mkdir -p "$out"
# the README's `-u "$(id -u):$(id -g)"`: as root that would be uid 0, so take the image's user
uid=10001 gid=10001
chown "$uid:$gid" "$out"
in_sum="$(cd "$in" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)"

n=0 entry=""
# who the image runs as, and whether dumpcap got privileges (a setuid bit or file capabilities)
image_probe='import json, os, shutil, stat
d = shutil.which("dumpcap")
m = os.stat(d).st_mode
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "dumpcap": d, "mode": stat.filemode(m),
                  "setuid": bool(m & (stat.S_ISUID | stat.S_ISGID)),
                  "capabilities": "security.capability" in os.listxattr(d)}))'
run_tk() {  # run_tk NAME OUTFILE ARGS...: one hardened container; stdout to OUTFILE; rc to OUTFILE.rc
  local name="tk-check-$((++n))" stdout="$1"; shift
  local rc=0
  pm run --name "$name" ${entry:+--entrypoint "$entry"} -u "$uid:$gid" --network none --read-only --tmpfs /tmp --memory 4g \
    --pids-limit 256 --cap-drop ALL --security-opt no-new-privileges \
    -v "$in:/in:ro" -v "$out:/data" "$image" "$@" >"$stdout" 2>"$stdout.err" || rc=$?
  echo "$rc" >"$stdout.rc"
  # nothing written outside /data (the root is read-only, /tmp a tmpfs): the container's file system
  # differs from the image only by the mount points podman makes (/data, /in, /etc/hosts, ...),
  # exactly as for a container that only printed its version
  pm diff "$name" | sort >"$work/diff.$n"
  pm rm "$name" >/dev/null
  if [[ -z "${baseline:-}" ]]; then
    baseline="$work/diff.$n"
  elif ! cmp -s "$baseline" "$work/diff.$n"; then
    diff "$baseline" "$work/diff.$n" >&2 || true
    die "$name changed its file system outside /data"
  fi
}

say "checks in the container (-u $uid:$gid --network none --read-only --tmpfs /tmp --cap-drop ALL ...)"
t_checks=$SECONDS
res="$work/results"
mkdir -p "$res"
run_tk "$res/version.txt" --version  # the baseline diff
run_tk "$res/analyze.json" analyze /in/bulk_lossy.pcap --json
run_tk "$res/batch.txt" batch /in/batch -o /data/batch --no-progress
run_tk "$res/grade.txt" grade --rubric /in/grading/rubric.toml --submissions /in/grading/submissions -o /data/grades
run_tk "$res/fallback.json" analyze /in/fallback/atm_llc.pcap --json
run_tk "$res/fast.json" analyze /in/fallback/ethernet.pcap --json
pm image inspect --format '{{.Config.User}}' "$image" >"$res/user.txt"
entry=python run_tk "$res/image.json" -c "$image_probe"
t_checks=$((SECONDS - t_checks))
[[ "$in_sum" == "$(cd "$in" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" ]] \
  || die "the read-only input folder changed"
"$py" "$repo/docker/check_outputs.py" check "$res" "$out"

say "summary"
echo "base images: $((t_bases)) s ($([[ " ${created[*]} " == *" $base_image "* ]] && echo built || echo reused))"
echo "image build: $t_build s ($cached steps from podman's layer cache); checks: $t_checks s; total: $((SECONDS - t_start)) s"
echo "image size: $size"
pm images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | sed 's/^/  /'
echo "build-test OK"

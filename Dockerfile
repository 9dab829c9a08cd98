# syntax=docker/dockerfile:1
# tracekit in a container, in three stages: the wheel is compiled from this source tree (the Rust core,
# tracekit._core, by maturin) in a Rust image; a second stage installs it into a venv; the runtime
# stage copies only that venv, so no compiler, cargo or pip reaches the image users run.
#   docker build -t tracekit .                           # podman: add --format docker (for SHELL)
# docker/build-test.sh does it with podman and no registry: it stands in for the two base images
# (Debian's python3; the host's own Rust toolchain on Debian) and runs the checks below.
# Run (untrusted input, hardened):
#   docker run --rm -u "$(id -u):$(id -g)" --network none --read-only --tmpfs /tmp \
#     --memory 4g --pids-limit 256 --cap-drop ALL --security-opt no-new-privileges \
#     -v "$PWD":/data tracekit batch /data/traces -o /data/reports
# CI lints this file with hadolint (tests/test_docker.py), then builds it and runs it for real
# (docker/build-test.sh, from .ci/run).
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm
ARG RUST_IMAGE=rust:1.95.0-slim-bookworm

# ---- stage 1: the wheel, compiled here (cargo fetches the locked crates from crates.io) ----
FROM ${RUST_IMAGE} AS wheel
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
# maturin runs under Python; the abi3 wheel needs no Python headers
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/maturin \
 && /opt/maturin/bin/pip install --no-cache-dir "maturin>=1.7,<2"
WORKDIR /src
# the crates are fetched before the Python package is copied: a Python-only change reuses this layer
COPY Cargo.toml Cargo.lock ./
COPY src/ src/
# a build that trusts a private CA (docker/build-test.sh mounts the host's at /etc/xdg/pip) hands it
# to cargo too
RUN if [ -f /etc/xdg/pip/ca-bundle.pem ]; then export CARGO_HTTP_CAINFO=/etc/xdg/pip/ca-bundle.pem; fi \
 && cargo fetch --locked
COPY pyproject.toml README.md ./
COPY tracekit/ tracekit/
RUN /opt/maturin/bin/maturin build --release --locked --offline --out /dist

# ---- stage 2: tracekit, pyshark and their dependencies in a venv; pip and the wheel stay here ----
FROM ${PYTHON_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=wheel /dist/ /dist/
# [pyshark]: the tshark reader for link types the fast path does not decode needs pyshark beside
# tshark. The venv's own pip and setuptools are removed: nothing installs at run time.
RUN wheels=(/dist/tracekit-*.whl) \
 && (( ${#wheels[@]} == 1 )) \
 && python -m venv /opt/tracekit/venv \
 && /opt/tracekit/venv/bin/pip install --no-cache-dir "${wheels[0]}[pyshark]" \
 && /opt/tracekit/venv/bin/pip uninstall --yes pip setuptools

# ---- stage 3: the runtime ----
FROM ${PYTHON_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
# tshark only decodes files here (the fallback reader): answer "no" to wireshark-common's
# "non-superusers may capture" question, so dumpcap gets neither a setuid bit nor capabilities.
# fonts-dejavu-core: slim images have no fonts, and vl-convert needs one to draw chart text.
# hadolint ignore=DL3008
RUN echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections \
 && apt-get update \
 && apt-get install -y --no-install-recommends tshark fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old \
 && useradd --create-home --uid 10001 --user-group tracekit \
 && mkdir -p /opt/tracekit/cache \
 && chown 10001:10001 /opt/tracekit/cache
COPY --from=build /opt/tracekit/venv /opt/tracekit/venv
COPY docker/smoke.sh /usr/local/share/tracekit/smoke.sh
COPY samples/linux/bulk_lossy.pcap /usr/local/share/tracekit/smoke.pcap
USER 10001:10001
# the Vega bundle tracekit inlines in reports is built once here and cached in the image (readable by
# any uid, so `-u $(id -u)` and --read-only still find it)
ENV PATH=/opt/tracekit/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    XDG_CACHE_HOME=/opt/tracekit/cache MPLCONFIGDIR=/tmp
# a packaging omission (missing module, broken entry point, no font) fails the build, not a user
RUN /usr/local/share/tracekit/smoke.sh --installed /usr/local/share/tracekit/smoke.pcap \
 && chmod -R a+rX /opt/tracekit/cache
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["tracekit"]
CMD ["--help"]

# syntax=docker/dockerfile:1
# tracekit in a container. Build: docker build -t tracekit .
# Run (untrusted input, hardened):
#   docker run --rm -u "$(id -u):$(id -g)" --network none --read-only --tmpfs /tmp \
#     --memory 2g --pids-limit 256 --cap-drop ALL --security-opt no-new-privileges \
#     -v "$PWD":/data tracekit batch /data/traces -o /data/reports
# CI lints this file with hadolint and runs the same install + smoke steps in a fresh venv
# (docker/smoke.sh, tests/test_docker.py).
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

# ---- stage 1: the wheel, from the source tree only (.dockerignore lists what is sent) ----
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tracekit ./tracekit
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# ---- stage 2: the runtime ----
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
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/tracekit-*.whl \
 && rm -rf /wheels \
 && useradd --create-home --uid 10001 --user-group tracekit \
 && mkdir -p /opt/tracekit/cache \
 && chown 10001:10001 /opt/tracekit/cache
COPY docker/smoke.sh /usr/local/share/tracekit/smoke.sh
COPY samples/linux/bulk_lossy.pcap /usr/local/share/tracekit/smoke.pcap
USER 10001:10001
# the Vega bundle tracekit inlines in reports is built once here and cached in the image (readable by
# any uid, so `-u $(id -u)` and --read-only still find it)
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 XDG_CACHE_HOME=/opt/tracekit/cache MPLCONFIGDIR=/tmp
# a packaging omission (missing module, broken entry point, no font) fails the build, not a user
RUN /usr/local/share/tracekit/smoke.sh --installed /usr/local/share/tracekit/smoke.pcap \
 && chmod -R a+rX /opt/tracekit/cache
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["tracekit"]
CMD ["--help"]

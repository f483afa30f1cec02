# syntax=docker/dockerfile:1
# ksched image: the wheel (Rust extension included) is built with maturin in a Rust +
# Python builder stage, then installed into python:3.11-slim and run as a non-root user.
#
#   docker build -t ksched:0.1.0 .            (or: make image)
#   docker run --rm ksched:0.1.0 --version
#
# Reproducible: both base images are pinned by digest (the multi-arch index of the tag
# named beside it; refresh with `docker buildx imagetools inspect <tag>`), Cargo.lock
# pins the crates (`--locked`), and constraints.txt pins every Python package, the same
# set `make test` runs with in CI.
#
# It has two commands: `ksched` (the ENTRYPOINT) and `kube-scheduler`, kube-scheduler's
# drop-in with all of its flags, which deploy/kubeadm/kube-scheduler.yaml runs.

# ---- build: Rust toolchain + CPython 3.11 + maturin -----------------------------------
FROM rust:1.98.0-slim-bookworm@sha256:1469a27c125cb5a3aebfa4f4e4665d935b02fb72cc093b2c974b3d740e43f157 AS build
# The wheel must link the same CPython minor as the runtime image (3.11); Debian
# bookworm's python3 is 3.11.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY constraints.txt ./
RUN python3 -m venv /opt/build \
    && /opt/build/bin/pip install --no-cache-dir -c constraints.txt 'maturin>=1.9,<2'
COPY Cargo.toml Cargo.lock pyproject.toml README.md ./
COPY rust ./rust
COPY python ./python
RUN /opt/build/bin/maturin build --release --locked --interpreter python3 --out /dist \
    && ls -l /dist

# ---- runtime ---------------------------------------------------------------------------
FROM python:3.11-slim-bookworm@sha256:b18992999dbe963a45a8a4da40ac2b1975be1a776d939d098c647482bcad5cba AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /dist/*.whl /tmp/
COPY constraints.txt /tmp/
RUN pip install -c /tmp/constraints.txt /tmp/*.whl && rm -f /tmp/*.whl /tmp/constraints.txt \
    && groupadd --system --gid 10001 ksched \
    && useradd --system --uid 10001 --gid ksched --home-dir /nonexistent --shell /usr/sbin/nologin ksched
USER 10001:10001
# HTTPS endpoints: /healthz /livez /readyz /metrics /metrics/resources /metrics/slis
# /configz /flagz /statusz /debug/pprof/
EXPOSE 10259
ENTRYPOINT ["ksched"]
CMD ["run", "--config", "/etc/ksched/config.yaml"]

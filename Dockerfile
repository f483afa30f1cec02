# syntax=docker/dockerfile:1
# ksched image: the wheel (Rust extension included) is built with maturin in a Rust +
# Python builder stage, then installed into python:3.11-slim and run as a non-root user.
#
#   docker build -t ksched:0.1.0 .            (or: make image)
#   docker run --rm ksched:0.1.0 --version
#
# It has two commands: `ksched` (the ENTRYPOINT) and `kube-scheduler`, kube-scheduler's
# drop-in with all of its flags, which deploy/kubeadm/kube-scheduler.yaml runs.

# ---- build: Rust toolchain + CPython 3.11 + maturin -----------------------------------
FROM rust:1-slim-bookworm AS build
# The wheel must link the same CPython minor as the runtime image (3.11); Debian
# bookworm's python3 is 3.11.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/build && /opt/build/bin/pip install --no-cache-dir 'maturin>=1.9,<2'
WORKDIR /src
COPY Cargo.toml Cargo.lock pyproject.toml README.md ./
COPY rust ./rust
COPY python ./python
RUN /opt/build/bin/maturin build --release --interpreter python3 --out /dist \
    && ls -l /dist

# ---- runtime ---------------------------------------------------------------------------
FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /dist/*.whl /tmp/
RUN pip install /tmp/*.whl && rm -f /tmp/*.whl \
    && groupadd --system --gid 10001 ksched \
    && useradd --system --uid 10001 --gid ksched --home-dir /nonexistent --shell /usr/sbin/nologin ksched
USER 10001:10001
# HTTPS endpoints: /healthz /livez /readyz /metrics /metrics/resources /metrics/slis
# /configz /flagz /statusz /debug/pprof/
EXPOSE 10259
ENTRYPOINT ["ksched"]
CMD ["run", "--config", "/etc/ksched/config.yaml"]

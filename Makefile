# ksched — the targets a newcomer guesses.
#   make run    install everything into .venv and run the main job on the embedded cluster
#   make test   install everything into .venv, build the test control plane, run every test
#   make bench  pytest-benchmark suites on a release build
#   make lint   ruff, mypy --strict, stubtest of the Rust stub, clippy, import contracts
#   make conformance CASES=10000 SEED=N   ksched against kube-scheduler's own code
#   make chaos  the chaos suite's full loops against the test control plane (ROUNDS=N)

PYTHON ?= python3
VENV   := .venv
# Every pip install here takes the versions ksched is tested with (constraints.txt).
export PIP_CONSTRAINT := $(abspath constraints.txt)
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
RUST_SOURCES := $(shell find rust -name '*.rs') Cargo.toml
PY_LIBDIR = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')

.PHONY: all wheel image install build-dev build-prod constraints control-plane format lint test test-rust test-python test-wheel chaos bench run conformance clean

all: lint test

$(VENV)/.deps: constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip 'maturin>=1.9,<2'
	touch $@

# `maturin develop` installs the runtime and dev dependencies from pyproject.toml and
# builds the extension into the venv; it reruns whenever a Rust source or pyproject changes.
$(VENV)/.core: $(VENV)/.deps pyproject.toml $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras dev --quiet
	touch $@

# ksched's own modules compiled to bytecode once: this environment (and many CI images)
# sets PYTHONDONTWRITEBYTECODE, so without it every `ksched` process (each integration
# test's scheduler, every CLI run) compiles the whole package from source again (~0.5 s
# of CPU per start on this machine). A module edited later is recompiled in memory as
# usual; the next `make install` refreshes the files.
PY_SOURCES := $(shell find python/ksched -name '*.py')
$(VENV)/.pyc: $(VENV)/.core $(PY_SOURCES)
	PYTHONDONTWRITEBYTECODE= $(PY) -m compileall -q python/ksched > /dev/null
	touch $@

install: $(VENV)/.core $(VENV)/.pyc

build-dev: $(VENV)/.deps
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --extras dev --quiet
	touch $(VENV)/.core

build-prod: install

wheel: $(VENV)/.deps
	rm -f dist/ksched-*.whl
	$(VENV)/bin/maturin build --release --out dist

# The image deploy/ runs (its `kube-scheduler` command is kube-scheduler's drop-in).
IMAGE ?= ksched:0.1.0
image:
	docker build -t $(IMAGE) .
	docker run --rm --entrypoint kube-scheduler $(IMAGE) --version

format: $(VENV)/.deps
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches
	cargo fmt

lint: install
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest ksched._core ksched.testing
	$(VENV)/bin/lint-imports
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	@if command -v gofmt >/dev/null; then \
	  out="$$(gofmt -l tests/conformance/harness tests/conformance/queueharness)"; \
	  if [ -n "$$out" ]; then echo "gofmt: needs formatting: $$out"; exit 1; fi; \
	fi

test-rust: install
	PYO3_PYTHON=$(abspath $(PY)) LD_LIBRARY_PATH=$(PY_LIBDIR) cargo test --release --quiet

# The test control plane (kube-apiserver, kube-scheduler, kube-controller-manager, etcd)
# is built from Go modules here, as a step of its own, never inside a timed test: a cold
# build takes 6-15 minutes on two cores. It prints one line per stage; the binary
# directory it prints on stdout is handed to pytest. KSCHED_SKIP_INTEGRATION=1 skips it.
CONTROL_PLANE_BIN := $(VENV)/control-plane-bin
control-plane: $(VENV)/.deps
ifeq ($(filter-out 0,$(KSCHED_SKIP_INTEGRATION)),)
	bash hack/build-control-plane.sh > $(CONTROL_PLANE_BIN).tmp && mv $(CONTROL_PLANE_BIN).tmp $(CONTROL_PLANE_BIN)
else
	@echo "KSCHED_SKIP_INTEGRATION is set: not building the test control plane"
endif

test-python: install control-plane
	KSCHED_CONTROLPLANE_BIN_DIR="$$(cat $(CONTROL_PLANE_BIN) 2>/dev/null)" $(PY) -m pytest

# The wheel as a user installs it: a fresh venv, the commands run outside the tree.
test-wheel: wheel
	PYTHON=$(PYTHON) bash hack/test-wheel.sh

test: control-plane test-rust test-python test-wheel

# Differential conformance (tests/conformance): CASES seeded random cases from SEED run
# through kube-scheduler v1.36.5's own scheduling code (the ksched-conformance harness,
# built with the control plane) and through ksched's production path; OUT gets
# summary.md/summary.json (agreement per aspect and per pod feature) and a minimized
# JSON reproduction of every disagreement. `make test` runs a few hundred of them.
CASES ?= 1000
SEED  ?= 1
OUT   ?= build/conformance
conformance: install control-plane
	KSCHED_CONTROLPLANE_BIN_DIR="$$(cat $(CONTROL_PLANE_BIN))" $(PY) -m tests.conformance --cases $(CASES) --seed $(SEED) --out $(OUT)

# tests/chaos: leader SIGKILL loop, paused leader, apiserver restarts and etcd compaction.
# `make test` runs one short round of each; this runs the full loops ROUNDS times and
# prints the figures (failover times, drain times, what each round bound and deleted).
ROUNDS ?= 1
chaos: install control-plane
	KSCHED_CHAOS_FULL=1 KSCHED_CHAOS_ROUNDS=$(ROUNDS) \
	KSCHED_CONTROLPLANE_BIN_DIR="$$(cat $(CONTROL_PLANE_BIN) 2>/dev/null)" \
	$(PY) -m pytest tests/chaos -p no:cacheprovider

bench: install
	$(PY) -m pytest benches --benchmark-only --benchmark-columns=min,median,mean,max,rounds

run: install
	$(VENV)/bin/ksched simulate --nodes 5000 --pods 10000

# Refresh constraints.txt: the newest versions pyproject.toml allows, in a fresh venv.
constraints:
	rm -rf .venv-constraints
	$(PYTHON) -m venv .venv-constraints
	PIP_CONSTRAINT= .venv-constraints/bin/pip install --quiet --upgrade pip 'maturin>=1.9,<2'
	PIP_CONSTRAINT= VIRTUAL_ENV=$(abspath .venv-constraints) .venv-constraints/bin/maturin develop --release --extras dev,bench --quiet
	{ sed -n '/^#/p' constraints.txt; .venv-constraints/bin/pip freeze --all --exclude-editable | grep -v '^ksched' | grep -v '^setuptools=='; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .venv-constraints

clean:
	rm -rf $(VENV) .venv-wheel target dist .pytest_cache .mypy_cache .ruff_cache

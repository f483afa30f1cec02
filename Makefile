# ksched — the targets a newcomer guesses.
#   make run    install everything into .venv and run the main job on the embedded cluster
#   make test   install everything into .venv and run every test (Rust and Python)
#   make bench  pytest-benchmark suites on a release build
#   make lint   ruff, mypy --strict, stubtest of the Rust stub, clippy, import contracts

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
RUST_SOURCES := $(shell find rust -name '*.rs') Cargo.toml
PY_LIBDIR = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')

.PHONY: all wheel install build-dev build-prod format lint test test-rust test-python bench run clean

all: lint test

$(VENV)/.deps:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip 'maturin>=1.9,<2'
	touch $@

# `maturin develop` installs the runtime and dev dependencies from pyproject.toml and
# builds the extension into the venv; it reruns whenever a Rust source or pyproject changes.
$(VENV)/.core: $(VENV)/.deps pyproject.toml $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras dev --quiet
	touch $@

install: $(VENV)/.core

build-dev: $(VENV)/.deps
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --extras dev --quiet
	touch $(VENV)/.core

build-prod: install

wheel: $(VENV)/.deps
	$(VENV)/bin/maturin build --release --out dist

format: $(VENV)/.deps
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches
	cargo fmt

lint: install
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest ksched._core
	$(VENV)/bin/lint-imports
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

test-rust: install
	PYO3_PYTHON=$(abspath $(PY)) LD_LIBRARY_PATH=$(PY_LIBDIR) cargo test --release --quiet

test-python: install
	$(PY) -m pytest

test: test-rust test-python

bench: install
	$(PY) -m pytest benches --benchmark-only --benchmark-columns=min,median,mean,max,rounds

run: install
	$(VENV)/bin/ksched simulate --nodes 5000 --pods 10000

clean:
	rm -rf $(VENV) target dist .pytest_cache .mypy_cache .ruff_cache

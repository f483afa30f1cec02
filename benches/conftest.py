"""Benchmarks run on a release build (``make bench``); they are not part of ``make test``.

Knobs (environment):

* ``KSCHED_BENCH_SCALE`` — scale of the embedded workload suite (default 1: the
  scheduler_perf sizes, 5,000 nodes);
* ``KSCHED_BENCH_E2E_SCALE`` — scale of the side-by-side suite against the real
  apiserver (default 0.1: 500 nodes; the 2-core machine's apiserver bounds larger runs);
* ``KSCHED_BENCH_E2E_REPEAT`` — runs per scheduler in the side-by-side suite (default 3);
* ``KSCHED_BENCH_OUT`` — where the side-by-side suite writes its JSON and PNG
  (default ``.benchmarks/``);
* ``KSCHED_SKIP_INTEGRATION=1`` skips the suites that need the control plane.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ksched.testing.controlplane import ControlPlane


@pytest.fixture(scope="session")
def out_dir() -> Path:
    d = Path(os.environ.get("KSCHED_BENCH_OUT") or ".benchmarks")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def control_plane(ksched_control_plane: ControlPlane) -> ControlPlane:
    """ksched's ``ksched_control_plane`` fixture (skipped with KSCHED_SKIP_INTEGRATION=1)."""
    return ksched_control_plane

"""Every workload file of ``benches/workloads`` on the embedded cluster (core throughput),
through ksched's ``ksched_benchmark`` fixture.

Target (issue 9): SchedulingBasic at 5,000 nodes (1,000 existing + 10,000 new pods)
≥ 10,000 pods/s on the 2-core machine. Each round is one fresh cluster; the median
throughput, the scheduling-cycle percentiles and the peak RSS go to the benchmark's
extra_info (the fixture's), and the placement of the last round is checked for
constraint violations. ``KSCHED_BENCH_SCALE`` shrinks the workloads.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from ksched.bench import embedded, workload
from ksched.testing import BenchmarkResult

WORKLOADS = workload.load_all()


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


@pytest.mark.parametrize("key", sorted(WORKLOADS))
def test_embedded_workload(ksched_benchmark: Callable[..., BenchmarkResult], key: str) -> None:
    scale = env_float("KSCHED_BENCH_SCALE", 1.0)
    result = ksched_benchmark(key, scale=scale, rounds=3, timeout=120)
    assert all(r.unschedulable == 0 for r in result.rounds), [r.notes for r in result.rounds]
    # The placement quality of one more run (the fixture reports figures, not objects).
    last = embedded.run(WORKLOADS[key].scaled(scale), seed=1, timeout=120)
    assert last.placement is not None and last.placement.violations == 0

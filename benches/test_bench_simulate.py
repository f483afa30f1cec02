"""End to end: ``ksched simulate``'s basic workload on the embedded cluster, through
ksched's own ``ksched_benchmark`` fixture (the pytest plugin shipped with ksched).

Targets: issue 2, ≥ 5,000 pods/s at 5,000 nodes / 10,000 pods on the 2-core machine;
issue 21, ≥ 25,000 pods/s there, attempt p99 ≤ 200 µs, and at 15,000 nodes / 30,000 pods
at least 60% of the 5,000-node rate (the curve: ``benches/scaling.py``). The fixture
records each case's throughput, CPU per pod, attempt latency percentiles and peak RSS
in the benchmark's extra_info.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ksched.testing import BenchmarkResult


@pytest.mark.parametrize(
    ("nodes", "pods"),
    [(1000, 2000), (5000, 10000), (15000, 30000)],
    ids=["1000-nodes", "5000-nodes", "15000-nodes"],
)
def test_simulate_basic(
    ksched_benchmark: Callable[..., BenchmarkResult], nodes: int, pods: int
) -> None:
    result = ksched_benchmark("basic", nodes=nodes, pods=pods, rounds=3)
    assert all(r.placed == pods for r in result.rounds)

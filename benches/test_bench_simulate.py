"""End to end: ``ksched simulate``'s basic workload on the embedded cluster, through
ksched's own ``ksched_benchmark`` fixture (the pytest plugin shipped with ksched).

Target (issue 2): ≥ 5,000 pods/s at 5,000 nodes / 10,000 pods on the 2-core machine.
The fixture records each round's throughput, the attempt latency percentiles and the
peak RSS in the benchmark's extra_info.
"""

from __future__ import annotations

from collections.abc import Callable

from ksched.testing import BenchmarkResult


def test_simulate_basic_5000_nodes_10000_pods(
    ksched_benchmark: Callable[..., BenchmarkResult],
) -> None:
    result = ksched_benchmark("basic", nodes=5000, pods=10000, rounds=3)
    assert all(r.placed == 10000 for r in result.rounds)

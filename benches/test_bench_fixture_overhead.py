"""The fixtures' overhead: ``ksched_benchmark`` against ``ksched simulate`` on the same
5,000-node basic workload, in the same run.

``ksched simulate``'s rounds bracket the fixture's (two before, its three, two after)
so both see the same machine; the medians of pods/s must be within 5% of each other
(issue 22). Both figures and their ratio, with the load average, go to the benchmark's
extra_info.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable

from ksched import simulate
from ksched.testing import BenchmarkResult

NODES, PODS, ROUNDS = 5000, 10000, 3


def test_ksched_benchmark_is_within_5_percent_of_simulate(
    ksched_benchmark: Callable[..., BenchmarkResult], benchmark: object
) -> None:
    def simulate_once(seed: int) -> float:
        report = simulate.run(nodes=NODES, pods=PODS, seed=seed, progress=False)
        assert report.scheduled == PODS
        return report.pods_per_second

    direct = [simulate_once(1), simulate_once(2)]
    result = ksched_benchmark("basic", nodes=NODES, pods=PODS, rounds=ROUNDS)
    fixture = [r.pods_per_second for r in result.rounds]
    direct += [simulate_once(3), simulate_once(4)]
    ratio = statistics.median(fixture) / statistics.median(direct)
    info = benchmark.extra_info  # type: ignore[attr-defined]
    info.update(
        {
            "simulate_pods_per_second": direct,
            "ksched_benchmark_pods_per_second": fixture,
            "ratio": ratio,
            "load_average": os.getloadavg(),
        }
    )
    print(
        f"\nksched simulate {statistics.median(direct):,.0f} pods/s, ksched_benchmark "
        f"{statistics.median(fixture):,.0f} pods/s (ratio {ratio:.3f}); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    assert 0.95 <= ratio <= 1.05, (direct, fixture)

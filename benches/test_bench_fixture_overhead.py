"""The fixtures' overhead: ``ksched_benchmark`` against ``ksched simulate`` on the same
5,000-node basic workload, in the same run.

The rounds alternate — a ``ksched simulate`` run (the fixture's untimed ``before_each``),
then a round of the fixture, fifteen times (``KSCHED_BENCH_OVERHEAD_ROUNDS``), both on
the same cluster (seed 1) — so both see the same workload on the same machine at the
same moments; the medians of pods/s must be within 5% of
each other (issue 22). Both figures and their ratio, with the load average, go to the
benchmark's extra_info.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable

from ksched import simulate
from ksched.testing import BenchmarkResult

NODES, PODS = 5000, 10000
#: ``KSCHED_BENCH_OVERHEAD_ROUNDS``: more rounds steady the medians on a busy machine.
ROUNDS = int(os.environ.get("KSCHED_BENCH_OVERHEAD_ROUNDS") or 15)


def test_ksched_benchmark_is_within_5_percent_of_simulate(
    ksched_benchmark: Callable[..., BenchmarkResult], benchmark: object
) -> None:
    direct: list[float] = []

    def simulate_once() -> None:
        report = simulate.run(nodes=NODES, pods=PODS, seed=1, progress=False)
        assert report.scheduled == PODS
        direct.append(report.pods_per_second)

    result = ksched_benchmark(
        "basic", nodes=NODES, pods=PODS, rounds=ROUNDS, before_each=simulate_once
    )
    fixture = [r.pods_per_second for r in result.rounds]
    assert len(direct) == len(fixture) == ROUNDS
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

"""End to end: ``ksched simulate`` on the embedded cluster (SchedulingBasic shape).

Target (issue 2): ≥ 5,000 pods/s at 5,000 nodes / 10,000 pods on the 2-core machine.
The throughput of each round is recorded in the benchmark's extra_info.
"""

from __future__ import annotations

from ksched import simulate


def test_simulate_basic_5000_nodes_10000_pods(benchmark) -> None:  # type: ignore[no-untyped-def]
    reports = []

    def run() -> None:
        reports.append(simulate.run(nodes=5000, pods=10000, seed=1, progress=False))

    benchmark.pedantic(run, rounds=3, iterations=1)
    assert all(r.scheduled == 10000 for r in reports)
    rates = sorted(r.pods_per_second for r in reports)
    benchmark.extra_info["pods_per_second_median"] = rates[len(rates) // 2]
    benchmark.extra_info["attempt_p50_us"] = reports[-1].attempt_p50_us
    benchmark.extra_info["attempt_p99_us"] = reports[-1].attempt_p99_us

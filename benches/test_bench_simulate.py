"""End to end: ``ksched simulate`` on the embedded cluster (SchedulingBasic shape).

Targets: issue 2, ≥ 5,000 pods/s at 5,000 nodes / 10,000 pods on the 2-core machine;
issue 21, ≥ 25,000 pods/s there, attempt p99 ≤ 200 µs, and at 15,000 nodes / 30,000 pods
at least 60% of the 5,000-node rate (the curve: ``benches/scaling.py``). The throughput,
CPU per pod and attempt latencies of each case are recorded in the benchmark's
extra_info.
"""

from __future__ import annotations

import pytest

from ksched import simulate


@pytest.mark.parametrize(
    ("nodes", "pods"),
    [(1000, 2000), (5000, 10000), (15000, 30000)],
    ids=["1000-nodes", "5000-nodes", "15000-nodes"],
)
def test_simulate_basic(benchmark, nodes: int, pods: int) -> None:  # type: ignore[no-untyped-def]
    reports = []

    def run() -> None:
        reports.append(simulate.run(nodes=nodes, pods=pods, seed=1, progress=False))

    benchmark.pedantic(run, rounds=3, iterations=1)
    assert all(r.scheduled == pods for r in reports)
    rates = sorted(r.pods_per_second for r in reports)
    benchmark.extra_info["pods_per_second_median"] = rates[len(rates) // 2]
    cpu = sorted(r.cpu_seconds / r.scheduled * 1e6 for r in reports)
    benchmark.extra_info["cpu_us_per_pod_median"] = cpu[len(cpu) // 2]
    benchmark.extra_info["attempt_p50_us"] = reports[-1].attempt_p50_us
    benchmark.extra_info["attempt_p99_us"] = reports[-1].attempt_p99_us

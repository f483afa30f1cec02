"""Every workload file of ``benches/workloads`` on the embedded cluster (core throughput).

Target (issue 9): SchedulingBasic at 5,000 nodes (1,000 existing + 10,000 new pods)
≥ 10,000 pods/s on the 2-core machine. Each round is one fresh cluster; the median
throughput, the scheduling-cycle percentiles and the placement summary of the last
round go to the benchmark's extra_info. ``KSCHED_BENCH_SCALE`` shrinks the workloads.
"""

from __future__ import annotations

import os
import statistics

import pytest

from ksched.bench import embedded, workload
from ksched.bench.report import RunResult

WORKLOADS = workload.load_all()


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


@pytest.mark.parametrize("key", sorted(WORKLOADS))
def test_embedded_workload(benchmark, key: str) -> None:  # type: ignore[no-untyped-def]
    spec = WORKLOADS[key].scaled(env_float("KSCHED_BENCH_SCALE", 1.0))
    results: list[RunResult] = []

    def run() -> None:
        results.append(embedded.run(spec, seed=len(results) + 1, timeout=120))

    benchmark.pedantic(run, rounds=3, iterations=1)
    rates = [r.pods_per_second for r in results]
    last = results[-1]
    benchmark.extra_info.update(
        {
            "workload": spec.label,
            "pods_per_second_median": statistics.median(rates),
            "pods_per_second": rates,
            "cycle_p50_us": last.cycle_p50_us,
            "cycle_p99_us": last.cycle_p99_us,
            "peak_rss_mib": last.peak_rss_mib,
            "placement": last.placement.as_dict() if last.placement else None,
        }
    )
    assert all(r.completed for r in results), [r.notes for r in results]
    assert last.placement is not None and last.placement.violations == 0

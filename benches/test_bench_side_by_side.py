"""ksched beside upstream kube-scheduler v1.36, end to end against one real apiserver.

For each workload the harness (:mod:`ksched.bench.e2e`) creates the nodes and init pods
through the API once, then runs ksched and kube-scheduler in turn (alternating which
goes first) ``KSCHED_BENCH_E2E_REPEAT`` times, both with clientConnection qps/burst
5000/5000, measuring from the first measured pod created to the last one bound. The
extra_info carries the medians and the ksched/upstream ratios; the whole comparison is
also written to ``$KSCHED_BENCH_OUT/side-by-side.json`` and ``.png``.

Targets (issue 9): throughput ≥ 2x upstream on SchedulingBasic and ≥ 10x on
PodAntiAffinity, PodAffinity and TopologySpreading; peak RSS ≤ upstream's. They are
reported, not asserted: on the 2-core machine the apiserver bounds both schedulers
(see the README's benchmark section). What is asserted: every pod bound, and ksched's
placement no worse than upstream's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ksched import aio
from ksched.bench import e2e, report, workload
from ksched.testing.controlplane import ControlPlane

WORKLOADS = workload.load_all()


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


KEYS = ["scheduling-basic", "pod-anti-affinity", "pod-affinity", "topology-spreading"]
COMPARISONS: list[report.Comparison] = []


@pytest.fixture(scope="module", autouse=True)
def _write_report(out_dir: Path):  # type: ignore[no-untyped-def]
    yield
    if COMPARISONS:
        report.write_json(out_dir / "side-by-side.json", COMPARISONS, meta={"suite": __name__})
        report.plot(out_dir / "side-by-side.png", COMPARISONS)
        print("\n" + report.table(COMPARISONS))


@pytest.mark.parametrize("key", KEYS)
def test_side_by_side(benchmark, control_plane: ControlPlane, key: str) -> None:  # type: ignore[no-untyped-def]
    spec = WORKLOADS[key].scaled(env_float("KSCHED_BENCH_E2E_SCALE", 0.1))
    repeat = int(os.environ.get("KSCHED_BENCH_E2E_REPEAT") or 3)
    comparison = report.Comparison(spec.key, spec.label, "apiserver")
    rounds = 0

    async def pair() -> None:
        bench = e2e.Bench(control_plane, options=e2e.E2EOptions(timeout=300))
        try:
            order = [report.KSCHED, report.UPSTREAM]
            for which in order if rounds % 2 == 0 else reversed(order):
                comparison.add(await bench.run(spec, which))
        finally:
            await bench.close()

    def run() -> None:
        nonlocal rounds
        aio.run(pair())
        rounds += 1

    benchmark.pedantic(run, rounds=repeat, iterations=1)
    COMPARISONS.append(comparison)
    benchmark.extra_info.update(comparison.as_dict())
    for runs in comparison.runs.values():
        assert all(r.completed for r in runs), [r.notes for r in runs]
    quality = comparison.quality()
    assert quality is not None and quality["ok"], quality

"""Workloads run for measurement (``ksched_benchmark``), with the harness of ``ksched
simulate`` and ``ksched bench``.

:func:`run_workload` runs one round of a named workload on a fresh embedded cluster
with the same code as the commands — a ``ksched simulate`` workload (``basic``,
``pod-anti-affinity``...) through :func:`ksched.simulate.run_simulation`, a workload file
(``scheduling-basic``, ``mixed-churn``...) through
:func:`ksched.bench.embedded.run_embedded` — so the figures are the commands' figures:
throughput from the first measured pod created to the last bound, scheduling-attempt
latency percentiles, peak RSS. :class:`BenchmarkResult` folds the rounds (medians) and
gives the ``extra_info`` pytest-benchmark stores with each benchmark, so its
``--benchmark-compare``, ``--benchmark-histogram`` and JSON options see them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ksched.config import KubeSchedulerConfiguration

__all__ = ["BenchmarkResult", "Round", "run_workload"]


@dataclass(slots=True)
class Round:
    """One run of a workload."""

    workload: str
    nodes: int
    existing_pods: int
    pods: int
    placed: int
    seconds: float
    pods_per_second: float
    attempt_p50_us: float
    attempt_p99_us: float
    peak_rss_mib: float
    #: Pods left unschedulable (0 when every pod was placed).
    unschedulable: int = 0
    #: The scheduler process's CPU time (user + system) over the round.
    cpu_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class BenchmarkResult:
    """The rounds of one benchmark, and their medians."""

    rounds: list[Round]

    @property
    def pods_per_second(self) -> float:
        return statistics.median(r.pods_per_second for r in self.rounds)

    @property
    def attempt_p50_us(self) -> float:
        return statistics.median(r.attempt_p50_us for r in self.rounds)

    @property
    def attempt_p99_us(self) -> float:
        return statistics.median(r.attempt_p99_us for r in self.rounds)

    @property
    def peak_rss_mib(self) -> float:
        return max(r.peak_rss_mib for r in self.rounds)

    @property
    def cpu_us_per_pod(self) -> float:
        """Median over the rounds of the process's CPU time per pod placed."""
        return statistics.median(r.cpu_seconds / max(r.placed, 1) * 1e6 for r in self.rounds)

    @property
    def placed(self) -> int:
        return min(r.placed for r in self.rounds)

    @property
    def unschedulable(self) -> int:
        return max(r.unschedulable for r in self.rounds)

    def extra_info(self) -> dict[str, Any]:
        """What goes into pytest-benchmark's ``extra_info``."""
        last = self.rounds[-1]
        return {
            "workload": last.workload,
            "nodes": last.nodes,
            "existing_pods": last.existing_pods,
            "pods": last.pods,
            "pods_per_second": self.pods_per_second,
            "pods_per_second_rounds": [r.pods_per_second for r in self.rounds],
            "attempt_p50_us": self.attempt_p50_us,
            "attempt_p99_us": self.attempt_p99_us,
            "peak_rss_mib": self.peak_rss_mib,
            "cpu_us_per_pod": self.cpu_us_per_pod,
            "placed": self.placed,
            "unschedulable": self.unschedulable,
        }

    def as_dict(self) -> dict[str, Any]:
        return {"rounds": [asdict(r) for r in self.rounds], **self.extra_info()}


def run_workload(
    workload: str,
    *,
    config: str | Path | Mapping[str, Any] | KubeSchedulerConfiguration | None = None,
    plugins: Mapping[str, Any] | None = None,
    nodes: int | None = None,
    pods: int | None = None,
    existing_pods: int | None = None,
    scale: float = 1.0,
    seed: int = 1,
    timeout: float = 600.0,
) -> Round:
    """One round of ``workload`` (see the module docstring); sizes not given follow
    the workload's defaults (scaled by ``scale``, and with ``nodes``, as the commands
    scale them)."""
    from ksched import aio
    from ksched.profiles import build_profiles
    from ksched.sim.workloads import WORKLOADS
    from ksched.testing.scheduler import load_config_and_registry

    cfg, registry = load_config_and_registry(config, plugins)
    profiles = build_profiles(cfg, registry) if config is not None or plugins else None
    if workload in WORKLOADS:
        from ksched import simulate

        d_nodes, d_existing, d_pods = WORKLOADS[workload].sizes
        n = nodes if nodes is not None else max(1, round(d_nodes * scale))
        factor = n / d_nodes
        count = pods if pods is not None else round(d_pods * factor)
        existing = existing_pods if existing_pods is not None else round(d_existing * factor)
        report = aio.run(
            simulate.run_simulation(
                nodes=n,
                pods=count,
                existing_pods=existing,
                workload=workload,
                seed=seed,
                profiles=profiles,
                timeout=timeout,
                extenders=cfg.extenders,
            )
        )
        return Round(
            workload=workload,
            nodes=n,
            existing_pods=existing,
            pods=count,
            placed=report.scheduled,
            seconds=report.seconds,
            pods_per_second=report.pods_per_second,
            attempt_p50_us=report.attempt_p50_us,
            attempt_p99_us=report.attempt_p99_us,
            peak_rss_mib=report.peak_rss_mib,
            unschedulable=report.pending,
            cpu_seconds=report.cpu_seconds,
        )
    from ksched.bench import embedded
    from ksched.bench import workload as files

    spec = files.find(workload, files.load_all()).scaled(
        scale, nodes=nodes, existing_pods=existing_pods, pods=pods
    )
    result = aio.run(embedded.run_embedded(spec, seed=seed, profiles=profiles, timeout=timeout))
    return Round(
        workload=spec.label,
        nodes=result.nodes,
        existing_pods=result.existing_pods,
        pods=result.pods,
        placed=result.bound,
        seconds=result.seconds,
        pods_per_second=result.pods_per_second,
        attempt_p50_us=result.cycle_p50_us,
        attempt_p99_us=result.cycle_p99_us,
        peak_rss_mib=result.peak_rss_mib,
        unschedulable=result.pods - result.bound,
        cpu_seconds=result.cpu_seconds,
        notes=list(result.notes),
    )

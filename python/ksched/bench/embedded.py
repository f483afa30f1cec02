"""A workload file on the embedded cluster: the core throughput of ksched.

The same shape as ``ksched simulate`` (:mod:`ksched.simulate`): the nodes and the
pre-bound init pods are created in an :class:`~ksched.sim.cluster.InMemoryCluster`,
the whole :class:`~ksched.scheduler.Scheduler` starts on it and syncs, init pods that
are not pre-bound are scheduled (not measured), background churn starts, and the
measured pods are created in batches while the scheduler runs; the clock runs from the
first measured pod created to the last one bound. No API server, no HTTP: this is the
upper bound of what the scheduler itself can do.

The Priority admission plugin's job (``priorityClassName`` → ``spec.priority``) is done
here, since the embedded cluster has no admission.

Peak RSS is the process's ``VmHWM``, reset before the run through
``/proc/self/clear_refs`` where the kernel allows it (otherwise it is the peak of the
whole process, harness included).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from prometheus_client import generate_latest

from ksched import aio
from ksched.bench import procstat
from ksched.bench.placement import summarize
from ksched.bench.report import KSCHED, RunResult
from ksched.bench.workload import (
    BENCH_LABEL,
    EXISTING_PARAM,
    NODES_PARAM,
    PODS_PARAM,
    Churn,
    CreatePods,
    WorkloadSpec,
    instantiate,
    resolve_priority,
)
from ksched.framework.profile import Profile, default_profile
from ksched.scheduler import Scheduler
from ksched.sim.cluster import InMemoryCluster

_CREATE_BATCH = 500
ATTEMPT_METRIC = "scheduler_scheduling_attempt_duration_seconds"


def _cpu_self() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


class _Churn:
    """scheduler_perf's churn op on the embedded cluster."""

    def __init__(self, cluster: InMemoryCluster, op: Churn, spec: WorkloadSpec) -> None:
        self.cluster, self.op, self.spec = cluster, op, spec
        self.live: list[tuple[str, str]] = []  # (kind, key)
        self.n = 0

    def tick(self) -> None:
        if self.op.mode == "recreate":
            for kind, key in self.live:
                with contextlib.suppress(Exception):
                    self.cluster.delete(kind, key)  # type: ignore[arg-type]
            self.live.clear()
        for _ in range(self.op.number):
            for t in self.op.templates:
                kind = str(t.get("kind"))
                if kind == "Node":
                    obj = instantiate(
                        t, self.n, labels={BENCH_LABEL: self.spec.key}, suffix="-churn"
                    )
                    self.cluster.create("nodes", obj)
                    self.live.append(("nodes", obj["metadata"]["name"]))
                elif kind == "Pod":
                    obj = resolve_priority(
                        instantiate(t, self.n, namespace=self.op.namespace, suffix="-churn"),
                        self.spec.priority_classes,
                    )
                    self.cluster.create("pods", obj)
                    self.live.append(("pods", f"{self.op.namespace}/{obj['metadata']['name']}"))
                elif kind == "Service":
                    obj = instantiate(t, self.n, namespace=self.op.namespace, suffix="-churn")
                    self.cluster.create("services", obj)
                    self.live.append(("services", f"{self.op.namespace}/{obj['metadata']['name']}"))
            self.n += 1

    async def run(self) -> None:
        while True:
            self.tick()
            await asyncio.sleep(self.op.interval)


async def run_embedded(
    spec: WorkloadSpec,
    *,
    seed: int | None = None,
    profiles: Mapping[str, Profile] | None = None,
    timeout: float = 300.0,
    on_progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Run one workload on a fresh embedded cluster with ksched; report the figures."""
    ops = spec.ops()
    measured = spec.measured()
    result = RunResult(
        scheduler=KSCHED,
        target="embedded",
        workload=spec.name,
        label=spec.label,
        nodes=spec.params.get(NODES_PARAM, 0),
        existing_pods=spec.params.get(EXISTING_PARAM, 0),
        pods=spec.params.get(PODS_PARAM, measured.count),
    )
    _reset_peak_rss()
    cluster = InMemoryCluster()
    node_objs = spec.node_objects()
    for n in node_objs:
        cluster.create("nodes", n)
    for c in spec.csinode_objects():
        cluster.create("csinodes", c)
    for kind, obj in spec.dra_objects():
        cluster.create(kind, obj)  # type: ignore[arg-type]
    # Every pod's pre-bound claim and volume, before any pod (and before the clock).
    for op in ops:
        if isinstance(op, CreatePods):
            for pvc, pv in spec.volume_objects(op):
                cluster.create("persistentvolumeclaims", pvc)
                cluster.create("persistentvolumes", pv)
    names = [n["metadata"]["name"] for n in node_objs]
    classes = spec.priority_classes

    def create_pods(op: CreatePods) -> int:
        k = 0
        for pod in spec.pod_objects(op, names):
            cluster.create("pods", resolve_priority(pod, classes))
            k += 1
        return k

    for op in ops:
        if isinstance(op, CreatePods) and op.bound and not op.collect_metrics:
            create_pods(op)

    sched = Scheduler(cluster, profiles or {"default-scheduler": default_profile()}, seed=seed)
    cpu0 = _cpu_self()
    thresholds = gc.get_threshold()
    await sched.start()
    aio.tune_gc()
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    churns: list[asyncio.Task[None]] = []
    try:
        for op in ops:
            if isinstance(op, CreatePods) and not op.bound and not op.collect_metrics:
                want = sched.stats.bound + create_pods(op)
                deadline = time.perf_counter() + timeout
                while sched.stats.bound < want and time.perf_counter() < deadline:
                    await asyncio.sleep(0.005)
        for op in ops:
            if isinstance(op, Churn):
                churns.append(
                    asyncio.get_running_loop().create_task(_Churn(cluster, op, spec).run())
                )

        before = generate_latest(sched.metrics.registry).decode()
        base = sched.stats.bound
        expected = measured.count
        # Built before the clock starts: object construction is the harness's cost.
        pods = iter([resolve_priority(p, classes) for p in spec.pod_objects(measured, names)])
        created = 0
        cpu_m0 = _cpu_self()
        start = time.perf_counter()
        deadline = start + timeout
        last_bound = base
        last_draw = 0.0
        done_at = start
        while True:
            now = time.perf_counter()
            if created < expected:
                for pod in pods:
                    cluster.create("pods", pod)
                    created += 1
                    result.create_times.append(time.perf_counter() - start)
                    if created % _CREATE_BATCH == 0:
                        break
            bound = sched.stats.bound
            if bound != last_bound:
                t = time.perf_counter() - start
                result.bind_times.extend([t] * (bound - last_bound))
                last_bound = bound
                done_at = now
            if bound - base >= expected and created == expected and sched.cache.num_assumed() == 0:
                break
            if now > deadline:
                result.notes.append(f"timed out after {timeout:.0f}s")
                break
            if on_progress is not None and now - last_draw > 0.2:
                on_progress(f"created {created}/{expected}, bound {bound - base}")
                last_draw = now
            await asyncio.sleep(0 if created < expected else 0.0005)
        cpu_m1 = _cpu_self()
        after = generate_latest(sched.metrics.registry).decode()
    finally:
        for task in churns:
            task.cancel()
        await asyncio.gather(*churns, return_exceptions=True)
        await sched.shutdown()
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)
        # aio.tune_gc froze every object alive at start; a benchmark process runs many
        # clusters, so give the collector back what this one leaves behind.
        gc.unfreeze()
        gc.set_threshold(*thresholds)

    result.bound = min(sched.stats.bound - base, expected)
    result.completed = result.bound >= expected
    result.seconds = max(done_at - start, 1e-9)
    result.pods_per_second = result.bound / result.seconds
    result.create_seconds = result.create_times[-1] if result.create_times else 0.0
    b0, _, _ = procstat.histogram(before, ATTEMPT_METRIC, {"result": "scheduled"})
    b1, _, _ = procstat.histogram(after, ATTEMPT_METRIC, {"result": "scheduled"})
    buckets = procstat.subtract(b1, b0)
    result.attempt_p50_ms = procstat.histogram_quantile(0.5, buckets) * 1e3
    result.attempt_p99_ms = procstat.histogram_quantile(0.99, buckets) * 1e3
    lat = sched.stats.attempt_ns
    if lat:
        import numpy as np

        arr = np.frombuffer(lat, dtype=np.int64)
        result.cycle_p50_us, result.cycle_p99_us = (
            float(x) / 1e3 for x in np.percentile(arr, [50, 99])
        )
    result.peak_rss_mib = procstat.peak_rss_mib(os.getpid())
    result.cpu_seconds = _cpu_self() - cpu0
    result.cpu_seconds_measured = cpu_m1 - cpu_m0
    result.placement = summarize(
        [n for n in cluster.objects("nodes") if BENCH_LABEL in (n["metadata"].get("labels") or {})],
        cluster.objects("pods"),
        measured_namespace=measured.namespace,
        template=measured.template,
    )
    return result


def run(
    spec: WorkloadSpec,
    *,
    seed: int | None = None,
    timeout: float = 300.0,
    on_progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Synchronous :func:`run_embedded` (on uvloop where installed)."""
    return aio.run(run_embedded(spec, seed=seed, timeout=timeout, on_progress=on_progress))

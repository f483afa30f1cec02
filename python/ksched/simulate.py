"""``ksched simulate``: the whole scheduler on the embedded cluster, measured.

The run mirrors scheduler_perf: create the nodes and the existing pods (already bound),
start the scheduler and wait for its informers to sync, then create the new pods and
measure from the first one created to the last one bound and confirmed through the
watch. The report gives throughput, attempt latency percentiles, the process's CPU
time over that window (per pod bound), peak RSS and a placement summary computed from
the snapshot's columns.

A run ends in one of three ways (:attr:`SimReport.outcome`): every pod is bound
(``all-placed``); or no progress is possible (``unschedulable``): every pod not bound waits
in unschedulablePods and nothing is in flight (no attempt, binding, Permit wait or
background API call) for a settling period, so only a cluster change could help and the
embedded cluster makes none; or ``--timeout`` passes first (``timeout``), a last resort.
For pods left pending, the report counts them per FailedScheduling message (the
``PodScheduled`` condition the scheduler wrote), most frequent first.

``--config FILE`` schedules with the profiles of a KubeSchedulerConfiguration, built
exactly as ``ksched run`` builds them (:func:`ksched.profiles.build_profiles`,
out-of-tree plugins included); the workloads' pods use ``default-scheduler``. Its
``extenders`` are called as ``ksched run`` calls them (they must be reachable).
"""

from __future__ import annotations

import asyncio
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import numpy as np

from ksched import aio
from ksched.config import Extender as ExtenderConfig
from ksched.config import load_config
from ksched.framework.extender import build_extenders
from ksched.framework.profile import DEFAULT_SCHEDULER_NAME, Profile, default_profile
from ksched.framework.registry import default_registry
from ksched.profiles import build_profiles
from ksched.scheduler import Scheduler
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import WORKLOADS

_CREATE_BATCH = 500
#: Changes the embedded cluster keeps for watches to replay (see run_simulation).
_WATCH_HISTORY = 20_000
#: How long the scheduler must stay quiescent before a run with pending pods ends: the
#: last watch events of an attempt's writes (a condition patch, a victim's deletion)
#: are delivered within a few loop iterations; this is ample.
_SETTLE_SECONDS = 0.25

#: ``SimReport.outcome`` values.
ALL_PLACED = "all-placed"
UNSCHEDULABLE = "unschedulable"
TIMEOUT = "timeout"


@dataclass(slots=True)
class Placement:
    nodes_used: int
    pods_per_node_min: int
    pods_per_node_mean: float
    pods_per_node_max: int
    cpu_utilization_mean: float
    cpu_utilization_max: float


@dataclass(slots=True)
class SimReport:
    workload: str
    nodes: int
    existing_pods: int
    pods: int
    scheduled: int
    unschedulable_attempts: int
    seconds: float
    pods_per_second: float
    attempt_p50_us: float
    attempt_p99_us: float
    peak_rss_mib: float
    placement: Placement
    #: CPU seconds of the process (every thread: the loop and the Rust kernels) over
    #: the measured window, the embedded cluster's own work included.
    cpu_seconds: float = 0.0
    #: ``all-placed``, ``unschedulable`` (no progress possible) or ``timeout``.
    outcome: str = ALL_PLACED
    #: Pods left pending, per FailedScheduling message, most frequent first.
    pending_reasons: list[tuple[int, str]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pending(self) -> int:
        return self.pods - self.scheduled

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        p = self.placement
        return "\n".join(
            [
                f"workload            {self.workload}: {self.nodes} nodes, "
                f"{self.existing_pods} existing pods, {self.pods} new pods",
                f"scheduled           {self.scheduled}/{self.pods} in {self.seconds:.3f}s",
                f"throughput          {self.pods_per_second:,.0f} pods/s",
                f"attempt latency     p50 {self.attempt_p50_us:.1f} µs, "
                f"p99 {self.attempt_p99_us:.1f} µs",
                f"CPU                 {self.cpu_seconds:.2f}s, "
                f"{self.cpu_seconds / max(self.scheduled, 1) * 1e6:.1f} µs per pod bound",
                f"peak RSS            {self.peak_rss_mib:.0f} MiB",
                f"placement           {p.nodes_used} nodes used; pods per node "
                f"min {p.pods_per_node_min} / mean {p.pods_per_node_mean:.2f} / "
                f"max {p.pods_per_node_max}; cpu requested mean "
                f"{p.cpu_utilization_mean:.1%}, max {p.cpu_utilization_max:.1%}",
                *self._pending_lines(),
            ]
        )

    def _pending_lines(self) -> list[str]:
        if self.outcome == ALL_PLACED:
            return []
        why = (
            "no progress possible: they wait for a cluster change"
            if self.outcome == UNSCHEDULABLE
            else f"still pending when the timeout ended the run after {self.seconds:.0f}s"
        )
        lines = [f"unschedulable       {self.pending} pods ({why})"]
        shown = self.pending_reasons[:5]
        for count, message in shown:
            lines.append(f"  {count:>8} pods: {message}")
        rest = sum(c for c, _ in self.pending_reasons[5:])
        if rest:
            lines.append(f"  {rest:>8} pods: (other messages)")
        return lines


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Progress:
    """A one-line progress bar on a terminal stream."""

    def __init__(self, total: int, out: TextIO | None) -> None:
        self.total = total
        self.out = out
        self.start = time.perf_counter()

    def show(self, done: int) -> None:
        if self.out is None:
            return
        width = 30
        frac = done / self.total if self.total else 1.0
        bar = "#" * int(frac * width)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        self.out.write(
            f"\r[{bar:<{width}}] {done:>7}/{self.total} pods bound  {rate:>9,.0f} pods/s"
        )
        self.out.flush()

    def finish(self, done: int) -> None:
        if self.out is not None:
            self.show(done)
            self.out.write("\n")
            self.out.flush()


def load_profiles(path: str) -> dict[str, Profile]:
    """The profiles of the config file at ``path``, with the installed plugins.

    Raises :class:`~ksched.config.ConfigError` or :class:`~ksched.profiles.ProfileError`,
    and ``ValueError`` when no profile handles the workloads' pods.
    """
    return load_setup(path)[0]


def load_setup(path: str) -> tuple[dict[str, Profile], list[ExtenderConfig]]:
    """The profiles (as :func:`load_profiles`) and the extenders of the config file at
    ``path``. Raises as :func:`load_profiles`, and
    :class:`~ksched.framework.extender.ExtenderError` when an extender's TLS settings
    cannot be loaded."""
    registry = default_registry()
    cfg = load_config(
        path, extra_plugins=registry.names(), extension_points=registry.extension_points()
    )
    profiles = build_profiles(cfg, registry)
    if DEFAULT_SCHEDULER_NAME not in profiles:
        raise ValueError(
            f"{path}: no profile handles the workload's pods (schedulerName "
            f"{DEFAULT_SCHEDULER_NAME}); profiles: {', '.join(profiles)}"
        )
    for ext in build_extenders(cfg.extenders):  # fail now on bad TLS settings
        ext.close()
    return profiles, list(cfg.extenders)


async def run_simulation(
    *,
    nodes: int,
    pods: int,
    existing_pods: int = 0,
    workload: str = "basic",
    seed: int | None = None,
    profiles: Mapping[str, Profile] | None = None,
    progress: TextIO | None = None,
    timeout: float = 600.0,
    extenders: Sequence[ExtenderConfig] = (),
) -> SimReport:
    """Run one workload on a fresh embedded cluster and report the figures."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r} (known: {', '.join(sorted(WORKLOADS))})")
    wl = WORKLOADS[workload]
    rng = random.Random(seed)
    aio.tune_gc()
    # The informers watch from the start and the report reads no Event objects: keep
    # a short replay window and no Events (counted all the same), so the embedded
    # cluster does not hold every version of every pod for the garbage collector.
    cluster = InMemoryCluster(history=_WATCH_HISTORY, max_events=0)
    node_names = []
    for i in range(nodes):
        obj = cluster.create("nodes", wl.node(i, rng))
        node_names.append(obj["metadata"]["name"])
        for kind, extra in wl.node_objects(obj) if wl.node_objects else ():
            cluster.create(kind, extra)

    def create_pod(pod: dict[str, Any]) -> None:
        for kind, extra in wl.pod_objects(pod) if wl.pod_objects else ():
            cluster.create(kind, extra)
        cluster.create("pods", pod)

    for i in range(existing_pods):
        create_pod(wl.existing_pod(i, node_names[i % len(node_names)], rng))

    sched = Scheduler(
        cluster,
        profiles or {"default-scheduler": default_profile()},
        seed=seed,
        extenders=build_extenders(extenders),
    )
    await sched.start()
    aio.tune_gc()
    loop_task = asyncio.get_running_loop().create_task(sched.run())

    bar = _Progress(pods, progress)
    cpu_start = time.process_time()
    start = time.perf_counter()
    deadline = start + timeout
    created = 0
    last_draw = 0.0
    quiet_since: float | None = None
    quiet_bound = -1
    outcome = TIMEOUT
    while True:
        if created < pods:
            for _ in range(min(_CREATE_BATCH, pods - created)):
                create_pod(wl.new_pod(created, rng))
                created += 1
        bound = sched.stats.bound
        now = time.perf_counter()
        if created == pods and bound >= pods and sched.cache.num_assumed() == 0:
            outcome = ALL_PLACED
            break
        if created == pods and sched.quiescent():
            if quiet_since is None or bound != quiet_bound:
                quiet_since, quiet_bound = now, bound
            elif now - quiet_since >= _SETTLE_SECONDS:
                outcome = UNSCHEDULABLE
                break
        else:
            quiet_since = None
        if now > deadline:
            break
        if now - last_draw > 0.2:
            bar.show(bound)
            last_draw = now
        await asyncio.sleep(0 if created < pods else 0.001)
    # The settling period is not scheduling time.
    elapsed = quiet_since if outcome == UNSCHEDULABLE and quiet_since else time.perf_counter()
    elapsed -= start
    cpu = time.process_time() - cpu_start
    bar.finish(sched.stats.bound)
    pending_reasons = _pending_reasons(cluster) if outcome != ALL_PLACED else []

    await sched.shutdown()
    loop_task.cancel()
    await asyncio.gather(loop_task, return_exceptions=True)

    lat = np.frombuffer(sched.stats.attempt_ns, dtype=np.int64) if sched.stats.attempt_ns else None
    p50, p99 = (
        (float(np.percentile(lat, 50)) / 1e3, float(np.percentile(lat, 99)) / 1e3)
        if lat is not None
        else (0.0, 0.0)
    )
    snap = sched.cache.snapshot
    per_node = snap.pod_counts()
    _, cpu_alloc, cpu_req = snap.resource_columns("cpu")
    util = np.divide(
        cpu_req, cpu_alloc, out=np.zeros(len(cpu_alloc), dtype=np.float64), where=cpu_alloc > 0
    )
    placement = Placement(
        nodes_used=int(np.count_nonzero(per_node)),
        pods_per_node_min=int(per_node.min()) if len(per_node) else 0,
        pods_per_node_mean=float(per_node.mean()) if len(per_node) else 0.0,
        pods_per_node_max=int(per_node.max()) if len(per_node) else 0,
        cpu_utilization_mean=float(util.mean()) if len(util) else 0.0,
        cpu_utilization_max=float(util.max()) if len(util) else 0.0,
    )
    return SimReport(
        workload=workload,
        nodes=nodes,
        existing_pods=existing_pods,
        pods=pods,
        scheduled=sched.stats.bound,
        unschedulable_attempts=sched.stats.unschedulable,
        seconds=elapsed,
        pods_per_second=sched.stats.bound / elapsed if elapsed > 0 else 0.0,
        attempt_p50_us=p50,
        attempt_p99_us=p99,
        peak_rss_mib=_peak_rss_mib(),
        placement=placement,
        cpu_seconds=cpu,
        outcome=outcome,
        pending_reasons=pending_reasons,
    )


def _pending_reasons(cluster: InMemoryCluster) -> list[tuple[int, str]]:
    """Pending pods per FailedScheduling message (their ``PodScheduled=False``
    condition), most frequent first; pods never attempted or gated count under a
    message that says so."""
    counts: Counter[str] = Counter()
    for pod in cluster.objects("pods"):
        if (pod.get("spec") or {}).get("nodeName"):
            continue
        message = "not attempted yet"
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                message = str(cond.get("message") or cond.get("reason") or "")
        counts[message] += 1
    return sorted(((n, m) for m, n in counts.items()), key=lambda t: (-t[0], t[1]))


def run(
    *,
    nodes: int,
    pods: int,
    existing_pods: int = 0,
    workload: str = "basic",
    seed: int | None = None,
    profiles: Mapping[str, Profile] | None = None,
    progress: bool = True,
    extenders: Sequence[ExtenderConfig] = (),
    timeout: float = 600.0,
) -> SimReport:
    """Synchronous entry point (uses uvloop when installed)."""
    coro = run_simulation(
        timeout=timeout,
        extenders=extenders,
        nodes=nodes,
        pods=pods,
        existing_pods=existing_pods,
        workload=workload,
        seed=seed,
        profiles=profiles,
        progress=sys.stderr if progress else None,
    )
    return aio.run(coro)

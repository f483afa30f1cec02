"""``ksched replay``: a recorded (or generated) cluster scheduled under several
configurations, side by side — the A/B test of a configuration change before it goes
live.

For each configuration a fresh embedded cluster (:mod:`ksched.sim`) gets the
recording's objects (:func:`ksched.sim.recorded.load_recording`): the nodes, the pods
bound to them, the pods that were pending. The whole scheduler, built from the
configuration exactly as ``ksched run`` builds it (profiles, out-of-tree plugins,
extenders, backoffs, the feature gates of ``--feature-gates``: pod groups need the
workload gates), then schedules the pending pods; the recorded arrivals and departures
follow in their recorded order. Volumes, claims and pod groups are part of the
recording; the PV controller and provisioner a cluster runs beside its scheduler are
stood in for by :mod:`ksched.sim.volume_controller`, so claims VolumeBinding binds get
bound.

Determinism. The replay runs in *virtual time*: each arrival is applied only once the
scheduler has nothing left to do (no pod in activeQ or backoffQ, in an attempt, being
bound or waiting at Permit, no watch event undelivered), so where each pod lands is a
function of the recording, the configuration and ``--seed`` alone, never of the
machine's speed. The seed drives the snapshot's tie-breaks and Python's ``random``
(preemption's candidate offset, Python plugins' tie-breaks). Throughput is measured in
wall time over the busy periods only (from a change to idle).

The report, per configuration: pods placed and left unschedulable (with their
FailedScheduling messages), preemption victims, per-node utilization of cpu and memory
(requested / allocatable: mean, spread as the standard deviation, min, max, and the
nodes used), the skew of every topology spread constraint the pods carry (over the
nodes that have the key), throughput and attempt latency. :func:`table` prints them
side by side, :func:`plot` draws the sorted per-node utilization and the outcome
counts (``pip install 'ksched[bench]'``).

Clusters without a recording: :func:`recording_from_workload` turns a workload file of
``ksched/bench/workloads/`` into the same shape (its nodes, its pre-bound pods, every
other pod pending; churn is left out).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ksched import aio
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    FeatureGates,
    KubeSchedulerConfiguration,
    load_config,
    load_config_bytes,
)
from ksched.config import Extender as ExtenderConfig
from ksched.framework.extender import build_extenders
from ksched.framework.profile import DEFAULT_SCHEDULER_NAME, Profile, default_profile
from ksched.framework.registry import default_registry
from ksched.plugins.default_preemption import label_selector_matcher
from ksched.profiles import build_profiles
from ksched.recording import Recording
from ksched.scheduler import Scheduler
from ksched.sim import volume_controller
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.recorded import apply_arrival, load_recording

__all__ = [
    "ReplayConfig",
    "ReplayResult",
    "load_replay_config",
    "plot",
    "recording_from_workload",
    "replay",
    "replay_all",
    "table",
    "wait_idle",
]

Obj = dict[str, Any]

_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

#: Resources whose per-node utilization is reported.
RESOURCES = ("cpu", "memory")


@dataclass(slots=True)
class ReplayConfig:
    """One configuration to replay under: its label and its KubeSchedulerConfiguration
    (None: the default profile). Profiles are built afresh for every replay (plugin
    instances belong to one scheduler), as ``ksched run`` builds them."""

    label: str
    config: KubeSchedulerConfiguration | None = None
    #: The feature gates (``--feature-gates``): pod groups need the workload gates.
    gates: FeatureGates = DEFAULT_FEATURE_GATES

    def profiles(self) -> dict[str, Profile]:
        if self.config is None:
            if self.gates == DEFAULT_FEATURE_GATES:
                return {DEFAULT_SCHEDULER_NAME: default_profile()}
            cfg = load_config_bytes(_EMPTY_CONFIG, gates=self.gates)
            return build_profiles(cfg, default_registry(), gates=self.gates)
        return build_profiles(self.config, default_registry(), gates=self.gates)

    @property
    def extenders(self) -> Sequence[ExtenderConfig]:
        return list(self.config.extenders) if self.config is not None else []

    @property
    def pod_initial_backoff(self) -> float:
        return float(self.config.pod_initial_backoff_seconds or 1) if self.config else 1.0

    @property
    def pod_max_backoff(self) -> float:
        return float(self.config.pod_max_backoff_seconds or 10) if self.config else 10.0


def load_replay_config(
    path: str, label: str | None = None, *, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> ReplayConfig:
    """A KubeSchedulerConfiguration file, validated with the installed plugins and
    ``gates`` (its profiles are built once here too, so a bad one fails now). Raises
    :class:`~ksched.config.ConfigError`, :class:`~ksched.profiles.ProfileError`."""
    registry = default_registry()
    cfg: KubeSchedulerConfiguration = load_config(
        path,
        extra_plugins=registry.names(),
        extension_points=registry.extension_points(),
        gates=gates,
    )
    build_profiles(cfg, registry, gates=gates)
    return ReplayConfig(label=label or Path(path).stem, config=cfg, gates=gates)


def default_replay_config(gates: FeatureGates = DEFAULT_FEATURE_GATES) -> ReplayConfig:
    return ReplayConfig("default", gates=gates)


@dataclass(slots=True)
class Stats:
    mean: float
    stdev: float
    min: float
    max: float


@dataclass(slots=True)
class SpreadSkew:
    """The final skew of one topology spread constraint the pods carry."""

    namespace: str
    topology_key: str
    selector: Obj
    max_skew: int
    when_unsatisfiable: str
    skew: int
    domains: int


@dataclass(slots=True)
class ReplayResult:
    label: str
    pods: int
    placed: int
    unschedulable: int
    #: Pods left pending, per FailedScheduling message, most frequent first.
    pending_reasons: list[tuple[int, str]]
    preemptions: int
    nodes: int
    nodes_used: int
    utilization: dict[str, Stats]
    #: Per-node requested/allocatable, sorted high to low (for the plot).
    per_node: dict[str, list[float]]
    spread: list[SpreadSkew]
    busy_seconds: float
    pods_per_second: float
    attempt_p50_us: float
    attempt_p99_us: float
    #: pod ``namespace/name`` → node, for every pod the replay scheduled.
    placements: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def max_skew(self) -> int | None:
        return max((s.skew for s in self.spread), default=None)

    def as_dict(self, *, placements: bool = False) -> Obj:
        d = asdict(self)
        if not placements:
            d.pop("placements")
        d.pop("per_node")
        return d


# ---- clusters from workload files ------------------------------------------------------


def recording_from_workload(spec: Any) -> Recording:
    """A :class:`~ksched.bench.workload.WorkloadSpec` as a recording: its nodes, the
    pods it pre-binds, every other pod it creates pending (churn is left out)."""
    from ksched.bench.workload import Churn, CreatePods, resolve_priority

    nodes = spec.node_objects()
    names = [n["metadata"]["name"] for n in nodes]
    pods: list[Obj] = []
    notes: list[str] = []
    for op in spec.ops():
        if isinstance(op, CreatePods):
            for pod in spec.pod_objects(op, names):
                pods.append(resolve_priority(pod, spec.priority_classes))
        elif isinstance(op, Churn):
            notes.append(f"{spec.key}: the churn op is not replayed")
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in spec.namespaces()
    ]
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": k},
            "value": v,
        }
        for k, v in spec.priority_classes.items()
    ]
    return Recording(
        objects={
            "namespaces": namespaces,
            "priorityclasses": classes,
            "nodes": nodes,
            "pods": pods,
        },
        source=f"workload {spec.label}",
        notes=notes,
    )


# ---- running ----------------------------------------------------------------------------


class _ReplayCluster(InMemoryCluster):
    """The embedded cluster, counting preemption's victim deletions."""

    def __init__(self) -> None:
        super().__init__()
        self.evicted = 0

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        await super().delete_pod(namespace=namespace, name=name, uid=uid)
        self.evicted += 1


async def wait_idle(sched: Scheduler, cluster: InMemoryCluster, deadline: float) -> bool:
    """Wait until the scheduler has nothing left to do and no watch event is
    undelivered (see the module docstring); False when ``deadline`` (``perf_counter``)
    passes first.

    Pods that only ever go back to backoffQ (a pod group short of room whose members
    no plugin rejects: upstream retries them after their backoff, with no cluster event)
    would keep the scheduler busy for good: once every pod in backoffQ has been retried
    with nothing bound meanwhile, the same cluster fails them again, and the wait ends
    there too."""
    calm = 0
    #: (pods bound, backoffQ pods' attempts) when only backoffQ was left.
    stalled: tuple[int, dict[str, int]] | None = None
    while time.perf_counter() < deadline:
        if cluster.undelivered():
            calm, stalled = 0, None
        elif sched.quiescent():
            calm += 1
            if calm >= 3:  # the loop went round with nothing to deliver or schedule
                return True
        elif sched.quiescent(backoff=False):
            calm = 0
            bound, attempts = sched.stats.bound, sched.queue.backoff_attempts()
            if stalled is None or stalled[0] != bound:
                stalled = (bound, attempts)
            elif all(attempts.get(uid, n + 1) > n for uid, n in stalled[1].items()):
                return True
            await asyncio.sleep(0.01)
            continue
        else:
            calm = 0
        await asyncio.sleep(0 if calm or not sched.quiescent() else 0.0005)
    return False


async def replay(
    rec: Recording, config: ReplayConfig, *, seed: int = 1, timeout: float = 600.0
) -> ReplayResult:
    """Replay ``rec`` under ``config`` on a fresh embedded cluster."""
    random.seed(seed)
    cluster = _ReplayCluster()
    load_recording(rec, cluster)
    tracked = {_key(p) for p in rec.pending_pods}
    sched = Scheduler(
        cluster,
        config.profiles(),
        seed=seed,
        pod_initial_backoff=config.pod_initial_backoff,
        pod_max_backoff=config.pod_max_backoff,
        extenders=build_extenders(config.extenders),
        feature_gates=config.gates,
    )
    notes = list(rec.notes)
    deadline = time.perf_counter() + timeout
    await sched.start()
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    # The PV controller and provisioner a cluster runs beside its scheduler.
    volumes = asyncio.get_running_loop().create_task(volume_controller.run(cluster))
    busy = 0.0
    try:
        t0 = time.perf_counter()
        if not await wait_idle(sched, cluster, deadline):
            notes.append(f"timed out after {timeout:.0f}s")
        busy += time.perf_counter() - t0
        for a in rec.arrivals:
            if time.perf_counter() > deadline:
                notes.append(f"timed out after {timeout:.0f}s: later arrivals not replayed")
                break
            t0 = time.perf_counter()
            if not apply_arrival(cluster, a.type, a.kind, a.object):
                continue
            if a.kind == "pods" and a.type == "ADDED" and not a.object["spec"].get("nodeName"):
                tracked.add(_key(a.object))
            await wait_idle(sched, cluster, deadline)
            busy += time.perf_counter() - t0
    finally:
        await sched.shutdown()
        loop_task.cancel()
        volumes.cancel()
        await asyncio.gather(loop_task, volumes, return_exceptions=True)
    return _result(config.label, sched, cluster, tracked, busy, notes)


def _key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _stats(values: np.ndarray[Any, np.dtype[np.float64]]) -> Stats:
    if not len(values):
        return Stats(0.0, 0.0, 0.0, 0.0)
    return Stats(
        float(values.mean()), float(values.std()), float(values.min()), float(values.max())
    )


def _result(
    label: str,
    sched: Scheduler,
    cluster: _ReplayCluster,
    tracked: set[str],
    busy: float,
    notes: list[str],
) -> ReplayResult:
    pods = {_key(p): p for p in cluster.objects("pods")}
    placements: dict[str, str] = {}
    reasons: Counter[str] = Counter()
    for key in sorted(tracked):
        pod = pods.get(key)
        if pod is None:
            continue  # deleted (a departure, or preempted)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            placements[key] = node
            continue
        message = "not attempted"
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                message = str(cond.get("message") or cond.get("reason") or "")
        reasons[message] += 1
    snap = sched.cache.snapshot
    per_node_pods = snap.pod_counts()
    utilization: dict[str, Stats] = {}
    per_node: dict[str, list[float]] = {}
    for r in RESOURCES:
        _, alloc, req = snap.resource_columns(r)
        frac = np.divide(req, alloc, out=np.zeros(len(alloc), dtype=np.float64), where=alloc > 0)
        utilization[r] = _stats(frac)
        per_node[r] = sorted((float(x) for x in frac), reverse=True)
    lat = np.frombuffer(sched.stats.attempt_ns, dtype=np.int64) if sched.stats.attempt_ns else None
    p50, p99 = (
        (float(np.percentile(lat, 50)) / 1e3, float(np.percentile(lat, 99)) / 1e3)
        if lat is not None
        else (0.0, 0.0)
    )
    unschedulable = sum(reasons.values())
    return ReplayResult(
        label=label,
        pods=len(placements) + unschedulable,
        placed=len(placements),
        unschedulable=unschedulable,
        pending_reasons=sorted(((n, m) for m, n in reasons.items()), key=lambda t: (-t[0], t[1])),
        preemptions=cluster.evicted,
        nodes=len(per_node_pods),
        nodes_used=int(np.count_nonzero(per_node_pods)),
        utilization=utilization,
        per_node=per_node,
        spread=_spread(cluster),
        busy_seconds=busy,
        pods_per_second=sched.stats.bound / busy if busy > 0 else 0.0,
        attempt_p50_us=p50,
        attempt_p99_us=p99,
        placements=placements,
        notes=notes,
    )


def _spread(cluster: InMemoryCluster) -> list[SpreadSkew]:
    """The final skew of each distinct topology spread constraint of the bound pods:
    matching pods of the constraint's namespace per domain, over every node with the
    topology key (domains with no pod count as 0)."""
    nodes = {
        n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in cluster.objects("nodes")
    }
    bound = [p for p in cluster.objects("pods") if (p.get("spec") or {}).get("nodeName")]
    seen: dict[bytes, SpreadSkew] = {}
    for p in bound:
        ns = p["metadata"].get("namespace", "")
        for c in (p.get("spec") or {}).get("topologySpreadConstraints") or ():
            key = c.get("topologyKey")
            selector = c.get("labelSelector") or {}
            ident = orjson.dumps([ns, key, selector], option=orjson.OPT_SORT_KEYS)
            if ident in seen or not isinstance(key, str):
                continue
            matches = label_selector_matcher(selector)
            counts = {labels[key]: 0 for labels in nodes.values() if key in labels}
            for q in bound:
                if q["metadata"].get("namespace", "") != ns or matches is None:
                    continue
                domain = nodes.get(q["spec"]["nodeName"], {}).get(key)
                if domain is not None and matches(q["metadata"].get("labels") or {}):
                    counts[domain] += 1
            seen[ident] = SpreadSkew(
                namespace=ns,
                topology_key=key,
                selector=selector,
                max_skew=int(c.get("maxSkew", 1)),
                when_unsatisfiable=str(c.get("whenUnsatisfiable", "DoNotSchedule")),
                skew=max(counts.values()) - min(counts.values()) if counts else 0,
                domains=len(counts),
            )
    return list(seen.values())


async def replay_all(
    rec: Recording, configs: Sequence[ReplayConfig], *, seed: int = 1, timeout: float = 600.0
) -> list[ReplayResult]:
    return [await replay(rec, c, seed=seed, timeout=timeout) for c in configs]


def run(
    rec: Recording, configs: Sequence[ReplayConfig], *, seed: int = 1, timeout: float = 600.0
) -> list[ReplayResult]:
    """Synchronous :func:`replay_all` (uvloop where installed)."""
    return aio.run(replay_all(rec, configs, seed=seed, timeout=timeout))


# ---- reporting --------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x:.1%}"


def table(rec: Recording, results: Sequence[ReplayResult]) -> str:
    """The configurations side by side."""
    pending = len(rec.pending_pods)
    added = sum(1 for a in rec.arrivals if a.kind == "pods" and a.type == "ADDED")
    head = (
        f"replay of {rec.source or 'a recording'}: {len(rec.of('nodes'))} nodes, "
        f"{len(rec.bound_pods)} bound pods, {pending} pending"
        + (f", {added} pod arrivals over {rec.duration:.0f}s" if rec.arrivals else "")
    )
    rows: list[tuple[str, list[str]]] = [
        ("pods placed", [f"{r.placed}/{r.pods}" for r in results]),
        ("unschedulable", [str(r.unschedulable) for r in results]),
        ("preemption victims", [str(r.preemptions) for r in results]),
        ("nodes used", [f"{r.nodes_used}/{r.nodes}" for r in results]),
    ]
    for res in RESOURCES:
        rows.append((f"{res} utilization mean", [_pct(r.utilization[res].mean) for r in results]))
        u = [r.utilization[res] for r in results]
        rows.append(("  spread (stdev)", [_pct(x.stdev) for x in u]))
        rows.append(("  min / max", [f"{_pct(x.min)} / {_pct(x.max)}" for x in u]))
    rows.append(
        (
            "topology-spread max skew",
            [
                "-" if r.max_skew is None else f"{r.max_skew} ({len(r.spread)} constraints)"
                for r in results
            ],
        )
    )
    rows.append(("throughput (pods/s)", [f"{r.pods_per_second:,.0f}" for r in results]))
    rows.append(
        (
            "attempt p50 / p99 (µs)",
            [f"{r.attempt_p50_us:.0f} / {r.attempt_p99_us:.0f}" for r in results],
        )
    )
    width = max(len(name) for name, _ in rows) + 2
    cols = [max(len(r.label), *(len(v[i]) for _, v in rows)) + 2 for i, r in enumerate(results)]
    lines = [
        head,
        "",
        " " * width + "".join(r.label.rjust(c) for r, c in zip(results, cols, strict=True)),
    ]
    for name, values in rows:
        lines.append(
            name.ljust(width) + "".join(v.rjust(c) for v, c in zip(values, cols, strict=True))
        )
    for r in results:
        for count, message in r.pending_reasons[:3]:
            lines.append(f"[{r.label}] {count} unschedulable: {message}")
        for note in r.notes:
            lines.append(f"[{r.label}] note: {note}")
    return "\n".join(lines)


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed (the ``bench`` extra)."""


def plot(path: Path | str, results: Sequence[ReplayResult]) -> None:
    """Sorted per-node cpu and memory utilization of each configuration, and the
    placed / unschedulable / preempted counts, side by side."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("matplotlib is not installed: pip install 'ksched[bench]'") from exc
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, res in zip(axes[:2], RESOURCES, strict=True):
        for r in results:
            ax.plot(range(len(r.per_node[res])), r.per_node[res], label=r.label)
        ax.set_title(f"{res} requested / allocatable per node (sorted)")
        ax.set_xlabel("node")
        ax.set_ylim(0, 1.05)
        ax.legend()
    ax = axes[2]
    x = np.arange(3)
    w = 0.8 / max(len(results), 1)
    for i, r in enumerate(results):
        ax.bar(x + i * w, [r.placed, r.unschedulable, r.preemptions], w, label=r.label)
    ax.set_xticks(x + w * (len(results) - 1) / 2, ["placed", "unschedulable", "preempted"])
    ax.set_title("pods")
    ax.legend()
    fig.tight_layout()
    fig.savefig(str(path), dpi=100)
    plt.close(fig)


def write_json(path: Path | str, rec: Recording, results: Sequence[ReplayResult]) -> None:
    doc = {
        "source": rec.source,
        "results": [r.as_dict(placements=True) for r in results],
    }
    Path(path).write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))

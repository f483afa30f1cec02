"""Run a case through ksched's production path: what ``ksched run`` does for one attempt.

The stored objects (as upstream's harness stored them: defaulted, validated, selectors
merged) are created in an embedded cluster (:class:`ksched.sim.InMemoryCluster`) in the
case's order, so ksched's informers list them as the API server serves them. The
configuration is loaded as ``ksched run --config`` loads it
(:func:`ksched.config.load_config_bytes` with the installed plugin registry), the
scheduler is built by :func:`ksched.run.new_scheduler` and started (informers synced);
the case's pod is taken out of the queue (:meth:`SchedulingQueue.pop_specific`, as
upstream's harness takes it) and :meth:`Scheduler.schedule_popped` runs its cycle, the
very call of the scheduler's loop. The binding, the FailedScheduling event, the
PodScheduled condition, a nomination and preemption's deletions then reach the embedded
cluster, and are read back from there.

The per-node view (every node's Filter status and each Score plugin's normalized score)
comes from :meth:`ksched._core.Snapshot.explain` on the scheduler's own snapshot just
before the cycle: the same Rust filter and score kernels the cycle runs, over every node.
The result has the shape of the Go harness's, so :mod:`tests.conformance.compare` reads
both alike.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ksched.cluster import KIND_NAMES
from ksched.config import load_config_bytes
from ksched.framework.registry import default_registry
from ksched.run import new_scheduler
from ksched.sim import InMemoryCluster

Obj = dict[str, Any]

#: resource ("pods") of each kind ("Pod").
RESOURCES = {kind: resource for resource, kind in KIND_NAMES.items()}


class RecordingCluster(InMemoryCluster):
    """The embedded cluster, remembering the pods deleted through the API (victims)."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        self.deleted.append(f"{namespace}/{name}")
        await super().delete_pod(namespace=namespace, name=name, uid=uid)


def _status(entry: Obj | None) -> Obj | None:
    if entry is None:
        return None
    return {"code": entry["code"], "plugin": entry["plugin"], "reasons": list(entry["reasons"])}


async def run_case(objects: list[Obj], config: Obj | None, pod_key: str, seed: int) -> Obj:
    """ksched's report for one case (see the module docstring)."""
    registry = default_registry()
    cfg = load_config_bytes(
        json.dumps(config or {}).encode(),
        "the case's KubeSchedulerConfiguration",
        extra_plugins=registry.names(),
        extension_points=registry.extension_points(),
    )
    cluster = RecordingCluster()
    for obj in objects:
        cluster.create(RESOURCES[obj["kind"]], obj)  # type: ignore[arg-type]
    sched = new_scheduler(cfg, cluster, seed=seed, identity="conformance")
    report: Obj = {"error": ""}
    stopped = False
    try:
        await sched.start()
        target = cluster.get("pods", pod_key)
        if target is None:
            raise LookupError(f"pod {pod_key} is not in the cluster")
        uid = target["metadata"]["uid"]
        info = sched.queue.pop_specific(uid)
        if info is None:
            raise LookupError(f"pod {pod_key} is not in the scheduling queue")
        fw = sched.frameworks[info.pod.scheduler_name]
        kernels = fw.profile.kernels
        weights = dict(kernels.scores)
        rows = sched.cache.snapshot.explain(info.compiled, kernels)
        report["profile"] = info.pod.scheduler_name
        report["filters"] = {r["node"]: _status(r["status"]) for r in rows}
        report["examined"] = [r["node"] for r in rows]
        report["scores"] = [
            {
                "node": r["node"],
                "plugins": {p: s["normalized"] * weights.get(p, 1) for p, s in r["scores"].items()},
                "total": r["total"],
            }
            for r in sorted(rows, key=lambda r: r["node"])
            if r["status"] is None
        ]
        await sched.schedule_popped(info)
        # What the queue keeps for the pod's requeueing (its rejector plugins).
        report["unschedulablePlugins"] = sorted(info.unschedulable_plugins)
        report["pendingPlugins"] = sorted(info.pending_plugins)
        # Bindings, events and status patches finish; then the informers stop.
        await sched.shutdown()
        stopped = True
        after = cluster.get("pods", pod_key) or {}
        report["chosen"] = (after.get("spec") or {}).get("nodeName") or None
        status = after.get("status") or {}
        cond = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        report["condition"] = cond
        report["nominatedNodeName"] = status.get("nominatedNodeName") or ""
        report["events"] = [
            {
                "type": e.get("type"),
                "reason": e.get("reason"),
                "action": e.get("action"),
                "regarding": "{}/{}".format(
                    (e.get("regarding") or {}).get("namespace", ""),
                    (e.get("regarding") or {}).get("name", ""),
                ),
                "note": e.get("note"),
            }
            for e in cluster.events
        ]
        report["deleted"] = sorted(cluster.deleted)
    finally:
        if not stopped:
            await sched.shutdown()
    return report


def run(objects: list[Obj], config: Obj | None, pod_key: str, seed: int) -> Obj:
    """:func:`run_case` on a fresh event loop; an exception becomes ``error``."""
    try:
        return asyncio.run(run_case(objects, config, pod_key, seed))
    except Exception as exc:  # reported as the case's ksched error
        return {"error": f"{type(exc).__name__}: {exc}"}

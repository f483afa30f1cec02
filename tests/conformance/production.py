"""Run a case through ksched's production path: what ``ksched run`` does for one attempt.

The stored objects (as upstream's harness stored them: defaulted, validated, selectors
merged) are created in an embedded cluster (:class:`ksched.sim.InMemoryCluster`) sorted
by namespace and name, so ksched's informers list them as the API server (and upstream's
harness) serves them. The configuration is loaded as ``ksched run --config`` loads it
(:func:`ksched.config.load_config_bytes` with the installed plugin registry), the
scheduler is built by :func:`ksched.run.new_scheduler` and started (informers synced);
the case's pod is taken out of the queue (:meth:`SchedulingQueue.pop_specific`, as
upstream's harness takes it) and :meth:`Scheduler.schedule_popped` runs its cycle, the
very call of the scheduler's loop. The binding, the FailedScheduling event, the
PodScheduled condition, a nomination and preemption's deletions then reach the embedded
cluster, and are read back from there. The chosen node is the one the cycle handed to
the binding cycle (upstream's harness reports the node Reserve got); a binding cycle
whose VolumeBinding PreBind waits for the PV controller, or whose DynamicResources
PreBind waits for the devices' binding conditions (neither side runs a PV controller or
a DRA driver), is cancelled and reported ``bindingPending``.

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
from ksched.config.features import FeatureGate
from ksched.framework.interface import CORE_FILTER_KEY, NodeInfo, NodeScore
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
        #: Set by VolumeBinding's PreBind writes (see :data:`PV_CONTROLLER_KINDS`) and by
        #: DynamicResources' BindingConditionsPending event.
        self.binding_pending = asyncio.Event()

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        self.deleted.append(f"{namespace}/{name}")
        await super().delete_pod(namespace=namespace, name=name, uid=uid)

    async def update_object(self, *, kind: Any, obj: Obj, subresource: str = "") -> Obj:
        out = await super().update_object(kind=kind, obj=obj, subresource=subresource)
        if kind in PV_CONTROLLER_KINDS:
            self.binding_pending.set()
        return out

    async def create_event(self, *, event: Obj) -> None:
        await super().create_event(event=event)
        if event.get("reason") == "BindingConditionsPending":
            # DynamicResources' PreBind waits for a driver to set the devices' binding
            # conditions: no driver runs here or in upstream's harness.
            self.binding_pending.set()


#: The kinds only VolumeBinding's PreBind writes, and then waits for the PV controller
#: to bind: neither the embedded cluster nor upstream's harness runs one, so the binding
#: cycle is left pending there and cancelled (upstream's harness does the same).
PV_CONTROLLER_KINDS = frozenset({"persistentvolumes", "persistentvolumeclaims"})


def _list_order(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _status(entry: Obj | None) -> Obj | None:
    if entry is None:
        return None
    return {"code": entry["code"], "plugin": entry["plugin"], "reasons": list(entry["reasons"])}


class _CycleView:
    """Every node's Filter status and scores as the pod's cycle sees them.

    The view is taken inside the cycle, once its PreFilters have run and before it
    places the pod: the Kernel PreFilters' requests (the volume plugins') are attached
    to the compiled pod then and the Python PreFilters (VolumeBinding's claims,
    DynamicResources' allocator) have written the cycle state the Rust filters read. A
    PreFilter that rejects gives every node its status (upstream's diagnosis); the
    Python Filter plugins run on the nodes the Rust filters pass. The framework's
    PreFilter methods are wrapped for the one cycle (their results pass through
    unchanged); a pod whose cycle runs no PreFilter of them gets the view from just
    before the cycle."""

    def __init__(self, sched: Any, fw: Any, info: Any) -> None:
        # The framework the cycle runs for this pod (a view without the plugins that
        # ignore it, or the profile's own).
        self.sched, self.fw, self.info = sched, fw.for_pod(info.pod), info
        self._rows: list[Obj] = self._explain(info.compiled, None)
        #: node -> Python Score plugin -> weighted score, as the cycle's run_score.
        self.python_scores: dict[str, dict[str, int]] = {}
        self._kernel_pre_filter = self.fw.run_kernel_pre_filter
        self._pre_filter = self.fw.run_pre_filter
        self._score = self.fw.run_score
        self.fw.run_kernel_pre_filter = self.run_kernel_pre_filter
        self.fw.run_pre_filter = self.run_pre_filter
        self.fw.run_score = self.run_score

    def restore(self) -> None:
        del self.fw.run_kernel_pre_filter
        del self.fw.run_pre_filter
        del self.fw.run_score

    def rows(self) -> list[Obj]:
        return self._rows

    def _mine(self, pod: Any) -> bool:
        return bool(pod.uid == self.info.pod.uid)

    def _explain(self, compiled: Any, state: Any) -> list[Obj]:
        dra = None if state is None else state.get(CORE_FILTER_KEY)
        rows: list[Obj] = self.sched.cache.snapshot.explain(
            compiled, self.fw.profile.kernels, dra=dra
        )
        for r in rows:
            st = r["status"]
            if st is not None and st["code"] == "Error":
                # The cycle's status of a Filter error (schedule_one._kernel_error, as
                # upstream's RunFilterPlugins wraps it).
                msg = ", ".join(st["reasons"])
                r["status"] = {
                    **st,
                    "reasons": [f'running "{st["plugin"]}" filter plugin: {msg}'],
                }
        return rows

    def _rejected(self, status: Any) -> None:
        entry = {"code": status.code.value, "plugin": status.plugin, "reasons": status.reasons}
        for r in self._rows:
            r["status"] = entry
            r["scores"] = {}

    def run_kernel_pre_filter(self, state: Any, pod: Any, compiled: Any) -> Any:
        out, failed = self._kernel_pre_filter(state, pod, compiled)
        if self._mine(pod):
            self._rows = self._explain(out, state)
            if failed is not None:
                self._rejected(failed)
        return out, failed

    def run_pre_filter(self, state: Any, pod: Any, *, count: bool = True) -> Any:
        names, status = self._pre_filter(state, pod, count=count)
        if not self._mine(pod):
            return names, status
        self._rows = self._explain(self.info.compiled, state)
        if status is not None:
            kernels = self.fw.profile.kernels
            result = self.sched.cache.snapshot.schedule(self.info.compiled, kernels, True)
            if result.pre_filter_msg is None:
                # Else a built-in PreFilter rejected first: the explained rows say so.
                self._rejected(status)
            return names, status
        dra = state.get(CORE_FILTER_KEY)
        if dra is not None and dra.error:
            # The cycle fails with this Filter error (upstream: an Error status).
            for r in self._rows:
                st = r["status"]
                if st is not None and list(st["reasons"]) == [dra.error]:
                    msg = f'running "DynamicResources" filter plugin: {dra.error}'
                    r["status"] = {"code": "Error", "plugin": st["plugin"], "reasons": [msg]}
        # The view's own Filter calls are not the cycle's plugin evaluations.
        counted = dict(self.fw._evals)
        for r in self._rows:
            if r["status"] is not None:
                continue
            ni = NodeInfo(
                r["node"], self.sched.cache.nodes.get(r["node"]), self.sched.cache.snapshot
            )
            fs = self.fw.run_filter(state, pod, ni)
            if fs is not None:
                r["status"] = {"code": fs.code.value, "plugin": fs.plugin, "reasons": fs.reasons}
                r["scores"] = {}
        self.fw._evals.clear()
        self.fw._evals.update(counted)
        return names, status

    def run_score(self, state: Any, pod: Any, nodes: Any) -> Any:
        totals, status = self._score(state, pod, nodes)
        if self._mine(pod) and status is None:
            # The cycle's totals per plugin: each Python Score plugin again on the same
            # state (their Score and NormalizeScore only read it).
            for p in self.fw.points.score:
                if p.name in state.skip_score_plugins:
                    continue
                scores = [NodeScore(n.name, int(p.score(state, pod, n))) for n in nodes]
                normalize = getattr(p, "normalize_score", None)
                if callable(normalize):
                    normalize(state, pod, scores)
                weight = self.fw.score_weights.get(p.name, 1)
                for x in scores:
                    self.python_scores.setdefault(x.name, {})[p.name] = x.score * weight
        return totals, status


async def run_case(
    objects: list[Obj],
    config: Obj | None,
    pod_key: str,
    seed: int,
    feature_gates: dict[str, bool] | None = None,
) -> Obj:
    """ksched's report for one case (see the module docstring); ``feature_gates`` as
    ``ksched run --feature-gates`` takes them."""
    registry = default_registry()
    flags = ",".join(f"{k}={str(v).lower()}" for k, v in (feature_gates or {}).items())
    gates = FeatureGate.from_flags([flags] if flags else []).config_gates()
    cfg = load_config_bytes(
        json.dumps(config or {}).encode(),
        "the case's KubeSchedulerConfiguration",
        extra_plugins=registry.names(),
        extension_points=registry.extension_points(),
        gates=gates,
    )
    cluster = RecordingCluster()
    # Lists come sorted by namespace and name from etcd, and from upstream's harness
    # (the fake clientset's tracker sorts them so); the embedded cluster lists in
    # creation order, so the objects are created in that order. It is what handlers see
    # first: of two DeviceClasses created alike that claim one extended resource name,
    # the first listed takes the name and its implicit one, the other neither.
    for obj in sorted(objects, key=_list_order):
        cluster.create(RESOURCES[obj["kind"]], obj)  # type: ignore[arg-type]
    sched = new_scheduler(cfg, cluster, seed=seed, identity="conformance", gates=gates)
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
        view = _CycleView(sched, fw, info)
        report["profile"] = info.pod.scheduler_name
        reserved: list[str] = []
        spawn = sched.binder.spawn

        def observed_spawn(popped: Any, node: str, *args: Any, **kwargs: Any) -> None:
            if popped.pod.uid == uid:
                reserved.append(node)  # the node the cycle reserved (upstream: Reserve)
            spawn(popped, node, *args, **kwargs)

        sched.binder.spawn = observed_spawn  # type: ignore[method-assign]
        evals = sched.metrics.plugin_evaluation
        before = evals.totals()
        await sched.schedule_popped(info)
        report["pluginEvaluations"] = _evaluation_deltas(
            before, evals.totals(), info.pod.scheduler_name
        )
        view.restore()
        rows = view.rows()
        report["filters"] = {r["node"]: _status(r["status"]) for r in rows}
        report["examined"] = [r["node"] for r in rows]
        py_scores = view.python_scores
        report["scores"] = [
            {
                "node": r["node"],
                "plugins": {
                    **{p: s["normalized"] * weights.get(p, 1) for p, s in r["scores"].items()},
                    **py_scores.get(r["node"], {}),
                },
                "total": r["total"] + sum(py_scores.get(r["node"], {}).values()),
            }
            for r in sorted(rows, key=lambda r: r["node"])
            if r["status"] is None
        ]
        report["bindingPending"] = False
        if reserved:
            # The binding cycle ends with the Scheduled event, or waits in PreBind.
            pending = asyncio.ensure_future(cluster.binding_pending.wait())
            drained = asyncio.ensure_future(sched.binder.drain())
            await asyncio.wait({pending, drained}, return_when=asyncio.FIRST_COMPLETED)
            if pending.done():
                # PreBind asked the PV controller (a bindTimeoutSeconds of 0 may have
                # failed the binding already: upstream's harness stops at the same write)
                # or waits for binding conditions.
                report["bindingPending"] = True
                sched.binder.cancel()
            for t in (pending, drained):
                t.cancel()
            await asyncio.gather(pending, drained, return_exceptions=True)
        # What the queue keeps for the pod's requeueing (its rejector plugins).
        report["unschedulablePlugins"] = sorted(info.unschedulable_plugins)
        report["pendingPlugins"] = sorted(info.pending_plugins)
        # Bindings, events and status patches finish; then the informers stop.
        await sched.shutdown()
        stopped = True
        after = cluster.get("pods", pod_key) or {}
        report["chosen"] = reserved[0] if reserved else None
        report["boundTo"] = (after.get("spec") or {}).get("nodeName") or None
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
            # After a successful scheduling cycle only the binding cycle's outcome is
            # compared: its Scheduled event, or its FailedScheduling event when a PreBind
            # or the Bind failed (upstream's harness records no other event of it), and
            # none when it was left pending (upstream's harness stops it there).
            if not reserved
            or (
                not report["bindingPending"]
                and e.get("reason") in ("Scheduled", "FailedScheduling")
            )
        ]
        report["deleted"] = sorted(cluster.deleted)
    finally:
        if not stopped:
            await sched.shutdown()
    return report


def _evaluation_deltas(
    before: dict[tuple[str, ...], float], after: dict[tuple[str, ...], float], profile: str
) -> dict[str, float]:
    """What the cycle added to ``scheduler_plugin_evaluation_total`` for ``profile``:
    ``"ExtensionPoint/Plugin"`` → count, as the Go harness reports it."""
    out: dict[str, float] = {}
    for (plugin, point, prof), value in after.items():
        delta = value - before.get((plugin, point, prof), 0.0)
        if prof == profile and delta:
            out[f"{point}/{plugin}"] = delta
    return out


def run(
    objects: list[Obj],
    config: Obj | None,
    pod_key: str,
    seed: int,
    feature_gates: dict[str, bool] | None = None,
) -> Obj:
    """:func:`run_case` on a fresh event loop; an exception becomes ``error``."""
    try:
        return asyncio.run(run_case(objects, config, pod_key, seed, feature_gates))
    except Exception as exc:  # reported as the case's ksched error
        return {"error": f"{type(exc).__name__}: {exc}"}

"""An embedded cluster built from code or YAML, for tests and benchmarks of scheduling
policies (``ksched_cluster``).

:class:`Cluster` wraps the in-memory API server the whole scheduler runs on unchanged
(:class:`ksched.sim.InMemoryCluster`) with the few builders a test needs: nodes from a
template with a count, zones and labels; existing (bound) pods; namespaces, budgets,
volumes, claims and any other kind the scheduler reads (:meth:`Cluster.add`, or YAML
with :meth:`Cluster.add_yaml`); and whole clusters by name — a workload file of ``ksched
bench`` (``scheduling-basic``, ``pod-anti-affinity``...), a ``ksched simulate`` workload
(``basic``, ``preemption``...), or a ``ksched record`` recording. :func:`node` and
:func:`pod` build API objects shaped as the API server returns them.

A cluster a scheduler runs on (:class:`~ksched.testing.EmbeddedScheduler`) is changed
on that scheduler's event loop: every builder method hands the change to it and waits.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from ksched.cluster import KIND_NAMES, Kind
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

__all__ = ["ZONE_LABEL", "Cluster", "node", "pod"]

Obj = dict[str, Any]
T = TypeVar("T")

ZONE_LABEL = "topology.kubernetes.io/zone"
_KINDS = {v: k for k, v in KIND_NAMES.items()}


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    unschedulable: bool = False,
    allocatable: Mapping[str, str] | None = None,
) -> Obj:
    """A Ready Node (scheduler_perf's default shape: 4 cpu, 32Gi, 110 pods);
    ``allocatable`` adds or overrides resources (``{"nvidia.com/gpu": "2"}``)."""
    obj = make_node(
        name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        labels=dict(labels or {}),
        taints=[dict(t) for t in taints] if taints else None,
        unschedulable=unschedulable,
    )
    if allocatable:
        for key in ("capacity", "allocatable"):
            obj["status"][key].update(allocatable)
    return obj


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "500Mi",
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    scheduler_name: str | None = None,
    priority: int | None = None,
    requests: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> Obj:
    """A Pod with one container requesting ``cpu`` and ``memory`` (and ``requests``,
    e.g. extended resources); ``spec`` merges more fields in (``affinity``,
    ``tolerations``, ``topologySpreadConstraints``...); ``node_name`` makes it bound."""
    obj = make_pod(
        name,
        namespace=namespace,
        cpu=cpu,
        memory=memory,
        labels=dict(labels or {}),
        node_name=node_name,
        scheduler_name=scheduler_name,
        priority=priority,
        extra_spec=copy.deepcopy(dict(spec)) if spec else None,
    )
    if requests:
        resources = obj["spec"]["containers"][0]["resources"]
        resources["requests"].update(requests)
        resources["limits"].update(requests)
    return obj


class Cluster:
    """An embedded cluster; see the module docstring."""

    def __init__(self) -> None:
        self.api = InMemoryCluster()
        self._runner: Callable[[Callable[[], Any]], Any] | None = None
        self._lock = threading.Lock()
        self._names = 0
        #: Pods a named workload creates pending (``from_workload``): schedule them.
        self.workload_pods: list[Obj] = []

    # ---- threading: changes go through the scheduler's loop once one runs ----------

    def _attach(self, runner: Callable[[Callable[[], Any]], Any] | None) -> None:
        self._runner = runner

    def _do(self, fn: Callable[[], T]) -> T:
        runner = self._runner
        if runner is None:
            with self._lock:
                return fn()
        return cast("T", runner(fn))

    # ---- building --------------------------------------------------------------------

    def add(self, kind: str, obj: Mapping[str, Any]) -> Obj:
        """Create one object; ``kind`` is the resource (``persistentvolumeclaims``) or
        the Kind (``PersistentVolumeClaim``)."""
        resource = _KINDS.get(kind, kind)
        if resource not in KIND_NAMES:
            known = ", ".join(sorted(KIND_NAMES))
            raise ValueError(f"unknown kind {kind!r}: the embedded cluster serves {known}")
        data = copy.deepcopy(dict(obj))
        return self._do(lambda: self.api.create(cast("Kind", resource), data))

    def update(self, kind: str, obj: Mapping[str, Any]) -> Obj:
        """Replace an object (a node relabelled, a pod's status changed...)."""
        resource = _KINDS.get(kind, kind)
        data = copy.deepcopy(dict(obj))
        return self._do(lambda: self.api.update(cast("Kind", resource), data))

    def delete(self, kind: str, key: str) -> None:
        """Delete an object by ``namespace/name`` (``name`` for cluster-scoped kinds)."""
        resource = _KINDS.get(kind, kind)
        self._do(lambda: self.api.delete(cast("Kind", resource), key))

    def get(self, kind: str, key: str) -> Obj | None:
        resource = _KINDS.get(kind, kind)
        return self._do(lambda: self.api.get(cast("Kind", resource), key))

    def add_node(self, name: str, **kw: Any) -> str:
        """One node (:func:`node`'s arguments); returns its name."""
        self.add("nodes", node(name, **kw))
        return name

    def add_nodes(
        self,
        count: int,
        *,
        name: str = "node-{i}",
        zones: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
        template: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> list[str]:
        """``count`` nodes named from ``name`` (``{i}`` is the index), spread round-robin
        over ``zones`` (the ``topology.kubernetes.io/zone`` label), with ``labels``; each
        built by :func:`node` from ``kw``, or copied from ``template`` (a Node object)."""
        names = []
        for i in range(count):
            n = name.format(i=i)
            extra = dict(labels or {})
            if zones:
                extra[ZONE_LABEL] = zones[i % len(zones)]
            if template is not None:
                obj = copy.deepcopy(dict(template))
                meta = obj.setdefault("metadata", {})
                meta["name"] = n
                meta["labels"] = {
                    **(meta.get("labels") or {}),
                    "kubernetes.io/hostname": n,
                    **extra,
                }
                status = obj.setdefault("status", {})
                if "capacity" in status and "allocatable" not in status:
                    status["allocatable"] = dict(status["capacity"])
            else:
                obj = node(n, labels=extra, **kw)
            self.add("nodes", obj)
            names.append(n)
        return names

    def add_pod(self, name: str, **kw: Any) -> str:
        """One pod (:func:`pod`'s arguments; ``node_name`` binds it); returns
        ``namespace/name``."""
        obj = self.add("pods", pod(name, **kw))
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    def add_pods(
        self, count: int, *, name: str = "existing-{i}", on: Sequence[str] = (), **kw: Any
    ) -> list[str]:
        """``count`` pods, bound round-robin to the nodes ``on`` (existing pods), or
        pending without ``on``."""
        keys = []
        for i in range(count):
            bound = {"node_name": on[i % len(on)]} if on else {}
            keys.append(self.add_pod(name.format(i=i), **bound, **kw))
        return keys

    def add_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        meta = {"name": name, "labels": dict(labels or {})}
        self.add("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def add_yaml(self, source: str | Path) -> list[Obj]:
        """Every object of a YAML text or file (multi-document); their kinds are
        taken from ``kind``."""
        text = source.read_text() if isinstance(source, Path) else source
        if "\n" not in text and Path(text).is_file():
            text = Path(text).read_text()
        out = []
        for i, doc in enumerate(yaml.safe_load_all(text)):
            if doc is None:
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
                raise ValueError(f"YAML document {i + 1} is not a Kubernetes object")
            out.append(self.add(doc["kind"], doc))
        return out

    # ---- whole clusters ----------------------------------------------------------------

    @classmethod
    def from_workload(
        cls,
        name: str,
        *,
        scale: float = 1.0,
        nodes: int | None = None,
        existing_pods: int | None = None,
        pods: int | None = None,
        seed: int = 1,
    ) -> Cluster:
        """A named workload's nodes and existing pods; the pods it schedules are in
        :attr:`workload_pods`. Names: ``ksched simulate``'s workloads (``basic``,
        ``pod-anti-affinity``, ...) first, then ``ksched bench``'s workload files
        (``scheduling-basic``, ``mixed-churn``, ...; also by scheduler_perf name)."""
        import random

        from ksched.sim.workloads import WORKLOADS

        c = cls()
        if name in WORKLOADS:
            wl = WORKLOADS[name]
            d_nodes, d_existing, d_pods = wl.sizes
            n = nodes if nodes is not None else max(1, round(d_nodes * scale))
            factor = n / d_nodes
            rng = random.Random(seed)
            names = [c.add("nodes", wl.node(i, rng))["metadata"]["name"] for i in range(n)]
            existing = existing_pods if existing_pods is not None else round(d_existing * factor)
            for i in range(existing):
                c.add("pods", wl.existing_pod(i, names[i % len(names)], rng))
            count = pods if pods is not None else round(d_pods * factor)
            c.workload_pods = [wl.new_pod(i, rng) for i in range(count)]
            return c
        from ksched.bench import workload
        from ksched.replay import recording_from_workload

        spec = workload.find(name, workload.load_all()).scaled(
            scale, nodes=nodes, existing_pods=existing_pods, pods=pods
        )
        rec = recording_from_workload(spec)
        for kind in ("namespaces", "priorityclasses", "nodes"):
            for obj in rec.of(kind):
                c.add(kind, obj)
        for obj in rec.bound_pods:
            c.add("pods", obj)
        c.workload_pods = list(rec.pending_pods)
        return c

    @classmethod
    def from_recording(cls, path: str | Path, *, pending: bool = False) -> Cluster:
        """A ``ksched record`` file's objects; its pending pods are in
        :attr:`workload_pods` (created as well with ``pending=True``)."""
        from ksched.recording import Recording
        from ksched.sim.recorded import load_recording

        rec = Recording.load(path)
        c = cls()
        load_recording(rec, c.api, pending=pending)
        c.workload_pods = [] if pending else list(rec.pending_pods)
        return c

    # ---- reading -------------------------------------------------------------------

    def objects(self, kind: str) -> list[Obj]:
        resource = _KINDS.get(kind, kind)
        return self._do(lambda: self.api.objects(cast("Kind", resource)))

    def nodes(self) -> list[Obj]:
        return self.objects("nodes")

    def pods(self, namespace: str | None = None) -> list[Obj]:
        pods = self.objects("pods")
        if namespace is None:
            return pods
        return [p for p in pods if p["metadata"].get("namespace") == namespace]

    def bound(self) -> dict[str, str]:
        """``namespace/name`` → node of every bound pod."""
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.pods()
            if (p.get("spec") or {}).get("nodeName")
        }

    def state(self) -> Any:
        """The placement now, as the assertions read it
        (:class:`~ksched.testing.assertions.Placement`)."""
        from ksched.testing.assertions import Placement

        return Placement.of(self.nodes(), self.pods())

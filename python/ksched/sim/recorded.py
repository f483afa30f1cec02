"""An embedded cluster holding a recording's objects (:mod:`ksched.recording`).

:func:`load_recording` creates every recorded object in an
:class:`~ksched.sim.cluster.InMemoryCluster` in dependency order — namespaces and
PriorityClasses, then the controllers, budgets, storage and DRA objects, then the
nodes, the pods bound to them, and (unless ``pending=False``) the pods that were
pending — keeping their uids, so ``ksched replay``, ``ksched explain --cluster`` and
``ksched.testing`` start from the state the cluster was recorded in. Objects the
embedded cluster already holds under the same key are left as they are.
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

from ksched.cluster import Conflict, Kind
from ksched.recording import Recording
from ksched.sim.cluster import InMemoryCluster

__all__ = ["apply_arrival", "load_recording"]

Obj = dict[str, Any]

#: Created first (others refer to them), then everything but nodes and pods.
_FIRST = ("namespaces", "priorityclasses")


def _create(cluster: InMemoryCluster, kind: str, obj: Obj) -> None:
    with contextlib.suppress(Conflict):
        cluster.create(cast("Kind", kind), obj)


def load_recording(
    recording: Recording, cluster: InMemoryCluster | None = None, *, pending: bool = True
) -> InMemoryCluster:
    """``cluster`` (a new one by default) with the recording's objects created."""
    cluster = cluster if cluster is not None else InMemoryCluster()
    kinds = [*_FIRST, *(k for k in recording.objects if k not in (*_FIRST, "nodes", "pods"))]
    for kind in kinds:
        for obj in recording.of(kind):
            _create(cluster, kind, obj)
    for obj in recording.of("nodes"):
        _create(cluster, "nodes", obj)
    for obj in recording.bound_pods:
        _create(cluster, "pods", obj)
    if pending:
        for obj in recording.pending_pods:
            _create(cluster, "pods", obj)
    return cluster


def apply_arrival(cluster: InMemoryCluster, type_: str, kind: str, obj: Obj) -> bool:
    """Create (``ADDED``) or delete (``DELETED``) one recorded object; False when there
    was nothing to do (already there, already gone)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    key = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
    k = cast("Kind", kind)
    if type_ == "ADDED":
        if cluster.get(k, key) is not None:
            return False
        cluster.create(k, obj)
        return True
    if cluster.get(k, key) is None:
        return False
    cluster.delete(k, key)
    return True

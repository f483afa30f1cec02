"""The selectors of the Services and controllers a pod belongs to.

PodTopologySpread's default constraints (the System defaults: hostname maxSkew 3, zone
maxSkew 5, ScheduleAnyway) spread a pod among the pods of "its" workload. Upstream's
``helper.DefaultSelector`` defines that workload: the merged selectors of every Service
in the pod's namespace that selects it, plus — when the pod's controller (its owner
reference with ``controller: true``) is a ReplicationController, ReplicaSet or
StatefulSet that exists — that controller's selector. A pod belonging to none gets an
empty selector, and the default constraints do nothing for it.

The index keeps, per namespace, the Services' and controllers' selectors from their
informers, and a generation that changes only when a selector does (status updates of a
ReplicaSet, which are frequent, leave it alone), so pods compiled earlier can be
recompiled exactly when needed.
"""

from __future__ import annotations

from typing import Any

from ksched.cluster import Kind

Obj = dict[str, Any]

_CONTROLLER_KINDS = {
    ("v1", "ReplicationController"): "replicationcontrollers",
    ("apps/v1", "ReplicaSet"): "replicasets",
    ("apps/v1", "StatefulSet"): "statefulsets",
}
KINDS: tuple[Kind, ...] = ("services", "replicationcontrollers", "replicasets", "statefulsets")


def _selector_of(kind: str, obj: Obj) -> Obj | None:
    """The object's selector as a LabelSelector dict (``matchLabels`` for Services and
    ReplicationControllers, whose selectors are plain maps)."""
    spec = obj.get("spec") or {}
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        return None
    if kind in ("services", "replicationcontrollers"):
        return {"matchLabels": {str(k): str(v) for k, v in sel.items()}}
    return sel


def _matches_map(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class ControllerIndex:
    """Selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets."""

    def __init__(self) -> None:
        #: kind → namespace → name → selector
        self._by_kind: dict[str, dict[str, dict[str, Obj]]] = {k: {} for k in KINDS}
        self.generation = 0

    def upsert(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        sel = _selector_of(kind, obj)
        space = self._by_kind[kind].setdefault(ns, {})
        if sel is None:
            if space.pop(name, None) is not None:
                self.generation += 1
            return
        if space.get(name) != sel:
            space[name] = sel
            self.generation += 1

    def delete(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        if self._by_kind[kind].get(ns, {}).pop(name, None) is not None:
            self.generation += 1

    def default_selector(
        self, namespace: str, labels: dict[str, str], owners: list[Obj]
    ) -> Obj | None:
        """Upstream's ``DefaultSelector`` for a pod, as a LabelSelector dict; None when it
        is empty (the pod belongs to no Service or known controller)."""
        match_labels: dict[str, str] = {}
        for sel in self._by_kind["services"].get(namespace, {}).values():
            svc = sel.get("matchLabels") or {}
            if svc and _matches_map(svc, labels):
                match_labels.update(svc)
        expressions: list[Obj] = []
        controller = next((o for o in owners if o.get("controller") is True), None)
        if controller is not None:
            kind = _CONTROLLER_KINDS.get(
                (str(controller.get("apiVersion")), str(controller.get("kind")))
            )
            if kind is not None:
                found = self._by_kind[kind].get(namespace, {}).get(str(controller.get("name")))
                if found is not None:
                    if kind == "replicationcontrollers":
                        match_labels.update(found.get("matchLabels") or {})
                    else:
                        # A LabelSelector's requirements are added as they are.
                        for k, v in (found.get("matchLabels") or {}).items():
                            expressions.append(
                                {"key": str(k), "operator": "In", "values": [str(v)]}
                            )
                        expressions.extend(found.get("matchExpressions") or [])
        if not match_labels and not expressions:
            return None
        out: Obj = {}
        if match_labels:
            out["matchLabels"] = match_labels
        if expressions:
            out["matchExpressions"] = expressions
        return out

"""Scheduler extenders: the HTTP webhooks of ``KubeSchedulerConfiguration.extenders``
(upstream ``pkg/scheduler/extender.go`` and ``k8s.io/kube-scheduler/extender/v1``).

An extender is called, in configuration order, only for the pods it is interested in
(:meth:`HTTPExtender.is_interested`: it manages a resource the pod requests or limits
in a container or init container; no ``managedResources`` means every pod):

* **filter** (``filterVerb``) after the plugins' Filter, on the nodes that passed them.
  It answers the nodes that fit and, for the others, ``FailedNodes`` (Unschedulable) and
  ``FailedAndUnresolvableNodes`` (UnschedulableAndUnresolvable: preemption skips them).
* **prioritize** (``prioritizeVerb``) when more than one node is left: scores 0-10,
  scaled to the plugins' 0-100 and multiplied by the extender's ``weight``.
* **bind** (``bindVerb``): the first interested extender that binds does so instead
  of the Bind plugins.
* **preempt** (``preemptVerb``): DefaultPreemption hands it the candidate nodes and
  their victims (:meth:`HTTPExtender.process_preemption`); it answers the subset it
  accepts.

``nodeCacheCapable`` extenders keep their own node cache: they get node names instead of
node objects, and pod UIDs (``MetaPod``) instead of victim pods. ``ignorable``
extenders that fail (unreachable, timeout, non-200, an ``Error`` answer) are skipped;
a failure of any other extender fails the scheduling attempt with an error.

The wire format is upstream's Go structs without JSON tags: field names are the Go
names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``...), and, like Go's decoder,
answers are matched case-insensitively. Calls are coroutines over
:mod:`ksched.framework.extender_transport`; the scheduling cycle awaits them without
blocking the event loop.

For plugins (DefaultPreemption), :attr:`ksched.framework.interface.Handle.extenders`
lists the configured extenders; each offers ``name()``, ``is_ignorable()``,
``is_interested(pod)``, ``supports_preemption()`` and ``process_preemption(pod,
victims)`` with :class:`ExtenderVictims` values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

import orjson

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.config import Extender as ExtenderConfig
from ksched.framework.extender_transport import ExtenderError, Transport

log = logging.getLogger(__name__)

__all__ = [
    "EXTENDER_NAME",
    "MAX_EXTENDER_PRIORITY",
    "Extender",
    "ExtenderError",
    "ExtenderFilterResult",
    "ExtenderVictims",
    "HTTPExtender",
    "build_extenders",
]

#: ``extenderv1.MaxExtenderPriority``: extender scores are 0-10.
MAX_EXTENDER_PRIORITY: Final = 10
#: ``framework.ExtenderName``: the "plugin" a pod rejected by extenders waits on (every
#: cluster event requeues it: extenders register no events).
EXTENDER_NAME: Final = "Extender"

#: ``(node) -> the pods accounted on it``, or None when the node is unknown.
NodePodsFn = Callable[[str], Iterable[Pod] | None]


@dataclass(slots=True)
class ExtenderVictims:
    """The pods to preempt on one node and how many PDBs that violates (upstream
    ``extenderv1.Victims``)."""

    pods: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(slots=True)
class ExtenderFilterResult:
    """An extender's filter answer: the nodes that fit (in its order) and the failed
    ones by name with their messages."""

    nodes: list[str]
    failed: dict[str, str]
    failed_and_unresolvable: dict[str, str]


@runtime_checkable
class Extender(Protocol):
    """What the scheduler and DefaultPreemption use of an extender (upstream
    ``framework.Extender``)."""

    def name(self) -> str: ...

    def is_ignorable(self) -> bool: ...

    def is_interested(self, pod: Pod) -> bool: ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    async def filter(self, pod: Pod, nodes: Sequence[Node]) -> ExtenderFilterResult: ...

    async def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> list[tuple[str, int]]: ...

    def weight(self) -> int: ...

    async def bind(self, pod: Pod, node: str) -> None: ...

    async def process_preemption(
        self, pod: Pod, victims: dict[str, ExtenderVictims]
    ) -> dict[str, ExtenderVictims]: ...

    def close(self) -> None: ...


def _get(obj: Mapping[str, Any], key: str) -> Any:
    """``obj[key]`` matched as Go's JSON decoder does: exact name first, then any
    case-insensitive match."""
    if key in obj:
        return obj[key]
    low = key.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def _object(data: bytes, verb: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ExtenderError(f"decoding the {verb} answer: {exc}") from None


def _failed_map(value: Any, field_name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ExtenderError(f"{field_name}: expected an object of node name to message")
    return {str(k): str(v) for k, v in value.items()}


class HTTPExtender:
    """One configured extender (upstream ``HTTPExtender``)."""

    def __init__(self, cfg: ExtenderConfig, *, node_pods: NodePodsFn | None = None) -> None:
        self.config = cfg
        self._url = cfg.url_prefix
        self._transport = Transport(cfg)
        self._managed = frozenset(r.name for r in cfg.managed_resources)
        #: Resolves the pods of a node for preemption answers (set by the scheduler).
        self.node_pods = node_pods

    def __repr__(self) -> str:
        return f"HTTPExtender({self._url!r})"

    # ---- identity and capabilities ------------------------------------------------

    def name(self) -> str:
        """The ``urlPrefix``, as upstream names extenders."""
        return self._url

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def weight(self) -> int:
        return self.config.weight

    def is_interested(self, pod: Pod) -> bool:
        """Whether the pod requests or limits a managed resource in any container or
        init container; an extender without ``managedResources`` wants every pod."""
        if not self._managed:
            return True
        spec = pod.raw.get("spec") or {}
        for kind in ("containers", "initContainers"):
            for c in spec.get(kind) or ():
                resources = (c.get("resources") if isinstance(c, dict) else None) or {}
                for part in ("requests", "limits"):
                    names = resources.get(part)
                    if isinstance(names, dict) and not self._managed.isdisjoint(names):
                        return True
        return False

    # ---- verbs ----------------------------------------------------------------------

    async def _send(self, verb: str, args: Any) -> Any:
        data = await self._transport.post(verb, orjson.dumps(args))
        return _object(data, verb)

    def _args(self, pod: Pod, nodes: Sequence[Node]) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        return {
            "Pod": pod.raw,
            "Nodes": {"metadata": {}, "items": [n.raw for n in nodes]},
            "NodeNames": None,
        }

    async def filter(self, pod: Pod, nodes: Sequence[Node]) -> ExtenderFilterResult:
        """The nodes the extender keeps; raises :class:`ExtenderError`."""
        if not self.config.filter_verb:
            return ExtenderFilterResult([n.name for n in nodes], {}, {})
        result = await self._send(self.config.filter_verb, self._args(pod, nodes))
        if result is None:
            result = {}
        if not isinstance(result, dict):
            raise ExtenderError("filter answer: expected an ExtenderFilterResult object")
        error = _get(result, "Error")
        if error:
            raise ExtenderError(str(error))
        known = {n.name for n in nodes}
        names: list[str] = []
        node_names = _get(result, "NodeNames")
        node_list = _get(result, "Nodes")
        if self.config.node_cache_capable and node_names is not None:
            if not isinstance(node_names, list):
                raise ExtenderError("filter answer: NodeNames must be a list")
            names = [str(n) for n in node_names]
        elif node_list is not None:
            items = _get(node_list, "items") if isinstance(node_list, dict) else None
            for item in items or ():
                meta = _get(item, "metadata") if isinstance(item, dict) else None
                name = _get(meta, "name") if isinstance(meta, dict) else None
                names.append(str(name or ""))
        for n in names:
            if n not in known:
                raise ExtenderError(
                    f'extender "{self._url}" claims a filtered node "{n}" which is not '
                    "found in the input node list"
                )
        return ExtenderFilterResult(
            list(dict.fromkeys(names)),
            _failed_map(_get(result, "FailedNodes"), "FailedNodes"),
            _failed_map(_get(result, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"),
        )

    async def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> list[tuple[str, int]]:
        """``(host, score 0-10)`` as the extender answers (unweighted)."""
        if not self.config.prioritize_verb:
            return [(n.name, 0) for n in nodes]
        result = await self._send(self.config.prioritize_verb, self._args(pod, nodes))
        if result is None:
            return []
        if not isinstance(result, list):
            raise ExtenderError("prioritize answer: expected a HostPriorityList array")
        out: list[tuple[str, int]] = []
        for hp in result:
            if not isinstance(hp, dict):
                raise ExtenderError("prioritize answer: expected HostPriority objects")
            score = _get(hp, "Score") or 0
            if not isinstance(score, int) or isinstance(score, bool):
                raise ExtenderError(f"prioritize answer: Score {score!r} is not an integer")
            out.append((str(_get(hp, "Host") or ""), score))
        return out

    async def bind(self, pod: Pod, node: str) -> None:
        """Delegate the binding; raises :class:`ExtenderError`."""
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = {
            "PodName": pod.name,
            "PodNamespace": pod.namespace,
            "PodUID": pod.uid,
            "Node": node,
        }
        result = await self._send(self.config.bind_verb, args)
        error = _get(result, "Error") if isinstance(result, dict) else None
        if error:
            raise ExtenderError(str(error))

    async def process_preemption(
        self, pod: Pod, victims: dict[str, ExtenderVictims]
    ) -> dict[str, ExtenderVictims]:
        """The candidates (node → victims) the extender accepts, possibly with other
        victims. Sent as ``NodeNameToMetaVictims`` (pod UIDs) to a ``nodeCacheCapable``
        extender, else as ``NodeNameToVictims`` (whole pods); the answer is always
        ``NodeNameToMetaVictims``, whose UIDs are resolved to the pods on each node.
        Raises :class:`ExtenderError`; ``victims`` is not modified."""
        if not self.config.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self._url} but run into "
                "ProcessPreemption"
            )
        args: dict[str, Any] = {"Pod": pod.raw}
        if self.config.node_cache_capable:
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = {
                node: {
                    "Pods": [{"UID": p.uid} for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                node: {"Pods": [p.raw for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
            args["NodeNameToMetaVictims"] = None
        result = await self._send(self.config.preempt_verb, args)
        meta = _get(result, "NodeNameToMetaVictims") if isinstance(result, dict) else None
        if meta is None:
            return {}
        if not isinstance(meta, dict):
            raise ExtenderError("preempt answer: NodeNameToMetaVictims must be an object")
        out: dict[str, ExtenderVictims] = {}
        for node, mv in meta.items():
            on_node = self._pods_on(node, victims)
            if on_node is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            mv = mv if isinstance(mv, dict) else {}
            pods: list[Pod] = []
            for mp in _get(mv, "Pods") or ():
                uid = str(_get(mp, "UID") or "") if isinstance(mp, dict) else ""
                found = on_node.get(uid)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self._url} claims to preempt pod (UID: &{{{uid}}}) on "
                        f"node: {node}, but the pod is not found on that node"
                    )
                pods.append(found)
            num = _get(mv, "NumPDBViolations") or 0
            out[str(node)] = ExtenderVictims(pods, int(num))
        return out

    def _pods_on(self, node: str, victims: Mapping[str, ExtenderVictims]) -> dict[str, Pod] | None:
        """The pods on ``node`` by UID: the scheduler's cache when attached (upstream
        reads the snapshot's NodeInfo), else the victims passed in."""
        if self.node_pods is not None:
            pods = self.node_pods(node)
            if pods is None:
                return None
            return {p.uid: p for p in pods}
        v = victims.get(node)
        return None if v is None else {p.uid: p for p in v.pods}

    def close(self) -> None:
        self._transport.close()


def build_extenders(
    configs: Sequence[ExtenderConfig], *, node_pods: NodePodsFn | None = None
) -> list[HTTPExtender]:
    """One :class:`HTTPExtender` per configured extender, in order; raises
    :class:`ExtenderError` for a TLS configuration that cannot be loaded."""
    return [HTTPExtender(cfg, node_pods=node_pods) for cfg in configs]

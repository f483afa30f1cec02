"""What would make an unschedulable pod fit: the smallest changes ksched can verify.

Each suggestion is a change to the pod, proposed from the nodes' rejections and then
*verified*: the changed pod goes through the profile's filters again (the Rust kernels
over every node, then the Python PreFilter/Filter plugins), and only the nodes that
then pass are reported. Nothing is guessed, so a node that also fails a later filter
(Filter stops at the first failure) is simply not counted.

* **Resource request** (NodeResourcesFit ``Insufficient <resource>`` alone): the
  largest request of that resource some node has room for (allocatable minus
  requested, tried from the roomiest node down); "fits on 12 nodes if its cpu request
  were ≤ 1500m".
* **Tolerations** (TaintToleration, NodeUnschedulable): the node's NoSchedule and
  NoExecute taints the pod does not tolerate (and the cordon's
  ``node.kubernetes.io/unschedulable:NoSchedule``); nodes needing the same set are
  grouped, the smallest set first; "fits on node-7 if it tolerated
  dedicated=gpu:NoSchedule".
* **Host ports** (NodePorts): the pod without its host ports.
* **Preemption**: what DefaultPreemption's dry run would do (the candidate it picked
  and its victims, from the attempt's cycle state); "preemption would evict these 2
  pods on node-3".

Node affinity, spreading and inter-pod affinity are left out: the change that would
help there is to the cluster or to other pods, not a bound on this pod's fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from ksched.api.node import Taint
from ksched.api.pod import Pod, Toleration
from ksched.explain.model import REJECTED, Explanation, NodeVerdict, Suggestion
from ksched.framework.builtin_events import tolerates
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import CORE_FILTER_KEY, DRY_RUN_KEY, NodeInfo
from ksched.framework.runtime import Framework
from ksched.plugins.default_preemption import DRY_RUN_CANDIDATE_KEY, Candidate

if TYPE_CHECKING:
    from ksched.scheduler import Scheduler

__all__ = ["feasible_with", "format_amount", "suggest"]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_INSUFFICIENT = "Insufficient "
#: Request bounds tried per resource (from the roomiest node down).
_MAX_TRIES = 8
_HARD = ("NoSchedule", "NoExecute")
_BINARY = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)


def format_amount(resource: str, value: int) -> str:
    """An amount in scheduler units as a quantity: cpu in millicores (``1500m``, ``2``),
    bytes in the largest binary unit that divides them (``8Gi``), counts as integers."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, unit in _BINARY:
            if value >= unit and value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def _names(nodes: list[str], limit: int = 5) -> str:
    shown = ", ".join(nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def _fits_on(nodes: list[str]) -> str:
    return f"{nodes[0]}" if len(nodes) == 1 else f"{len(nodes)} nodes ({_names(nodes)})"


def feasible_with(sched: Scheduler, fw: Framework, pod: Pod) -> list[str]:
    """The nodes ``pod`` passes every filter of ``fw`` on (no sampling), in order."""
    from ksched.explain.engine import kernel_pod

    snapshot = sched.cache.snapshot
    state = CycleState()
    state.write(DRY_RUN_KEY, True)
    compiled, failed = kernel_pod(fw, state, pod, sched.compile(pod))
    if failed is not None:
        return []
    names: frozenset[str] | None = None
    if fw.points.pre_filter:
        names, status = fw.run_pre_filter(state, pod)
        if status is not None:
            return []
    trace = snapshot.explain_attempt(
        compiled,
        fw.profile.kernels,
        sample=False,
        use_nomination=False,
        dra=state.get(CORE_FILTER_KEY),
    )
    feasible = [row[0] for row in trace.nodes if row[1] == "feasible"]
    if not fw.points.filter and names is None:
        return feasible
    if names is not None:
        feasible = [n for n in feasible if n in names]
    return [
        n
        for n in feasible
        if fw.run_filter(state, pod, NodeInfo(n, sched.cache.nodes.get(n), snapshot)) is None
    ]


def suggest(
    sched: Scheduler,
    fw: Framework,
    pod: Pod,
    expl: Explanation,
    outcome_state: CycleState,
    only: Collection[str] | None = None,
) -> list[Suggestion]:
    """The verified changes that would make ``pod`` fit, smallest first per kind;
    ``only``: consider these nodes only (``--node``)."""
    rejected = [v for v in expl.nodes if v.outcome == REJECTED and (only is None or v.node in only)]
    out: list[Suggestion] = []
    out.extend(_resources(sched, fw, pod, rejected))
    out.extend(_tolerations(sched, fw, pod, rejected))
    out.extend(_host_ports(sched, fw, pod, rejected))
    if only is None:
        out.extend(_preemption(sched, outcome_state))
    return out


# ---- resources ---------------------------------------------------------------------


def _single_insufficient(v: NodeVerdict) -> str | None:
    if v.plugin != "NodeResourcesFit" or len(v.reasons) != 1:
        return None
    reason = v.reasons[0]
    return reason[len(_INSUFFICIENT) :] if reason.startswith(_INSUFFICIENT) else None


def _with_request(pod: Pod, resource: str, value: int) -> Pod:
    requests = {**pod.requests, resource: value}
    changes: dict[str, object] = {"requests": requests}
    if resource == "cpu":
        changes["non_zero_cpu"] = value
    elif resource == "memory":
        changes["non_zero_memory"] = value
    return dataclasses.replace(pod, **changes)  # type: ignore[arg-type]


def _resources(
    sched: Scheduler, fw: Framework, pod: Pod, rejected: list[NodeVerdict]
) -> list[Suggestion]:
    by_resource: dict[str, list[str]] = {}
    for v in rejected:
        r = _single_insufficient(v)
        if r is not None:
            by_resource.setdefault(r, []).append(v.node)
    snapshot = sched.cache.snapshot
    out = []
    for resource, nodes in sorted(by_resource.items()):
        current = pod.requests.get(resource, 0)
        room: set[int] = set()
        for n in nodes:
            alloc = snapshot.allocatable(n, resource) or 0
            free = alloc - (snapshot.requested(n, resource) or 0)
            if 0 <= free < current:
                room.add(free)
        for bound in sorted(room, reverse=True)[:_MAX_TRIES]:
            fits = feasible_with(sched, fw, _with_request(pod, resource, bound))
            if fits:
                condition = (
                    f"its {resource} request were ≤ {format_amount(resource, bound)} "
                    f"(it requests {format_amount(resource, current)})"
                )
                out.append(
                    Suggestion(
                        "resource",
                        f"fits on {_fits_on(fits)} if {condition}",
                        fits,
                        {"resource": resource, "request": current, "bound": bound},
                        condition,
                    )
                )
                break
    return out


# ---- tolerations -------------------------------------------------------------------


def _untolerated(pod: Pod, taints: list[Taint]) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (t.key, t.value, t.effect)
        for t in taints
        if t.effect in _HARD
        and not any(tolerates(tol, t.key, t.value, t.effect) for tol in pod.tolerations)
    )


def _toleration(key: str, value: str, effect: str) -> Toleration:
    if key == UNSCHEDULABLE_TAINT:
        return Toleration(key=key, operator="Exists", effect=effect)
    return Toleration(key=key, operator="Equal", value=value, effect=effect)


def _taint_text(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _tolerations(
    sched: Scheduler, fw: Framework, pod: Pod, rejected: list[NodeVerdict]
) -> list[Suggestion]:
    groups: dict[tuple[tuple[str, str, str], ...], list[str]] = {}
    for v in rejected:
        if v.plugin not in ("TaintToleration", "NodeUnschedulable"):
            continue
        node = sched.cache.nodes.get(v.node)
        if node is None:
            continue
        needed = list(_untolerated(pod, node.taints))
        if node.unschedulable and not any(
            tolerates(t, UNSCHEDULABLE_TAINT, "", "NoSchedule") for t in pod.tolerations
        ):
            needed.insert(0, (UNSCHEDULABLE_TAINT, "", "NoSchedule"))
        if needed:
            groups.setdefault(tuple(needed), []).append(v.node)
    out = []
    for group, _ in sorted(groups.items(), key=lambda kv: (len(kv[0]), -len(kv[1])))[:3]:
        changed = dataclasses.replace(
            pod, tolerations=[*pod.tolerations, *(_toleration(*t) for t in group)]
        )
        fits = feasible_with(sched, fw, changed)
        if not fits:
            continue
        condition = "it tolerated " + ", ".join(f"`{_taint_text(*t)}`" for t in group)
        out.append(
            Suggestion(
                "toleration",
                f"fits on {_fits_on(fits)} if {condition}",
                fits,
                {"taints": [{"key": k, "value": val, "effect": e} for k, val, e in group]},
                condition,
            )
        )
    return out


# ---- host ports ----------------------------------------------------------------------


def _host_ports(
    sched: Scheduler, fw: Framework, pod: Pod, rejected: list[NodeVerdict]
) -> list[Suggestion]:
    if not pod.host_ports or not any(v.plugin == "NodePorts" for v in rejected):
        return []
    fits = feasible_with(sched, fw, dataclasses.replace(pod, host_ports=[]))
    if not fits:
        return []
    ports = ", ".join(f"{port}/{proto}" for proto, _, port in pod.host_ports)
    condition = f"it did not use its host port(s) {ports}"
    return [
        Suggestion(
            "host-port",
            f"fits on {_fits_on(fits)} if {condition}",
            fits,
            {"hostPorts": [port for _, _, port in pod.host_ports]},
            condition,
        )
    ]


# ---- preemption ----------------------------------------------------------------------


def _preemption(sched: Scheduler, state: CycleState) -> list[Suggestion]:
    candidate = state.get(DRY_RUN_CANDIDATE_KEY)
    if not isinstance(candidate, Candidate):
        return []
    on_node: Mapping[str, str] = {
        cp.pod.uid: cp.pod.key for cp in sched.handle.pods_on_node(candidate.node)
    }
    victims = [on_node.get(uid, uid) for uid in candidate.victims]
    pdb = (
        f", violating {candidate.num_pdb_violations} PodDisruptionBudget(s)"
        if candidate.num_pdb_violations
        else ""
    )
    which = "this pod" if len(victims) == 1 else f"these {len(victims)} pods"
    text = (
        f"preemption would evict {which} on {candidate.node}: {_names(victims)}{pdb}, "
        "and nominate the pod there"
    )
    return [
        Suggestion(
            "preemption",
            text,
            [candidate.node],
            {"victims": victims, "pdbViolations": candidate.num_pdb_violations},
            f"{_names(victims)} were evicted",
        )
    ]

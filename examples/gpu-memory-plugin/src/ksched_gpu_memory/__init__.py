"""GPUFit: place pods by GPU memory, an out-of-tree ksched plugin.

A pod asks for GPU memory as the extended resource ``nvidia.com/gpu-memory`` (any
quantity: ``requests: {nvidia.com/gpu-memory: 8Gi}``). A node says how much it has
with the label ``nvidia.com/gpu-memory.total`` (a quantity too: ``24Gi``). The node's
free GPU memory is that total minus what the pods already on it request (assumed pods
included, so two pods scheduled back to back do not both take the last 8Gi).

* **PreFilter** reads the pod's request once; a pod that requests none skips GPUFit.
* **Filter** rejects a node without the label (unresolvable: preemption cannot add a
  label) or with too little free memory (``Insufficient nvidia.com/gpu-memory: node
  has 4Gi free of 24Gi, pod needs 8Gi``).
* **PreScore/Score**: ``MostAllocated`` (default) prefers the node the pod fills most,
  keeping large GPUs free for large pods; ``LeastAllocated`` spreads.
* **EnqueueExtensions**: a rejected pod is retried when a node is added or relabelled,
  or a pod that held GPU memory goes away.

Enable it in a profile (``examples/gpu-memory-plugin/scheduler-config.yaml``), and tell
NodeResourcesFit to leave the resource alone (``ignoredResources``): nodes do not list
it as allocatable.

Args (``pluginConfig``): ``scoringStrategy``: ``MostAllocated`` | ``LeastAllocated``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ksched.api.errors import QuantityError
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.api.quantity import parse_quantity
from ksched.framework.interface import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PreFilterResult,
    QueueingHint,
    Status,
)

__all__ = ["NAME", "RESOURCE", "TOTAL_LABEL", "GPUFit"]

NAME: Final = "GPUFit"
RESOURCE: Final = "nvidia.com/gpu-memory"
TOTAL_LABEL: Final = "nvidia.com/gpu-memory.total"
ERR_NO_LABEL: Final = f"node(s) didn't have the {TOTAL_LABEL} label"

_STATE_KEY: Final = f"{NAME}/request"
_STRATEGIES: Final = ("MostAllocated", "LeastAllocated")
_BINARY: Final = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def format_amount(value: int) -> str:
    """An amount in the largest binary unit that divides it (``8Gi``, ``1536Mi``)."""
    for suffix, unit in _BINARY:
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


class GPUFit:
    """Filter and Score by ``nvidia.com/gpu-memory``; the class is the factory."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        args = dict(args or {})
        args.pop("apiVersion", None)
        args.pop("kind", None)
        strategy = args.pop("scoringStrategy", "MostAllocated")
        if args:
            raise ValueError(f"unknown GPUFit args: {', '.join(sorted(args))}")
        if strategy not in _STRATEGIES:
            raise ValueError(
                f"GPUFit args: scoringStrategy must be one of {', '.join(_STRATEGIES)}, "
                f"not {strategy!r}"
            )
        self.most_allocated = strategy == "MostAllocated"
        self.handle = handle
        self._totals: dict[str, int | None] = {}  # label text -> parsed amount

    # ---- helpers ---------------------------------------------------------------------

    def total(self, node: Node | None) -> int | None:
        """The node's GPU memory from its label; None without a valid label."""
        text = node.labels.get(TOTAL_LABEL) if node is not None else None
        if text is None:
            return None
        if text not in self._totals:
            try:
                self._totals[text] = parse_quantity(text, TOTAL_LABEL).value()
            except QuantityError:
                self._totals[text] = None
        return self._totals[text]

    # ---- PreFilter / Filter ----------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod
    ) -> tuple[PreFilterResult | None, Status | None]:
        request = pod.requests.get(RESOURCE, 0)
        if request <= 0:
            return None, Status(Code.SKIP)
        state.write(_STATE_KEY, request)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        request: int = state.read(_STATE_KEY)
        total = self.total(node.node)
        if total is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_LABEL)
        free = total - node.requested(RESOURCE)
        if request > free:
            return Status(
                Code.UNSCHEDULABLE,
                f"Insufficient {RESOURCE}: node has {format_amount(max(free, 0))} free of "
                f"{format_amount(total)}, pod needs {format_amount(request)}",
            )
        return None

    # ---- PreScore / Score ------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if pod.requests.get(RESOURCE, 0) <= 0:
            return Status(Code.SKIP)
        state.write(_STATE_KEY, pod.requests[RESOURCE])
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        request: int = state.read(_STATE_KEY)
        total = self.total(node.node)
        if not total:
            return 0
        used = min(node.requested(RESOURCE) + request, total)
        filled = used * 100 // total
        return filled if self.most_allocated else 100 - filled

    # ---- EnqueueExtensions -----------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._node_changed,
            ),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._pod_gone),
        ]

    def _node_changed(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        if pod.requests.get(RESOURCE, 0) <= 0 or self.total(new) is None:
            return QueueingHint.QUEUE_SKIP
        if old is not None and self.total(old) == self.total(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _pod_gone(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        gone = old if old is not None else new
        if gone is None or gone.requests.get(RESOURCE, 0) > 0:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

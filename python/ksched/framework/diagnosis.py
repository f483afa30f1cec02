"""Failure diagnosis: upstream's FitError message.

When no node fits, kube-scheduler reports every node's rejection reasons as a sorted
histogram: ``0/5000 nodes are available: 3 Insufficient cpu, 2 node(s) were
unschedulable.`` The strings are sorted as strings (so "10 X" sorts before "2 Y"), as
upstream's ``sort.Strings`` does, and a PostFilter message (preemption) follows as its own
sentence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ksched._core import ScheduleResult
from ksched.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def fit_error_message(
    num_all_nodes: int,
    reason_counts: Mapping[str, int],
    *,
    pre_filter_msg: str = "",
    post_filter_msg: str = "",
) -> str:
    """The message of upstream's ``FitError.Error()``."""
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = sorted(f"{count} {reason}" for reason, count in reason_counts.items())
        if histogram:
            msg += " " + ", ".join(histogram) + "."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


#: ``(node, unresolvable, plugin, reasons)`` as the Rust core reports a rejected node.
RawNodeStatus = tuple[str, bool, str, Sequence[str]]

_UNRESOLVABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


class NodeStatuses(Mapping[str, Status]):
    """Why each node rejected the pod (upstream ``NodeToStatus``), for PostFilter.

    Built over the Rust result without converting it: a failed attempt on 5,000 nodes
    would otherwise build 5,000 tuples (and :class:`Status` objects) that most PostFilter
    runs never look at. ``result`` is the core's failed ``ScheduleResult`` when there is
    one (DefaultPreemption's dry run reads the rejected nodes there directly); ``raw``
    has the ``(node, unresolvable, plugin, reasons)`` tuples in the order the core
    reported them, converted on first use. Nodes absent from the map (not evaluated,
    e.g. a PreFilter narrowed the attempt) have :attr:`absent`, UnschedulableAndUnresolvable
    unless a PreFilter rejection set another (:meth:`status_of`).
    """

    __slots__ = ("_index", "_raw", "absent", "result")

    def __init__(
        self,
        raw: Sequence[RawNodeStatus] | None = (),
        absent: Status | None = None,
        result: ScheduleResult | None = None,
    ) -> None:
        self._raw = raw if result is None else None
        self.result = result
        self.absent = absent if absent is not None else _UNRESOLVABLE
        self._index: dict[str, int] | None = None

    @classmethod
    def of_result(cls, result: ScheduleResult) -> NodeStatuses:
        """The statuses of a failed Rust attempt, converted only when read."""
        return cls(None, None, result)

    @property
    def raw(self) -> Sequence[RawNodeStatus]:
        if self._raw is None:
            self._raw = self.result.statuses if self.result is not None else ()
        return self._raw

    def _positions(self) -> dict[str, int]:
        if self._index is None:
            self._index = {t[0]: i for i, t in enumerate(self.raw)}
        return self._index

    def __getitem__(self, node: str) -> Status:
        node, unresolvable, plugin, reasons = self.raw[self._positions()[node]]
        return _status(unresolvable, plugin, reasons)

    def __iter__(self) -> Iterator[str]:
        return (t[0] for t in self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __contains__(self, node: object) -> bool:
        return node in self._positions()

    def status_of(self, node: str) -> Status:
        """The node's status, or :attr:`absent` (upstream ``NodeToStatus.Get``)."""
        if self._raw is None and self.result is not None:
            found = self.result.status_of(node)
            return self.absent if found is None else _status(*found)
        return self.get(node, self.absent)


def _status(unresolvable: bool, plugin: str, reasons: Sequence[str]) -> Status:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, *reasons, plugin=plugin)


class FitError(Exception):
    """No node fits the pod (upstream ``FitError``): the diagnosis behind the message.

    ``unschedulable_plugins`` and ``pending_plugins`` are the plugins whose rejections the
    queue's hints must undo; the message is upstream's ``FitError.Error()``.
    """

    def __init__(
        self,
        num_all_nodes: int,
        reason_counts: Mapping[str, int],
        *,
        unschedulable_plugins: frozenset[str] = frozenset(),
        pending_plugins: frozenset[str] = frozenset(),
        pre_filter_msg: str = "",
        post_filter_msg: str = "",
    ) -> None:
        super().__init__()
        self.num_all_nodes = num_all_nodes
        self.reason_counts = dict(reason_counts)
        self.unschedulable_plugins = unschedulable_plugins
        self.pending_plugins = pending_plugins
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg

    @property
    def message(self) -> str:
        return fit_error_message(
            self.num_all_nodes,
            self.reason_counts,
            pre_filter_msg=self.pre_filter_msg,
            post_filter_msg=self.post_filter_msg,
        )

    def __str__(self) -> str:
        return self.message

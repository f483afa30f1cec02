"""Failure diagnosis: upstream's FitError message.

When no node fits, kube-scheduler reports every node's rejection reasons as a sorted
histogram: ``0/5000 nodes are available: 3 Insufficient cpu, 2 node(s) were
unschedulable.`` The strings are sorted as strings (so "10 X" sorts before "2 Y"), as
upstream's ``sort.Strings`` does, and a PostFilter message (preemption) follows as its own
sentence.
"""

from __future__ import annotations

from collections.abc import Mapping

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
        msg += f" {post_filter_msg}."
    return msg


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

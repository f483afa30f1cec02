"""NodeUnschedulable: upstream's Filter table.

Ported from pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go
(TestNodeUnschedulable): a cordoned node (spec.unschedulable) rejects the pod unless it
tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
"""

from __future__ import annotations

import pytest

from tests.plugins.harness import Obj, cluster, explain, node, pod, statuses, toleration

PLUGIN = "NodeUnschedulable"
UNSCHEDULABLE = ("UnschedulableAndUnresolvable", "node(s) were unschedulable")
KEY = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "want"),
    [
        pytest.param(True, [], UNSCHEDULABLE, id="does-not-schedule-pod-to-unschedulable-node"),
        pytest.param(False, [], None, id="schedule-pod-to-normal-node"),
        pytest.param(
            True,
            [{"key": KEY, "effect": "NoSchedule"}],
            None,
            id="schedule-pod-with-toleration-to-unschedulable-node",
        ),
        # Derived from v1.Toleration.ToleratesTaint.
        pytest.param(
            True, [toleration("", "Exists")], None, id="derived-tolerate-everything-toleration"
        ),
        pytest.param(
            True,
            [toleration(KEY, "Exists", effect="NoExecute")],
            UNSCHEDULABLE,
            id="derived-NoExecute-toleration-does-not-tolerate-cordon",
        ),
        pytest.param(
            True,
            [toleration(KEY, "Equal", "true", "NoSchedule")],
            UNSCHEDULABLE,
            id="derived-toleration-value-must-match-the-empty-taint-value",
        ),
    ],
)
def test_filter(unschedulable: bool, tolerations: list[Obj], want: object) -> None:
    c = cluster([node("n", unschedulable=unschedulable)])
    got = explain(c, pod("p", tolerations=tolerations), [PLUGIN])
    assert statuses(got) == {"n": want}
    if want is not None:
        assert got["n"]["status"]["plugin"] == PLUGIN

"""TaintToleration: upstream's Filter and Score tables.

Ported from pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go
(TestTaintTolerationFilter, TestTaintTolerationScore). Filter rejects a node with a
NoSchedule or NoExecute taint no toleration tolerates with v1.36's reason, which names
no taint ("node(s) had untolerated taint(s)");
Score counts the PreferNoSchedule taints not tolerated by a toleration whose effect is
empty or PreferNoSchedule, reverse-normalized (fewest intolerable taints scores 100).
"""

from __future__ import annotations

import pytest

from ksched._core import Profile
from ksched.framework.diagnosis import fit_error_message
from tests.plugins.harness import (
    Obj,
    cluster,
    compile_pod,
    explain,
    node,
    normalized,
    pod,
    snapshot,
    statuses,
    toleration,
)

PLUGIN = "TaintToleration"
UNRES = "UnschedulableAndUnresolvable"


def untolerated(key: str, value: str) -> tuple[str, str]:
    """The status of a node whose taint ``key=value`` is not tolerated: v1.36.5's
    reason names no taint (the arguments only document the case)."""
    return (UNRES, "node(s) had untolerated taint(s)")


def tol(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> Obj:
    return toleration(key, operator, value, effect)


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"),
    [
        pytest.param(
            [],
            [("dedicated", "user1", "NoSchedule")],
            untolerated("dedicated", "user1"),
            id="a-pod-with-no-tolerations-cannot-land-on-a-tainted-node",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
            [("dedicated", "user1", "NoSchedule")],
            None,
            id="toleration-without-operator-matches-dedicated-node-of-user1",
        ),
        pytest.param(
            [tol("dedicated", "user2", "NoSchedule")],
            [("dedicated", "user1", "NoSchedule")],
            untolerated("dedicated", "user1"),
            id="pod-of-user2-cannot-land-on-dedicated-node-of-user1",
        ),
        pytest.param(
            [tol("foo", effect="NoSchedule", operator="Exists")],
            [("foo", "bar", "NoSchedule")],
            None,
            id="toleration-with-operator-Exists-tolerates-the-taint",
        ),
        pytest.param(
            [
                tol("dedicated", "user2", "NoSchedule"),
                tol("foo", effect="NoSchedule", operator="Exists"),
            ],
            [("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")],
            None,
            id="multiple-tolerations-tolerate-all-the-taints",
        ),
        pytest.param(
            [tol("foo", "bar", "PreferNoSchedule")],
            [("foo", "bar", "NoSchedule")],
            untolerated("foo", "bar"),
            id="key-and-value-match-but-non-empty-effect-does-not",
        ),
        pytest.param(
            [tol("foo", "bar")],
            [("foo", "bar", "NoSchedule")],
            None,
            id="toleration-with-empty-effect-tolerates-NoSchedule",
        ),
        pytest.param(
            [tol("dedicated", "user2", "NoSchedule")],
            [("dedicated", "user1", "PreferNoSchedule")],
            None,
            id="untolerated-PreferNoSchedule-taint-does-not-filter",
        ),
        pytest.param(
            [],
            [("dedicated", "user1", "PreferNoSchedule")],
            None,
            id="no-tolerations-PreferNoSchedule-taint-does-not-filter",
        ),
        # Derived from upstream's helpers (v1.Toleration.ToleratesTaint and
        # FindMatchingUntoleratedTaint), not from the plugin's table.
        pytest.param(
            [],
            [("evict", "now", "NoExecute")],
            untolerated("evict", "now"),
            id="derived-untolerated-NoExecute-taint-filters",
        ),
        pytest.param(
            [tol("", operator="Exists")],
            [("a", "1", "NoSchedule"), ("b", "2", "NoExecute")],
            None,
            id="derived-empty-key-Exists-tolerates-everything",
        ),
        pytest.param(
            [tol("a", "1", "NoSchedule")],
            [("a", "1", "NoSchedule"), ("b", "2", "NoSchedule"), ("c", "3", "NoExecute")],
            untolerated("b", "2"),
            id="derived-several-untolerated-taints-one-reason",
        ),
        pytest.param(
            [tol("a", "1", "NoExecute")],
            [("a", "1", "NoSchedule")],
            untolerated("a", "1"),
            id="derived-NoExecute-toleration-does-not-tolerate-NoSchedule",
        ),
        pytest.param(
            [tol("a", "", "NoSchedule")],
            [("a", "", "NoSchedule")],
            None,
            id="derived-empty-value-equals-empty-value",
        ),
    ],
)
def test_filter(tolerations: list[Obj], taints: list[tuple[str, str, str]], want: object) -> None:
    c = cluster([node("nodeA", taints=taints)])
    got = explain(c, pod("pod1", tolerations=tolerations), [PLUGIN])
    assert statuses(got) == {"nodeA": want}
    if want is not None:
        assert got["nodeA"]["status"]["plugin"] == PLUGIN


def pns(key: str, value: str) -> tuple[str, str, str]:
    return (key, value, "PreferNoSchedule")


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"),
    [
        pytest.param(
            [tol("foo", "bar", "PreferNoSchedule")],
            {"nodeA": [pns("foo", "bar")], "nodeB": [pns("foo", "blah")]},
            {"nodeA": 100, "nodeB": 0},
            id="node-with-tolerated-taints-scores-higher-than-node-with-intolerable-ones",
        ),
        pytest.param(
            [
                tol("cpu-type", "arm64", "PreferNoSchedule"),
                tol("disk-type", "ssd", "PreferNoSchedule"),
            ],
            {
                "nodeA": [],
                "nodeB": [pns("cpu-type", "arm64")],
                "nodeC": [pns("cpu-type", "arm64"), pns("disk-type", "ssd")],
            },
            {"nodeA": 100, "nodeB": 100, "nodeC": 100},
            id="the-number-of-tolerated-taints-does-not-matter",
        ),
        pytest.param(
            [tol("foo", "bar", "PreferNoSchedule")],
            {
                "nodeA": [],
                "nodeB": [pns("cpu-type", "arm64")],
                "nodeC": [pns("cpu-type", "arm64"), pns("disk-type", "ssd")],
            },
            {"nodeA": 100, "nodeB": 50, "nodeC": 0},
            id="the-more-intolerable-taints-the-lower-the-score",
        ),
        pytest.param(
            [tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd", "NoSchedule")],
            {
                "nodeA": [],
                "nodeB": [("cpu-type", "arm64", "NoSchedule")],
                "nodeC": [pns("cpu-type", "arm64"), pns("disk-type", "ssd")],
            },
            {"nodeA": 100, "nodeB": 100, "nodeC": 0},
            id="only-PreferNoSchedule-taints-and-tolerations-count",
        ),
        pytest.param(
            [],
            {"nodeA": [], "nodeB": [pns("cpu-type", "arm64")]},
            {"nodeA": 100, "nodeB": 0},
            id="no-taints-and-tolerations-lands-on-node-without-taints",
        ),
        # Derived: DefaultNormalizeScore(reverse) is 100 - 100*count/max, integer division.
        pytest.param(
            [tol("", "", "", operator="Exists")],
            {"nodeA": [pns("a", "1")], "nodeB": []},
            {"nodeA": 100, "nodeB": 100},
            id="derived-empty-key-Exists-toleration-tolerates-PreferNoSchedule",
        ),
        pytest.param(
            [],
            {"nodeA": [pns("a", "1")], "nodeB": [pns("a", "1"), pns("b", "1"), pns("c", "1")]},
            {"nodeA": 67, "nodeB": 0},
            id="derived-reverse-normalization-truncates",
        ),
    ],
)
def test_score(
    tolerations: list[Obj], taints: dict[str, list[tuple[str, str, str]]], want: dict[str, int]
) -> None:
    c = cluster([node(name, taints=t) for name, t in taints.items()])
    got = explain(c, pod("pod1", tolerations=tolerations), [PLUGIN], [(PLUGIN, 1)])
    assert normalized(got, PLUGIN) == want


def test_raw_score_counts_intolerable_prefer_no_schedule_taints() -> None:
    c = cluster(
        [
            node("a", taints=[pns("x", "1"), pns("y", "1"), ("z", "1", "NoSchedule")]),
            node("b", taints=[pns("x", "1")]),
        ]
    )
    p = pod("p", tolerations=[tol("x", "1", "PreferNoSchedule"), tol("z", "1")])
    got = explain(c, p, [PLUGIN], [(PLUGIN, 3)])
    assert {n: e["scores"][PLUGIN] for n, e in got.items()} == {
        "a": {"raw": 1, "normalized": 0},
        "b": {"raw": 0, "normalized": 100},
    }
    assert {n: e["total"] for n, e in got.items()} == {"a": 0, "b": 300}


def test_nodes_with_different_taints_make_one_histogram_entry() -> None:
    """v1.36.5 names no taint in the reason: three nodes with three different
    untolerated taints are one entry of the FailedScheduling message."""
    c = cluster(
        [
            node("a", taints=[("dedicated", "gpu", "NoSchedule")]),
            node("b", taints=[("dedicated", "db", "NoSchedule")]),
            node("c", taints=[("evict", "now", "NoExecute")]),
        ]
    )
    result = snapshot(c).schedule(compile_pod(pod("p")), Profile([PLUGIN], []))
    assert result.node is None
    message = fit_error_message(result.num_all_nodes, result.reason_counts())
    assert message == "0/3 nodes are available: 3 node(s) had untolerated taint(s)."

"""NodeAffinity: upstream's Filter and Score tables.

Ported from pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go
(TestNodeAffinity, TestNodeAffinityPriority). Upstream's Filter table calls Filter on the
node directly; here a whole scheduling cycle runs, so where the pod's matchFields on
metadata.name narrow the candidates in PreFilter (PreFilterResult), the nodes left out
are not filtered at all and carry the cycle's diagnosis instead, as kube-scheduler's
schedule_one.go reports them: "node(s) didn't satisfy plugin(s) [NodeAffinity]". That
is the message every DaemonSet pod that cannot fit shows for the other nodes. Like
upstream's absent-nodes status, theirs names no plugin (NodeAffinity still counts among
the unschedulable plugins that can requeue the pod).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ksched._core import Profile
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod as backend_compile
from tests.plugins.harness import (
    Obj,
    cluster,
    compile_pod,
    explain,
    expr,
    node,
    node_affinity,
    node_selector_term,
    normalized,
    pod,
    snapshot,
    statuses,
    to_api,
)

PLUGIN = "NodeAffinity"
UNRES = "UnschedulableAndUnresolvable"
POD_MISMATCH = (UNRES, "node(s) didn't match Pod's node affinity/selector")
ENFORCED = (UNRES, "node(s) didn't match scheduler-enforced node affinity")
CONFLICT = (UNRES, "pod affinity terms conflict")
NOT_IN_PREFILTER_RESULT = (UNRES, "node(s) didn't satisfy plugin(s) [NodeAffinity]")
NAME = "metadata.name"


def required(*terms: Obj) -> Obj:
    """spec.affinity with required node selector terms (ORed)."""
    return {"nodeAffinity": node_affinity(required=list(terms))}


def exprs(*e: Obj) -> Obj:
    return node_selector_term(expressions=list(e))


def fields(*f: Obj) -> Obj:
    return node_selector_term(fields=list(f))


def added(
    *, required_terms: list[Obj] | None = None, preferred: Sequence[tuple[int, Obj]] = ()
) -> Obj:
    """NodeAffinityArgs.addedAffinity."""
    return {PLUGIN: {"addedAffinity": node_affinity(required=required_terms, preferred=preferred)}}


FILTER_CASES = [
    pytest.param(
        {"node_selector": {"foo": "bar"}}, "node1", {}, None, POD_MISMATCH, id="missing-labels"
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}}, "node1", {"foo": "bar"}, None, None, id="same-labels"
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}},
        "node1",
        {"foo": "bar", "baz": "blah"},
        None,
        None,
        id="node-labels-are-superset",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar", "baz": "blah"}},
        "node1",
        {"foo": "bar"},
        None,
        POD_MISMATCH,
        id="node-labels-are-subset",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("foo", "In", "bar", "value2")))},
        "node1",
        {"foo": "bar"},
        None,
        None,
        id="matchExpressions-In-matches",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("kernel-version", "Gt", "0204")))},
        "node1",
        {"kernel-version": "0206"},
        None,
        None,
        id="matchExpressions-Gt-matches",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("mem-type", "NotIn", "DDR", "DDR2")))},
        "node1",
        {"mem-type": "DDR3"},
        None,
        None,
        id="matchExpressions-NotIn-matches",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("GPU", "Exists")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        None,
        id="matchExpressions-Exists-matches",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("foo", "In", "value1", "value2")))},
        "node1",
        {"foo": "bar"},
        None,
        POD_MISMATCH,
        id="affinity-that-does-not-match-node-labels",
    ),
    pytest.param(
        {"affinity": required({"matchExpressions": []})},
        "node1",
        {"foo": "bar"},
        None,
        POD_MISMATCH,
        id="empty-matchExpressions-match-no-node",
    ),
    pytest.param({}, "node1", {"foo": "bar"}, None, None, id="pod-with-no-affinity"),
    pytest.param(
        {"affinity": {"nodeAffinity": {}}},
        "node1",
        {"foo": "bar"},
        None,
        None,
        id="pod-with-affinity-but-nil-node-selector",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        None,
        id="multiple-matchExpressions-ANDed-match",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))},
        "node1",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        POD_MISMATCH,
        id="multiple-matchExpressions-ANDed-do-not-match",
    ),
    pytest.param(
        {
            "affinity": required(
                exprs(expr("foo", "In", "bar", "value2")),
                exprs(expr("diffkey", "In", "wrong", "value2")),
            )
        },
        "node1",
        {"foo": "bar"},
        None,
        None,
        id="multiple-nodeSelectorTerms-ORed-one-matches",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(exprs(expr("foo", "Exists")))},
        "node1",
        {"foo": "bar"},
        None,
        None,
        id="affinity-and-nodeSelector-both-satisfied",
    ),
    pytest.param(
        {"node_selector": {"foo": "bar"}, "affinity": required(exprs(expr("foo", "Exists")))},
        "node1",
        {"foo": "barrrrrr"},
        None,
        POD_MISMATCH,
        id="affinity-matches-but-nodeSelector-does-not",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("foo", "NotIn", "invalid value: ___@#$%^")))},
        "node1",
        {"foo": "bar"},
        None,
        POD_MISMATCH,
        id="invalid-value-in-affinity-term-matches-no-node",
    ),
    pytest.param(
        {"affinity": required(fields(expr(NAME, "In", "node1")))},
        "node1",
        {},
        None,
        None,
        id="matchFields-In-matches-the-node",
    ),
    pytest.param(
        {"affinity": required(fields(expr(NAME, "In", "node1")))},
        "node2",
        {},
        None,
        NOT_IN_PREFILTER_RESULT,
        id="matchFields-In-does-not-match-the-node",
    ),
    pytest.param(
        {
            "affinity": required(
                fields(expr(NAME, "In", "node1"), expr(NAME, "In", "node2")),
                exprs(expr("foo", "In", "bar")),
            )
        },
        "node2",
        {"foo": "bar"},
        None,
        None,
        id="two-terms-matchFields-do-not-match-matchExpressions-match",
    ),
    pytest.param(
        {
            "affinity": required(
                {
                    "matchFields": [expr(NAME, "In", "node1")],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        },
        "node2",
        {"foo": "bar"},
        None,
        NOT_IN_PREFILTER_RESULT,
        id="one-term-matchFields-do-not-match-matchExpressions-match",
    ),
    pytest.param(
        {
            "affinity": required(
                {
                    "matchFields": [expr(NAME, "In", "node1")],
                    "matchExpressions": [expr("foo", "In", "bar")],
                }
            )
        },
        "node1",
        {"foo": "bar"},
        None,
        None,
        id="one-term-both-matchFields-and-matchExpressions-match",
    ),
    pytest.param(
        {
            "affinity": required(
                fields(expr(NAME, "In", "node1")),
                exprs(expr("foo", "In", "not-match-to-bar")),
            )
        },
        "node2",
        {"foo": "bar"},
        None,
        POD_MISMATCH,
        id="two-terms-neither-matchFields-nor-matchExpressions-match",
    ),
    pytest.param(
        {
            "affinity": required(
                fields(expr(NAME, "In", "node1")), fields(expr(NAME, "In", "node2"))
            )
        },
        "node2",
        {},
        None,
        None,
        id="two-terms-of-node-name-affinity",
    ),
    pytest.param(
        {"affinity": required(fields(expr(NAME, "In", "node1"), expr(NAME, "In", "node2")))},
        "node2",
        {"foo": "bar"},
        None,
        CONFLICT,
        id="two-conflicting-matchFields-requirements",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("zone", "In", "foo")))},
        "node2",
        {"zone": "foo"},
        added(required_terms=[fields(expr(NAME, "In", "node2"))]),
        None,
        id="matches-added-affinity-and-pods-node-affinity",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("zone", "In", "bar")))},
        "node2",
        {"zone": "foo"},
        added(required_terms=[fields(expr(NAME, "In", "node2"))]),
        POD_MISMATCH,
        id="matches-added-affinity-but-not-pods-node-affinity",
    ),
    pytest.param(
        {},
        "node2",
        {"zone": "foo"},
        added(required_terms=[exprs(expr("zone", "In", "bar"))]),
        ENFORCED,
        id="does-not-match-added-affinity",
    ),
    # Derived from component-helpers' node selector matching.
    pytest.param(
        {"affinity": required(exprs(expr("kernel-version", "Lt", "0204")))},
        "node1",
        {"kernel-version": "0206"},
        None,
        POD_MISMATCH,
        id="derived-matchExpressions-Lt-does-not-match",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("kernel-version", "Gt", "1")))},
        "node1",
        {"kernel-version": "v2"},
        None,
        POD_MISMATCH,
        id="derived-Gt-on-a-non-integer-label-does-not-match",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("kernel-version", "Gt", "1")))},
        "node1",
        {},
        None,
        POD_MISMATCH,
        id="derived-Gt-on-a-missing-label-does-not-match",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("gpu", "DoesNotExist")))},
        "node1",
        {"cpu": "x86"},
        None,
        None,
        id="derived-DoesNotExist-matches-a-node-without-the-label",
    ),
    pytest.param(
        {"affinity": required(exprs(expr("gpu", "NotIn", "a")))},
        "node1",
        {},
        None,
        None,
        id="derived-NotIn-matches-a-node-without-the-label",
    ),
    pytest.param(
        {"affinity": required(fields(expr(NAME, "NotIn", "node1")))},
        "node1",
        {},
        None,
        POD_MISMATCH,
        id="derived-matchFields-NotIn-excludes-the-named-node",
    ),
]


@pytest.mark.parametrize(("spec", "node_name", "labels", "args", "want"), FILTER_CASES)
def test_filter(
    spec: dict[str, object], node_name: str, labels: dict[str, str], args: Obj | None, want: object
) -> None:
    got = explain(cluster([node(node_name, labels)]), pod("p", **spec), [PLUGIN], [], args)  # type: ignore[arg-type]
    assert statuses(got) == {node_name: want}
    if want is not None:
        want_plugin = "" if want == NOT_IN_PREFILTER_RESULT else PLUGIN
        assert got[node_name]["status"]["plugin"] == want_plugin


def test_matchFields_narrow_the_candidates_like_a_daemonset_pod() -> None:
    c = cluster([node("node-a"), node("node-b", {"disk": "hdd"}), node("node-c")])
    daemon = pod("ds", affinity=required(fields(expr(NAME, "In", "node-b"))))
    got = explain(c, daemon, [PLUGIN])
    assert statuses(got) == {
        "node-a": NOT_IN_PREFILTER_RESULT,
        "node-b": None,
        "node-c": NOT_IN_PREFILTER_RESULT,
    }
    # The left-out nodes' status names no plugin (upstream's absent-nodes status).
    assert {n: e["status"]["plugin"] for n, e in got.items() if e["status"]} == {
        "node-a": "",
        "node-c": "",
    }
    # When the named node fails too, the FailedScheduling reasons add up as upstream's.
    picky = pod(
        "ds",
        node_selector={"disk": "ssd"},
        affinity=required(fields(expr(NAME, "In", "node-b"))),
    )
    result = snapshot(c).schedule(compile_pod(picky), Profile([PLUGIN], [], {}))
    assert result.node is None
    assert result.reason_counts() == {
        "node(s) didn't match Pod's node affinity/selector": 1,
        "node(s) didn't satisfy plugin(s) [NodeAffinity]": 2,
    }
    assert {n: plugin for n, _, plugin, _ in result.statuses} == {
        "node-a": "",
        "node-b": PLUGIN,
        "node-c": "",
    }
    assert result.unschedulable_plugins() == [PLUGIN]
    # Only node-a left out and node-b feasible: the left-out node names no plugin either.
    only = pod("ds", affinity=required(fields(expr(NAME, "In", "node-b"))))
    assert snapshot(c).filter_node(compile_pod(only), Profile([PLUGIN], [], {}), "node-a") == (
        True,
        "",
        ["node(s) didn't satisfy plugin(s) [NodeAffinity]"],
    )


def test_conflicting_matchFields_reject_every_node() -> None:
    c = cluster([node("node1"), node("node2"), node("node3")])
    p = pod("p", affinity=required(fields(expr(NAME, "In", "node1"), expr(NAME, "In", "node2"))))
    assert set(statuses(explain(c, p, [PLUGIN])).values()) == {CONFLICT}


# --- Score ------------------------------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = [(2, exprs(expr("foo", "In", "bar")))]
AFFINITY2 = [
    (2, exprs(expr("foo", "In", "bar"))),
    (4, exprs(expr("key", "In", "value"))),
    (5, exprs(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
]


def preferring(terms: list[tuple[int, Obj]]) -> Obj:
    return pod("p", affinity={"nodeAffinity": node_affinity(preferred=terms)})


SCORE_CASES = [
    pytest.param(
        pod("p"),
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 0, "node2": 0, "node3": 0},
        id="all-nodes-same-priority-as-NodeAffinity-is-nil",
    ),
    pytest.param(
        preferring(AFFINITY1),
        {"node1": LABEL4, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 0, "node2": 0, "node3": 0},
        id="no-node-matches-preferred-terms-all-scores-zero",
    ),
    pytest.param(
        preferring(AFFINITY1),
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
        None,
        {"node1": 100, "node2": 0, "node3": 0},
        id="only-node1-matches-the-preferred-terms",
    ),
    pytest.param(
        preferring(AFFINITY2),
        {"node1": LABEL1, "node5": LABEL5, "node2": LABEL2},
        None,
        {"node1": 18, "node5": 100, "node2": 36},
        id="all-nodes-match-with-different-priorities",
    ),
    pytest.param(
        pod("p"),
        {"node1": LABEL1, "node2": LABEL2},
        added(preferred=AFFINITY1),
        {"node1": 100, "node2": 0},
        id="added-affinity",
    ),
    pytest.param(
        preferring(AFFINITY1),
        {"node1": LABEL1, "node2": LABEL2, "node3": LABEL5},
        added(preferred=[(3, exprs(expr("key", "In", "value")))]),
        {"node1": 40, "node2": 60, "node3": 100},
        id="added-affinity-and-pod-affinity",
    ),
    # Derived: an empty preference is skipped (it matches no node), as is weight 0.
    pytest.param(
        preferring([(7, {}), (3, exprs(expr("foo", "Exists")))]),
        {"node1": LABEL1, "node2": LABEL2},
        None,
        {"node1": 100, "node2": 0},
        id="derived-empty-preference-matches-nothing",
    ),
]


@pytest.mark.parametrize(("p", "labels", "args", "want"), SCORE_CASES)
def test_score(
    p: Obj, labels: dict[str, dict[str, str]], args: Obj | None, want: dict[str, int]
) -> None:
    c = cluster([node(name, lbl) for name, lbl in labels.items()])
    assert normalized(explain(c, p, [], [(PLUGIN, 1)], args), PLUGIN) == want


def test_raw_score_is_the_sum_of_matching_weights() -> None:
    c = cluster([node("node1", LABEL1), node("node5", LABEL5), node("node2", LABEL2)])
    got = explain(c, preferring(AFFINITY2), [], [(PLUGIN, 2)])
    assert {n: e["scores"][PLUGIN] for n, e in got.items()} == {
        "node1": {"raw": 2, "normalized": 18},
        "node5": {"raw": 11, "normalized": 100},
        "node2": {"raw": 4, "normalized": 36},
    }
    assert {n: e["total"] for n, e in got.items()} == {"node1": 36, "node5": 200, "node2": 72}


def test_a_nominated_node_left_out_by_the_prefilter_result_keeps_its_own_verdict() -> None:
    """Upstream evaluates the pod's nominated node first, whatever the PreFilter result,
    and the diagnosis keeps that node's rejection; its plugin also joins the plugins the
    left-out nodes' message names (evaluateNominatedNode shares findNodesThatFitPod's
    unschedulable-plugins set)."""
    c = cluster(
        [
            node("node-a", taints=[("dedicated", "x", "NoSchedule")]),
            node("node-b", {"disk": "hdd"}),
            node("node-c"),
        ]
    )
    p = pod(
        "ds",
        node_selector={"disk": "ssd"},
        affinity=required(fields(expr(NAME, "In", "node-b"))),
    )
    api = to_api(p)
    api["status"]["nominatedNodeName"] = "node-a"
    nominated = backend_compile(Pod.from_dict(api))
    profile = Profile(["TaintToleration", PLUGIN], [], {})
    result = snapshot(c).schedule(nominated, profile)
    assert result.node is None
    assert {n: (plugin, reasons) for n, _, plugin, reasons in result.statuses} == {
        "node-a": ("TaintToleration", ["node(s) had untolerated taint(s)"]),
        "node-b": (PLUGIN, ["node(s) didn't match Pod's node affinity/selector"]),
        "node-c": ("", ["node(s) didn't satisfy plugin(s) [NodeAffinity TaintToleration]"]),
    }
    assert sorted(result.unschedulable_plugins()) == [PLUGIN, "TaintToleration"]
    # explain reports the same per-node view.
    rows = {r["node"]: r["status"] for r in snapshot(c).explain(nominated, profile)}
    assert rows["node-a"]["plugin"] == "TaintToleration"
    assert rows["node-c"]["reasons"] == [
        "node(s) didn't satisfy plugin(s) [NodeAffinity TaintToleration]"
    ]


def test_a_prefilter_result_counts_among_the_unschedulable_plugins_even_leaving_no_node_out() -> (
    None
):
    """Upstream's RunPreFilterPlugins returns NodeAffinity among the plugins with nodes as
    soon as its result names nodes; the FitError's unschedulable plugins keep it (the
    queue's hints then consider NodeAffinity's events too), here with every node named
    and the only node rejected by its taint."""
    c = cluster([node("node-a", taints=[("dedicated", "x", "NoSchedule")])])
    profile = Profile(["TaintToleration", PLUGIN], [], {})
    p = pod("ds", affinity=required(fields(expr(NAME, "In", "node-a"))))
    result = snapshot(c).schedule(compile_pod(p), profile)
    assert result.node is None
    assert [plugin for _, _, plugin, _ in result.statuses] == ["TaintToleration"]
    assert result.pre_filter_plugins == [PLUGIN]
    assert sorted(result.unschedulable_plugins()) == [PLUGIN, "TaintToleration"]
    plain = snapshot(c).schedule(compile_pod(pod("p")), profile)
    assert plain.pre_filter_plugins == []
    assert plain.unschedulable_plugins() == ["TaintToleration"]

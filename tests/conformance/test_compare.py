"""The comparison: what counts as agreement, and upstream's randomness normalized."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conformance.compare import compare

Obj = dict[str, Any]

FIT = "NodeResourcesFit"


def status(plugin: str, *reasons: str, code: str = "Unschedulable") -> Obj:
    return {"code": code, "plugin": plugin, "reasons": list(reasons)}


def report(**kw: Any) -> Obj:
    """A report both sides could have produced: two feasible nodes, a tie."""
    base: Obj = {
        "examined": ["a", "b", "c"],
        "filters": {"a": None, "b": None, "c": status(FIT, "Insufficient cpu")},
        "scores": [
            {"node": "a", "plugins": {"TaintToleration": 300, FIT: 50}, "total": 350},
            {"node": "b", "plugins": {"TaintToleration": 300, FIT: 50}, "total": 350},
        ],
        "chosen": "a",
        "events": [],
        "condition": None,
        "nominatedNodeName": "",
        "deleted": [],
        "diagnosis": None,
    }
    base.update(kw)
    return base


def ksched(up: Obj, **kw: Any) -> Obj:
    ks = copy.deepcopy(up)
    ks.update(kw)
    ks["error"] = ""
    return ks


def differences(up: Obj, ks: Obj) -> dict[str, str]:
    return compare(up, ks).differences


def test_identical_reports_agree() -> None:
    up = report()
    assert differences(up, ksched(up)) == {}


@pytest.mark.parametrize(
    ("chosen", "agrees"),
    [
        pytest.param("b", True, id="another-node-with-the-best-total"),
        pytest.param("c", False, id="a-node-upstream-rejected"),
        pytest.param(None, False, id="no-node"),
    ],
)
def test_select_host_ties_are_normalized(chosen: str | None, agrees: bool) -> None:
    up = report()
    assert ("chosen" not in differences(up, ksched(up, chosen=chosen))) == agrees


def test_a_lower_total_is_not_a_tie() -> None:
    up = report()
    up["scores"][1]["total"] = 349
    assert "chosen" in differences(up, ksched(up, chosen="b"))


def test_fit_scalar_reasons_are_compared_in_any_order() -> None:
    """fitsRequest lists extended resources in Go map order."""
    reasons = ("Insufficient cpu", "Insufficient example.com/gpu", "Insufficient hugepages-2Mi")
    up = report(filters={"a": None, "b": None, "c": status(FIT, *reasons)})
    swapped = status(FIT, reasons[0], reasons[2], reasons[1])
    assert differences(up, ksched(up, filters={"a": None, "b": None, "c": swapped})) == {}
    cpu_last = status(FIT, reasons[1], reasons[2], reasons[0])
    assert "statuses" in differences(up, ksched(up, filters={"a": None, "b": None, "c": cpu_last}))


def test_a_score_plugin_upstream_skipped_counts_zero() -> None:
    up = report()
    ks = ksched(up)
    for s in ks["scores"]:
        s["plugins"]["InterPodAffinity"] = 0
    assert differences(up, ks) == {}
    ks["scores"][0]["plugins"]["InterPodAffinity"] = 10
    assert "scores" in differences(up, ks)


def test_only_the_nodes_upstream_examined_are_compared() -> None:
    """A partial search (no Score plugins: the first feasible node found)."""
    up = report(examined=["b"], filters={"b": None}, scores=[], chosen="b")
    ks = ksched(up, examined=["a", "b", "c"], filters={"a": None, "b": None, "c": None})
    ks["chosen"] = "c"  # feasible for ksched, never examined by upstream
    assert differences(up, ks) == {}
    ks["filters"]["c"] = status("NodeAffinity", "x")
    assert "chosen" in differences(up, ks)


def test_left_out_nodes_compare_against_the_absent_status() -> None:
    absent = status(
        "", "node(s) didn't satisfy plugin(s) [NodeAffinity]", code="UnschedulableAndUnresolvable"
    )
    up = report(
        examined=["a"],
        filters={"a": status(FIT, "Insufficient cpu")},
        scores=[],
        chosen=None,
        diagnosis={"nodes": {"a": status(FIT, "Insufficient cpu")}, "absent": absent},
    )
    ks = ksched(
        up,
        filters={"a": status(FIT, "Insufficient cpu"), "b": absent},
        unschedulablePlugins=[],
        pendingPlugins=[],
    )
    assert differences(up, ks) == {}
    ks["filters"]["b"] = {**absent, "plugin": "NodeAffinity"}
    assert "statuses" in differences(up, ks)


def test_the_nomination_is_compared_after_a_failure_only() -> None:
    up = report(nominatedNodeName="a")
    assert differences(up, ksched(up, nominatedNodeName="")) == {}
    failed = report(chosen=None, scores=[], nominatedNodeName="a")
    assert "nomination" in differences(failed, ksched(failed, nominatedNodeName=""))


def test_condition_times_compare_as_set_or_not() -> None:
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    up = report(
        chosen=None, scores=[], condition={**cond, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    )
    later = ksched(up, condition={**cond, "lastTransitionTime": "2026-12-01T10:00:00Z"})
    assert differences(up, later) == {}
    assert "condition" in differences(up, ksched(up, condition=cond))


def test_a_ksched_error_is_a_disagreement() -> None:
    up = report()
    ks = ksched(up)
    ks["error"] = "ValueError: boom"
    assert differences(up, ks) == {"runs": "ksched: ValueError: boom"}


def test_a_filter_error_compares_only_the_nodes_with_the_error() -> None:
    """Upstream's parallel search stops at a Filter error: the other nodes' verdicts are
    goroutine timing (DynamicResources says "asked by caller to stop allocating")."""
    err = status("DynamicResources", 'running "DynamicResources" filter plugin: x', code="Error")
    stopped = status("DynamicResources", "asked by caller to stop allocating devices: y")
    up = report(
        examined=["a", "b", "c"],
        filters={"a": err, "b": stopped, "c": None},
        scores=[],
        chosen=None,
        failure={"code": "Error", "message": "x"},
    )
    ks = ksched(up, filters={"a": err, "b": None, "c": status(FIT, "Insufficient cpu")})
    assert differences(up, ks) == {}
    ks["filters"]["a"] = status("DynamicResources", "x", code="UnschedulableAndUnresolvable")
    assert "statuses" in differences(up, ks)


def test_a_binding_left_pending_on_one_side_only_disagrees() -> None:
    up = report(bindingPending=True)
    assert differences(up, ksched(up)) == {}
    assert "message" in differences(up, ksched(up, bindingPending=False))


def _preempting(potential: int) -> Obj:
    """A failed cycle whose diagnosis leaves ``potential`` nodes for preemption's dry run
    (Unschedulable) and one it cannot help (UnschedulableAndUnresolvable)."""
    nodes = {f"n{i}": status(FIT, "Too many pods") for i in range(potential)}
    nodes["x"] = status("NodeName", "node(s) didn't match", code="UnschedulableAndUnresolvable")
    return report(
        examined=sorted(nodes),
        filters=nodes,
        scores=[],
        chosen=None,
        postFilter={"message": "", "nominatedNode": "n0", "status": None},
        failure={
            "code": "Unschedulable",
            "diagnosis": {"nodes": nodes, "numAllNodes": len(nodes), "absent": None},
        },
        profile="default-scheduler",
        pluginEvaluations={"Filter/NodeResourcesFit": 2 * potential, "PreFilter/NodeName": 1},
    )


def _min_candidates(absolute: int) -> Obj:
    args = {"minCandidateNodesAbsolute": absolute, "minCandidateNodesPercentage": 10}
    return {"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}


@pytest.mark.parametrize(
    ("config", "filters_compared"),
    [
        # 100 candidates wanted (the default) out of 2 potential nodes: it tries both.
        pytest.param(None, True, id="defaults-every-potential-node-is-tried"),
        pytest.param(_min_candidates(2), True, id="as-many-wanted-as-potential-nodes"),
        # 1 wanted of 2: the parallel dry run cancels after the first, at a time of its own.
        pytest.param(_min_candidates(1), False, id="fewer-wanted-than-potential-nodes"),
    ],
)
def test_dry_run_filter_counts_are_compared_only_when_it_tries_every_potential_node(
    config: Obj | None, filters_compared: bool
) -> None:
    up = _preempting(2)
    ks = ksched(up, pluginEvaluations={"Filter/NodeResourcesFit": 3, "PreFilter/NodeName": 1})
    assert ("evaluations" in compare(up, ks, config).differences) is filters_compared
    ks["pluginEvaluations"]["PreFilter/NodeName"] = 2
    assert "evaluations" in compare(up, ks, config).differences

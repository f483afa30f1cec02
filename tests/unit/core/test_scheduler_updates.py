"""Which updates of a bound pod the scheduler skips: only those that change nothing but
``status.conditions`` (the kubelet's most frequent update, preemption's
DisruptionTarget); anything else still reaches the cache."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ksched.scheduler import _only_conditions_changed
from ksched.sim.workloads import make_pod


def _bound() -> dict[str, Any]:
    pod = make_pod("p", cpu="1", node_name="n1", labels={"app": "a"})
    pod["metadata"]["resourceVersion"] = "1"
    pod["status"]["phase"] = "Running"
    return pod


def _changed(change: str) -> dict[str, Any]:
    new = copy.deepcopy(_bound())
    new["metadata"]["resourceVersion"] = "2"
    if change == "conditions":
        new["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    elif change == "labels":
        new["metadata"]["labels"] = {"app": "b"}
    elif change == "deletion":
        new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    elif change == "phase":
        new["status"]["phase"] = "Succeeded"
    elif change == "new-status-field":
        new["status"]["resize"] = "InProgress"
    elif change == "spec":
        new["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    return new


@pytest.mark.parametrize(
    ("change", "skipped"),
    [
        ("conditions", True),
        ("labels", False),
        ("deletion", False),
        ("phase", False),
        ("new-status-field", False),
        ("spec", False),
    ],
)
def test_only_condition_updates_of_bound_pods_are_skipped(change: str, skipped: bool) -> None:
    assert _only_conditions_changed(_bound(), _changed(change)) is skipped

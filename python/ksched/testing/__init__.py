"""ksched in your own test and benchmark suites: the public API behind the pytest
plugin's fixtures (:mod:`ksched.testing.pytest_plugin`).

* :class:`Cluster` — an embedded cluster built from code or YAML (nodes from templates
  with counts, zones and labels; existing pods; namespaces, budgets, volumes, claims;
  workload files and ``ksched simulate`` workloads by name; recordings); :func:`node`
  and :func:`pod` build the objects, and so do :func:`storage_class`,
  :func:`persistent_volume`, :func:`persistent_volume_claim`, :func:`device_class`,
  :func:`resource_slice`, :func:`resource_claim` and :func:`pod_group` for the volume,
  DynamicResources and gang plugins.
* :class:`EmbeddedScheduler` — the real scheduler on it with a KubeSchedulerConfiguration
  and out-of-tree plugins: ``schedule(pods)`` → :class:`ScheduleOutcome` (placements,
  FailedScheduling messages), ``explain(pod)`` → :class:`Explanation` (``ksched
  explain``'s data).
* Assertions: :func:`assert_spread_skew`, :func:`assert_no_affinity_violations`,
  :func:`assert_pods_per_node`, :func:`assert_utilization`,
  :func:`assert_unschedulable_count`; they read a :class:`Placement`.
* :func:`run_workload` and :class:`BenchmarkResult` — what ``ksched_benchmark`` runs
  and records.
* :class:`ControlPlane` — a real kube-apiserver + etcd (+ kube-controller-manager)
  (:mod:`ksched.testing.controlplane`), the ``ksched_control_plane`` fixture.

Names are loaded on first use, so importing this package (as the pytest plugin does
in every test session) costs nothing. The names in ``__all__`` and the fixtures are
ksched's public testing API; see the README's version policy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ksched.explain.model import Explanation, NodeVerdict, PluginScore, Suggestion
    from ksched.testing.assertions import (
        Placement,
        assert_no_affinity_violations,
        assert_pods_per_node,
        assert_spread_skew,
        assert_unschedulable_count,
        assert_utilization,
    )
    from ksched.testing.benchmark import BenchmarkResult, Round, run_workload
    from ksched.testing.cluster import (
        Cluster,
        device_class,
        node,
        persistent_volume,
        persistent_volume_claim,
        pod,
        pod_group,
        resource_claim,
        resource_slice,
        storage_class,
    )
    from ksched.testing.controlplane import ControlPlane
    from ksched.testing.scheduler import EmbeddedScheduler, ScheduleOutcome

__all__ = [
    "BenchmarkResult",
    "Cluster",
    "ControlPlane",
    "EmbeddedScheduler",
    "Explanation",
    "NodeVerdict",
    "Placement",
    "PluginScore",
    "Round",
    "ScheduleOutcome",
    "Suggestion",
    "assert_no_affinity_violations",
    "assert_pods_per_node",
    "assert_spread_skew",
    "assert_unschedulable_count",
    "assert_utilization",
    "device_class",
    "node",
    "persistent_volume",
    "persistent_volume_claim",
    "pod",
    "pod_group",
    "resource_claim",
    "resource_slice",
    "run_workload",
    "storage_class",
]

_WHERE = {
    "Explanation": "ksched.explain.model",
    "NodeVerdict": "ksched.explain.model",
    "PluginScore": "ksched.explain.model",
    "Suggestion": "ksched.explain.model",
    "Placement": "ksched.testing.assertions",
    "assert_no_affinity_violations": "ksched.testing.assertions",
    "assert_pods_per_node": "ksched.testing.assertions",
    "assert_spread_skew": "ksched.testing.assertions",
    "assert_unschedulable_count": "ksched.testing.assertions",
    "assert_utilization": "ksched.testing.assertions",
    "BenchmarkResult": "ksched.testing.benchmark",
    "Round": "ksched.testing.benchmark",
    "run_workload": "ksched.testing.benchmark",
    "Cluster": "ksched.testing.cluster",
    "node": "ksched.testing.cluster",
    "pod": "ksched.testing.cluster",
    "device_class": "ksched.testing.cluster",
    "persistent_volume": "ksched.testing.cluster",
    "persistent_volume_claim": "ksched.testing.cluster",
    "pod_group": "ksched.testing.cluster",
    "resource_claim": "ksched.testing.cluster",
    "resource_slice": "ksched.testing.cluster",
    "storage_class": "ksched.testing.cluster",
    "ControlPlane": "ksched.testing.controlplane",
    "EmbeddedScheduler": "ksched.testing.scheduler",
    "ScheduleOutcome": "ksched.testing.scheduler",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'ksched.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

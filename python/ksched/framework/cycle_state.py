"""Per-attempt state shared by the plugins of one scheduling (and binding) cycle.

Plugins write what they computed once (PreFilter, PreScore, Reserve) under their own
key and read it back at later extension points, as upstream's ``CycleState``. A fresh
state is created for every attempt; the binding cycle keeps the scheduling cycle's state.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CycleState"]

_NONE: frozenset[str] = frozenset()


class CycleState:
    __slots__ = (
        "_data",
        "evaluated_nodes",
        "feasible_nodes",
        "parallel_pre_bind_plugins",
        "pod_group_cycle",
        "pre_filter_counted",
        "pre_filter_node_plugins",
        "pre_filter_order",
        "pre_filter_rejector",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_post_filter",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self, *, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        #: This cycle is sampled for ``scheduler_plugin_execution_duration_seconds``.
        self.record_plugin_metrics = record_plugin_metrics
        #: Plugins whose PreFilter returned Skip: their Filter does not run.
        self.skip_filter_plugins: frozenset[str] = _NONE
        #: Plugins whose PreScore returned Skip: their Score does not run.
        self.skip_score_plugins: frozenset[str] = _NONE
        #: Python PreFilter plugins that narrowed the attempt to some node names (sorted).
        self.pre_filter_node_plugins: tuple[str, ...] = ()
        #: The plugin whose PreFilter stopped the PreFilter phase (UnschedulableAndUnresolvable,
        #: or no node left), a Rust kernel's included; "" when none did. The PreFilters
        #: after it did not run (upstream ``RunPreFilterPlugins`` returns there), which
        #: DynamicResources' PostFilter needs to know.
        self.pre_filter_rejector = ""
        #: The profile's Python PreFilter plugins in order, those a cycle skips for the
        #: pod (``Framework.for_pod``) included: whether a plugin's PreFilter ran
        #: upstream before ``pre_filter_rejector`` stopped the phase.
        self.pre_filter_order: tuple[str, ...] = ()
        #: The Python PreFilter plugins counted in ``scheduler_plugin_evaluation_total``
        #: this cycle (a built-in PreFilter before them in the profile's order that
        #: rejects the pod takes them back: upstream never called them).
        self.pre_filter_counted: list[str] = []
        #: PreBind plugins whose PreBindPreFlight returned Skip: their PreBind does not run.
        self.skip_pre_bind_plugins: frozenset[str] = _NONE
        #: PreBind plugins that may run concurrently with their neighbours that may too.
        self.parallel_pre_bind_plugins: frozenset[str] = _NONE
        #: Set during a pod group scheduling cycle (upstream
        #: ``IsPodGroupSchedulingCycle``): the cycle's view of the pod groups
        #: (:class:`ksched.schedule_group.PodGroupCycle`), read by plugins such as
        #: GangScheduling's Permit instead of the cache.
        self.pod_group_cycle: Any = None
        #: PostFilter plugins do not run (upstream ``SetSkipAllPostFilterPlugins``).
        self.skip_post_filter = False
        #: The nodes the placement examined and found feasible (the bound-pod log line).
        self.evaluated_nodes = 0
        self.feasible_nodes = 0

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value under ``key``; raises KeyError when absent."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._data

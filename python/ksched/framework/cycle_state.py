"""Per-attempt state shared by the plugins of one scheduling (and binding) cycle.

Plugins write what they computed once (PreFilter, PreScore, Reserve) under their own
key and read it back at later extension points, as upstream's ``CycleState``. A fresh
state is created for every attempt; the binding cycle keeps the scheduling cycle's state.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CycleState"]


class CycleState:
    __slots__ = (
        "_data",
        "evaluated_nodes",
        "feasible_nodes",
        "pre_filter_node_plugins",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_score_plugins",
    )

    def __init__(self, *, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        #: This cycle is sampled for ``scheduler_plugin_execution_duration_seconds``.
        self.record_plugin_metrics = record_plugin_metrics
        #: Plugins whose PreFilter returned Skip: their Filter does not run.
        self.skip_filter_plugins: frozenset[str] = frozenset()
        #: Plugins whose PreScore returned Skip: their Score does not run.
        self.skip_score_plugins: frozenset[str] = frozenset()
        #: Python PreFilter plugins that narrowed the attempt to some node names (sorted).
        self.pre_filter_node_plugins: tuple[str, ...] = ()
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

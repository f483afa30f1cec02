"""The Python-side default plugins: PrioritySort, SchedulingGates and DefaultBinder.

Built-in Filter/Score plugins run in Rust; these three extension points have nothing
to compute over nodes and live here, with upstream's names and messages.
:func:`default_plugins` returns fresh instances for one framework (DefaultBinder is
bound to its scheduler's API by ``setup``), with DynamicResources
(:mod:`ksched.plugins.dynamic_resources`) and DefaultPreemption
(:mod:`ksched.plugins.default_preemption`) as v1.36 enables them, and the Python
halves of the volume plugins (their PreFilter lookups, Reserve and PreBind;
:func:`kernel_plugin_halves`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import ClusterEventWithHint
from ksched.backend.queue.queue import QueuedPodInfo, priority_sort_key
from ksched.cluster import APIError
from ksched.framework.cycle_state import CycleState
from ksched.framework.status import Code, Status
from ksched.plugins.scheduling_gates import events_to_register as scheduling_gates_events

if TYPE_CHECKING:
    from ksched.cluster import ClusterAPI
    from ksched.framework.interface import Handle

__all__ = ["DefaultBinder", "PrioritySort", "SchedulingGates", "default_plugins"]


class PrioritySort:
    """QueueSort: higher ``spec.priority`` first, then the earlier enqueue time."""

    name = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    #: The queue recognizes this very function and keeps its order flat.
    sort_key = staticmethod(priority_sort_key)


class SchedulingGates:
    """PreEnqueue: a pod with ``spec.schedulingGates`` stays out of activeQ."""

    name = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = pod.scheduling_gates
        if not gates:
            return None
        # Go formats a []string with %v as "[a b]".
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"waiting for scheduling gates: [{' '.join(gates)}]",
        )

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return scheduling_gates_events()


class DefaultBinder:
    """Bind: POST the pod's Binding to the API server."""

    name = "DefaultBinder"

    def __init__(self) -> None:
        self._api: ClusterAPI | None = None

    def setup(self, handle: Handle) -> None:
        self._api = handle.api

    async def bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        if self._api is None:
            return Status(Code.ERROR, "DefaultBinder has no API client", plugin=self.name)
        try:
            await self._api.bind(
                namespace=pod.namespace, name=pod.name, uid=pod.uid, node_name=node
            )
        except (TimeoutError, APIError, OSError) as exc:
            return Status.from_error(exc, self.name)
        return None


def kernel_plugin_halves(
    filters: Iterable[str] | None = None,
    plugin_args: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> list[Any]:
    """Fresh Python halves of the built-in plugins whose Filter/Score run in Rust but
    whose PreFilter reads API objects (the volume plugins) or whose hints read them
    (NodeResourcesFit: the DRA extended resource mapping), for the plugins in
    ``filters`` (None: all of them); VolumeBinding reads ``VolumeBindingArgs`` from
    ``plugin_args``, NodeAffinity's and PodTopologySpread's hints their args
    (``addedAffinity``, ``List`` defaulting's default constraints)."""
    from ksched.plugins.node_affinity import NAME as NODE_AFFINITY
    from ksched.plugins.node_affinity import NodeAffinity
    from ksched.plugins.node_resources_fit import NodeResourcesFit
    from ksched.plugins.node_volume_limits import NodeVolumeLimits
    from ksched.plugins.pod_topology_spread import NAME as POD_TOPOLOGY_SPREAD
    from ksched.plugins.pod_topology_spread import PodTopologySpread
    from ksched.plugins.volume_binding import NAME as VOLUME_BINDING
    from ksched.plugins.volume_binding import VolumeBinding
    from ksched.plugins.volume_restrictions import VolumeRestrictions
    from ksched.plugins.volume_zone import VolumeZone

    halves: list[Any] = [
        NodeResourcesFit(),
        VolumeRestrictions(),
        NodeVolumeLimits(),
        VolumeBinding.from_args((plugin_args or {}).get(VOLUME_BINDING)),
        VolumeZone(),
        NodeAffinity.from_args((plugin_args or {}).get(NODE_AFFINITY)),
        PodTopologySpread.from_args((plugin_args or {}).get(POD_TOPOLOGY_SPREAD)),
    ]
    wanted = None if filters is None else set(filters)
    return [p for p in halves if wanted is None or p.name in wanted]


def default_plugins(
    *,
    post_filter: Iterable[str] | None = None,
    plugin_args: Mapping[str, Mapping[str, Any] | None] | None = None,
    filters: Iterable[str] | None = None,
) -> list[Any]:
    """Fresh instances of the Python-side plugins of v1.36's default profile.

    ``post_filter`` names the profile's enabled PostFilter plugins (None: the default,
    DefaultPreemption); ``plugin_args`` holds ``pluginConfig`` args by plugin name, in
    upstream JSON shape (DefaultPreemption reads ``DefaultPreemptionArgs`` there);
    ``filters`` the profile's Filter plugins, whose Python halves are included (None:
    every one, :func:`kernel_plugin_halves`).
    """
    # Imported here: the plugin modules build on the framework package.
    from ksched.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
    from ksched.plugins.default_preemption import DefaultPreemption
    from ksched.plugins.dynamic_resources import NAME as DYNAMIC_RESOURCES
    from ksched.plugins.dynamic_resources import DynamicResources

    plugins: list[Any] = [
        PrioritySort(),
        SchedulingGates(),
        *kernel_plugin_halves(filters, plugin_args),
    ]
    # DynamicResources comes before DefaultPreemption (upstream applyDynamicResources):
    # deallocating an idle claim is better than evicting a pod.
    if post_filter is None or DYNAMIC_RESOURCES in post_filter:
        plugins.append(DynamicResources.from_args((plugin_args or {}).get(DYNAMIC_RESOURCES)))
    if post_filter is None or DEFAULT_PREEMPTION in post_filter:
        args = (plugin_args or {}).get(DEFAULT_PREEMPTION)
        plugins.append(DefaultPreemption.from_args(args))
    plugins.append(DefaultBinder())
    return plugins

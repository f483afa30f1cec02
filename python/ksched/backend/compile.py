"""Compile parsed pods into the Rust extension's :class:`ksched._core.CompiledPod`.

A pod is compiled once per pod object and the result is reused by every scheduling
attempt and by the cache, until an update brings a new object.
"""

from __future__ import annotations

from typing import Any

from ksched._core import CompiledPod
from ksched.api.pod import Pod, start_time_of
from ksched.api.volume import volume_spec


def compile_pod(pod: Pod, default_spread_selector: dict[str, Any] | None = None) -> CompiledPod:
    """The kernel-side form of ``pod``. ``default_spread_selector`` is the selector of the
    Services/controllers the pod belongs to (:mod:`ksched.backend.controllers`)."""
    return CompiledPod(
        pod.uid,
        pod.namespace,
        pod.name,
        requests=pod.requests,
        non_zero_cpu=pod.non_zero_cpu,
        non_zero_memory=pod.non_zero_memory,
        node_name=pod.node_name,
        nominated_node_name=pod.nominated_node_name,
        tolerations=[(t.key, t.operator, t.value, t.effect) for t in pod.tolerations],
        labels=pod.labels,
        priority=pod.priority,
        node_selector=pod.node_selector,
        affinity=pod.affinity,
        host_ports=pod.host_ports,
        images=pod.images,
        topology_spread_constraints=pod.topology_spread_constraints,
        deleting=pod.deletion_timestamp is not None,
        default_spread_selector=default_spread_selector,
        start_time=start_time_of(pod),
        volumes=volume_spec(pod),
    )

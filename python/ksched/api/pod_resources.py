"""A pod's total requests and limits for ``/metrics/resources`` (component-helpers'
``PodRequests`` and ``PodLimits`` with default options: the spec's containers, sidecars
counted as upstream counts them, pod-level resources when set, plus the overhead).

Separate from :mod:`ksched.api.pod` because the scheduler's parsed pod keeps only what
placement needs (requests in scheduler units); the resource metrics report every
resource with a non-zero total, limits included, as the API objects give them.
"""

from __future__ import annotations

from typing import Any

from ksched.api._parse import resource_nanos
from ksched.api.quantity import NANOS_PER_UNIT
from ksched.api.resources import is_pod_level_resource_name

__all__ = ["pod_requests_and_limits"]

Nanos = dict[str, int]


def _add(into: Nanos, other: Nanos) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: Nanos, other: Nanos) -> None:
    for k, v in other.items():
        if v > into.get(k, 0) or k not in into:
            into[k] = max(v, into.get(k, 0))


def _containers(spec: dict[str, Any], key: str, which: str) -> list[tuple[Nanos, bool]]:
    out = []
    for i, c in enumerate(spec.get(key) or []):
        if not isinstance(c, dict):
            continue
        res = c.get("resources") or {}
        values = resource_nanos(res.get(which), f"spec.{key}[{i}].resources.{which}") or {}
        out.append((values, c.get("restartPolicy") == "Always"))
    return out


def _aggregate(app: list[tuple[Nanos, bool]], init: list[tuple[Nanos, bool]]) -> Nanos:
    total: Nanos = {}
    for r, _ in app:
        _add(total, r)
    sidecars: Nanos = {}
    init_max: Nanos = {}
    for r, restartable in init:
        if restartable:
            _add(total, r)
            _add(sidecars, r)
            need = dict(sidecars)
        else:
            need = dict(r)
            _add(need, sidecars)
        _max_into(init_max, need)
    _max_into(total, init_max)
    return total


def pod_requests_and_limits(pod: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """``(requests, limits)`` of a raw pod, in units (cores, bytes, counts) as
    ``Quantity.AsApproximateFloat64`` gives them; zero totals are left out."""
    spec = pod.get("spec") or {}
    out = []
    for which in ("requests", "limits"):
        total = _aggregate(
            _containers(spec, "containers", which), _containers(spec, "initContainers", which)
        )
        pod_level = resource_nanos((spec.get("resources") or {}).get(which), "spec.resources")
        if pod_level:
            for k, v in pod_level.items():
                if is_pod_level_resource_name(k):
                    total[k] = v
        overhead = resource_nanos(spec.get("overhead"), "spec.overhead") or {}
        if which == "requests":
            _add(total, overhead)
        else:
            # PodLimits adds the overhead only to resources that have a limit.
            for k, v in overhead.items():
                if k in total:
                    total[k] += v
        out.append({k: v / NANOS_PER_UNIT for k, v in total.items() if v})
    return out[0], out[1]

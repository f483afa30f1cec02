"""Resource names and the integer units kube-scheduler stores them in.

kube-scheduler converts every ``ResourceList`` into its ``framework.Resource`` struct
before comparing anything: CPU as millicores (``MilliValue``), everything else, memory,
ephemeral storage, pod counts, hugepages and extended resources, as whole units
(``Value``: bytes or counts). Names that are neither one of the four native resources
nor a *scalar* resource are dropped on the floor (``Resource.Add`` ignores them).
ksched uses the same integers end to end, so the Rust snapshot can hold ``i64`` columns.

The name predicates follow ``k8s.io/kubernetes/pkg/apis/core/v1/helper`` exactly:

* native: no ``/`` in the name, or the name contains ``kubernetes.io/``;
* extended: not native, not starting with ``requests.``, and ``"requests." + name`` is a
  qualified name (DNS-1123 subdomain prefix of at most 253 characters, ``/``, and a name
  part of at most 63 characters);
* scalar: extended, or ``hugepages-*``, or ``*kubernetes.io/*``, or
  ``attachable-volumes-*``.

The predicates are pure functions of a string that is looked up for every container of
every pod, so their answers are memoised.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from ksched.api.quantity import Quantity, nanos_to_milli_value, nanos_to_value

__all__ = [
    "ATTACHABLE_VOLUMES_PREFIX",
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "HUGEPAGES_PREFIX",
    "MEMORY",
    "PODS",
    "amount_from_nanos",
    "is_attachable_volume_resource_name",
    "is_extended_resource_name",
    "is_hugepage_resource_name",
    "is_label_value",
    "is_native_resource_name",
    "is_pod_level_resource_name",
    "is_prefixed_native_resource_name",
    "is_qualified_name",
    "is_scalar_resource_name",
    "is_tracked_resource_name",
    "resource_amount",
]

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
HUGEPAGES_PREFIX: Final = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX: Final = "attachable-volumes-"
_DEFAULT_NAMESPACE_PREFIX: Final = "kubernetes.io/"
_REQUESTS_PREFIX: Final = "requests."

#: Scoring treats a container that requests no CPU as requesting this (0.1 core).
DEFAULT_MILLI_CPU_REQUEST: Final = 100
#: Scoring treats a container that requests no memory as requesting this (200 MiB).
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _is_qualified_name(value: str) -> bool:
    """apimachinery ``validation.IsQualifiedName`` returning no errors."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
            return False
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME_PART.fullmatch(name) is not None


def is_qualified_name(value: str) -> bool:
    """apimachinery ``IsQualifiedName`` (a valid label key)."""
    return _is_qualified_name(value)


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def is_label_value(value: str) -> bool:
    """apimachinery ``IsValidLabelValue``."""
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def is_prefixed_native_resource_name(name: str) -> bool:
    """The name lives in the ``*kubernetes.io/`` namespace."""
    return _DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource_name(name: str) -> bool:
    """Unprefixed names and ``*kubernetes.io/`` names are native."""
    return "/" not in name or _DEFAULT_NAMESPACE_PREFIX in name


@lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """Vendor-domain resources such as ``nvidia.com/gpu`` (upstream rules, see module doc)."""
    if is_native_resource_name(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return _is_qualified_name(_REQUESTS_PREFIX + name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith(ATTACHABLE_VOLUMES_PREFIX)


@lru_cache(maxsize=4096)
def is_scalar_resource_name(name: str) -> bool:
    """Resources kept in ``Resource.ScalarResources``: extended, hugepages, prefixed
    native (``*kubernetes.io/*``) and ``attachable-volumes-*``."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or _DEFAULT_NAMESPACE_PREFIX in name
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


def is_tracked_resource_name(name: str) -> bool:
    """kube-scheduler's ``Resource.Add`` keeps this name (cpu, memory, ephemeral-storage,
    pods or a scalar resource); any other name is ignored."""
    return name in _NATIVE_TRACKED or is_scalar_resource_name(name)


_NATIVE_TRACKED: Final = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE, PODS))


def is_pod_level_resource_name(name: str) -> bool:
    """Resources that pod-level ``spec.resources`` may set (PodLevelResources):
    cpu, memory and ``hugepages-*``."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def amount_from_nanos(name: str, nanos: int) -> int:
    """Canonical scheduler integer for an exact nano count of resource ``name``."""
    if name == CPU:
        return nanos_to_milli_value(nanos)
    return nanos_to_value(nanos)


def resource_amount(name: str, quantity: Quantity) -> int:
    """The integer kube-scheduler stores for ``quantity`` of resource ``name``:
    millicores for ``cpu``, whole units (bytes or counts) for everything else."""
    if name == CPU:
        return quantity.milli_value()
    return quantity.value()

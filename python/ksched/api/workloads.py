"""Workload objects the scheduler reads: pod groups and elastic quotas.

Three kinds, parsed from their decoded JSON like :class:`~ksched.api.pod.Pod`:

* :class:`PodGroup` — ``scheduling.k8s.io/v1alpha2`` (Kubernetes v1.36, behind the
  ``GenericWorkload`` gate). Pods join it through ``spec.schedulingGroup.podGroupName``;
  its ``spec.schedulingPolicy`` is ``basic`` or ``gang`` (``minCount``), and
  ``spec.schedulingConstraints.topology`` names the one topology key v1.36 supports.
* :class:`CoschedulingPodGroup` — the scheduler-plugins CRD
  ``scheduling.x-k8s.io/v1alpha1`` PodGroup (Coscheduling). Pods join it through the
  ``scheduling.x-k8s.io/pod-group`` label.
* :class:`ElasticQuota` — the scheduler-plugins CRD ``scheduling.x-k8s.io/v1alpha1``
  (CapacityScheduling): ``spec.min`` and ``spec.max`` per namespace.

Resource lists are kept as kube-scheduler's ``framework.Resource`` holds them: integer
amounts per resource name (millicores for cpu, whole units otherwise), with only the
names ``Resource.Add`` keeps (cpu, memory, ephemeral-storage, pods and scalar
resources); the plugins that read them rely on exactly that shape.

A malformed object raises :class:`~ksched.api.errors.InvalidObjectError` naming the
object and the field; the plugins report it and treat the object as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ksched.api._parse import (
    FieldError,
    expected,
    opt_int,
    opt_list,
    opt_obj,
    opt_str,
    resource_nanos,
)
from ksched.api.errors import InvalidObjectError
from ksched.api.resources import amount_from_nanos, is_tracked_resource_name

__all__ = [
    "COSCHEDULING_POD_GROUP_LABEL",
    "CoschedulingPodGroup",
    "ElasticQuota",
    "PodGroup",
    "parse_time",
    "resource_list",
]

#: ``v1alpha1.PodGroupLabel``: the label that puts a pod in a Coscheduling PodGroup.
COSCHEDULING_POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 timestamp (``metav1.Time``) as seconds since the epoch."""
    if not text:
        return None
    iso = text[:-1] + "+00:00" if text.endswith("Z") else text
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None


def resource_list(value: object, path: str) -> dict[str, int] | None:
    """A ``v1.ResourceList`` as ``framework.NewResource`` keeps it (None when absent)."""
    nanos = resource_nanos(value, path)
    if nanos is None:
        return None
    return {k: amount_from_nanos(k, v) for k, v in nanos.items() if is_tracked_resource_name(k)}


def _name(obj: object) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "<unknown>"
    ns, name = meta.get("namespace"), meta.get("name")
    return f"{ns}/{name}" if ns else str(name)


def _meta(obj: object) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    if type(obj) is not dict:
        raise expected("", "a JSON object", obj)
    meta = opt_obj(obj.get("metadata"), "metadata") or {}
    spec = opt_obj(obj.get("spec"), "spec") or {}
    status = opt_obj(obj.get("status"), "status") or {}
    return meta, spec, status


def _invalid(kind: str, obj: object, err: FieldError) -> InvalidObjectError:
    return InvalidObjectError(kind, _name(obj), err.field, err.message)


# ---- scheduling.k8s.io/v1alpha2 -----------------------------------------------------------


@dataclass(slots=True, frozen=True)
class PodGroup:
    """A ``scheduling.k8s.io/v1alpha2`` PodGroup, as the scheduler reads it."""

    namespace: str
    name: str
    uid: str
    generation: int
    #: ``spec.schedulingPolicy.gang.minCount``; None for the Basic policy.
    min_count: int | None
    #: ``spec.schedulingConstraints.topology[0].key`` (v1.36 supports one), or None.
    topology_key: str | None
    #: ``spec.schedulingConstraints`` is set (even without a topology).
    has_constraints: bool
    #: ``util.PodGroupPriority``: ``spec.priority``, 0 when unset.
    priority: int
    #: ``status.conditions`` as stored (for the PodGroupScheduled condition).
    conditions: tuple[Mapping[str, Any], ...]
    raw: Mapping[str, Any]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.min_count is not None

    def condition(self, type_: str) -> Mapping[str, Any] | None:
        """``apimeta.FindStatusCondition``."""
        return next((c for c in self.conditions if c.get("type") == type_), None)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> PodGroup:
        """Parse; raises :class:`InvalidObjectError` naming the field."""
        try:
            return _parse_pod_group(cls, obj)
        except FieldError as err:
            raise _invalid("PodGroup", obj, err) from None


def _parse_pod_group(cls: type[PodGroup], obj: dict[str, Any]) -> PodGroup:
    meta, spec, status = _meta(obj)
    policy = opt_obj(spec.get("schedulingPolicy"), "spec.schedulingPolicy") or {}
    gang = opt_obj(policy.get("gang"), "spec.schedulingPolicy.gang")
    min_count: int | None = None
    if gang is not None:
        min_count = opt_int(gang.get("minCount"), "spec.schedulingPolicy.gang.minCount") or 0
    raw_constraints = opt_obj(spec.get("schedulingConstraints"), "spec.schedulingConstraints")
    constraints = raw_constraints or {}
    topology = opt_list(constraints.get("topology"), "spec.schedulingConstraints.topology") or []
    topology_key: str | None = None
    if topology:
        first = opt_obj(topology[0], "spec.schedulingConstraints.topology[0]") or {}
        topology_key = opt_str(first.get("key"), "spec.schedulingConstraints.topology[0].key")
    conditions = opt_list(status.get("conditions"), "status.conditions") or []
    for i, c in enumerate(conditions):
        if type(c) is not dict:
            raise expected(f"status.conditions[{i}]", "an object", c)
    return cls(
        opt_str(meta.get("namespace"), "metadata.namespace"),
        opt_str(meta.get("name"), "metadata.name"),
        opt_str(meta.get("uid"), "metadata.uid"),
        opt_int(meta.get("generation"), "metadata.generation") or 0,
        min_count,
        topology_key,
        raw_constraints is not None,
        opt_int(spec.get("priority"), "spec.priority") or 0,
        tuple(conditions),
        obj,
    )


# ---- scheduling.x-k8s.io/v1alpha1 ---------------------------------------------------------


@dataclass(slots=True, frozen=True)
class CoschedulingPodGroup:
    """A scheduler-plugins ``scheduling.x-k8s.io/v1alpha1`` PodGroup."""

    namespace: str
    name: str
    #: ``metadata.creationTimestamp`` in seconds since the epoch (0 when unset).
    creation_timestamp: float
    min_member: int
    #: ``spec.minResources`` (None when unset).
    min_resources: dict[str, int] | None
    schedule_timeout_seconds: int | None
    phase: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> CoschedulingPodGroup:
        """Parse; raises :class:`InvalidObjectError` naming the field."""
        try:
            meta, spec, status = _meta(obj)
            created = opt_str(meta.get("creationTimestamp"), "metadata.creationTimestamp")
            return cls(
                opt_str(meta.get("namespace"), "metadata.namespace"),
                opt_str(meta.get("name"), "metadata.name"),
                parse_time(created) or 0.0,
                opt_int(spec.get("minMember"), "spec.minMember") or 0,
                resource_list(spec.get("minResources"), "spec.minResources"),
                opt_int(spec.get("scheduleTimeoutSeconds"), "spec.scheduleTimeoutSeconds"),
                opt_str(status.get("phase"), "status.phase"),
            )
        except FieldError as err:
            raise _invalid("PodGroup", obj, err) from None


@dataclass(slots=True, frozen=True)
class ElasticQuota:
    """A scheduler-plugins ``scheduling.x-k8s.io/v1alpha1`` ElasticQuota."""

    namespace: str
    name: str
    #: ``spec.min`` / ``spec.max`` (None when unset).
    min: dict[str, int] | None
    max: dict[str, int] | None

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> ElasticQuota:
        """Parse; raises :class:`InvalidObjectError` naming the field."""
        try:
            meta, spec, _ = _meta(obj)
            return cls(
                opt_str(meta.get("namespace"), "metadata.namespace"),
                opt_str(meta.get("name"), "metadata.name"),
                resource_list(spec.get("min"), "spec.min"),
                resource_list(spec.get("max"), "spec.max"),
            )
        except FieldError as err:
            raise _invalid("ElasticQuota", obj, err) from None

"""The scheduler's view of a Pod, parsed once from API-server JSON.

``Pod.from_dict`` reads the dict produced by ``orjson.loads`` and keeps only what
scheduling needs, precomputed: identity and metadata, placement constraints (node
selector, affinity, tolerations, spread constraints, host ports, scheduling gates) and,
above all, the pod's *effective resource requests* as kube-scheduler computes them. The
original object stays available as ``raw`` for plugins that need more; nothing is deep
copied, so ``raw`` and the parsed maps must be treated as read-only.

Effective requests (``requests``) follow component-helpers ``PodRequests`` as kube-scheduler
v1.36 calls it, with exact (nano-unit) arithmetic until the final conversion:

1. sum the app containers' requests;
2. walk the init containers in order: a restartable one (``restartPolicy: Always``, a
   sidecar) is added to the running sum *and* to a cumulative sidecar total; a regular
   one needs its own requests plus the sidecars started before it; the pod needs the
   per-resource max of the sum and of every init container's need;
3. if pod-level ``spec.resources.requests`` sets a supported resource (cpu, memory,
   ``hugepages-*``), that value replaces the aggregate for that resource;
4. add ``spec.overhead``;
5. convert with ``framework.Resource.Add`` rules: cpu in millicores, everything else in
   whole units, names kube-scheduler does not track (``pods``, unknown unprefixed names)
   dropped; zero entries are dropped here too.

For an assigned pod (``spec.nodeName`` set) the container terms are, as in
``PodInfo.CalculateResource`` with InPlacePodVerticalScaling (GA), the per-resource max of
the spec, the allocated (``containerStatuses[].allocatedResources``) and the actuated
(``containerStatuses[].resources.requests``) requests, or only the latter two while a
resize is ``Infeasible``. Unassigned pods use the spec only, as NodeResourcesFit's
PreFilter does; the two agree for any pod without resize status.

``non_zero_cpu``/``non_zero_memory`` repeat the computation with upstream's
non-missing-container-requests option: every container (init containers included) that
does not name cpu (memory) counts 100m (200Mi). When pod-level requests are set, the
default applies only to a resource the effective requests above do not mention at all.

Left out on purpose: DRA node-allocatable claim statuses and pod-level in-place resize
status (both alpha and off by default in v1.36).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ksched.api._parse import (
    FieldError,
    json_type,
    opt_int,
    opt_list,
    opt_obj,
    opt_str,
    opt_str_or_none,
    quantity_error_message,
    resource_nanos,
    str_map,
)
from ksched.api.errors import InvalidObjectError, QuantityError
from ksched.api.quantity import NANOS_PER_UNIT, nanos_to_milli_value, nanos_to_value
from ksched.api.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_pod_level_resource_name,
    is_scalar_resource_name,
)

__all__ = [
    "DEFAULT_PREEMPTION_POLICY",
    "DEFAULT_SCHEDULER_NAME",
    "Pod",
    "Toleration",
]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_PREEMPTION_POLICY: Final = "PreemptLowerPriority"

_DEFAULT_CPU_NANOS: Final = DEFAULT_MILLI_CPU_REQUEST * (NANOS_PER_UNIT // 1000)
_DEFAULT_MEMORY_NANOS: Final = DEFAULT_MEMORY_REQUEST * NANOS_PER_UNIT
_NON_MISSING_DEFAULTS: Final = {CPU: _DEFAULT_CPU_NANOS, MEMORY: _DEFAULT_MEMORY_NANOS}

ResourceNanos = dict[str, int]


@dataclass(slots=True)
class Toleration:
    """One entry of ``spec.tolerations``.

    ``operator`` is ``"Equal"`` when the object leaves it empty; ``effect == ""`` tolerates
    every effect; ``toleration_seconds`` is None when unset.
    """

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@dataclass(slots=True, eq=False, repr=False)
class Pod:
    """A parsed pod. Build with :meth:`from_dict`; treat every field as read-only."""

    uid: str
    namespace: str
    name: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str
    node_name: str
    nominated_node_name: str
    priority: int
    preemption_policy: str
    phase: str
    deletion_timestamp: str | None
    creation_timestamp: str | None
    #: Effective requests in scheduler units (cpu: millicores, others: bytes/counts).
    requests: dict[str, int]
    #: CPU request in millicores with 100m assumed for containers that request none.
    non_zero_cpu: int
    #: Memory request in bytes with 200Mi assumed for containers that request none.
    non_zero_memory: int
    tolerations: list[Toleration]
    node_selector: dict[str, str]
    affinity: dict[str, Any] | None
    #: ``(protocol, host_ip, host_port)`` for every container port with hostPort > 0.
    host_ports: list[tuple[str, str, int]]
    topology_spread_constraints: list[dict[str, Any]]
    scheduling_gates: list[str]
    #: Images of the init containers, then of the app containers.
    images: list[str]
    raw: dict[str, Any]

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        """The pod has finished (phase Succeeded or Failed)."""
        return self.phase == "Succeeded" or self.phase == "Failed"

    @property
    def is_assigned(self) -> bool:
        """The pod is bound to a node (``spec.nodeName`` is set)."""
        return self.node_name != ""

    def __repr__(self) -> str:
        return f"Pod({self.key!r}, uid={self.uid!r}, node={self.node_name!r})"

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Pod:
        """Parse a Pod from its decoded JSON.

        Raises:
            InvalidObjectError: any field has the wrong shape or an invalid quantity;
                the error names ``namespace/name`` and the field's JSON path.
        """
        try:
            return _parse_pod(cls, obj)
        except FieldError as err:
            raise InvalidObjectError("Pod", _pod_name(obj), err.field, err.message) from None
        except QuantityError as err:  # pragma: no cover - parsers convert these already
            raise InvalidObjectError(
                "Pod", _pod_name(obj), err.field, quantity_error_message(err)
            ) from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
            # Defensive: a shape the checks above missed still yields the documented error.
            raise InvalidObjectError("Pod", _pod_name(obj), "", f"malformed pod: {err!r}") from None


def _pod_name(obj: object) -> str:
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is not dict:
        return "<unknown>"
    ns, name = meta.get("namespace"), meta.get("name")
    ns = ns if type(ns) is str else ""
    return f"{ns}/{name}" if type(name) is str else f"{ns}/<unknown>"


class _Container:
    """What the request computation needs from one container."""

    __slots__ = ("name", "requests", "restartable")

    def __init__(self, name: str, requests: ResourceNanos | None, restartable: bool) -> None:
        self.name = name
        self.requests = requests
        self.restartable = restartable


def _parse_containers(
    value: object,
    path: str,
    images: list[str],
    host_ports: list[tuple[str, str, int]],
    init: bool,
) -> list[_Container]:
    items = opt_list(value, path)
    if not items:
        return []
    out: list[_Container] = []
    for i, c in enumerate(items):
        if type(c) is not dict:
            raise FieldError(f"{path}[{i}]", f"expected an object, got {json_type(c)}")
        name = c.get("name", "")
        if type(name) is not str:
            raise FieldError(f"{path}[{i}].name", f"expected a string, got {json_type(name)}")
        image = c.get("image", "")
        if type(image) is not str:
            if image is not None:
                raise FieldError(f"{path}[{i}].image", f"expected a string, got {json_type(image)}")
            image = ""
        images.append(image)
        policy = c.get("restartPolicy")
        if policy is not None and type(policy) is not str:
            raise FieldError(
                f"{path}[{i}].restartPolicy", f"expected a string, got {json_type(policy)}"
            )
        restartable = init and policy == "Always"
        requests: ResourceNanos | None = None
        res = c.get("resources")
        if res is not None:
            if type(res) is not dict:
                raise FieldError(
                    f"{path}[{i}].resources", f"expected an object, got {json_type(res)}"
                )
            req = res.get("requests")
            if req is not None:
                requests = resource_nanos(req, f"{path}[{i}].resources.requests")
        ports = c.get("ports")
        if ports is not None and (restartable or not init):
            _parse_ports(ports, f"{path}[{i}].ports", host_ports)
        out.append(_Container(name, requests, restartable))
    return out


def _parse_ports(value: object, path: str, host_ports: list[tuple[str, str, int]]) -> None:
    items = opt_list(value, path)
    if not items:
        return
    for j, p in enumerate(items):
        if type(p) is not dict:
            raise FieldError(f"{path}[{j}]", f"expected an object, got {json_type(p)}")
        host_port = opt_int(p.get("hostPort"), f"{path}[{j}].hostPort")
        if host_port is None or host_port <= 0:
            continue
        protocol = opt_str(p.get("protocol"), f"{path}[{j}].protocol") or "TCP"
        host_ip = opt_str(p.get("hostIP"), f"{path}[{j}].hostIP") or "0.0.0.0"
        host_ports.append((protocol, host_ip, host_port))


def _parse_tolerations(value: object, path: str) -> list[Toleration]:
    items = opt_list(value, path)
    if not items:
        return []
    out: list[Toleration] = []
    for i, t in enumerate(items):
        if type(t) is not dict:
            raise FieldError(f"{path}[{i}]", f"expected an object, got {json_type(t)}")
        tp = f"{path}[{i}]"
        out.append(
            Toleration(
                opt_str(t.get("key"), tp + ".key"),
                opt_str(t.get("operator"), tp + ".operator") or "Equal",
                opt_str(t.get("value"), tp + ".value"),
                opt_str(t.get("effect"), tp + ".effect"),
                opt_int(t.get("tolerationSeconds"), tp + ".tolerationSeconds"),
            )
        )
    return out


def _parse_object_list(value: object, path: str) -> list[dict[str, Any]]:
    items = opt_list(value, path)
    if not items:
        return []
    for i, item in enumerate(items):
        if type(item) is not dict:
            raise FieldError(f"{path}[{i}]", f"expected an object, got {json_type(item)}")
    return items


def _parse_gates(value: object, path: str) -> list[str]:
    gates = _parse_object_list(value, path)
    return [opt_str(g.get("name"), f"{path}[{i}].name") for i, g in enumerate(gates)]


# --- effective requests -------------------------------------------------------------


def _add(into: ResourceNanos, other: ResourceNanos) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: ResourceNanos, other: ResourceNanos) -> None:
    """Upstream ``maxResourceList``: a key new to ``into`` is always copied."""
    for k, v in other.items():
        cur = into.get(k)
        if cur is None or v > cur:
            into[k] = v


def _with_defaults(requests: ResourceNanos | None, defaults: ResourceNanos) -> ResourceNanos:
    """Upstream ``applyNonMissing``: add a default for each resource not named."""
    if not requests:
        return dict(defaults)
    out = dict(requests)
    for k, v in defaults.items():
        if k not in requests:
            out[k] = v
    return out


def _aggregate(
    app: list[ResourceNanos | None],
    init: list[tuple[ResourceNanos | None, bool]],
    defaults: ResourceNanos | None,
) -> ResourceNanos:
    """Container-level pod requests (sidecar-aware), as ``aggregateContainerResourcesByFn``."""
    result: ResourceNanos = {}
    for r in app:
        if defaults:
            r = _with_defaults(r, defaults)
        if r:
            _add(result, r)
    if not init:
        return result
    sidecars: ResourceNanos = {}
    init_max: ResourceNanos = {}
    for r, restartable in init:
        if defaults:
            r = _with_defaults(r, defaults)
        if restartable:
            if r:
                _add(result, r)
                _add(sidecars, r)
            need = sidecars
        else:
            need = dict(r) if r else {}
            _add(need, sidecars)
        _max_into(init_max, need)
    _max_into(result, init_max)
    return result


class _StatusView:
    """Per-container resource status of an assigned pod, for in-place resize."""

    __slots__ = ("by_name", "infeasible")

    def __init__(
        self,
        by_name: dict[str, tuple[ResourceNanos | None, ResourceNanos | None]],
        infeasible: bool,
    ) -> None:
        self.by_name = by_name
        self.infeasible = infeasible

    def allocated(self, c: _Container) -> ResourceNanos | None:
        cs = self.by_name.get(c.name)
        if cs is not None and cs[0] is not None:
            return cs[0]
        return None if self.infeasible else c.requests

    def actuated(self, c: _Container) -> ResourceNanos | None:
        cs = self.by_name.get(c.name)
        if cs is not None:
            if cs[1] is not None:
                return cs[1]
            if cs[0] is not None:
                return cs[0]
        return None if self.infeasible else c.requests


def _parse_status_view(status: dict[str, Any]) -> _StatusView | None:
    """Resource status relevant to requests, or None when it cannot change them."""
    infeasible = False
    conditions = opt_list(status.get("conditions"), "status.conditions")
    if conditions:
        for i, cond in enumerate(conditions):
            if type(cond) is not dict:
                raise FieldError(
                    f"status.conditions[{i}]", f"expected an object, got {json_type(cond)}"
                )
            if cond.get("type") == "PodResizePending":
                infeasible = cond.get("reason") == "Infeasible"
                break
    by_name: dict[str, tuple[ResourceNanos | None, ResourceNanos | None]] = {}
    any_resources = False
    for field in ("containerStatuses", "initContainerStatuses"):
        path = f"status.{field}"
        statuses = opt_list(status.get(field), path)
        if not statuses:
            continue
        for i, cs in enumerate(statuses):
            if type(cs) is not dict:
                raise FieldError(f"{path}[{i}]", f"expected an object, got {json_type(cs)}")
            name = opt_str(cs.get("name"), f"{path}[{i}].name")
            allocated = resource_nanos(
                cs.get("allocatedResources"), f"{path}[{i}].allocatedResources"
            )
            actual = opt_obj(cs.get("resources"), f"{path}[{i}].resources")
            actuated = (
                resource_nanos(actual.get("requests"), f"{path}[{i}].resources.requests")
                if actual is not None
                else None
            )
            if allocated is not None or actuated is not None:
                any_resources = True
            by_name.setdefault(name, (allocated, actuated))
    if not any_resources and not infeasible:
        return None
    return _StatusView(by_name, infeasible)


def _pod_requests(
    app: list[_Container],
    init: list[_Container],
    status: _StatusView | None,
    pod_level: ResourceNanos | None,
    overhead: ResourceNanos | None,
    defaults: ResourceNanos | None,
) -> ResourceNanos:
    """component-helpers ``PodRequests`` in exact nanos (key presence preserved)."""
    spec = _aggregate(
        [c.requests for c in app], [(c.requests, c.restartable) for c in init], defaults
    )
    if status is None:
        reqs = spec
    else:
        allocated = _aggregate(
            [status.allocated(c) for c in app],
            [(status.allocated(c), c.restartable) for c in init],
            defaults,
        )
        actuated = _aggregate(
            [status.actuated(c) for c in app],
            [(status.actuated(c), c.restartable) for c in init],
            defaults,
        )
        if status.infeasible:
            reqs = actuated
            _max_into(reqs, allocated)
        else:
            reqs = spec
            _max_into(reqs, actuated)
            _max_into(reqs, allocated)
    if pod_level:
        for k, v in pod_level.items():
            if is_pod_level_resource_name(k):
                reqs[k] = v
    if overhead:
        _add(reqs, overhead)
    return reqs


def _to_scheduler_units(reqs: ResourceNanos) -> dict[str, int]:
    """``framework.Resource.Add`` conversion; untracked names and zeros dropped."""
    out: dict[str, int] = {}
    for name, nanos in reqs.items():
        if not nanos:
            continue
        if name == CPU:
            amount = nanos_to_milli_value(nanos)
        elif name in (MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name):
            amount = nanos_to_value(nanos)
        else:
            continue
        if amount:
            out[name] = amount
    return out


# --- the parser ---------------------------------------------------------------------


def _parse_pod(cls: type[Pod], obj: dict[str, Any]) -> Pod:
    if type(obj) is not dict:
        raise FieldError("", f"expected a JSON object, got {json_type(obj)}")
    meta = opt_obj(obj.get("metadata"), "metadata") or {}
    spec = opt_obj(obj.get("spec"), "spec") or {}
    status = opt_obj(obj.get("status"), "status") or {}

    node_name = opt_str(spec.get("nodeName"), "spec.nodeName")
    priority = opt_int(spec.get("priority"), "spec.priority")

    images: list[str] = []
    host_ports: list[tuple[str, str, int]] = []
    # Restartable init containers' host ports come first, as upstream GetHostPorts lists them.
    init = _parse_containers(
        spec.get("initContainers"), "spec.initContainers", images, host_ports, True
    )
    app = _parse_containers(spec.get("containers"), "spec.containers", images, host_ports, False)

    overhead = resource_nanos(spec.get("overhead"), "spec.overhead")
    pod_level: ResourceNanos | None = None
    pod_resources = opt_obj(spec.get("resources"), "spec.resources")
    if pod_resources is not None:
        pod_level = resource_nanos(pod_resources.get("requests"), "spec.resources.requests")
        if pod_level and not any(is_pod_level_resource_name(k) for k in pod_level):
            pod_level = None  # IsPodLevelRequestsSet: only supported names count

    status_view = _parse_status_view(status) if node_name else None

    reqs = _pod_requests(app, init, status_view, pod_level, overhead, None)
    if pod_level is None:
        defaults: ResourceNanos = _NON_MISSING_DEFAULTS
    else:
        defaults = {k: v for k, v in _NON_MISSING_DEFAULTS.items() if k not in reqs}
    non_zero = (
        _pod_requests(app, init, status_view, pod_level, overhead, defaults) if defaults else reqs
    )

    affinity = opt_obj(spec.get("affinity"), "spec.affinity")
    creation = opt_str_or_none(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    deletion = opt_str_or_none(meta.get("deletionTimestamp"), "metadata.deletionTimestamp")

    return cls(
        uid=opt_str(meta.get("uid"), "metadata.uid"),
        namespace=opt_str(meta.get("namespace"), "metadata.namespace"),
        name=opt_str(meta.get("name"), "metadata.name"),
        resource_version=opt_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        labels=str_map(meta.get("labels"), "metadata.labels"),
        annotations=str_map(meta.get("annotations"), "metadata.annotations"),
        scheduler_name=opt_str(
            spec.get("schedulerName"), "spec.schedulerName", DEFAULT_SCHEDULER_NAME
        )
        or DEFAULT_SCHEDULER_NAME,
        node_name=node_name,
        nominated_node_name=opt_str(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        priority=priority or 0,
        preemption_policy=opt_str(spec.get("preemptionPolicy"), "spec.preemptionPolicy")
        or DEFAULT_PREEMPTION_POLICY,
        phase=opt_str(status.get("phase"), "status.phase"),
        deletion_timestamp=deletion,
        creation_timestamp=creation,
        requests=_to_scheduler_units(reqs),
        non_zero_cpu=nanos_to_milli_value(non_zero.get(CPU, 0)),
        non_zero_memory=nanos_to_value(non_zero.get(MEMORY, 0)),
        tolerations=_parse_tolerations(spec.get("tolerations"), "spec.tolerations"),
        node_selector=str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        affinity=affinity,
        host_ports=host_ports,
        topology_spread_constraints=_parse_object_list(
            spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints"
        ),
        scheduling_gates=_parse_gates(spec.get("schedulingGates"), "spec.schedulingGates"),
        images=images,
        raw=obj,
    )

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

``required_features`` are the node declared features scheduling the pod needs
(:func:`ksched.api.declared_features.infer_for_pod_scheduling`, read from the spec once
per pod object), which NodeDeclaredFeatures checks against each node's.

``Pod.from_dict(obj, like=sibling)`` reuses what ``sibling`` (a pending pod parsed
before) derived from its spec when ``obj``'s spec holds the very same value objects under
the same keys, which is what the informer's value sharing
(:func:`ksched.client.informer.share_unchanged`) makes of pods stamped from one template
(a ReplicaSet's or Job's): only the metadata and the status fields are parsed then. The
spec-derived fields are pure functions of those values (a pending pod's status plays no
part in them), so the result is the one a full parse gives; informer objects are
read-only, which makes identity stand for equality.

Left out on purpose: DRA node-allocatable claim statuses and pod-level in-place resize
status (both alpha and off by default in v1.36).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ksched.api._parse import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    FieldError,
    expected,
    json_type,
    opt_int32,
    opt_int64,
    opt_list,
    opt_obj,
    opt_str,
    quantity_error_message,
    resource_nanos,
    str_map,
)
from ksched.api.declared_features import infer_for_pod_scheduling
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
    "start_time_of",
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
    #: What NodeResourcesFit's Score counts when that differs from ``non_zero_cpu``,
    #: ``non_zero_memory`` and ``requests``: for a pod with pod-level requests, the
    #: containers' requests (100m/200Mi for a container missing cpu/memory) plus overhead,
    #: pod-level requests ignored as upstream's Fit scorer does. None otherwise.
    fit_score_requests: dict[str, int] | None
    tolerations: list[Toleration]
    node_selector: dict[str, str]
    affinity: dict[str, Any] | None
    #: ``(protocol, host_ip, host_port)`` for every container port with hostPort > 0.
    host_ports: list[tuple[str, str, int]]
    topology_spread_constraints: list[dict[str, Any]]
    scheduling_gates: list[str]
    #: Images of the init containers, then of the app containers.
    images: list[str]
    #: ``spec.volumes[].image.reference`` of the image volumes (ImageLocality counts
    #: them, but not in its per-container threshold).
    image_volumes: list[str]
    raw: dict[str, Any]
    #: ``spec.schedulingGroup.podGroupName``: the scheduling.k8s.io PodGroup the pod
    #: belongs to ("" for none).
    scheduling_group: str = ""
    #: The node declared features scheduling the pod requires, sorted
    #: (:func:`ksched.api.declared_features.infer_for_pod_scheduling`).
    required_features: tuple[str, ...] = ()

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
    def from_dict(cls, obj: dict[str, Any], like: Pod | None = None) -> Pod:
        """Parse a Pod from its decoded JSON. ``like``: a pending pod parsed before,
        whose spec-derived fields are reused when ``obj``'s spec shares every value with
        its spec (see the module docstring); ``obj`` is parsed in full otherwise.

        Raises:
            InvalidObjectError: any field has the wrong shape or an invalid quantity;
                the error names ``namespace/name`` and the field's JSON path.
        """
        try:
            if like is not None:
                pod = _parse_like(cls, obj, like)
                if pod is not None:
                    return pod
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


_start_times: dict[str, float] = {}


def start_time_of(pod: Pod) -> float | None:
    """``status.startTime`` in seconds since the epoch; None for a pod that has not
    started or whose start time does not parse (upstream ``GetPodStartTime`` is nil)."""
    text = (pod.raw.get("status") or {}).get("startTime")
    if not isinstance(text, str):
        return None
    found = _start_times.get(text)
    if found is None:
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        found = parsed.timestamp()
        if len(_start_times) > 100_000:
            _start_times.clear()
        _start_times[text] = found
    return found


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
    if type(value) is not list:
        if value is None:
            return []
        raise expected(path, "an array", value)
    out: list[_Container] = []
    for i, c in enumerate(value):
        try:
            out.append(_parse_container(c, images, host_ports, init))
        except FieldError as err:
            raise err.within(f"{path}[{i}]") from None
    return out


def _parse_container(
    c: object, images: list[str], host_ports: list[tuple[str, str, int]], init: bool
) -> _Container:
    """One container; errors carry paths relative to the container."""
    if type(c) is not dict:
        raise expected("", "an object", c)
    name = c.get("name", "")
    if type(name) is not str:
        name = opt_str(name, "name")
    image = c.get("image", "")
    if type(image) is not str:
        image = opt_str(image, "image")
    images.append(image)
    restartable = False
    if init:
        policy = c.get("restartPolicy")
        if policy is not None and type(policy) is not str:
            raise expected("restartPolicy", "a string", policy)
        restartable = policy == "Always"
    requests: ResourceNanos | None = None
    res = c.get("resources")
    if res is not None:
        if type(res) is not dict:
            raise expected("resources", "an object", res)
        req = res.get("requests")
        if req is not None:
            requests = resource_nanos(req, "resources.requests")
    ports = c.get("ports")
    # Host ports of app and restartable init containers (upstream GetHostPorts).
    if ports is not None and (restartable or not init):
        _parse_ports(ports, host_ports)
    return _Container(name, requests, restartable)


def _parse_ports(value: object, host_ports: list[tuple[str, str, int]]) -> None:
    if type(value) is not list:
        raise expected("ports", "an array", value)
    for j, p in enumerate(value):
        if type(p) is not dict:
            raise expected(f"ports[{j}]", "an object", p)
        host_port = p.get("hostPort")
        if host_port is None:
            continue
        if type(host_port) is not int or not INT32_MIN <= host_port <= INT32_MAX:
            host_port = opt_int32(host_port, f"ports[{j}].hostPort")
            assert host_port is not None
        if host_port <= 0:
            continue
        protocol = opt_str(p.get("protocol"), f"ports[{j}].protocol") or "TCP"
        host_ip = opt_str(p.get("hostIP"), f"ports[{j}].hostIP") or "0.0.0.0"
        host_ports.append((protocol, host_ip, host_port))


def _parse_tolerations(value: object, path: str) -> list[Toleration]:
    if type(value) is not list:
        if value is None:
            return []
        raise expected(path, "an array", value)
    out: list[Toleration] = []
    for i, t in enumerate(value):
        if type(t) is dict:
            key = t.get("key", "")
            op = t.get("operator", "")
            val = t.get("value", "")
            effect = t.get("effect", "")
            seconds = t.get("tolerationSeconds")
            if (
                type(key) is str
                and type(op) is str
                and type(val) is str
                and type(effect) is str
                and (
                    seconds is None or (type(seconds) is int and INT64_MIN <= seconds <= INT64_MAX)
                )
            ):
                out.append(Toleration(key, op or "Equal", val, effect, seconds))
                continue
        out.append(_parse_toleration_checked(t, f"{path}[{i}]"))
    return out


def _parse_toleration_checked(t: object, tp: str) -> Toleration:
    """The slow path: nulls and type errors, with precise field paths."""
    if type(t) is not dict:
        raise expected(tp, "an object", t)
    return Toleration(
        opt_str(t.get("key"), tp + ".key"),
        opt_str(t.get("operator"), tp + ".operator") or "Equal",
        opt_str(t.get("value"), tp + ".value"),
        opt_str(t.get("effect"), tp + ".effect"),
        opt_int64(t.get("tolerationSeconds"), tp + ".tolerationSeconds"),
    )


def _parse_object_list(value: object, path: str) -> list[dict[str, Any]]:
    if type(value) is not list:
        if value is None:
            return []
        raise expected(path, "an array", value)
    for i, item in enumerate(value):
        if type(item) is not dict:
            raise expected(f"{path}[{i}]", "an object", item)
    return value


def _parse_image_volumes(value: object, path: str) -> list[str]:
    """The references of the pod's image volumes, in ``spec.volumes`` order."""
    refs: list[str] = []
    for i, v in enumerate(_parse_object_list(value, path)):
        image = v.get("image")
        if image is None:
            continue
        if type(image) is not dict:
            raise expected(f"{path}[{i}].image", "an object", image)
        refs.append(opt_str(image.get("reference"), f"{path}[{i}].image.reference"))
    return refs


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


def _str_field(d: dict[str, Any], key: str, path: str, default: str = "") -> str:
    """``d[key]`` as a string; absent or null gives ``default``."""
    v = d.get(key, default)
    if type(v) is str:
        return v
    return opt_str(v, path, default)


def _simple_requests(
    app: list[_Container], overhead: ResourceNanos | None
) -> tuple[ResourceNanos, int, int]:
    """Fast path of the request computation for the common pod shape (app containers
    only, no pod-level requests, no resize status): one pass yields the effective
    requests and the non-zero cpu/memory nanos."""
    reqs: ResourceNanos = {}
    cpu = mem = 0
    for c in app:
        r = c.requests
        if r:
            for k, v in r.items():
                reqs[k] = reqs.get(k, 0) + v
            cpu += r.get(CPU, _DEFAULT_CPU_NANOS)
            mem += r.get(MEMORY, _DEFAULT_MEMORY_NANOS)
        else:
            cpu += _DEFAULT_CPU_NANOS
            mem += _DEFAULT_MEMORY_NANOS
    if overhead:
        for k, v in overhead.items():
            reqs[k] = reqs.get(k, 0) + v
        cpu += overhead.get(CPU, 0)
        mem += overhead.get(MEMORY, 0)
    return reqs, cpu, mem


def _section(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` as an object ({} when absent or null)."""
    value = obj.get(key)
    if type(value) is dict:
        return value
    return opt_obj(value, key) or {}


def _timestamps(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """``metadata.creationTimestamp`` and ``metadata.deletionTimestamp``."""
    creation = meta.get("creationTimestamp")
    if creation is not None and type(creation) is not str:
        raise expected("metadata.creationTimestamp", "a string", creation)
    deletion = meta.get("deletionTimestamp")
    if deletion is not None and type(deletion) is not str:
        raise expected("metadata.deletionTimestamp", "a string", deletion)
    return creation, deletion


_ABSENT: Final = object()


def _parse_like(cls: type[Pod], obj: dict[str, Any], like: Pod) -> Pod | None:
    """``obj`` parsed with ``like``'s spec-derived fields, when both are pending pods
    and ``obj``'s spec has exactly ``like``'s keys, each with the very same value
    object; None otherwise (the caller parses in full)."""
    if type(obj) is not dict or like.node_name:
        return None
    spec = obj.get("spec")
    old = like.raw.get("spec")
    if type(spec) is not dict or type(old) is not dict or len(spec) != len(old):
        return None
    for key, value in spec.items():
        if old.get(key, _ABSENT) is not value:
            return None
    meta = _section(obj, "metadata")
    status = _section(obj, "status")
    creation, deletion = _timestamps(meta)
    return cls(
        _str_field(meta, "uid", "metadata.uid"),
        _str_field(meta, "namespace", "metadata.namespace"),
        _str_field(meta, "name", "metadata.name"),
        _str_field(meta, "resourceVersion", "metadata.resourceVersion"),
        str_map(meta.get("labels"), "metadata.labels"),
        str_map(meta.get("annotations"), "metadata.annotations"),
        like.scheduler_name,
        "",
        _str_field(status, "nominatedNodeName", "status.nominatedNodeName"),
        like.priority,
        like.preemption_policy,
        _str_field(status, "phase", "status.phase"),
        deletion,
        creation,
        like.requests,
        like.non_zero_cpu,
        like.non_zero_memory,
        like.fit_score_requests,
        like.tolerations,
        like.node_selector,
        like.affinity,
        like.host_ports,
        like.topology_spread_constraints,
        like.scheduling_gates,
        like.images,
        like.image_volumes,
        obj,
        like.scheduling_group,
        like.required_features,
    )


def _parse_pod(cls: type[Pod], obj: dict[str, Any]) -> Pod:
    if type(obj) is not dict:
        raise expected("", "a JSON object", obj)
    meta = _section(obj, "metadata")
    spec = _section(obj, "spec")
    status = _section(obj, "status")

    node_name = _str_field(spec, "nodeName", "spec.nodeName")
    priority = spec.get("priority")
    if type(priority) is not int or not INT32_MIN <= priority <= INT32_MAX:
        priority = opt_int32(priority, "spec.priority") or 0

    images: list[str] = []
    host_ports: list[tuple[str, str, int]] = []
    # Restartable init containers' host ports come first, as upstream GetHostPorts lists them.
    init = _parse_containers(
        spec.get("initContainers"), "spec.initContainers", images, host_ports, True
    )
    app = _parse_containers(spec.get("containers"), "spec.containers", images, host_ports, False)

    overhead = resource_nanos(spec.get("overhead"), "spec.overhead")
    pod_level: ResourceNanos | None = None
    pod_resources = spec.get("resources")
    if pod_resources is not None:
        if type(pod_resources) is not dict:
            raise expected("spec.resources", "an object", pod_resources)
        pod_level = resource_nanos(pod_resources.get("requests"), "spec.resources.requests")
        if pod_level and not any(is_pod_level_resource_name(k) for k in pod_level):
            pod_level = None  # IsPodLevelRequestsSet: only supported names count

    status_view = _parse_status_view(status) if node_name else None

    if not init and pod_level is None and status_view is None:
        reqs, non_zero_cpu, non_zero_mem = _simple_requests(app, overhead)
    else:
        reqs = _pod_requests(app, init, status_view, pod_level, overhead, None)
        if pod_level is None:
            defaults: ResourceNanos = _NON_MISSING_DEFAULTS
        else:
            defaults = {k: v for k, v in _NON_MISSING_DEFAULTS.items() if k not in reqs}
        non_zero = (
            _pod_requests(app, init, status_view, pod_level, overhead, defaults)
            if defaults
            else reqs
        )
        non_zero_cpu = non_zero.get(CPU, 0)
        non_zero_mem = non_zero.get(MEMORY, 0)
    fit_score: dict[str, int] | None = None
    if pod_level is not None:
        # Upstream NewFit's resourceAllocationScorer is built without
        # enablePodLevelResources (calculatePodResourceRequest then skips pod-level
        # requests) nor in-place resize status: NodeResourcesFit scores the containers'
        # requests while its Filter uses the pod-level ones. Mirrored as upstream does it.
        fit_score = _to_scheduler_units(
            _pod_requests(app, init, None, None, overhead, _NON_MISSING_DEFAULTS)
        )

    affinity = spec.get("affinity")
    if affinity is not None and type(affinity) is not dict:
        raise expected("spec.affinity", "an object", affinity)
    creation, deletion = _timestamps(meta)
    spread = spec.get("topologySpreadConstraints")
    gates = spec.get("schedulingGates")
    volumes = spec.get("volumes")
    group = spec.get("schedulingGroup")
    group_name = ""
    if group is not None:
        if type(group) is not dict:
            raise expected("spec.schedulingGroup", "an object", group)
        group_name = _str_field(group, "podGroupName", "spec.schedulingGroup.podGroupName")

    return cls(
        _str_field(meta, "uid", "metadata.uid"),
        _str_field(meta, "namespace", "metadata.namespace"),
        _str_field(meta, "name", "metadata.name"),
        _str_field(meta, "resourceVersion", "metadata.resourceVersion"),
        str_map(meta.get("labels"), "metadata.labels"),
        str_map(meta.get("annotations"), "metadata.annotations"),
        _str_field(spec, "schedulerName", "spec.schedulerName") or DEFAULT_SCHEDULER_NAME,
        node_name,
        _str_field(status, "nominatedNodeName", "status.nominatedNodeName"),
        priority,
        _str_field(spec, "preemptionPolicy", "spec.preemptionPolicy") or DEFAULT_PREEMPTION_POLICY,
        _str_field(status, "phase", "status.phase"),
        deletion,
        creation,
        _to_scheduler_units(reqs),
        nanos_to_milli_value(non_zero_cpu),
        nanos_to_value(non_zero_mem),
        fit_score,
        _parse_tolerations(spec.get("tolerations"), "spec.tolerations"),
        str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        affinity,
        host_ports,
        _parse_object_list(spread, "spec.topologySpreadConstraints") if spread else [],
        _parse_gates(gates, "spec.schedulingGates") if gates else [],
        images,
        _parse_image_volumes(volumes, "spec.volumes") if volumes else [],
        obj,
        group_name,
        infer_for_pod_scheduling(spec),
    )

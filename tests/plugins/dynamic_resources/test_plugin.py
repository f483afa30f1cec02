"""DynamicResources in the whole scheduler on the embedded cluster: claims are allocated
and reserved before binding, two pods never get one device, and the failure messages
and gating are upstream's (cases after upstream's ``dynamicresources_test.go``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.status import Code
from ksched.plugins.dynamic_resources import DynamicResources, _compute_score
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import parsed_pod
from tests.plugins.dynamic_resources.fixtures import device, device_class, slice_with_devices
from tests.unit.core.test_scheduler_embedded import Running

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def gpu_slice(node: str, n: int, model: str = "a100") -> Obj:
    """One pool per node and model, as a GPU driver would publish it."""
    devs = [device(f"gpu-{i}", {"memory": "40Gi"}, {"model": {"string": model}}) for i in range(n)]
    pool = node if model == "a100" else f"{node}-{model}"
    return slice_with_devices(f"{pool}-gpus", node, pool, DRIVER, *devs)


def claim(name: str, *selectors: str, count: int = 1) -> Obj:
    exactly: Obj = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def pod_with_claims(name: str, *claims: str) -> Obj:
    pod = make_pod(name, cpu="100m", memory="100Mi")
    pod["spec"]["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return pod


def cluster(nodes: int = 2, gpus: int = 2) -> InMemoryCluster:
    c = InMemoryCluster()
    c.create("deviceclasses", device_class("gpu", DRIVER))
    for i in range(nodes):
        c.create("nodes", make_node(f"n{i}", cpu="8", memory="32Gi", pods="110"))
        c.create("resourceslices", gpu_slice(f"n{i}", gpus))
    return c


def node_of(c: InMemoryCluster, pod: str) -> str | None:
    obj = c.get("pods", f"default/{pod}")
    return None if obj is None else obj["spec"].get("nodeName")


def notes(c: InMemoryCluster, pod: str) -> list[str]:
    return [
        e["note"]
        for e in c.events
        if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == pod
    ]


def allocated(c: InMemoryCluster, name: str) -> list[tuple[str, str]]:
    obj = c.get("resourceclaims", f"default/{name}") or {}
    alloc = (obj.get("status") or {}).get("allocation") or {}
    return [(r["pool"], r["device"]) for r in (alloc.get("devices") or {}).get("results") or []]


async def test_pods_with_claims_get_distinct_devices_and_are_reserved() -> None:
    c = cluster(nodes=2, gpus=2)
    async with Running(c):
        for i in range(4):
            c.create("resourceclaims", claim(f"claim-{i}"))
            c.create("pods", pod_with_claims(f"p{i}", f"claim-{i}"))
        await wait_for(lambda: all(node_of(c, f"p{i}") for i in range(4)))
    devices = [d for i in range(4) for d in allocated(c, f"claim-{i}")]
    assert len(devices) == 4 and len(set(devices)) == 4
    for i in range(4):
        obj = c.get("resourceclaims", f"default/claim-{i}")
        assert obj is not None
        pod = c.get("pods", f"default/p{i}")
        assert pod is not None
        # The device is on the node the pod was bound to, and the claim is reserved for it.
        assert allocated(c, f"claim-{i}")[0][0] == node_of(c, f"p{i}")
        assert obj["status"]["reservedFor"] == [
            {"resource": "pods", "name": f"p{i}", "uid": pod["metadata"]["uid"]}
        ]
        assert "resource.kubernetes.io/delete-protection" in obj["metadata"]["finalizers"]
        node_selector = obj["status"]["allocation"]["nodeSelector"]
        assert node_selector["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
            node_of(c, f"p{i}")
        ]


async def test_a_claim_no_device_satisfies_stays_pending_until_a_slice_appears() -> None:
    c = cluster(nodes=2, gpus=1)
    async with Running(c):
        c.create(
            "resourceclaims", claim("h100", 'device.attributes["gpu.example.com"].model == "h100"')
        )
        c.create("pods", pod_with_claims("p", "h100"))
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )
        assert node_of(c, "p") is None
        c.create("resourceslices", gpu_slice("n1", 1, model="h100"))
        await wait_for(lambda: node_of(c, "p") == "n1")
    assert allocated(c, "h100") == [("n1-h100", "gpu-0")]


@pytest.mark.parametrize(
    ("with_claim", "device_class_name"),
    [(False, "gpu"), (True, "gpu"), (True, "nope")],
    ids=["no-claims", "with-claim", "claim-of-a-missing-class"],
)
async def test_a_volume_pre_filter_rejection_ends_post_filter_with_not_found(
    with_claim: bool, device_class_name: str
) -> None:
    """VolumeBinding's PreFilter (a missing PVC) rejects the pod before DynamicResources'
    PreFilter runs: its PostFilter fails with "not found" and preemption does not speak,
    word for word as kube-scheduler (tests/integration/test_volumes.py compares them),
    even when DynamicResources' own PreFilter would reject the pod too (a missing device
    class: upstream never runs it, the volume plugins' PreFilters come first)."""
    c = cluster(nodes=2, gpus=1)
    async with Running(c):
        pod = pod_with_claims("p", "gpu") if with_claim else make_pod("p", cpu="100m")
        if with_claim:
            obj = claim("gpu")
            obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = device_class_name
            c.create("resourceclaims", obj)
        pod["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
        c.create("pods", pod)
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            '0/2 nodes are available: persistentvolumeclaim "data" not found. not found'
        )
        assert node_of(c, "p") is None


async def test_a_pod_waits_gated_for_its_claim_then_schedules() -> None:
    c = cluster(nodes=1, gpus=1)
    async with Running(c) as sched:
        c.create("pods", pod_with_claims("p", "later"))
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        await wait_for(lambda: sched.queue.get(uid) is not None)
        assert sched.queue.where(uid) == "unschedulable"  # gated by PreEnqueue
        assert not notes(c, "p")
        c.create("resourceclaims", claim("later"))
        await wait_for(lambda: node_of(c, "p") == "n0")


async def test_a_shared_claim_is_reserved_for_both_pods() -> None:
    c = cluster(nodes=2, gpus=1)
    async with Running(c):
        c.create("resourceclaims", claim("shared"))
        c.create("pods", pod_with_claims("a", "shared"))
        await wait_for(lambda: node_of(c, "a") is not None)
        c.create("pods", pod_with_claims("b", "shared"))
        await wait_for(lambda: node_of(c, "b") is not None)
    assert node_of(c, "a") == node_of(c, "b")  # the allocation's node selector
    obj = c.get("resourceclaims", "default/shared")
    assert obj is not None
    assert [r["name"] for r in obj["status"]["reservedFor"]] == ["a", "b"]
    assert len(allocated(c, "shared")) == 1


async def test_deleting_a_pod_frees_its_device_for_the_next_once_deallocated() -> None:
    c = cluster(nodes=1, gpus=1)
    async with Running(c):
        c.create("resourceclaims", claim("first"))
        c.create("pods", pod_with_claims("p1", "first"))
        await wait_for(lambda: node_of(c, "p1") == "n0")
        c.create("resourceclaims", claim("second"))
        c.create("pods", pod_with_claims("p2", "second"))
        await wait_for(lambda: bool(notes(c, "p2")))
        assert notes(c, "p2")[0].startswith(
            "0/1 nodes are available: 1 cannot allocate all claims."
        )
        # What the resourceclaim controller does when the pod is gone: the claim is
        # deleted (a template's claim) or deallocated.
        c.delete("pods", "default/p1")
        first = c.get("resourceclaims", "default/first")
        assert first is not None
        c.update("resourceclaims", {**first, "status": {}})
        await wait_for(lambda: node_of(c, "p2") == "n0")
    assert allocated(c, "second") == [("n0", "gpu-0")]


def _plugin_with(claims: list[Obj], classes: list[Obj]) -> DynamicResources:
    pl = DynamicResources()
    for o in claims:
        pl.tracker.on_add(o)
    for o in classes:
        pl._class_added(o)
    return pl


def _named(obj: Obj, uid: str, rv: str = "1") -> Obj:
    obj["metadata"].update({"uid": uid, "resourceVersion": rv})
    return obj


PRE_ENQUEUE_CASES = [
    ("no-claims", {}, [], None),
    (
        "claim-missing",
        {"resourceClaims": [{"name": "c", "resourceClaimName": "missing"}]},
        [],
        'could not find ResourceClaim "default/missing"',
    ),
    (
        "template-claim-not-created",
        {"resourceClaims": [{"name": "c", "resourceClaimTemplateName": "tmpl"}]},
        [],
        'pod "default/p": ResourceClaim not created yet',
    ),
    (
        "unsupported-pod-claim",
        {"resourceClaims": [{"name": "c"}]},
        [],
        'pod "default/p", spec.resourceClaim "c": none of the supported fields are set',
    ),
    (
        "claim-being-deleted",
        {"resourceClaims": [{"name": "c", "resourceClaimName": "gone"}]},
        [
            _named(claim("gone"), "u1")
            | {
                "metadata": {
                    "name": "gone",
                    "namespace": "default",
                    "uid": "u1",
                    "resourceVersion": "1",
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                }
            }
        ],
        'resourceclaim "gone" is being deleted',
    ),
    (
        "claim-exists",
        {"resourceClaims": [{"name": "c", "resourceClaimName": "ok"}]},
        [_named(claim("ok"), "u2")],
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "spec", "claims", "want"), PRE_ENQUEUE_CASES, ids=[c[0] for c in PRE_ENQUEUE_CASES]
)
def test_pre_enqueue(name: str, spec: Obj, claims: list[Obj], want: str | None) -> None:
    pl = _plugin_with(claims, [])
    pod = parsed_pod("p")
    pod.raw["spec"].update(spec)
    status = pl.pre_enqueue(pod)
    if want is None:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message == want


def test_pre_filter_reports_a_missing_class_and_an_allocation_in_flight() -> None:
    c = _named(claim("c"), "uid-c")
    pl = _plugin_with([c], [])
    pod = parsed_pod("p")
    pod.raw["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": "c"}]
    _, status = pl.pre_filter(CycleState(), pod)
    # No handle: the class cannot be found.
    assert status is not None
    assert status.message == "request gpu: device class gpu does not exist"
    pl.tracker.signal_pending("uid-c", {**c, "status": {"allocation": {"devices": {}}}})
    _, status = pl.pre_filter(CycleState(), pod)
    assert status is not None
    assert status.message == "resource claim default/c is in the process of being allocated"


def test_post_filter_reason_without_claims() -> None:
    pl = DynamicResources()
    res, status = pl.post_filter(CycleState(), parsed_pod("p"), {})
    assert res is None and status is not None
    assert (status.code, status.message) == (Code.UNSCHEDULABLE, "no new claims to deallocate")


DRA = "DynamicResources"
POST_FILTER_CASES = [
    # (name, rejector, Python PreFilter order, state written by PreFilter, code, message)
    (
        "no-prefilter-rejection",
        "",
        (DRA,),
        False,
        Code.UNSCHEDULABLE,
        "no new claims to deallocate",
    ),
    # A built-in PreFilter (VolumeBinding's missing claim) stopped the PreFilter phase
    # before this plugin's: upstream's CycleState.Read fails.
    ("builtin-prefilter-rejected", "VolumeBinding", (DRA,), False, Code.ERROR, "not found"),
    # ksched ran this plugin's Python PreFilter before the Rust ones; upstream did not.
    ("builtin-rejected-after-ours", "NodeAffinity", (DRA,), True, Code.ERROR, "not found"),
    # A Python PreFilter ordered before this plugin rejected: no state, as upstream.
    ("python-rejected-first", "Custom", ("Custom", DRA), False, Code.ERROR, "not found"),
    # A Python PreFilter after this plugin rejected: ours ran and wrote its state.
    (
        "python-rejected-later",
        "Custom",
        (DRA, "Custom"),
        True,
        Code.UNSCHEDULABLE,
        "no new claims to deallocate",
    ),
    # The same for a pod without claims, whose cycle skips this plugin's PreFilter
    # (Framework.for_pod): upstream's ran (Coscheduling after the defaults).
    (
        "python-rejected-later-no-claims",
        "Coscheduling",
        (DRA, "Coscheduling"),
        False,
        Code.UNSCHEDULABLE,
        "no new claims to deallocate",
    ),
    # This plugin's own PreFilter rejected: its state exists (written first, as upstream).
    (
        "own-prefilter-rejected",
        DRA,
        (DRA,),
        True,
        Code.UNSCHEDULABLE,
        "no new claims to deallocate",
    ),
    # A PreFilter rejected in a profile without this plugin's PreFilter: never any state.
    ("no-prefilter-of-ours", "Custom", ("Custom",), False, Code.ERROR, "not found"),
]


@pytest.mark.parametrize(
    ("name", "rejector", "order", "written", "code", "message"),
    POST_FILTER_CASES,
    ids=[c[0] for c in POST_FILTER_CASES],
)
def test_post_filter_after_a_pre_filter_rejection(
    name: str, rejector: str, order: tuple[str, ...], written: bool, code: Code, message: str
) -> None:
    pl = DynamicResources()
    state = CycleState()
    pod = parsed_pod("p")
    if written:
        _, status = pl.pre_filter(state, pod)  # no claims: an empty state, Skip
        assert status is not None and status.code is Code.SKIP
    state.pre_filter_rejector = rejector
    state.pre_filter_order = order
    res, status = pl.post_filter(state, pod, {})
    assert res is None and status is not None
    assert (status.code, status.message) == (code, message)


def test_pre_bind_pre_flight_allows_parallel_pre_bind_and_skips_pods_without_claims() -> None:
    pl = DynamicResources()
    assert pl.pre_bind_parallel  # upstream PreBindPreFlightResult{AllowParallel: true}
    pod = parsed_pod("p")
    status = pl.pre_bind_pre_flight(CycleState(), pod, "n0")
    assert status is not None and (status.code, status.message) == (Code.ERROR, "not found")
    state = CycleState()
    pl.pre_filter(state, pod)
    status = pl.pre_bind_pre_flight(state, pod, "n0")
    assert status is not None and status.code is Code.SKIP


def test_score_ranks_first_available_subrequests() -> None:
    spec = {
        "devices": {
            "requests": [
                {"name": "r", "firstAvailable": [{"name": "big"}, {"name": "small"}]},
                {"name": "x", "exactly": {"deviceClassName": "c"}},
            ]
        }
    }
    claims = [{"metadata": {"name": "c"}, "spec": spec}]

    def with_request(req: str) -> list[Obj]:
        return [{"devices": {"results": [{"request": req}, {"request": "x"}]}}]

    assert _compute_score(claims, with_request("r/big")) == 8
    assert _compute_score(claims, with_request("r/small")) == 7


async def test_the_only_node_with_devices_is_found_beyond_the_sampled_nodes() -> None:
    """DynamicResources filters inside the core's node loop: with 200 nodes the search
    stops after 100 feasible ones (percentageOfNodesToScore), and nodes without devices
    are not feasible, so the one node that has them is found wherever it is."""
    c = InMemoryCluster()
    c.create("deviceclasses", device_class("gpu", DRIVER))
    for i in range(200):
        c.create("nodes", make_node(f"n{i:03d}", cpu="8", memory="32Gi", pods="110"))
    c.create("resourceslices", gpu_slice("n150", 1))
    async with Running(c):
        c.create("resourceclaims", claim("only"))
        c.create("pods", pod_with_claims("p", "only"))
        await wait_for(lambda: node_of(c, "p") == "n150")
    assert allocated(c, "only") == [("n150", "gpu-0")]


async def test_preemption_only_considers_nodes_where_the_claims_fit() -> None:
    """DefaultPreemption's dry run runs DynamicResources' Filter too: n1's victims rank
    better (lower priority), but n1 has no device, so the preemptor evicts on n0."""
    c = InMemoryCluster()
    c.create("deviceclasses", device_class("gpu", DRIVER))
    for name in ("n0", "n1"):
        c.create("nodes", make_node(name, cpu="1", memory="8Gi", pods="110"))
    c.create("resourceslices", gpu_slice("n0", 1))
    c.create("pods", make_pod("busy-0", cpu="1", memory="100Mi", node_name="n0", priority=5))
    c.create("pods", make_pod("busy-1", cpu="1", memory="100Mi", node_name="n1", priority=1))
    async with Running(c):
        c.create("resourceclaims", claim("gpu"))
        pod = pod_with_claims("p", "gpu")
        pod["spec"]["priority"] = 100
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        c.create("pods", pod)
        await wait_for(lambda: c.get("pods", "default/busy-0") is None)
        await wait_for(lambda: node_of(c, "p") == "n0")
    assert c.get("pods", "default/busy-1") is not None


async def test_a_pre_filter_rejection_after_node_affinity_names_only_its_plugin() -> None:
    """NodeAffinity's PreFilter narrowed the nodes (a matchFields term), then
    VolumeRestrictions' rejected the pod (its claim lookup comes first: the claim is
    missing): upstream's RunPreFilterPlugins returns without its plugins-with-nodes set,
    so VolumeRestrictions alone is an unschedulable plugin (the queueing hints that can
    retry the pod are its own), and DynamicResources' PostFilter fails with "not
    found"."""
    c = cluster(nodes=2, gpus=1)
    async with Running(c) as sched:
        pod = make_pod("p", cpu="100m")
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
        pod["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
        pod["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
        c.create("pods", pod)
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            '0/2 nodes are available: persistentvolumeclaim "data" not found. not found'
        )
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        await wait_for(lambda: sched.queue.where(uid) == "unschedulable")
        info = sched.queue.get(uid)
        assert info is not None
        assert info.unschedulable_plugins == frozenset({"VolumeRestrictions"})


async def test_a_filter_error_in_preemptions_dry_run_fails_preemption_with_it() -> None:
    """A claim whose selector fails at runtime: the cycle's Filter stops at
    NodeResourcesFit first, but preemption's dry run reaches DynamicResources, whose
    Error status fails the whole PostFilter with it (upstream RunPostFilterPlugins
    returns an Error at once, DynamicResources' own reason is dropped), word for word
    (found by the conformance harness)."""
    c = cluster(nodes=1, gpus=1)
    async with Running(c):
        c.create("pods", make_pod("low", cpu="8", memory="1Gi", node_name="n0", priority=0))
        c.create("resourceclaims", claim("c", 'device.attributes["gpu.example.com"].nope == 1'))
        pod = pod_with_claims("p", "c")
        pod["spec"]["priority"] = 100
        c.create("pods", pod)
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            '0/1 nodes are available: 1 Insufficient cpu. preemption: running "DynamicResources"'
            " filter plugin: claim default/c: selector #0: CEL runtime error: no such key: nope"
        )
        assert node_of(c, "p") is None


def _bc_claim(status_conditions: list[Obj] | None, stamp: str) -> Obj:
    """An allocated claim whose device needs the "attached" binding condition."""
    result = {
        "request": "gpu",
        "driver": DRIVER,
        "pool": "n0",
        "device": "gpu-0",
        "bindingConditions": ["attached"],
        "bindingFailureConditions": ["attach-failed"],
    }
    c = claim("c")
    c["metadata"]["uid"] = "uid-c"
    c["status"] = {"allocation": {"devices": {"results": [result]}, "allocationTimestamp": stamp}}
    if status_conditions is not None:
        c["status"]["devices"] = [
            {"driver": DRIVER, "pool": "n0", "device": "gpu-0", "conditions": status_conditions}
        ]
    return c


def _cond(type_: str, status: str, reason: str = "R", message: str = "") -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": message}


LATER = "2099-01-01T00:00:00Z"
LONG_AGO = "2026-01-01T00:00:00Z"


class _Handle:
    """What PreBind's wait uses of the framework handle: events and metrics."""

    def __init__(self) -> None:
        from ksched.metrics import SchedulerMetrics

        self.metrics = SchedulerMetrics()
        self.events: list[str] = []

    def framework(self, name: str) -> None:
        return None

    def record_event(self, pod: Any, type_: str, reason: str, *rest: Any) -> None:
        self.events.append(reason)


@pytest.mark.parametrize(
    ("conditions", "stamp", "in_tracker", "want"),
    [
        pytest.param([_cond("attached", "True")], LATER, True, ("success", None), id="ready"),
        pytest.param(
            [_cond("attached", "False"), _cond("attach-failed", "True", "Broken", "no fabric")],
            LATER,
            True,
            ("failure", 'device binding failed: claim=c, reason=Broken, message="no fabric"'),
            id="failure-condition-true",
        ),
        pytest.param(
            [_cond("attached", "False")],
            LONG_AGO,
            True,
            # isPodReadyForBinding: ErrDeviceBindingTimeout wrapped with the claim's name.
            ("timeout", "device binding timeout: claim=c"),
            id="allocated-longer-than-bindingTimeout-ago",
        ),
        pytest.param(
            None,
            LATER,
            False,
            # The assume cache's NotFoundError, returned as it is.
            ("error", 'could not find ResourceClaim "default/c"'),
            id="claim-gone-from-the-assume-cache",
        ),
    ],
)
async def test_pre_bind_waits_for_binding_conditions(
    conditions: list[Obj] | None, stamp: str, in_tracker: bool, want: tuple[str, str | None]
) -> None:
    """Upstream PreBind's wait (isPodReadyForBinding): the pod binds once the device's
    binding conditions are true; a failure condition, the binding timeout or a missing
    claim ends the wait with upstream's error text and metrics label."""
    from ksched.plugins.dynamic_resources import _State

    pl = DynamicResources.from_args({"bindingTimeout": "10m0s"})
    handle = _Handle()
    pl._handle = handle  # type: ignore[assignment]
    c = _bc_claim(conditions, stamp)
    if in_tracker:
        pl.tracker.on_add(c)
    status = await pl._wait_for_binding_conditions(_State(claims=[c]), parsed_pod("p"), "n0")
    label, message = want
    assert (status.message if status is not None else None) == message
    assert status is None or status.code is Code.ERROR
    assert handle.events == ["BindingConditionsPending"]
    allocations = handle.metrics.dra_binding_conditions_allocations
    assert allocations.get(("default-scheduler", DRIVER, label)) == 1


async def test_a_failed_binding_unreserves_the_claim_with_upstreams_patch() -> None:
    """The binding cycle fails after Reserve and PreBind (the Bind call fails): Unreserve
    removes the pod from the claim's ``status.reservedFor`` with upstream's strategic
    merge patch and leaves the allocation (upstream's Unreserve does not deallocate);
    the next attempt reserves the allocated claim again and binds."""
    from ksched.cluster import APIError

    c = cluster(nodes=1, gpus=1)
    failing = True

    def fail_bind(namespace: str, name: str, node: str) -> Exception | None:
        return APIError(500, "InternalError", "etcd is down") if failing else None

    c.fail_bind = fail_bind

    def claim_status() -> Obj:
        return (c.get("resourceclaims", "default/claim-0") or {}).get("status") or {}

    async with Running(c):
        c.create("resourceclaims", claim("claim-0"))
        c.create("pods", pod_with_claims("p", "claim-0"))
        await wait_for(lambda: c.bind_calls >= 1)
        await wait_for(lambda: "reservedFor" not in claim_status())
        assert allocated(c, "claim-0") == [("n0", "gpu-0")]
        failing = False
        await wait_for(lambda: node_of(c, "p") == "n0")
    pod = c.get("pods", "default/p")
    assert pod is not None
    assert claim_status()["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}
    ]
    assert allocated(c, "claim-0") == [("n0", "gpu-0")]

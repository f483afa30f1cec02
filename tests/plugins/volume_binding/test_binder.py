"""VolumeBinding's binder: upstream's FindPodVolumes, AssumePodVolumes, checkBindings,
BindPodVolumes and capacity tables.

Ported from pkg/scheduler/framework/plugins/volumebinding/binder_test.go
(TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning,
TestFindPodVolumesWithCSIMigration, TestAssumePodVolumes, TestRevertAssumedPodVolumes,
TestCheckBindings, TestCheckBindingsWithCSIMigration, TestBindPodVolumes,
TestFindAssumeVolumes, TestCapacity) with the fixtures of :mod:`.fixtures`. Upstream's
``findPodVolumes`` helper is PreFilter then Filter on ``node1``; a scenario that
``shouldFail`` fails at either (a PreFilter rejection, or a Filter error). The bindings
and provisionings are the node's plan, the one Reserve assumes.
TestBindAPIUpdate's cases are covered by TestBindPodVolumes' (the API writes are
``bind_pod_volumes``' first step); its nil-slice cases have no counterpart (Python
lists are never nil).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.cluster import Conflict
from ksched.plugins.volume_binding import VolumeBinding
from ksched.plugins.volume_binding.binder import BinderError, PodVolumes
from tests.plugins.harness import to_api
from tests.plugins.volume_binding.fixtures import (
    BOUND_MIGRATION_PVC,
    BOUND_PVC,
    BOUND_PVC_NODE1A,
    CONFLICTING_GENERIC_PVC,
    CORRECT_GENERIC_PVC,
    CSI_NODE1_MIGRATED,
    CSI_NODE1_NOT_MIGRATED,
    IMMEDIATE_BOUND_PVC,
    IMMEDIATE_UNBOUND_PVC,
    MIGRATION_PV_BOUND,
    MIGRATION_PV_BOUND_TO_UNBOUND,
    NETWORK_ATTACHED_CAPACITY,
    NO_PROVISIONER_PVC,
    NODE1,
    NODE1_CAPACITY,
    NODE1_ZONE1,
    NODE1_ZONE2,
    NODE2,
    NODE2_CAPACITY,
    NONMIGRATION_PV_BOUND_TO_UNBOUND,
    PREBOUND_PVC,
    PREBOUND_PVC_NODE1A,
    PROV_MIGRATION_PVC_BOUND,
    PROVISIONED_PVC,
    PROVISIONED_PVC2,
    PROVISIONED_PVC_BOUND,
    PROVISIONED_PVC_HIGHER_VERSION,
    PROVISIONER,
    PV_BOUND,
    PV_BOUND_GENERIC,
    PV_BOUND_IMMEDIATE,
    PV_BOUND_IMMEDIATE_NODE2,
    PV_NODE1A,
    PV_NODE1A_BOUND,
    PV_NODE1B,
    PV_NODE1B_BOUND,
    PV_NODE1C,
    PV_NODE2,
    SELECTED_NODE_PVC,
    TOPO_MISMATCH_PVC,
    UNBOUND_PVC,
    UNBOUND_PVC2,
    WAIT_CLASS,
    WAIT_CLASS_WITH_PROVISIONER,
    binder_classes,
    csi_driver,
    empty_annotations,
    make_capacity,
    make_node,
    make_test_pv,
    selected,
    with_rv,
    without_claim_uid,
)
from tests.plugins.volume_harness import FakeHandle, VolumeCluster, build, run, volume_pod

Obj = dict[str, Any]

PLUGIN = "VolumeBinding"
NO_TERMS = "no matching NodeSelectorTerms"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


def make_pod(*claims: Obj) -> Obj:
    """upstream ``makePod("test-pod").withNamespace("testns").withPVCSVolume(claims)``."""
    return volume_pod(
        "test-pod",
        *(
            {"name": f"vol{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
            for i, c in enumerate(claims)
        ),
        namespace="testns",
    )


def find(
    pvs: list[Obj],
    cache_pvcs: list[Obj],
    pod: Obj,
    *,
    driver: Obj | None = None,
    node_labels: dict[str, str] = NODE1,
    csinodes: list[Obj] = (),  # type: ignore[assignment]
    capacities: list[Obj] = (),  # type: ignore[assignment]
) -> tuple[bool, list[str], list[tuple[str, str]], list[str]]:
    """``(failed, reasons, [(claim, pv)], [provisioned claim])`` on ``node1``."""
    c = VolumeCluster([make_node("node1", node_labels)])
    c.add("storageclasses", *binder_classes()).add("persistentvolumes", *pvs)
    c.add("persistentvolumeclaims", *cache_pvcs).add("csinodes", *csinodes)
    c.add("csistoragecapacities", *capacities)
    if driver is not None:
        c.add("csidrivers", driver)
    out = run(c, pod, [PLUGIN])
    verdict = out.pre_filter[PLUGIN]
    if isinstance(verdict, tuple):
        return True, [], [], []
    status = out.nodes["node1"]
    if status is not None and status[0] == "Error":
        return True, [], [], []
    reasons = [] if status is None else list(status[1:])
    data = out.state.get(PLUGIN).data if out.state.get(PLUGIN) else None
    if data is None or status is not None:
        return False, reasons, [], []
    plan = out.snapshot.volume_binding_plan(data.request, "node1")
    assert plan is not None
    pv = data.pod_volumes(plan)
    bindings = [(c["metadata"]["name"], v["metadata"]["name"]) for c, v in pv.static]
    provisions = [c["metadata"]["name"] for c, _ in pv.dynamic]
    return False, reasons, bindings, provisions


DRIVERS = {
    "no-CSIDriver": None,
    "CSIDriver-with-capacity-tracking": csi_driver(PROVISIONER, True),
    "CSIDriver-without-capacity-tracking": csi_driver(PROVISIONER, False),
}

NO_PROVISIONING = {
    "no-volumes": ([], None, volume_pod("test-pod", namespace="testns"), False, [], []),
    "no-pvcs": (
        [],
        None,
        volume_pod("test-pod", {"name": "e", "emptyDir": {}}, namespace="testns"),
        False,
        [],
        [],
    ),
    "pvc-not-found": ([], [], make_pod(BOUND_PVC), True, [], []),
    "bound-pvc": ([PV_BOUND], None, make_pod(BOUND_PVC), False, [], []),
    "bound-pvc,pv-not-exists": ([], None, make_pod(BOUND_PVC), False, [PV_NOT_EXIST], []),
    "prebound-pvc": ([PV_NODE1A_BOUND], None, make_pod(PREBOUND_PVC), True, [], []),
    "unbound-pvc,pv-same-node": (
        [PV_NODE2, PV_NODE1A, PV_NODE1B],
        None,
        make_pod(UNBOUND_PVC),
        False,
        [],
        [("unbound-pvc", "pv-node1a")],
    ),
    "unbound-pvc,pv-different-node": (
        [PV_NODE2],
        None,
        make_pod(UNBOUND_PVC),
        False,
        [BIND_CONFLICT],
        [],
    ),
    "two-unbound-pvcs": (
        [PV_NODE1A, PV_NODE1B],
        None,
        make_pod(UNBOUND_PVC, UNBOUND_PVC2),
        False,
        [],
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
    ),
    "two-unbound-pvcs,order-by-size": (
        [PV_NODE1A, PV_NODE1B],
        None,
        make_pod(UNBOUND_PVC2, UNBOUND_PVC),
        False,
        [],
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
    ),
    "two-unbound-pvcs,partial-match": (
        [PV_NODE1A],
        None,
        make_pod(UNBOUND_PVC, UNBOUND_PVC2),
        False,
        [BIND_CONFLICT],
        [("unbound-pvc", "pv-node1a")],
    ),
    "one-bound,one-unbound": (
        [PV_BOUND, PV_NODE1A],
        None,
        make_pod(UNBOUND_PVC, BOUND_PVC),
        False,
        [],
        [("unbound-pvc", "pv-node1a")],
    ),
    "one-bound,one-unbound,no-match": (
        [PV_BOUND, PV_NODE2],
        None,
        make_pod(UNBOUND_PVC, BOUND_PVC),
        False,
        [BIND_CONFLICT],
        [],
    ),
    "one-prebound,one-unbound": (
        [PV_NODE1A, PV_NODE1B],
        None,
        make_pod(UNBOUND_PVC, PREBOUND_PVC),
        True,
        [],
        [],
    ),
    "immediate-bound-pvc": (
        [PV_BOUND_IMMEDIATE],
        None,
        make_pod(IMMEDIATE_BOUND_PVC),
        False,
        [],
        [],
    ),
    "immediate-bound-pvc-wrong-node": (
        [PV_BOUND_IMMEDIATE_NODE2],
        None,
        make_pod(IMMEDIATE_BOUND_PVC),
        False,
        [NODE_CONFLICT],
        [],
    ),
    "immediate-unbound-pvc": ([], None, make_pod(IMMEDIATE_UNBOUND_PVC), True, [], []),
    "immediate-unbound-pvc,delayed-mode-bound": (
        [PV_BOUND],
        None,
        make_pod(IMMEDIATE_UNBOUND_PVC, BOUND_PVC),
        True,
        [],
        [],
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": (
        [],
        None,
        make_pod(IMMEDIATE_UNBOUND_PVC, UNBOUND_PVC),
        True,
        [],
        [],
    ),
    "generic-ephemeral,no-pvc": (
        [],
        [],
        volume_pod("test-pod", {"name": "no-such-pvc", "ephemeral": {}}, namespace="testns"),
        True,
        [],
        [],
    ),
    "generic-ephemeral,with-pvc": (
        [PV_BOUND_GENERIC],
        [CORRECT_GENERIC_PVC],
        volume_pod("test-pod", {"name": "test-volume", "ephemeral": {}}, namespace="testns"),
        False,
        [],
        [],
    ),
    "generic-ephemeral,wrong-pvc": (
        [PV_BOUND_GENERIC],
        [CONFLICTING_GENERIC_PVC],
        volume_pod("test-pod", {"name": "test-volume", "ephemeral": {}}, namespace="testns"),
        True,
        [],
        [],
    ),
}


def _claims_of(pod: Obj) -> list[Obj]:
    names = {
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"].get("volumes", [])
        if "persistentVolumeClaim" in v
    }
    by_name = {
        c["metadata"]["name"]: c
        for c in (
            UNBOUND_PVC,
            UNBOUND_PVC2,
            PREBOUND_PVC,
            BOUND_PVC,
            IMMEDIATE_UNBOUND_PVC,
            IMMEDIATE_BOUND_PVC,
            PROVISIONED_PVC,
            NO_PROVISIONER_PVC,
            TOPO_MISMATCH_PVC,
            SELECTED_NODE_PVC,
            BOUND_MIGRATION_PVC,
        )
    }
    return [by_name[n] for n in sorted(names) if n in by_name]


@pytest.mark.parametrize("driver", DRIVERS, ids=list(DRIVERS))
@pytest.mark.parametrize("scenario", NO_PROVISIONING, ids=list(NO_PROVISIONING))
def test_find_pod_volumes_without_provisioning(scenario: str, driver: str) -> None:
    pvs, cache, pod, should_fail, reasons, bindings = NO_PROVISIONING[scenario]
    if cache is None:
        cache = _claims_of(pod)
    failed, got_reasons, got_bindings, _ = find(pvs, cache, pod, driver=DRIVERS[driver])
    assert failed == should_fail
    if not should_fail:
        assert got_reasons == reasons
        if not reasons:
            assert got_bindings == bindings


WITH_PROVISIONING = {
    "one-provisioned": ([], make_pod(PROVISIONED_PVC), False, [], [], ["provisioned-pvc"], True),
    "two-unbound-pvcs,one-matched,one-provisioned": (
        [PV_NODE1A],
        make_pod(UNBOUND_PVC, PROVISIONED_PVC),
        False,
        [],
        [("unbound-pvc", "pv-node1a")],
        ["provisioned-pvc"],
        True,
    ),
    "one-bound,one-provisioned": (
        [PV_BOUND],
        make_pod(BOUND_PVC, PROVISIONED_PVC),
        False,
        [],
        [],
        ["provisioned-pvc"],
        True,
    ),
    "one-binding,one-selected-node": (
        [PV_BOUND],
        make_pod(BOUND_PVC, SELECTED_NODE_PVC),
        False,
        [],
        [],
        ["provisioned-pvc"],
        True,
    ),
    "immediate-unbound-pvc": ([], make_pod(IMMEDIATE_UNBOUND_PVC), True, [], [], [], False),
    "one-immediate-bound,one-provisioned": (
        [PV_BOUND_IMMEDIATE],
        make_pod(IMMEDIATE_BOUND_PVC, PROVISIONED_PVC),
        False,
        [],
        [],
        ["provisioned-pvc"],
        True,
    ),
    "invalid-provisioner": (
        [],
        make_pod(NO_PROVISIONER_PVC),
        False,
        [BIND_CONFLICT],
        [],
        [],
        False,
    ),
    "volume-topology-unsatisfied": (
        [],
        make_pod(TOPO_MISMATCH_PVC),
        False,
        [BIND_CONFLICT],
        [],
        [],
        False,
    ),
}


@pytest.mark.parametrize("driver", DRIVERS, ids=list(DRIVERS))
@pytest.mark.parametrize("scenario", WITH_PROVISIONING, ids=list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(scenario: str, driver: str) -> None:
    pvs, pod, should_fail, reasons, bindings, provisions, needs_capacity = WITH_PROVISIONING[
        scenario
    ]
    d = DRIVERS[driver]
    failed, got_reasons, got_bindings, got_provisions = find(pvs, _claims_of(pod), pod, driver=d)
    assert failed == should_fail
    if should_fail:
        return
    if needs_capacity and d is not None and d["spec"]["storageCapacity"]:
        # Without CSIStorageCapacity objects, provisioning is blocked.
        reasons, provisions = [*reasons, NOT_ENOUGH_SPACE], []
    assert got_reasons == reasons
    if not reasons:
        assert got_bindings == bindings
        assert got_provisions == provisions


@pytest.mark.parametrize(
    ("labels", "csinodes", "reasons"),
    [
        pytest.param(NODE1_ZONE1, [CSI_NODE1_MIGRATED], [], id="pvc-bound"),
        pytest.param(
            NODE1_ZONE1, [CSI_NODE1_NOT_MIGRATED], [], id="pvc-bound,csinode-not-migrated"
        ),
        pytest.param(NODE1_ZONE1, [], [], id="pvc-bound,missing-csinode"),
        pytest.param(
            NODE1_ZONE2, [CSI_NODE1_MIGRATED], [NODE_CONFLICT], id="pvc-bound,node-different-zone"
        ),
    ],
)
def test_find_pod_volumes_with_csi_migration(
    labels: dict[str, str], csinodes: list[Obj], reasons: list[str]
) -> None:
    failed, got, _, _ = find(
        [MIGRATION_PV_BOUND],
        [BOUND_MIGRATION_PVC],
        make_pod(BOUND_MIGRATION_PVC),
        node_labels=labels,
        csinodes=csinodes,
    )
    assert not failed
    assert got == reasons


CAPACITY = {
    "network-attached": ([NETWORK_ATTACHED_CAPACITY], "net", []),
    "local-storage": ([NODE1_CAPACITY], "net", []),
    # All three share the name "net": the store keeps the last, as upstream's does.
    "multiple": ([NETWORK_ATTACHED_CAPACITY, NODE2_CAPACITY, NODE1_CAPACITY], "net", []),
    "no-storage": ([], None, [NOT_ENOUGH_SPACE]),
    "wrong-node": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE2, "1Gi", "")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "wrong-storage-class": (
        [make_capacity("net", WAIT_CLASS, NODE1, "1Gi", "")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "insufficient-storage": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Mi", "")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "insufficient-volume-size": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Gi", "1Mi")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "zero-storage": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "0Mi", "")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "zero-volume-size": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "", "0Mi")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
    "nil-storage": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "", "")],
        None,
        [NOT_ENOUGH_SPACE],
    ),
}


@pytest.mark.parametrize(
    "opt_in", [True, False], ids=["StorageCapacity=true", "StorageCapacity=false"]
)
@pytest.mark.parametrize("scenario", CAPACITY, ids=list(CAPACITY))
def test_capacity(scenario: str, opt_in: bool) -> None:
    caps, used, reasons = CAPACITY[scenario]
    c = VolumeCluster([make_node("node1", NODE1)])
    c.add("storageclasses", *binder_classes()).add("persistentvolumeclaims", PROVISIONED_PVC)
    c.add("csidrivers", csi_driver(PROVISIONER, opt_in)).add("csistoragecapacities", *caps)
    out = run(c, make_pod(PROVISIONED_PVC), [PLUGIN])
    status = out.nodes["node1"]
    want = reasons if opt_in else []
    assert ([] if status is None else list(status[1:])) == want
    if status is None:
        data = out.state.get(PLUGIN).data
        plan = out.snapshot.volume_binding_plan(data.request, "node1")
        pv = data.pod_volumes(plan)
        assert [c["metadata"]["name"] for c, _ in pv.dynamic] == ["provisioned-pvc"]
        got = [None if cap is None else cap["metadata"]["name"] for _, cap in pv.dynamic]
        assert got == [used if opt_in else None]


# ---- Reserve: AssumePodVolumes ---------------------------------------------------------


def binder_env(
    pvs: list[Obj],
    pvcs: list[Obj],
    *,
    nodes: dict[str, dict[str, str]] | None = None,
    csinodes: list[Obj] = (),
    pod: Obj | None = None,  # type: ignore[assignment]
) -> tuple[FakeHandle, VolumeBinding, Pod]:
    """A set-up VolumeBinding over these objects, and the test pod (``test-pod`` in
    ``testns`` on ``node1``, with a PVC volume per claim)."""
    nodes = nodes if nodes is not None else {"node1": NODE1}
    c = VolumeCluster([make_node(n, labels) for n, labels in nodes.items()])
    c.add("storageclasses", *binder_classes()).add("persistentvolumes", *pvs)
    c.add("persistentvolumeclaims", *pvcs).add("csinodes", *csinodes)
    p = pod if pod is not None else make_pod(*pvcs)
    p = {**p, "node": "node1", "spec": {**p["spec"], "nodeName": "node1"}}
    c.pods.append(p)
    handle, halves = build(c, [PLUGIN])
    plugin = halves[PLUGIN]
    assert isinstance(plugin, VolumeBinding)
    return handle, plugin, Pod.from_dict(to_api(p))


def claim_ref(pv: Obj) -> tuple[str, str, str] | None:
    ref = pv["spec"].get("claimRef")
    return None if ref is None else (ref["namespace"], ref["name"], ref.get("uid", ""))


ASSUME = {
    "all-bound": ([BOUND_PVC], [PV_BOUND], [], [], False, True),
    "one-binding": ([UNBOUND_PVC], [PV_NODE1A], [(UNBOUND_PVC, PV_NODE1A)], [], False, False),
    "two-bindings": (
        [UNBOUND_PVC, UNBOUND_PVC2],
        [PV_NODE1A, PV_NODE1B],
        [(UNBOUND_PVC, PV_NODE1A), (UNBOUND_PVC2, PV_NODE1B)],
        [],
        False,
        False,
    ),
    "pv-already-bound": (
        [UNBOUND_PVC],
        [PV_NODE1A_BOUND],
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        False,
        False,
    ),
    "tmpupdate-failed": (
        [UNBOUND_PVC],
        [PV_NODE1A],
        [(UNBOUND_PVC, PV_NODE1A), (UNBOUND_PVC2, PV_NODE1B)],
        [],
        True,
        False,
    ),
    "one-binding, one-pvc-provisioned": (
        [UNBOUND_PVC, PROVISIONED_PVC],
        [PV_NODE1A],
        [(UNBOUND_PVC, PV_NODE1A)],
        [PROVISIONED_PVC],
        False,
        False,
    ),
    "one-binding, one-provision-tmpupdate-failed": (
        [UNBOUND_PVC, PROVISIONED_PVC_HIGHER_VERSION],
        [PV_NODE1A],
        [(UNBOUND_PVC, PV_NODE1A)],
        [PROVISIONED_PVC2],
        True,
        False,
    ),
}


@pytest.mark.parametrize("scenario", ASSUME, ids=list(ASSUME))
def test_assume_pod_volumes(scenario: str) -> None:
    pvcs, pvs, bindings, provisions, should_fail, all_bound = ASSUME[scenario]
    _, plugin, pod = binder_env(pvs, pvcs)
    binder = plugin.binder
    pv = PodVolumes(
        static=[(copy.deepcopy(c), copy.deepcopy(v)) for c, v in bindings],
        dynamic=[(copy.deepcopy(c), None) for c in provisions],
    )
    if should_fail:
        with pytest.raises(BinderError):
            binder.assume_pod_volumes(pod, "node1", pv)
        # Everything assumed so far was restored.
        for _, v in bindings:
            assert binder.pv_cache.get(v["metadata"]["name"]) in (None, *(p for p in pvs))
        for c in provisions:
            key = f"{c['metadata']['namespace']}/{c['metadata']['name']}"
            assert not binder.pvc_cache.is_assumed(key)
        return
    assert binder.assume_pod_volumes(pod, "node1", pv) == all_bound
    if all_bound:
        return
    for (claim, _), (_, got) in zip(bindings, pv.static, strict=True):
        ref = claim_ref(got)
        assert ref == ("testns", claim["metadata"]["name"], "pvc-uid")
        assert got["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert binder.pv_cache.get(got["metadata"]["name"]) is got or (
            claim_ref(binder.pv_cache.get(got["metadata"]["name"]) or {"spec": {}}) == ref
        )
    for c, _ in pv.dynamic:
        key = f"testns/{c['metadata']['name']}"
        cached = binder.pvc_cache.get(key)
        assert cached is not None
        assert cached["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node1"


def test_revert_assumed_pod_volumes() -> None:
    _, plugin, pod = binder_env([PV_NODE1A], [UNBOUND_PVC, PROVISIONED_PVC])
    binder = plugin.binder
    pv = PodVolumes(static=[(UNBOUND_PVC, PV_NODE1A)], dynamic=[(PROVISIONED_PVC, None)])
    assert binder.assume_pod_volumes(pod, "node1", pv) is False
    assert claim_ref(binder.pv_cache.get("pv-node1a") or {}) == ("testns", "unbound-pvc", "pvc-uid")
    assert binder.pvc_cache.is_assumed("testns/provisioned-pvc")
    binder.revert_assumed_pod_volumes(pv)
    assert binder.pv_cache.get("pv-node1a") == PV_NODE1A
    assert not binder.pvc_cache.is_assumed("testns/provisioned-pvc")


def test_find_assume_volumes_keeps_the_chosen_pv() -> None:
    # TestFindAssumeVolumes: once a PV is assumed for the claim, PreFilter and Filter
    # find that very PV again (it is pre-bound to the claim in the assume cache).
    pvcs = [UNBOUND_PVC]
    handle, plugin, pod = binder_env([PV_NODE2, PV_NODE1A, PV_NODE1C], pvcs)
    from ksched.framework.cycle_state import CycleState

    def plan() -> PodVolumes:
        state = CycleState()
        req = plugin.kernel_pre_filter(state, pod)
        assert req is not None
        data = state.get(PLUGIN).data
        got = handle.snapshot.volume_binding_plan(data.request, "node1")
        assert got is not None
        return data.pod_volumes(got)

    first = plan()
    chosen = [v["metadata"]["name"] for _, v in first.static]
    assert plugin.binder.assume_pod_volumes(pod, "node1", first) is False
    for _ in range(10):
        again = plan()
        assert [v["metadata"]["name"] for _, v in again.static] == chosen
        assert claim_ref(again.static[0][1]) == ("testns", "unbound-pvc", "pvc-uid")


# ---- PreBind: checkBindings ------------------------------------------------------------


def update(handle: FakeHandle, kind: str, obj: Obj) -> None:
    """An API update as the informer delivers it (a newer resourceVersion)."""
    inf = handle.informer(kind)
    current = inf.store.get(inf.key(obj))
    rv = int((current or obj)["metadata"].get("resourceVersion") or 0) + 1
    inf.add(with_rv(obj, str(rv)))


def delete(handle: FakeHandle, kind: str, objs: list[Obj]) -> None:
    for o in objs:
        handle.informer(kind).delete(o)


CHECK = {
    "nothing-to-bind": ([], [], [], [], [], [], False, False, False, True),
    "binding-bound": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A],
        [],
        [],
        False,
        False,
        False,
        True,
    ),
    "binding-prebound": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [PREBOUND_PVC_NODE1A],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "binding-unbound": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [UNBOUND_PVC],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "binding-pvc-not-exists": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [],
        [],
        [],
        False,
        False,
        True,
        False,
    ),
    "binding-pv-not-exists": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A],
        [],
        [],
        True,
        False,
        True,
        False,
    ),
    "binding-claimref-nil": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A],
        [BOUND_PVC_NODE1A],
        [PV_NODE1A],
        [BOUND_PVC_NODE1A],
        False,
        False,
        True,
        False,
    ),
    "binding-claimref-uid-empty": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [],
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A],
        [without_claim_uid(PV_NODE1A_BOUND)],
        [BOUND_PVC_NODE1A],
        False,
        False,
        True,
        False,
    ),
    "binding-one-bound,one-unbound": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND), (UNBOUND_PVC2, PV_NODE1B_BOUND)],
        [],
        [PV_NODE1A_BOUND, PV_NODE1B_BOUND],
        [BOUND_PVC_NODE1A, UNBOUND_PVC2],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "provisioning-pvc-bound": (
        [],
        [selected(PROVISIONED_PVC)],
        [PV_BOUND],
        [PROVISIONED_PVC_BOUND],
        [],
        [selected(PROVISIONED_PVC_BOUND)],
        False,
        False,
        False,
        True,
    ),
    "provisioning-pvc-unbound": (
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "provisioning-pvc-not-exists": (
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [PROVISIONED_PVC],
        [],
        [],
        False,
        True,
        True,
        False,
    ),
    "provisioning-pvc-annotations-nil": (
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [PROVISIONED_PVC],
        [],
        [PROVISIONED_PVC],
        False,
        False,
        True,
        False,
    ),
    "provisioning-pvc-selected-node-dropped": (
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [PROVISIONED_PVC],
        [],
        [empty_annotations(PROVISIONED_PVC)],
        False,
        False,
        True,
        False,
    ),
    "provisioning-pvc-selected-node-wrong-node": (
        [],
        [selected(PROVISIONED_PVC)],
        [],
        [PROVISIONED_PVC],
        [],
        [selected(PROVISIONED_PVC, "wrong-node")],
        False,
        False,
        True,
        False,
    ),
    "binding-bound-provisioning-unbound": (
        [(UNBOUND_PVC, PV_NODE1A_BOUND)],
        [selected(PROVISIONED_PVC)],
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A, selected(PROVISIONED_PVC)],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "tolerate-provisioning-pvc-bound-pv-not-found": (
        [],
        [selected(PROVISIONED_PVC)],
        [PV_NODE1A],
        [PROVISIONED_PVC],
        [],
        [selected(PROVISIONED_PVC_BOUND)],
        True,
        False,
        False,
        False,
    ),
}


@pytest.mark.parametrize("scenario", CHECK, ids=list(CHECK))
def test_check_bindings(scenario: str) -> None:
    (
        bindings,
        provisioned,
        init_pvs,
        init_pvcs,
        api_pvs,
        api_pvcs,
        delete_pvs,
        delete_pvcs,
        should_fail,
        want_bound,
    ) = CHECK[scenario]
    handle, plugin, pod = binder_env(init_pvs, init_pvcs, pod=make_pod())
    binder = plugin.binder
    _assume(plugin, bindings, provisioned)
    if delete_pvs:
        delete(handle, "persistentvolumes", init_pvs)
    for pv in api_pvs:
        update(handle, "persistentvolumes", pv)
    if delete_pvcs:
        delete(handle, "persistentvolumeclaims", init_pvcs)
    for pvc in api_pvcs:
        update(handle, "persistentvolumeclaims", pvc)
    if should_fail:
        with pytest.raises(BinderError):
            binder.check_bindings(pod, "node1", list(bindings), list(provisioned))
        return
    assert binder.check_bindings(pod, "node1", list(bindings), list(provisioned)) is want_bound


@pytest.mark.parametrize(
    (
        "bindings",
        "provisioned",
        "pvs",
        "pvcs",
        "labels",
        "csinodes",
        "api_pvcs",
        "should_fail",
        "bound",
    ),
    [
        pytest.param(
            [],
            [selected(PROV_MIGRATION_PVC_BOUND)],
            [MIGRATION_PV_BOUND],
            [PROV_MIGRATION_PVC_BOUND],
            NODE1_ZONE1,
            [CSI_NODE1_MIGRATED],
            [selected(PROV_MIGRATION_PVC_BOUND)],
            False,
            True,
            id="provisioning-pvc-bound",
        ),
        pytest.param(
            [(UNBOUND_PVC, MIGRATION_PV_BOUND_TO_UNBOUND)],
            [],
            [MIGRATION_PV_BOUND_TO_UNBOUND],
            [UNBOUND_PVC],
            NODE1_ZONE1,
            [CSI_NODE1_MIGRATED],
            [],
            False,
            False,
            id="binding-node-pv-same-zone",
        ),
        pytest.param(
            [(UNBOUND_PVC, MIGRATION_PV_BOUND_TO_UNBOUND)],
            [],
            [MIGRATION_PV_BOUND_TO_UNBOUND],
            [UNBOUND_PVC],
            NODE1_ZONE1,
            [],
            [],
            False,
            False,
            id="binding-without-csinode",
        ),
        pytest.param(
            [(UNBOUND_PVC, MIGRATION_PV_BOUND_TO_UNBOUND)],
            [],
            [MIGRATION_PV_BOUND_TO_UNBOUND],
            [UNBOUND_PVC],
            NODE1_ZONE1,
            [CSI_NODE1_NOT_MIGRATED],
            [],
            False,
            False,
            id="binding-non-migrated-plugin",
        ),
        pytest.param(
            [(UNBOUND_PVC, MIGRATION_PV_BOUND_TO_UNBOUND)],
            [],
            [MIGRATION_PV_BOUND_TO_UNBOUND],
            [UNBOUND_PVC],
            NODE1_ZONE2,
            [CSI_NODE1_MIGRATED],
            [],
            True,
            False,
            id="binding-node-pv-in-different-zones",
        ),
        pytest.param(
            [(UNBOUND_PVC, NONMIGRATION_PV_BOUND_TO_UNBOUND)],
            [],
            [NONMIGRATION_PV_BOUND_TO_UNBOUND],
            [UNBOUND_PVC],
            NODE1_ZONE2,
            [CSI_NODE1_MIGRATED],
            [],
            False,
            False,
            id="binding-node-pv-different-zones-migration-off",
        ),
    ],
)
def test_check_bindings_with_csi_migration(
    bindings: list[Any],
    provisioned: list[Obj],
    pvs: list[Obj],
    pvcs: list[Obj],
    labels: dict[str, str],
    csinodes: list[Obj],
    api_pvcs: list[Obj],
    should_fail: bool,
    bound: bool,
) -> None:
    handle, plugin, pod = binder_env(
        pvs, pvcs, nodes={"node1": labels}, csinodes=csinodes, pod=make_pod()
    )
    for pvc in api_pvcs:
        update(handle, "persistentvolumeclaims", pvc)
    binder = plugin.binder
    if should_fail:
        with pytest.raises(BinderError):
            binder.check_bindings(pod, "node1", list(bindings), list(provisioned))
        return
    assert binder.check_bindings(pod, "node1", list(bindings), list(provisioned)) is bound


# ---- PreBind: BindPodVolumes -----------------------------------------------------------


async def _bind(
    handle: FakeHandle, plugin: VolumeBinding, pod: Pod, pv: PodVolumes, later: Any = None
) -> BaseException | None:
    """``bind_pod_volumes`` with the API's answers written back to the informers, and
    ``later(handle)`` run after the writes (the PV controller's part)."""
    api = handle.api
    original = api.update_object

    async def update_object(*, kind: str, obj: Obj, subresource: str = "") -> Obj:
        inf = handle.informer(kind)
        stored = inf.store.get(inf.key(obj))
        if stored is not None and stored["metadata"].get("resourceVersion") != obj["metadata"].get(
            "resourceVersion"
        ):
            raise Conflict(f'Operation cannot be fulfilled on {kind} "{obj["metadata"]["name"]}"')
        out = await original(kind=kind, obj=obj)
        inf.add(out)
        return out

    api.update_object = update_object  # type: ignore[method-assign]
    task = asyncio.get_running_loop().create_task(plugin.binder.bind_pod_volumes(pod, "node1", pv))
    if later is not None:
        await asyncio.sleep(0.05)
        later(handle)
    try:
        await task
    except BinderError as exc:
        return exc
    return None


def _assume(plugin: VolumeBinding, bindings: list[Any], claims: list[Obj]) -> PodVolumes:
    """upstream ``assumeVolumes``: the given objects straight into the assume caches."""
    for _, volume in bindings:
        plugin.binder.pv_cache.assume(volume)
    for claim in claims:
        plugin.binder.pvc_cache.assume(claim)
    return PodVolumes(static=list(bindings), dynamic=[(c, None) for c in claims])


def _bind_claim(handle: FakeHandle, claim: Obj, pv_name: str) -> None:
    """The PV controller's part: the claim fully bound to ``pv_name``."""
    inf = handle.informer("persistentvolumeclaims")
    current = inf.store[f"testns/{claim['metadata']['name']}"]
    new = copy.deepcopy(current)
    new["spec"]["volumeName"] = pv_name
    new["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    update(handle, "persistentvolumeclaims", new)


def _provision(handle: FakeHandle) -> None:
    claim = handle.informer("persistentvolumeclaims").store["testns/provisioned-pvc"]
    dynamic = make_test_pv("dynamic-pv", "node1", "1G", "1", claim, WAIT_CLASS)
    handle.informer("persistentvolumes").add(dynamic)
    _bind_claim(handle, claim, "dynamic-pv")


def _delete_pod(handle: FakeHandle) -> None:
    handle.pods.clear()


TWO_NODES = {"node1": NODE1, "node2": NODE2}

# (init PVs, init PVCs, binding, claim to provision, API PV, API PVC, delay, nodes,
#  error or None): upstream's table; "nothing-to-bind-nil" has no counterpart.
BIND = {
    "nothing-to-bind-empty": ([], [], None, None, None, None, None, None, None),
    "already-bound": (
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        None,
        None,
        None,
    ),
    "binding-static-pv-succeeds-after-time": (
        [PV_NODE1A],
        [UNBOUND_PVC],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        lambda h: _bind_claim(h, UNBOUND_PVC, "pv-node1a"),
        None,
        None,
    ),
    "binding-dynamic-pv-succeeds-after-time": (
        [],
        [PROVISIONED_PVC],
        None,
        selected(PROVISIONED_PVC),
        None,
        None,
        _provision,
        None,
        None,
    ),
    "bound-by-pv-controller-before-bind": (
        [PV_NODE1A],
        [UNBOUND_PVC],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        PV_NODE1A_BOUND,
        BOUND_PVC_NODE1A,
        None,
        None,
        'Operation cannot be fulfilled on persistentvolumes "pv-node1a"',
    ),
    "pod-deleted-after-time": (
        [PV_NODE1A],
        [UNBOUND_PVC],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        _delete_pod,
        None,
        'binding volumes: pod does not exist any more: pod "test-pod" not found',
    ),
    "binding-times-out": (
        [PV_NODE1A],
        [UNBOUND_PVC],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        None,
        None,
        "binding volumes: context deadline exceeded",
    ),
    "binding-fails": (
        [PV_NODE1B],
        [UNBOUND_PVC2],
        (UNBOUND_PVC2, PV_NODE1B_BOUND),
        None,
        None,
        None,
        None,
        None,
        "binding volumes: context deadline exceeded",
    ),
    "check-fails": (
        [PV_NODE1A],
        [UNBOUND_PVC],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        lambda h: delete(h, "persistentvolumeclaims", [UNBOUND_PVC]),
        None,
        "binding volumes: failed to check binding: "
        'persistentvolumeclaims "testns/unbound-pvc" not found',
    ),
    "node-affinity-fails": (
        [PV_NODE1A_BOUND],
        [BOUND_PVC_NODE1A],
        (UNBOUND_PVC, PV_NODE1A_BOUND),
        None,
        None,
        None,
        None,
        {"node1": {}},
        f'binding volumes: pv "pv-node1a" node affinity doesn\'t match node "node1": {NO_TERMS}',
    ),
    "node-affinity-fails-dynamic-provisioning": (
        [PV_NODE1A, PV_NODE2],
        [SELECTED_NODE_PVC],
        None,
        SELECTED_NODE_PVC,
        None,
        None,
        lambda h: _bind_claim(h, SELECTED_NODE_PVC, "pv-node2"),
        TWO_NODES,
        f'binding volumes: pv "pv-node2" node affinity doesn\'t match node "node1": {NO_TERMS}',
    ),
}


@pytest.mark.parametrize("scenario", BIND, ids=list(BIND))
async def test_bind_pod_volumes(scenario: str) -> None:
    (init_pvs, init_pvcs, binding, claim, api_pv, api_pvc, delay, nodes, want) = BIND[scenario]
    handle, plugin, pod = binder_env(init_pvs, init_pvcs, nodes=nodes, pod=make_pod())
    # upstream: a 5 s delay under a 10 s timeout (halved here).
    plugin.binder.bind_timeout = 2.5
    pv = _assume(plugin, [binding] if binding else [], [claim] if claim else [])
    if api_pv is not None:
        update(handle, "persistentvolumes", api_pv)
    if api_pvc is not None:
        update(handle, "persistentvolumeclaims", api_pvc)
    err = await _bind(handle, plugin, pod, pv, delay)
    if want is None:
        assert err is None
    else:
        assert err is not None and want in str(err)

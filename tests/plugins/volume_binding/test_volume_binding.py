"""VolumeBinding, the plugin: PreFilter, Filter, Score, PreBindPreFlight and queueing
hints.

Ported from pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go
(TestVolumeBinding, Test_PreBindPreFlight, TestIsSchedulableAfterCSINodeChange,
TestIsSchedulableAfterPersistentVolumeClaimChange,
TestIsSchedulableAfterStorageClassChange,
TestIsSchedulableAfterCSIStorageCapacityChange, TestIsSchedulableAfterCSIDriverChange)
and scorer_test.go (TestScore, through static bindings whose claims request and PVs hold
the table's amounts). Upstream's ``wantStateAfterPreFilter`` has no counterpart (the
state is the kernels' request); the Filter statuses and scores it leads to are checked.
The StorageCapacityScoring gate is what gives the args a ``shape`` (see
``ksched.config.defaults``), so a case with the gate runs with that shape. The "type
conversion error" hint cases have no counterpart: a hint that raises is treated as Queue
by the queue (tested there).
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import ActionType, QueueingHint
from ksched.framework.cycle_state import CycleState
from ksched.framework.status import Code
from ksched.plugins.volume_binding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinding,
    _State,
    events_to_register,
)
from ksched.plugins.volume_binding.binder import PodVolumes
from tests.plugins.harness import node, to_api
from tests.plugins.volume_binding.fixtures import NODE_LABEL_KEY, make_capacity
from tests.plugins.volume_harness import (
    VolumeCluster,
    csi_driver,
    hostname_affinity,
    pv,
    pvc,
    run,
    storage_class,
    volume_pod,
)

Obj = dict[str, Any]
PLUGIN = "VolumeBinding"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WAIT_SC = "wait-sc"
WAIT_HDD_SC = "wait-hdd-sc"
IMMEDIATE_SC = "immediate-sc"
CAPACITY_SC = "wait-sc-with-storage-capacity"
CAPACITY_DRIVER = "driver-with-storage-capacity"
DEFAULT_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]


def classes() -> list[Obj]:
    """The classes (and driver) upstream's TestVolumeBinding creates for every case."""
    return [
        storage_class(IMMEDIATE_SC, mode="Immediate", provisioner=""),
        storage_class(WAIT_SC, mode="WaitForFirstConsumer", provisioner=""),
        storage_class(WAIT_HDD_SC, mode="WaitForFirstConsumer", provisioner=""),
        storage_class(CAPACITY_SC, mode="WaitForFirstConsumer", provisioner=CAPACITY_DRIVER),
    ]


def make_pod(*claims: str) -> Obj:
    """upstream ``makePod("pod-a").withPVCVolume(claim, "")...``."""
    return volume_pod(
        "pod-a", *({"name": "", "persistentVolumeClaim": {"claimName": c}} for c in claims)
    )


def make_node(name: str, **labels: str) -> Obj:
    """upstream ``makeNode``: the hostname label, and these."""
    return node(name, {HOSTNAME: name, **labels})


def make_pvc(
    name: str, class_name: str, *, bound: str = "", storage: str | None = None, **kw: Any
) -> Obj:
    """upstream ``makePVC(name, class)``, ``withBoundPV`` and ``withRequestStorage``."""
    ann = {"pv.kubernetes.io/bind-completed": "true"} if bound else {}
    return pvc(
        name,
        class_name=class_name,
        volume=bound,
        storage=storage,
        modes=(),
        annotations=ann,
        **kw,
    )


def make_pv(
    name: str, class_name: str, capacity: str | None = None, affinity: dict[str, str] | None = None
) -> Obj:
    """upstream ``makePV(name, class).withPhase(Available)`` with ``withCapacity`` and
    ``withNodeAffinity`` (one ``In`` requirement per label)."""
    aff = None
    if affinity:
        exprs = [{"key": k, "operator": "In", "values": [v]} for k, v in affinity.items()]
        aff = {"nodeSelectorTerms": [{"matchExpressions": exprs}]}
    return pv(
        name, class_name=class_name, capacity=capacity, modes=(), phase="Available", affinity=aff
    )


def on_host(name: str, class_name: str, capacity: str, host: str) -> Obj:
    out = make_pv(name, class_name, capacity)
    out["spec"]["nodeAffinity"] = {"required": hostname_affinity(host)}
    return out


def in_zone(name: str, capacity: str, zone: str, region: str) -> Obj:
    out = make_pv(name, WAIT_SC, capacity)
    out["spec"]["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": REGION, "operator": "In", "values": [region]},
                        {"key": ZONE, "operator": "In", "values": [zone]},
                    ]
                }
            ]
        }
    }
    return out


def zone_nodes() -> list[Obj]:
    return [
        make_node(f"zone-{z}-node-{n}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"})
        for z in "abc"
        for n in "ab"
    ]


def labelled(*names: str) -> list[Obj]:
    return [make_node(n, **{NODE_LABEL_KEY: n}) for n in names]


def capacity(node_name: str, amount: str) -> Obj:
    out = make_capacity(node_name, CAPACITY_SC, {NODE_LABEL_KEY: node_name}, amount, "")
    out["metadata"]["namespace"] = "default"
    return out


ZONAL_PVS = [
    in_zone("pv-a-0", "200Gi", "zone-a", "region-a"),
    in_zone("pv-a-1", "200Gi", "zone-a", "region-a"),
    in_zone("pv-b-0", "100Gi", "zone-b", "region-b"),
    in_zone("pv-b-1", "100Gi", "zone-b", "region-b"),
]
LOCAL_PVS = [
    on_host("pv-a-0", WAIT_SC, "200Gi", "node-a"),
    on_host("pv-a-1", WAIT_SC, "200Gi", "node-a"),
    on_host("pv-b-0", WAIT_SC, "100Gi", "node-b"),
    on_host("pv-b-1", WAIT_SC, "100Gi", "node-b"),
]
LOCAL_HDD_PVS = [
    on_host("pv-a-2", WAIT_HDD_SC, "200Gi", "node-a"),
    on_host("pv-a-3", WAIT_HDD_SC, "200Gi", "node-a"),
    on_host("pv-b-2", WAIT_HDD_SC, "100Gi", "node-b"),
    on_host("pv-b-3", WAIT_HDD_SC, "100Gi", "node-b"),
]
ABC = [make_node("node-a"), make_node("node-b"), make_node("node-c")]
NO_BIND = (UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)
CUSTOM_SHAPE = [
    {"utilization": 0, "score": 0},
    {"utilization": 50, "score": 3},
    {"utilization": 100, "score": 5},
]
MAX_FIRST_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]

# name: (pod, nodes, pvcs, pvs, capacities, shape (None: gate off), PreFilter (None:
# success, "Skip", or (code, message)), Filter per node (None: feasible, else the code
# and reasons), scores per node (None: not scored))
CASES: dict[str, tuple[Any, ...]] = {
    "pod has not pvcs": (
        volume_pod("pod-a"),
        [make_node("node-a")],
        [],
        [],
        [],
        None,
        "Skip",
        [None],
        None,
    ),
    "all bound": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC, bound="pv-a")],
        [make_pv("pv-a", WAIT_SC)],
        [],
        None,
        None,
        [None],
        None,
    ),
    "PVC does not exist": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [],
        [],
        [],
        None,
        (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'),
        None,
        None,
    ),
    "Part of PVCs do not exist": (
        make_pod("pvc-a", "pvc-b"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC, bound="pv-a")],
        [],
        [],
        None,
        (UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'),
        None,
        None,
    ),
    "immediate claims not bound": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", IMMEDIATE_SC)],
        [],
        [],
        None,
        (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
        None,
        None,
    ),
    "unbound claims no matches": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC)],
        [],
        [],
        None,
        None,
        [NO_BIND],
        None,
    ),
    "bound and unbound unsatisfied": (
        make_pod("pvc-a", "pvc-b"),
        [make_node("node-a", foo="barbar")],
        [make_pvc("pvc-a", WAIT_SC, bound="pv-a"), make_pvc("pvc-b", WAIT_SC)],
        [make_pv("pv-a", WAIT_SC, affinity={"foo": "bar"})],
        [],
        None,
        None,
        [(UNRESOLVABLE, ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
        None,
    ),
    "pv not found": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC, bound="pv-a")],
        [],
        [],
        None,
        None,
        [(UNRESOLVABLE, ERR_REASON_PV_NOT_EXIST)],
        None,
    ),
    "pv not found claim lost": (
        make_pod("pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC, bound="pv-a", phase="Lost")],
        [],
        [],
        None,
        (
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
        ),
        None,
        None,
    ),
    "local volumes with close capacity are preferred": (
        make_pod("pvc-a"),
        ABC,
        [make_pvc("pvc-a", WAIT_SC, storage="50Gi")],
        LOCAL_PVS,
        [],
        DEFAULT_SHAPE,
        None,
        [None, None, NO_BIND],
        [25, 50, None],
    ),
    "local volumes with close capacity are preferred (multiple pvcs)": (
        make_pod("pvc-0", "pvc-1"),
        ABC,
        [
            make_pvc("pvc-0", WAIT_SC, storage="50Gi"),
            make_pvc("pvc-1", WAIT_HDD_SC, storage="100Gi"),
        ],
        LOCAL_PVS + LOCAL_HDD_PVS,
        [],
        DEFAULT_SHAPE,
        None,
        [None, None, NO_BIND],
        [38, 75, None],
    ),
    "zonal volumes with close capacity are preferred": (
        make_pod("pvc-a"),
        zone_nodes(),
        [make_pvc("pvc-a", WAIT_SC, storage="50Gi")],
        ZONAL_PVS,
        [],
        DEFAULT_SHAPE,
        None,
        [None] * 4 + [NO_BIND] * 2,
        [25, 25, 50, 50, None, None],
    ),
    "zonal volumes with close capacity are preferred (custom shape)": (
        make_pod("pvc-a"),
        zone_nodes(),
        [make_pvc("pvc-a", WAIT_SC, storage="50Gi")],
        ZONAL_PVS,
        [],
        CUSTOM_SHAPE,
        None,
        [None] * 4 + [NO_BIND] * 2,
        [15, 15, 30, 30, None, None],
    ),
    "storage capacity score": (
        make_pod("pvc-dynamic"),
        labelled("node-a", "node-b", "node-c"),
        [make_pvc("pvc-dynamic", CAPACITY_SC, storage="10Gi")],
        [],
        [capacity("node-a", "100Gi"), capacity("node-b", "50Gi"), capacity("node-c", "10Gi")],
        DEFAULT_SHAPE,
        None,
        [None] * 3,
        [10, 20, 100],
    ),
    "storage capacity score with static binds": (
        make_pod("pvc-dynamic", "pvc-static"),
        labelled("node-a", "node-b", "node-c"),
        [
            make_pvc("pvc-dynamic", CAPACITY_SC, storage="10Gi"),
            make_pvc("pvc-static", WAIT_SC, storage="50Gi"),
        ],
        [on_host(f"pv-static-{n}", WAIT_SC, "100Gi", f"node-{n}") for n in "abc"],
        [capacity("node-a", "100Gi"), capacity("node-b", "50Gi"), capacity("node-c", "10Gi")],
        DEFAULT_SHAPE,
        None,
        [None] * 3,
        [50, 50, 50],
    ),
    "dynamic provisioning with multiple PVCs of the same StorageClass": (
        make_pod("pvc-dynamic-0", "pvc-dynamic-1"),
        labelled("node-a"),
        [
            make_pvc("pvc-dynamic-0", CAPACITY_SC, storage="50Gi"),
            make_pvc("pvc-dynamic-1", CAPACITY_SC, storage="50Gi"),
        ],
        [],
        [capacity("node-a", "100Gi")],
        DEFAULT_SHAPE,
        None,
        [None],
        [100],
    ),
    "prefer node with least allocatable": (
        make_pod("pvc-dynamic"),
        labelled("node-a", "node-b", "node-c"),
        [make_pvc("pvc-dynamic", CAPACITY_SC, storage="10Gi")],
        [],
        [capacity("node-a", "100Gi"), capacity("node-b", "20Gi"), capacity("node-c", "10Gi")],
        DEFAULT_SHAPE,
        None,
        [None] * 3,
        [10, 50, 100],
    ),
    "prefer node with maximum allocatable": (
        make_pod("pvc-dynamic"),
        labelled("node-a", "node-b", "node-c"),
        [make_pvc("pvc-dynamic", CAPACITY_SC, storage="10Gi")],
        [],
        [capacity("node-a", "100Gi"), capacity("node-b", "20Gi"), capacity("node-c", "10Gi")],
        MAX_FIRST_SHAPE,
        None,
        [None] * 3,
        [90, 50, 0],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_volume_binding(case: str) -> None:
    pod, nodes, pvcs, pvs, capacities, shape, pre_filter, filters, scores = CASES[case]
    c = VolumeCluster(list(nodes))
    c.add("storageclasses", *classes()).add(
        "csidrivers", csi_driver(CAPACITY_DRIVER, storage_capacity=True)
    )
    c.add("persistentvolumeclaims", *pvcs).add("persistentvolumes", *pvs)
    c.add("csistoragecapacities", *capacities)
    args = {PLUGIN: {"bindTimeoutSeconds": 300, **({"shape": shape} if shape else {})}}
    out = run(c, pod, [PLUGIN], [(PLUGIN, 1)], args)
    got = out.pre_filter[PLUGIN]
    if pre_filter is None or pre_filter == "Skip":
        assert got == pre_filter
    else:
        assert got == pre_filter
        return
    names = [n["name"] for n in nodes]
    assert [out.nodes[n] for n in names] == filters
    if scores is None:
        return
    got_scores = out.scores.get(PLUGIN, {})
    assert [
        got_scores.get(n) if filters[i] is None else None for i, n in enumerate(names)
    ] == scores


def test_without_the_gate_the_plugin_does_not_score() -> None:
    # PreScore says Skip without StorageCapacityScoring (no shape): every node scores 0.
    c = VolumeCluster(list(ABC)).add("storageclasses", *classes())
    c.add("persistentvolumeclaims", make_pvc("pvc-a", WAIT_SC, storage="50Gi"))
    c.add("persistentvolumes", *LOCAL_PVS)
    out = run(c, make_pod("pvc-a"), [PLUGIN], [(PLUGIN, 1)], {PLUGIN: {"bindTimeoutSeconds": 300}})
    assert set(out.scores.get(PLUGIN, {}).values()) <= {0}


# ---- scorer_test.go TestScore ----------------------------------------------------------

HDD, SSD = "hdd", "ssd"

SCORES = {
    "default shape, single class": (
        DEFAULT_SHAPE,
        [
            ({HDD: (0, 100)}, 0),
            ({HDD: (30, 100)}, 30),
            ({HDD: (50, 100)}, 50),
            ({HDD: (100, 100)}, 100),
        ],
    ),
    "default shape, multiple classes": (
        DEFAULT_SHAPE,
        [
            ({HDD: (0, 100), SSD: (0, 100)}, 0),
            ({HDD: (0, 100), SSD: (30, 100)}, 15),
            ({HDD: (30, 100), SSD: (30, 100)}, 30),
            ({HDD: (30, 100), SSD: (60, 100)}, 45),
            ({HDD: (50, 100), SSD: (50, 100)}, 50),
            ({HDD: (50, 100), SSD: (100, 100)}, 75),
            ({HDD: (100, 100), SSD: (100, 100)}, 100),
        ],
    ),
    "custom shape, multiple classes": (
        [
            {"utilization": 50, "score": 0},
            {"utilization": 80, "score": 3},
            {"utilization": 100, "score": 5},
        ],
        [
            ({HDD: (0, 100), SSD: (0, 100)}, 0),
            ({HDD: (0, 100), SSD: (30, 100)}, 0),
            ({HDD: (30, 100), SSD: (30, 100)}, 0),
            ({HDD: (30, 100), SSD: (60, 100)}, 5),
            ({HDD: (50, 100), SSD: (100, 100)}, 25),
            ({HDD: (90, 100), SSD: (90, 100)}, 40),
            ({HDD: (100, 100), SSD: (100, 100)}, 50),
        ],
    ),
}


def _score_case(shape: list[Obj], resources: dict[str, tuple[int, int]]) -> int:
    """One claim per class requesting ``requested`` bytes, bound statically to a PV of
    ``capacity`` bytes on the node: the class resources upstream's scorer is given."""
    c = VolumeCluster([make_node("node-a")])
    c.add("storageclasses", *(storage_class(k, mode="WaitForFirstConsumer") for k in resources))
    for k, (requested, cap) in resources.items():
        c.add("persistentvolumeclaims", make_pvc(f"pvc-{k}", k, storage=str(requested)))
        c.add("persistentvolumes", on_host(f"pv-{k}", k, str(cap), "node-a"))
    pod = make_pod(*(f"pvc-{k}" for k in resources))
    out = run(c, pod, [PLUGIN], [(PLUGIN, 1)], {PLUGIN: {"shape": shape}})
    assert out.nodes["node-a"] is None
    return out.scores[PLUGIN]["node-a"]


@pytest.mark.parametrize("name", SCORES, ids=list(SCORES))
def test_score(name: str) -> None:
    shape, cases = SCORES[name]
    assert [_score_case(shape, r) for r, _ in cases] == [want for _, want in cases]


# ---- PreBindPreFlight ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("st", "want"),
    [
        pytest.param(_State(all_bound=True), (Code.SKIP, ""), id="all bound"),
        pytest.param(_State(pod_volumes=PodVolumes([], [])), None, id="volume to be bound"),
        pytest.param(None, (Code.ERROR, "not found"), id="error: state is nil"),
        pytest.param(
            _State(),
            (Code.ERROR, 'no pod volume found for node "node-a"'),
            id="error: node is not found in podVolumesByNode",
        ),
    ],
)
def test_pre_bind_pre_flight(st: _State | None, want: tuple[Code, str] | None) -> None:
    state = CycleState()
    if st is not None:
        state.write(PLUGIN, st)
    got = VolumeBinding().pre_bind_pre_flight(state, Pod.from_dict(to_api(volume_pod())), "node-a")
    assert (None if got is None else (got.code, got.message)) == want
    # upstream: PreBindPreFlightResult{AllowParallel: true} in every case.
    assert VolumeBinding.pre_bind_parallel is True


# ---- queueing hints --------------------------------------------------------------------


def hint(resource: str, pod: Obj, old: Any, new: Any) -> str:
    for reg in events_to_register():
        if reg.event.resource == resource:
            assert reg.hint is not None
            got = reg.hint(Pod.from_dict(to_api(pod)), old, new)
            return "Queue" if got == QueueingHint.QUEUE else "Skip"
    raise AssertionError(f"no registration for {resource}")


def csinode(migrated: str | None) -> Obj:
    meta: Obj = {"name": "csinode-a"}
    if migrated is not None:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return {"metadata": meta, "spec": {"drivers": []}}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, csinode(None), "Queue", id="CSINode is newly created"),
        pytest.param(
            csinode("test1"),
            csinode("test1, test2"),
            "Queue",
            id="CSINode's migrated-plugins annotations is added",
        ),
        pytest.param(
            csinode("test1"),
            csinode("test2"),
            "Queue",
            id="CSINode's migrated-plugins annotation is updated",
        ),
        pytest.param(
            csinode("test1"),
            csinode("test1"),
            "Skip",
            id="CSINode is updated but migrated-plugins annotation gets unchanged",
        ),
    ],
)
def test_is_schedulable_after_csinode_change(old: Any, new: Any, want: str) -> None:
    assert hint("storage.k8s.io/CSINode", volume_pod("pod-a"), old, new) == want


def ephemeral_pod(*names: str) -> Obj:
    return volume_pod("pod-a", *({"name": n, "ephemeral": {}} for n in names))


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            volume_pod("pod-a", {"name": "e", "emptyDir": {}}),
            make_pvc("pvc-b", "sc-a"),
            make_pvc("pvc-b", "sc-a"),
            "Skip",
            id="pod has no pvc or ephemeral volumes",
        ),
        pytest.param(
            volume_pod(
                "pod-a",
                {"name": "", "persistentVolumeClaim": {"claimName": "pvc-a"}},
                {"name": "", "persistentVolumeClaim": {"claimName": "pvc-b"}},
                namespace="ns-a",
            ),
            None,
            make_pvc("pvc-b", ""),
            "Skip",
            id="pvc with the same name as the one used by the pod in a different namespace is modified",  # noqa: E501
        ),
        pytest.param(
            make_pod("pvc-a", "pvc-c"),
            make_pvc("pvc-b", ""),
            make_pvc("pvc-b", ""),
            "Skip",
            id="pod has no pvc that is being modified",
        ),
        pytest.param(
            ephemeral_pod("ephemeral-a", "ephemeral-c"),
            make_pvc("pod-a-ephemeral-b", ""),
            make_pvc("pod-a-ephemeral-b", ""),
            "Skip",
            id="pod has no generic ephemeral volume that is being modified",
        ),
        pytest.param(
            make_pod("pvc-a", "pvc-b"),
            make_pvc("pvc-b", ""),
            make_pvc("pvc-b", ""),
            "Queue",
            id="pod has the pvc that is being modified",
        ),
        pytest.param(
            ephemeral_pod("ephemeral-a", "ephemeral-b"),
            make_pvc("pod-a-ephemeral-b", ""),
            make_pvc("pod-a-ephemeral-b", ""),
            "Queue",
            id="pod has the generic ephemeral volume that is being modified",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_claim_change(
    pod: Obj, old: Any, new: Any, want: str
) -> None:
    assert hint("PersistentVolumeClaim", pod, old, new) == want


def sc(topologies: list[Obj] | None = None) -> Obj:
    out: Obj = {"metadata": {"name": "sc-a"}}
    if topologies is not None:
        out["allowedTopologies"] = topologies
    return out


HOST_TOPOLOGY = [{"matchLabelExpressions": [{"key": HOSTNAME, "values": ["node-a"]}]}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            None, sc(), "Queue", id="When a new StorageClass is created, it returns Queue"
        ),
        pytest.param(
            sc(),
            sc(HOST_TOPOLOGY),
            "Queue",
            id="When the AllowedTopologies are changed, it returns Queue",
        ),
        pytest.param(
            sc(),
            sc(),
            "Skip",
            id="When there are no changes to the StorageClass, it returns QueueSkip",
        ),
        pytest.param(sc(), sc([]), "Skip", id="an empty list is a nil list (semantic equality)"),
    ],
)
def test_is_schedulable_after_storage_class_change(old: Any, new: Any, want: str) -> None:
    assert hint("storage.k8s.io/StorageClass", volume_pod("pod-a"), old, new) == want


def cap(capacity: int | None = None, max_size: int | None = None) -> Obj:
    out: Obj = {"metadata": {"name": "cap-a"}}
    if capacity is not None:
        out["capacity"] = str(capacity)
    if max_size is not None:
        out["maximumVolumeSize"] = str(max_size)
    return out


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            None, cap(), "Queue", id="When a new CSIStorageCapacity is created, it returns Queue"
        ),
        pytest.param(
            cap(),
            cap(100),
            "Queue",
            id="When the volume limit is increase(Capacity set), it returns Queue",
        ),
        pytest.param(
            cap(),
            cap(None, 100),
            "Queue",
            id="When the volume limit is increase(MaximumVolumeSize set), it returns Queue",
        ),
        pytest.param(
            cap(50),
            cap(100),
            "Queue",
            id="When the volume limit is increase(Capacity increase), it returns Queue",
        ),
        pytest.param(
            cap(100, 50),
            cap(100),
            "Queue",
            id="When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
        ),
        pytest.param(
            cap(100, 50),
            cap(100, 60),
            "Queue",
            id="When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
        ),
        pytest.param(
            cap(100, 50),
            cap(100, 50),
            "Skip",
            id="When there are no changes to the CSIStorageCapacity, it returns QueueSkip",
        ),
        pytest.param(
            cap(100),
            cap(100),
            "Skip",
            id="When the volume limit is equal(Capacity), it returns QueueSkip",
        ),
        pytest.param(
            cap(100, 50),
            cap(50),
            "Skip",
            id="When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
        ),
        pytest.param(
            cap(100),
            cap(90),
            "Skip",
            id="When the volume limit is decrease(Capacity), it returns QueueSkip",
        ),
        pytest.param(
            cap(None, 100),
            cap(None, 90),
            "Skip",
            id="When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
        ),
    ],
)
def test_is_schedulable_after_csi_storage_capacity_change(old: Any, new: Any, want: str) -> None:
    assert hint("storage.k8s.io/CSIStorageCapacity", volume_pod("pod-a"), old, new) == want


def driver(name: str, storage_capacity: bool | None) -> Obj:
    return csi_driver(name, storage_capacity=storage_capacity)


def csi_pod(driver_name: str | None) -> Obj:
    if driver_name is None:
        return volume_pod("pod-a")
    return volume_pod("pod-a", {"name": "", "csi": {"driver": driver_name}})


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            csi_pod(None),
            driver("test1", None),
            driver("test1", True),
            "Skip",
            id="pod has no CSIDriver",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test2", True),
            driver("test2", False),
            "Skip",
            id="driver name in pod and csidriver name are different",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test1", None),
            driver("test1", None),
            "Skip",
            id="original StorageCapacity is nil",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test1", False),
            driver("test1", False),
            "Skip",
            id="original StorageCapacity is false",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test1", True),
            driver("test1", None),
            "Queue",
            id="modified StorageCapacity is nil",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test1", True),
            driver("test1", True),
            "Skip",
            id="modified StorageCapacity is true",
        ),
        pytest.param(
            csi_pod("test1"),
            driver("test1", True),
            driver("test1", False),
            "Queue",
            id="modified StorageCapacity is false",
        ),
    ],
)
def test_is_schedulable_after_csi_driver_change(pod: Obj, old: Any, new: Any, want: str) -> None:
    assert hint("storage.k8s.io/CSIDriver", pod, old, new) == want


def test_events_are_upstreams_with_queueing_hints() -> None:
    a = ActionType
    assert [
        (r.event.resource, r.event.action, r.hint is not None) for r in events_to_register()
    ] == [
        ("storage.k8s.io/StorageClass", a.ADD | a.UPDATE, True),
        ("PersistentVolumeClaim", a.ADD | a.UPDATE, True),
        ("PersistentVolume", a.ADD | a.UPDATE, False),
        ("Node", a.ADD | a.UPDATE_NODE_LABEL, False),
        ("storage.k8s.io/CSINode", a.ADD | a.UPDATE, True),
        ("storage.k8s.io/CSIDriver", a.UPDATE, True),
        ("storage.k8s.io/CSIStorageCapacity", a.ADD | a.UPDATE, True),
    ]

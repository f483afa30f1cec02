"""VolumeRestrictions: upstream's PreFilter/Filter tables and queueing hints.

Ported from pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go
(TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts,
TestISCSIDiskConflicts, TestAccessModeConflicts, Test_isSchedulableAfterPodDeleted,
Test_isSchedulableAfterPersistentVolumeClaimChange), plus the AddPod/RemovePod cases
(nominated pods, preemption's victims) upstream covers through the framework.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import QueueingHint
from ksched.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    events_to_register,
)
from tests.plugins.harness import node, to_api
from tests.plugins.volume_harness import VolumeCluster, pvc, pvc_volume, run, volume_pod

PLUGIN = "VolumeRestrictions"
DISK_CONFLICT = ("Unschedulable", ERR_REASON_DISK_CONFLICT)
RWOP_CONFLICT = ("Unschedulable", ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)

GCE = {"name": "gce", "gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"name": "gce", "gcePersistentDisk": {"pdName": "bar"}}
AWS = {"name": "aws", "awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"name": "aws", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {
    "name": "rbd",
    "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"},
}
RBD2 = {
    "name": "rbd",
    "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"},
}
ISCSI = {
    "name": "iscsi",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    },
}
ISCSI2 = {
    "name": "iscsi",
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    },
}
NO_RESTRICTION = {"name": "volume with no restriction", "emptyDir": {}}


def outcome(incoming: dict[str, Any], existing: list[dict[str, Any]], **objects: Any) -> Any:
    c = VolumeCluster([node("node-1")], existing)
    for kind, objs in objects.items():
        c.add(kind, *objs)
    return run(c, incoming, [PLUGIN])


def disk_cases(vol: dict[str, Any], other: dict[str, Any], prefix: str) -> list[Any]:
    return [
        pytest.param(volume_pod(), [], "Skip", None, id=f"{prefix}-nothing"),
        pytest.param(
            volume_pod(),
            [volume_pod("e", vol, node="node-1")],
            "Skip",
            None,
            id=f"{prefix}-one-state",
        ),
        pytest.param(
            volume_pod("p", vol),
            [volume_pod("e", vol, node="node-1")],
            None,
            DISK_CONFLICT,
            id=f"{prefix}-same-state",
        ),
        pytest.param(
            volume_pod("p", other),
            [volume_pod("e", vol, node="node-1")],
            None,
            None,
            id=f"{prefix}-different-state",
        ),
    ]


@pytest.mark.parametrize(
    ("incoming", "existing", "pre_filter", "want"),
    [
        *disk_cases(GCE, GCE2, "gce"),
        pytest.param(
            volume_pod("p", NO_RESTRICTION),
            [],
            "Skip",
            None,
            id="gce-pod-with-a-volume-that-doesnt-have-restrictions",
        ),
        *disk_cases(AWS, AWS2, "aws"),
        *disk_cases(RBD, RBD2, "rbd"),
        *disk_cases(ISCSI, ISCSI2, "iscsi"),
    ],
)
def test_disk_conflicts(
    incoming: dict[str, Any], existing: list[dict[str, Any]], pre_filter: Any, want: Any
) -> None:
    out = outcome(incoming, existing)
    assert out.pre_filter[PLUGIN] == pre_filter
    assert out.nodes["node-1"] == want


@pytest.mark.parametrize(
    ("ro_incoming", "ro_existing", "want"),
    [
        pytest.param(True, True, None, id="both-read-only"),
        pytest.param(True, False, DISK_CONFLICT, id="only-incoming-read-only"),
        pytest.param(False, True, DISK_CONFLICT, id="only-existing-read-only"),
    ],
)
def test_gce_and_iscsi_read_only_mounts_share_a_disk(
    ro_incoming: bool, ro_existing: bool, want: Any
) -> None:
    for vol in (GCE, ISCSI):
        key = "gcePersistentDisk" if "gcePersistentDisk" in vol else "iscsi"

        def ro(v: dict[str, Any], flag: bool, key: str = key) -> dict[str, Any]:
            return {**v, key: {**v[key], "readOnly": flag}}

        out = outcome(
            volume_pod("p", ro(vol, ro_incoming)),
            [volume_pod("e", ro(vol, ro_existing), node="node-1")],
        )
        assert out.nodes["node-1"] == want


RWOP = ("ReadWriteOncePod",)
RWOP1 = pvc("claim-with-rwop-1", modes=RWOP)
RWOP2 = pvc("claim-with-rwop-2", modes=RWOP)
RWX = pvc("claim-with-rwx", modes=("ReadWriteMany",))


def claims_pod(name: str, *claims: str, node_name: str | None = None) -> dict[str, Any]:
    return volume_pod(name, *(pvc_volume(c) for c in claims), node=node_name)


@pytest.mark.parametrize(
    ("incoming", "existing", "claims", "pre_filter", "want"),
    [
        pytest.param(volume_pod(), [], [], "Skip", None, id="nothing"),
        pytest.param(
            claims_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [],
            [],
            ("UnschedulableAndUnresolvable", 'persistentvolumeclaim "claim-with-rwop-1" not found'),
            None,
            id="failed-to-get-PVC",
        ),
        pytest.param(
            claims_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [claims_pod("pod-with-rwx", "claim-with-rwx", node_name="node-1")],
            [RWOP1, RWX],
            "Skip",
            None,
            id="no-access-mode-conflict",
        ),
        pytest.param(
            claims_pod("pod-with-one-conflict", "claim-with-rwop-1"),
            [
                claims_pod("pod-with-one-pvc", "claim-with-rwop-1", node_name="node-1"),
                claims_pod("pod-with-rwx", "claim-with-rwx", node_name="node-1"),
            ],
            [RWOP1, RWX],
            None,
            RWOP_CONFLICT,
            id="access-mode-conflict-unschedulable",
        ),
        pytest.param(
            claims_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2"),
            [
                claims_pod(
                    "pod-with-two-pvcs",
                    "claim-with-rwop-1",
                    "claim-with-rwop-2",
                    node_name="node-1",
                ),
                claims_pod("pod-with-rwx", "claim-with-rwx", node_name="node-1"),
            ],
            [RWOP1, RWOP2, RWX],
            None,
            RWOP_CONFLICT,
            id="two-conflicts-unschedulable",
        ),
    ],
)
def test_access_mode_conflicts(
    incoming: dict[str, Any],
    existing: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    pre_filter: Any,
    want: Any,
) -> None:
    out = outcome(incoming, existing, persistentvolumeclaims=claims)
    assert out.pre_filter[PLUGIN] == pre_filter
    if pre_filter is None or pre_filter == "Skip":
        assert out.nodes["node-1"] == want


def test_read_write_once_pod_claim_in_use_on_another_node_rejects_every_node() -> None:
    c = VolumeCluster(
        [node("node-1"), node("node-2")],
        [claims_pod("holder", "claim-with-rwop-1", node_name="node-2")],
    ).add("persistentvolumeclaims", RWOP1)
    out = run(c, claims_pod("p", "claim-with-rwop-1"), [PLUGIN])
    assert out.nodes == {"node-1": RWOP_CONFLICT, "node-2": RWOP_CONFLICT}


@pytest.mark.parametrize("with_disk", [False, True], ids=["skipped", "not-skipped"])
def test_nominated_pod_holding_the_claim_counts_as_added_pod(with_disk: bool) -> None:
    # RunFilterPluginsWithNominatedPods: AddPod of a nominated pod of higher priority
    # that names the ReadWriteOncePod claim makes the count positive on its node; but a
    # PreFilter that said Skip (no disk, claim unused) skips the Filter altogether.
    c = VolumeCluster([node("node-1"), node("node-2")]).add("persistentvolumeclaims", RWOP1)
    vols = [pvc_volume("claim-with-rwop-1"), *([GCE] if with_disk else [])]
    out = run(c, volume_pod("p", *vols), [PLUGIN])
    assert out.pre_filter[PLUGIN] == (None if with_disk else "Skip")
    assert out.nodes == {"node-1": None, "node-2": None}
    nominated = claims_pod("nominee", "claim-with-rwop-1")
    nominated["spec"]["priority"] = 10
    from ksched.backend.compile import compile_pod

    out.snapshot.set_nominated(compile_pod(Pod.from_dict(to_api(nominated))), "node-2")
    rows = {r["node"]: r["status"] for r in out.snapshot.explain(out.compiled, _profile())}
    assert rows["node-1"] is None
    if with_disk:
        assert rows["node-2"]["reasons"] == [ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT]
    else:
        assert rows["node-2"] is None


def _profile() -> Any:
    from ksched._core import Profile

    return Profile([PLUGIN], [])


def test_preemption_frees_a_read_write_once_pod_claim_by_removing_its_holder() -> None:
    # RemovePod of the victim that uses the claim brings the count back to 0.
    low = claims_pod("holder", "claim-with-rwop-1", node_name="node-1")
    c = VolumeCluster([node("node-1")], [low]).add("persistentvolumeclaims", RWOP1)
    incoming = claims_pod("p", "claim-with-rwop-1")
    incoming["spec"]["priority"] = 100
    out = run(c, incoming, [PLUGIN])
    assert out.nodes["node-1"] == RWOP_CONFLICT
    dry = out.snapshot.preemption_dry_run(out.compiled, _profile(), ["node-1"], 0, 1, [], 0.0)
    assert [(n, victims) for n, victims, _ in dry.candidates()] == [
        ("node-1", ["uid-default-holder"])
    ]


# ---- queueing hints --------------------------------------------------------------------


def hint(event: str, pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    for reg in events_to_register():
        if reg.event.label == event:
            assert reg.hint is not None
            return reg.hint(Pod.from_dict(to_api(pod)), old, new)
    raise AssertionError(f"no registration for {event}")


def parsed(p: dict[str, Any]) -> Pod:
    return Pod.from_dict(to_api(p))


@pytest.mark.parametrize(
    ("pod", "deleted", "want"),
    [
        pytest.param(
            volume_pod("p", GCE),
            volume_pod("d", GCE),
            "Queue",
            id="queue-new-object-gcedisk-conflict",
        ),
        pytest.param(
            volume_pod("p", GCE),
            volume_pod("d", GCE2),
            "Skip",
            id="skip-new-object-gcedisk-no-conflict",
        ),
        pytest.param(
            volume_pod("p", AWS),
            volume_pod("d", AWS),
            "Queue",
            id="queue-new-object-awsdisk-conflict",
        ),
        pytest.param(
            volume_pod("p", AWS),
            volume_pod("d", AWS2),
            "Skip",
            id="skip-new-object-awsdisk-no-conflict",
        ),
        pytest.param(
            volume_pod("p", RBD),
            volume_pod("d", RBD),
            "Queue",
            id="queue-new-object-rbddisk-conflict",
        ),
        pytest.param(
            volume_pod("p", RBD),
            volume_pod("d", RBD2),
            "Skip",
            id="skip-new-object-rbddisk-no-conflict",
        ),
        pytest.param(
            volume_pod("p", ISCSI),
            volume_pod("d", ISCSI),
            "Queue",
            id="queue-new-object-iscsidisk-conflict",
        ),
        pytest.param(
            volume_pod("p", ISCSI),
            volume_pod("d", ISCSI2),
            "Skip",
            id="skip-new-object-iscsidisk-no-conflict",
        ),
        pytest.param(
            claims_pod("pod1", "claim-rwop"),
            claims_pod("pod2", "claim-rwop"),
            "Queue",
            id="queue-has-same-claim",
        ),
        pytest.param(
            claims_pod("pod1", "claim-1-rwop"),
            claims_pod("pod2", "claim-2-rwop"),
            "Skip",
            id="skip-no-same-claim",
        ),
    ],
)
def test_is_schedulable_after_pod_deleted(pod: Any, deleted: Any, want: str) -> None:
    got = hint("PodDelete", pod, parsed(deleted), None)
    assert got == (QueueingHint.QUEUE if want == "Queue" else QueueingHint.QUEUE_SKIP)


PVC1 = pvc("claim-with-rwx-1", modes=("ReadWriteMany",))
PVC2 = pvc("claim-with-rwx-2", modes=("ReadWriteMany",))


@pytest.mark.parametrize(
    ("pod", "new", "want"),
    [
        pytest.param(
            claims_pod("pod-with-two-pvcs", "claim-with-rwx-1", "claim-with-rwx-2"),
            PVC1,
            "Queue",
            id="queue-new-object-pvc-belong-pod",
        ),
        pytest.param(
            claims_pod("pod-with-one-pvc", "claim-with-rwx-1"),
            PVC2,
            "Skip",
            id="skip-new-object-unused",
        ),
        pytest.param(
            volume_pod("pod-with-one-pvc", pvc_volume("claim-with-rwx-1"), namespace="kube-system"),
            PVC1,
            "Skip",
            id="skip-new-object-namespace-not-equal-pod",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_claim_added(pod: Any, new: Any, want: str) -> None:
    got = hint("PersistentVolumeClaimAdd", pod, None, new)
    assert got == (QueueingHint.QUEUE if want == "Queue" else QueueingHint.QUEUE_SKIP)


def test_events_are_upstreams_with_queueing_hints() -> None:
    assert [(r.event.label, r.hint is not None) for r in events_to_register()] == [
        ("PodDelete", True),
        ("NodeAdd", False),
        ("PersistentVolumeClaimAdd", True),
    ]

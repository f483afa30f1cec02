"""VolumeZone: upstream's PreFilter/Filter tables and queueing hints.

Ported from pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go
(TestSingleZone, TestMultiZone, TestWithBinding,
TestIsSchedulableAfterPersistentVolumeClaimAdded, TestIsSchedulableAfterStorageClassAdded,
TestIsSchedulableAfterPersistentVolumeChange). One message differs from the Go table on
purpose: upstream's test uses a fake StorageClass lister whose NotFound names the resource
``storageclasses``; the informer lister kube-scheduler runs with names it
``storageclass`` (``storageclass.storage.k8s.io "Class_0" not found``), which is what a
user sees and what this port expects.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import QueueingHint
from ksched.plugins.volume_zone import ERR_REASON_CONFLICT, events_to_register
from tests.plugins.harness import node, to_api
from tests.plugins.volume_harness import (
    VolumeCluster,
    pv,
    pvc,
    pvc_volume,
    run,
    storage_class,
    volume_pod,
)

PLUGIN = "VolumeZone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = ("UnschedulableAndUnresolvable", ERR_REASON_CONFLICT)
UNRESOLVABLE = "UnschedulableAndUnresolvable"


def with_volume(claim: str) -> dict[str, Any]:
    """upstream ``createPodWithVolume``."""
    return volume_pod("pod_1", pvc_volume(claim, "vol_1"))


SINGLE_ZONE_PVS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_ZONE_PVCS = [
    pvc(f"PVC_{n}", volume=v)
    for n, v in [
        ("1", "Vol_1"),
        ("2", "Vol_2"),
        ("3", "Vol_3"),
        ("4", "Vol_not_exist"),
        ("Stable_1", "Vol_Stable_1"),
        ("Stable_2", "Vol_Stable_2"),
        ("Stable_3", "Vol_Stable_3"),
    ]
]


def check(
    pvs: list[Any],
    pvcs: list[Any],
    classes: list[Any],
    incoming: dict[str, Any],
    labels: dict[str, str],
    pre_filter: Any,
    want: Any,
) -> None:
    c = VolumeCluster([node("host1", labels)])
    c.add("persistentvolumes", *pvs).add("persistentvolumeclaims", *pvcs)
    c.add("storageclasses", *classes)
    out = run(c, incoming, [PLUGIN])
    assert out.pre_filter[PLUGIN] == pre_filter
    if not isinstance(pre_filter, tuple):
        assert out.nodes["host1"] == want
    else:
        # A PreFilter rejection is every node's status.
        assert out.nodes["host1"] == (pre_filter[0], pre_filter[1])


@pytest.mark.parametrize(
    ("incoming", "labels", "pre_filter", "want"),
    [
        pytest.param(
            volume_pod("pod_1"), {BETA_ZONE: "us-west1-a"}, "Skip", None, id="pod-without-volume"
        ),
        pytest.param(with_volume("PVC_1"), {}, None, None, id="node-without-labels"),
        pytest.param(
            with_volume("PVC_1"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            None,
            None,
            id="beta-zone-label-matched",
        ),
        pytest.param(
            with_volume("PVC_2"),
            {BETA_REGION: "us-west1", "uselessLabel": "none"},
            None,
            None,
            id="beta-region-label-matched",
        ),
        pytest.param(
            with_volume("PVC_2"),
            {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
            None,
            CONFLICT,
            id="beta-region-label-doesnt-match",
        ),
        pytest.param(
            with_volume("PVC_1"),
            {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
            None,
            CONFLICT,
            id="beta-zone-label-doesnt-match",
        ),
        pytest.param(
            with_volume("PVC_Stable_1"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            None,
            None,
            id="zone-label-matched",
        ),
        pytest.param(
            with_volume("PVC_Stable_2"),
            {REGION: "us-west1", "uselessLabel": "none"},
            None,
            None,
            id="region-label-matched",
        ),
        pytest.param(
            with_volume("PVC_Stable_2"),
            {REGION: "no_us-west1", "uselessLabel": "none"},
            None,
            CONFLICT,
            id="region-label-doesnt-match",
        ),
        pytest.param(
            with_volume("PVC_Stable_1"),
            {ZONE: "no_us-west1-a", "uselessLabel": "none"},
            None,
            CONFLICT,
            id="zone-label-doesnt-match",
        ),
        pytest.param(
            with_volume("PVC_Stable_3"),
            {ZONE: "us-west1-a"},
            None,
            CONFLICT,
            id="pv-with-zone-and-region-node-with-only-zone",
        ),
        pytest.param(
            with_volume("PVC_Stable_1"),
            {BETA_ZONE: "us-west1-a"},
            None,
            CONFLICT,
            id="pv-with-zone-node-with-beta-zone",
        ),
        pytest.param(
            with_volume("PVC_1"),
            {ZONE: "us-west1-a"},
            None,
            None,
            id="pv-with-beta-label-node-with-ga-label-matched",
        ),
        pytest.param(
            with_volume("PVC_1"),
            {ZONE: "us-west1-b"},
            None,
            CONFLICT,
            id="pv-with-beta-label-node-with-ga-label-dont-match",
        ),
    ],
)
def test_single_zone(incoming: Any, labels: dict[str, str], pre_filter: Any, want: Any) -> None:
    check(SINGLE_ZONE_PVS, SINGLE_ZONE_PVCS, [], incoming, labels, pre_filter, want)


MULTI_ZONE_PVS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_ZONE_PVCS = [
    pvc(f"PVC_{n}", volume=v)
    for n, v in [
        ("1", "Vol_1"),
        ("2", "Vol_2"),
        ("3", "Vol_3"),
        ("4", "Vol_not_exist"),
        ("Stable_1", "Vol_Stable_1"),
        ("Stable_2", "Vol_Stable_2"),
    ]
]


@pytest.mark.parametrize(
    ("incoming", "labels", "want"),
    [
        pytest.param(with_volume("PVC_3"), {}, None, id="node-without-labels"),
        pytest.param(
            with_volume("PVC_3"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            None,
            id="beta-zone-label-matched",
        ),
        pytest.param(
            with_volume("PVC_1"),
            {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
            CONFLICT,
            id="beta-zone-label-doesnt-match",
        ),
        pytest.param(
            with_volume("PVC_Stable_2"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            None,
            id="zone-label-matched",
        ),
        pytest.param(
            with_volume("PVC_Stable_1"),
            {ZONE: "us-west1-b", "uselessLabel": "none"},
            CONFLICT,
            id="zone-label-doesnt-match",
        ),
    ],
)
def test_multi_zone(incoming: Any, labels: dict[str, str], want: Any) -> None:
    check(MULTI_ZONE_PVS, MULTI_ZONE_PVCS, [], incoming, labels, None, want)


WAIT = "WaitForFirstConsumer"
BINDING_CLASSES = [
    storage_class("Class_Immediate", mode=None),
    storage_class("Class_Wait", mode=WAIT),
]
BINDING_PVCS = [
    pvc("PVC_1", volume="Vol_1"),
    pvc("PVC_NoSC", class_name="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", class_name="Class_Wait"),
    pvc("PVC_ImmediateSC", class_name="Class_Immediate"),
]
TEST_NODE = {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}


@pytest.mark.parametrize(
    ("incoming", "pre_filter", "want"),
    [
        pytest.param(with_volume("PVC_1"), None, None, id="label-zone-failure-domain-matched"),
        pytest.param(
            with_volume("PVC_EmptySC"),
            (UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"),
            None,
            id="unbound-volume-empty-storage-class",
        ),
        pytest.param(
            with_volume("PVC_NoSC"),
            (UNRESOLVABLE, 'storageclass.storage.k8s.io "Class_0" not found'),
            None,
            id="unbound-volume-no-storage-class",
        ),
        pytest.param(
            with_volume("PVC_ImmediateSC"),
            (UNRESOLVABLE, 'VolumeBindingMode not set for StorageClass "Class_Immediate"'),
            None,
            id="unbound-volume-immediate-binding-mode",
        ),
        pytest.param(
            with_volume("PVC_WaitSC"), "Skip", None, id="unbound-volume-wait-binding-mode"
        ),
    ],
)
def test_with_binding(incoming: Any, pre_filter: Any, want: Any) -> None:
    check(
        [pv("Vol_1", labels={BETA_ZONE: "us-west1-a"})],
        BINDING_PVCS,
        BINDING_CLASSES,
        incoming,
        TEST_NODE,
        pre_filter,
        want,
    )


def test_a_missing_claim_or_pv_rejects_with_the_listers_message() -> None:
    check(
        [],
        [],
        [],
        with_volume("nope"),
        {},
        (UNRESOLVABLE, 'persistentvolumeclaim "nope" not found'),
        None,
    )
    check(
        [],
        [pvc("PVC_4", volume="Vol_not_exist")],
        [],
        with_volume("PVC_4"),
        {},
        (UNRESOLVABLE, 'persistentvolume "Vol_not_exist" not found'),
        None,
    )


def test_a_topology_label_that_does_not_parse_is_ignored() -> None:
    # LabelZonesToSet rejects an empty zone ("a__"): upstream logs and skips the label.
    check(
        [pv("Vol_1", labels={BETA_ZONE: "us-west1-a__", ZONE: "z"})],
        [pvc("PVC_1", volume="Vol_1")],
        [],
        with_volume("PVC_1"),
        {BETA_ZONE: "elsewhere", ZONE: "z"},
        None,
        None,
    )


# ---- queueing hints --------------------------------------------------------------------


def hint(event: str, pod: dict[str, Any], old: Any, new: Any) -> str:
    for reg in events_to_register():
        if reg.event.label == event:
            assert reg.hint is not None
            got = reg.hint(Pod.from_dict(to_api(pod)), old, new)
            return "Queue" if got == QueueingHint.QUEUE else "Skip"
    raise AssertionError(f"no registration for {event}")


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            volume_pod("pod_1"),
            None,
            pvc("PVC_1", volume="Vol_1"),
            "Skip",
            id="pvc-was-added-but-pod-refers-no-pvc",
        ),
        pytest.param(
            with_volume("PVC_2"),
            None,
            pvc("PVC_1", volume="Vol_1"),
            "Skip",
            id="pvc-was-added-and-pod-was-bound-to-different-pvc",
        ),
        pytest.param(
            with_volume("PVC_1"),
            None,
            pvc("PVC_1", namespace="ns1", volume="Vol_1"),
            "Skip",
            id="pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        ),
        pytest.param(
            with_volume("PVC_1"),
            None,
            pvc("PVC_1", volume="Vol_1"),
            "Queue",
            id="pvc-was-added-and-pod-was-bound-to-the-pvc",
        ),
        pytest.param(
            with_volume("PVC_1"),
            pvc("PVC_1"),
            pvc("PVC_1", volume="Vol_1"),
            "Queue",
            id="pvc-was-updated-and-pod-was-bound-to-the-pvc",
        ),
        pytest.param(
            volume_pod("pod_1"),
            pvc("PVC_1"),
            pvc("PVC_1", volume="Vol_1"),
            "Skip",
            id="pvc-was-updated-but-pod-refers-no-pvc",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_claim_change(
    pod: Any, old: Any, new: Any, want: str
) -> None:
    event = "PersistentVolumeClaimAdd" if old is None else "PersistentVolumeClaimUpdate"
    assert _hint_any(event, pod, old, new) == want


def _hint_any(event: str, pod: dict[str, Any], old: Any, new: Any) -> str:
    # One registration covers Add|Update: find it by resource.
    resource = event.removesuffix("Add").removesuffix("Update")
    for reg in events_to_register():
        if reg.event.resource == resource:
            assert reg.hint is not None
            got = reg.hint(Pod.from_dict(to_api(pod)), old, new)
            return "Queue" if got == QueueingHint.QUEUE else "Skip"
    raise AssertionError(f"no registration for {resource}")


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(
            storage_class("SC_1", mode=None), "Skip", id="sc-doesnt-have-volume-binding-mode"
        ),
        pytest.param(
            storage_class("SC_1", mode=WAIT), "Queue", id="new-sc-is-wait-for-first-consumer-mode"
        ),
    ],
)
def test_is_schedulable_after_storage_class_added(new: Any, want: str) -> None:
    assert hint("storage.k8s.io/StorageClassAdd", with_volume("PVC_1"), None, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            None, pv("Vol_1", labels={BETA_ZONE: "us-west1-b"}), "Queue", id="new-pv-was-added"
        ),
        pytest.param(
            pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", labels={BETA_ZONE: "us-west1-b"}),
            "Queue",
            id="pv-was-updated-and-changed-topology",
        ),
        pytest.param(
            pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", labels={BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            "Queue",
            id="pv-was-updated-and-added-topology-label",
        ),
        pytest.param(
            pv("Vol_1", labels={BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            pv("Vol_1", labels={BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            "Skip",
            id="pv-was-updated-but-no-topology-is-changed",
        ),
    ],
)
def test_is_schedulable_after_persistent_volume_change(old: Any, new: Any, want: str) -> None:
    event = "PersistentVolumeAdd" if old is None else "PersistentVolumeUpdate"
    assert _hint_any(event, with_volume("PVC_1"), old, new) == want


def test_events_are_upstreams_with_queueing_hints() -> None:
    from ksched.backend.queue.cluster_event import ActionType as A

    assert [
        (r.event.resource, r.event.action, r.hint is not None) for r in events_to_register()
    ] == [
        ("storage.k8s.io/StorageClass", A.ADD, True),
        ("Node", A.ADD | A.UPDATE_NODE_LABEL, False),
        ("PersistentVolumeClaim", A.ADD | A.UPDATE, True),
        ("PersistentVolume", A.ADD | A.UPDATE, True),
    ]

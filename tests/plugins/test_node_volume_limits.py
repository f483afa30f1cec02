"""NodeVolumeLimits: upstream's CSILimits tables and queueing hints.

Ported from pkg/scheduler/framework/plugins/nodevolumelimits/csi_test.go (TestCSILimits,
TestCSILimitsQHint, TestCSILimitsAddedPVCQHint, TestCSILimitsDeletedVolumeAttachmentQHint,
TestCSILimitsAfterCSINodeUpdatedQHint), with upstream's fixtures: four PVs and PVCs per
driver named ``csi-<driver>-<i>``, plus ``csi-4`` (unbound, of the class), ``csi-5`` (no
class) and ``csi-6`` (bound to a PV that does not exist); a StorageClass whose
provisioner is the first driver; the node ``node-for-max-pd-test-1`` with a CSINode that
sets every driver's limit (``csinode``), sets none (``csinode-with-no-limit``), or no
CSINode at all. TestVolumeLimitScalingGate is not ported: ksched runs with that alpha gate
off, as upstream does by default.

A missing claim's message names the resource as kube-scheduler's informer lister does
(``persistentvolumeclaim "abc-xyz" not found``); upstream's table uses a fake lister that
says ``persistentvolumeclaims``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import QueueingHint
from ksched.plugins.node_volume_limits import ERR_REASON_MAX_VOLUME_COUNT, events_to_register
from tests.plugins.harness import node, to_api
from tests.plugins.volume_harness import (
    VolumeCluster,
    csi_node,
    csi_pv_source,
    pv,
    pvc,
    pvc_volume,
    run,
    storage_class,
    volume_attachment,
    volume_pod,
)

PLUGIN = "NodeVolumeLimits"
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH = "kubernetes.io/hostpath"
SC = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = ("Unschedulable", ERR_REASON_MAX_VOLUME_COUNT)


def claims_pod(name: str, *claims: str, namespace: str = "default", uid: str | None = None) -> Any:
    return volume_pod(
        name, *(pvc_volume(c, f"v{i}") for i, c in enumerate(claims)), namespace=namespace, uid=uid
    )


def fixtures(drivers: list[str]) -> tuple[list[Any], list[Any], list[Any]]:
    """upstream ``getFakeCSIPVLister``/``getFakeCSIPVCLister``/``getFakeCSIStorageClassLister``."""
    pvs, pvcs = [], []
    for d in drivers:
        for j in range(4):
            name = f"csi-{d}-{j}"
            if d == EBS_IN_TREE:
                source: Any = {"awsElasticBlockStore": {"volumeID": name}}
            elif d == HOSTPATH:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = csi_pv_source(d, name)
            pvs.append(pv(name, source=source))
            pvcs.append(pvc(name, volume=name))
    pvcs.append(pvc("csi-4", class_name=SC))
    pvcs.append(pvc("csi-5"))
    pvcs.append(pvc("csi-6", class_name=SC, volume="missing-in-action"))
    return pvs, pvcs, [storage_class(SC, provisioner=drivers[0])]


def ephemeral_pod(name: str, uid: str, *volumes: str, namespace: str = "test") -> Any:
    return volume_pod(
        name, *({"name": v, "ephemeral": {}} for v in volumes), namespace=namespace, uid=uid
    )


EPHEMERAL_POD = ephemeral_pod("abc", "12345", "xyz")
EPHEMERAL_TWO = ephemeral_pod("abc", "12345II", "x", "y")


def owned(name: str, uid: str, *, namespace: str = "test", owner: str = "abc") -> Any:
    return pvc(
        name,
        namespace=namespace,
        class_name=SC,
        owner={"kind": "Pod", "name": owner, "uid": uid, "controller": True},
    )


EPHEMERAL_CLAIM = owned("abc-xyz", "12345")
CONFLICTING_CLAIM = pvc("abc-xyz", namespace="test", class_name=SC)
EPHEMERAL_CLAIM_X = owned("abc-x", "12345II")
EPHEMERAL_CLAIM_Y = owned("abc-y", "12345II")

RUNNING = claims_pod("running", f"csi-{EBS}-3")
PENDING = claims_pod("pending", "csi-4")
UNBOUND_2 = claims_pod("unbound2", "csi-4")
MISSING_PV = claims_pod("missing-pv", "csi-6")
NO_SC = claims_pod("no-sc", "csi-5")
GCE_TWO = claims_pod("gce-two", f"csi-{GCE}-1", f"csi-{GCE}-2")
IN_TREE_ONE = claims_pod("in-tree-one", f"csi-{EBS_IN_TREE}-0")
IN_TREE_TWO = claims_pod("in-tree-two", f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2")
EBS_ONE = claims_pod("ebs-one", f"csi-{EBS}-0")
EBS_TWO = claims_pod("ebs-two", f"csi-{EBS}-1", f"csi-{EBS}-2")
IN_TREE_NON_MIGRATABLE = claims_pod("hostpath", f"csi-{HOSTPATH}-0")
INLINE = volume_pod("inline", {"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}})
INLINE_SAME_ID = volume_pod(
    "inline-same", {"name": "aws", "awsElasticBlockStore": {"volumeID": f"csi-{EBS}-1"}}
)
CONFIG = [{"name": "cm", "configMap": {"name": "x"}}, {"name": "s", "secret": {"secretName": "x"}}]
ONLY_CONFIG = volume_pod("only-config", *CONFIG)
PVC_WITH_CONFIG = volume_pod("pvc-with-config", *CONFIG, pvc_volume(f"csi-{EBS}-0"))
EPHEMERAL_WITH_CONFIG = volume_pod(
    "abc", *CONFIG, {"name": "xyz", "ephemeral": {}}, namespace="test", uid="uid-ewc"
)
INLINE_WITH_CONFIG = volume_pod(
    "inline-config", *CONFIG, {"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}
)

MISSING_EPHEMERAL = (
    "UnschedulableAndUnresolvable",
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',
)


def case(
    test: str,
    new_pod: Any,
    existing: list[Any],
    drivers: list[str],
    *,
    max_vols: int = 0,
    limit_source: str = "",
    va_count: int = 0,
    extra_claims: tuple[Any, ...] = (),
    want: Any = None,
    pre_filter: Any = None,
) -> Any:
    return pytest.param(
        new_pod,
        existing,
        drivers,
        max_vols,
        limit_source,
        va_count,
        extra_claims,
        want,
        pre_filter,
        id=test.replace(" ", "-"),
    )


@pytest.mark.parametrize(
    (
        "new_pod",
        "existing",
        "drivers",
        "max_vols",
        "limit_source",
        "va_count",
        "extra_claims",
        "want",
        "pre_filter",
    ),
    [
        case(
            "should count VolumeAttachments towards volume limit when no pods exist",
            EBS_ONE,
            [],
            [EBS],
            max_vols=2,
            va_count=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should schedule pod when VolumeAttachments count does not exceed limit",
            EBS_ONE,
            [],
            [EBS],
            max_vols=2,
            va_count=1,
            limit_source="csinode",
        ),
        case(
            "fits when node volume limit >= new pods CSI volume",
            EBS_ONE,
            [RUNNING, EBS_TWO],
            [EBS],
            max_vols=4,
            limit_source="csinode",
        ),
        case(
            "doesn't when node volume limit <= pods CSI volume",
            EBS_ONE,
            [RUNNING, EBS_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should when driver does not support volume limits",
            EBS_ONE,
            [RUNNING, EBS_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode-with-no-limit",
        ),
        case(
            "count pending PVCs towards volume limit <= pods CSI volume",
            EBS_ONE,
            [PENDING, EBS_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "count multiple pending pvcs towards volume limit >= pods CSI volume",
            EBS_ONE,
            [PENDING, UNBOUND_2, EBS_TWO],
            [EBS],
            max_vols=4,
            limit_source="csinode",
        ),
        case(
            "should count PVCs with invalid PV name but valid SC",
            EBS_ONE,
            [MISSING_PV, EBS_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "don't count pvcs with missing SC towards volume limit",
            EBS_ONE,
            [RUNNING, NO_SC],
            [EBS],
            max_vols=2,
            limit_source="csinode",
        ),
        case(
            "count pvcs with the same type towards volume limit",
            EBS_ONE,
            [GCE_TWO, EBS_TWO],
            [EBS, GCE],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "don't count pvcs with different type towards volume limit",
            GCE_TWO,
            [EBS_TWO, RUNNING],
            [EBS, GCE],
            max_vols=2,
            limit_source="csinode",
        ),
        case(
            "should count in-tree volumes if migration is enabled",
            IN_TREE_ONE,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case("nil csi node", INLINE, [IN_TREE_TWO], [EBS_IN_TREE, EBS]),
        case(
            "should count unbound in-tree volumes if migration is enabled",
            PENDING,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should not limit pod if volume used does not report limits",
            IN_TREE_ONE,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode-with-no-limit",
        ),
        case(
            "should not count non-migratable in-tree volumes",
            IN_TREE_NON_MIGRATABLE,
            [EBS_TWO],
            [HOSTPATH, EBS],
            max_vols=2,
            limit_source="csinode",
        ),
        case(
            "should count in-tree inline volumes if migration is enabled",
            INLINE,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",  # noqa: E501
            IN_TREE_ONE,
            [EBS_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",  # noqa: E501
            INLINE,
            [EBS_TWO, IN_TREE_ONE],
            [EBS_IN_TREE, EBS],
            max_vols=3,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",  # noqa: E501
            INLINE_SAME_ID,
            [EBS_TWO, IN_TREE_ONE],
            [EBS_IN_TREE, EBS],
            max_vols=3,
            limit_source="csinode",
        ),
        case(
            "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",  # noqa: E501
            EBS_ONE,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
        case(
            "ephemeral volume missing",
            EPHEMERAL_POD,
            [],
            [EBS],
            limit_source="csinode-with-no-limit",
            want=MISSING_EPHEMERAL,
        ),
        case(
            "ephemeral volume not owned",
            EPHEMERAL_POD,
            [],
            [EBS],
            limit_source="csinode-with-no-limit",
            extra_claims=(CONFLICTING_CLAIM,),
            want=("Error", "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
        ),
        case(
            "ephemeral volume unbound",
            EPHEMERAL_POD,
            [],
            [EBS],
            limit_source="csinode-with-no-limit",
            extra_claims=(EPHEMERAL_CLAIM,),
        ),
        case(
            "ephemeral doesn't when node volume limit <= pods CSI volume",
            EPHEMERAL_POD,
            [RUNNING, EBS_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            extra_claims=(EPHEMERAL_CLAIM,),
            want=EXCEEDED,
        ),
        case(
            "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
            EBS_ONE,
            [RUNNING, EPHEMERAL_TWO],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            extra_claims=(EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y),
            want=EXCEEDED,
        ),
        case(
            "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",  # noqa: E501
            EBS_ONE,
            [RUNNING, EPHEMERAL_POD, EBS_TWO],
            [EBS],
            max_vols=3,
            limit_source="csinode",
            extra_claims=(EPHEMERAL_CLAIM,),
            want=EXCEEDED,
        ),
        case(
            "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",  # noqa: E501
            EBS_ONE,
            [RUNNING, EPHEMERAL_POD, EBS_TWO],
            [EBS],
            max_vols=5,
            limit_source="csinode",
            extra_claims=(EPHEMERAL_CLAIM,),
        ),
        case(
            "skip Filter when the pod only uses secrets and configmaps",
            ONLY_CONFIG,
            [],
            [EBS],
            max_vols=2,
            limit_source="csinode",
            pre_filter="Skip",
        ),
        case(
            "don't skip Filter when the pod has pvcs",
            PVC_WITH_CONFIG,
            [],
            [EBS],
            max_vols=2,
            limit_source="csinode",
        ),
        case(
            "don't skip Filter when the pod has ephemeral volumes",
            EPHEMERAL_WITH_CONFIG,
            [],
            [EBS],
            limit_source="csinode-with-no-limit",
            want=MISSING_EPHEMERAL,
        ),
        case(
            "don't skip Filter when the pod has inline migratable volumes",
            INLINE_WITH_CONFIG,
            [IN_TREE_TWO],
            [EBS_IN_TREE, EBS],
            max_vols=2,
            limit_source="csinode",
            want=EXCEEDED,
        ),
    ],
)
def test_csi_limits(
    new_pod: Any,
    existing: list[Any],
    drivers: list[str],
    max_vols: int,
    limit_source: str,
    va_count: int,
    extra_claims: tuple[Any, ...],
    want: Any,
    pre_filter: Any,
) -> None:
    pvs, pvcs, classes = fixtures(drivers)
    c = VolumeCluster(
        [node(NODE)],
        [{**p, "node": NODE, "spec": {**p["spec"], "nodeName": NODE}} for p in existing],
    )
    c.add("persistentvolumes", *pvs).add("persistentvolumeclaims", *pvcs, *extra_claims)
    c.add("storageclasses", *classes)
    if limit_source in ("csinode", "csinode-with-no-limit"):
        limit = max_vols if limit_source == "csinode" else None
        c.add("csinodes", csi_node(NODE, dict.fromkeys(drivers, limit), migrated=[EBS_IN_TREE]))
    for d in drivers:
        for j in range(va_count):
            c.add("volumeattachments", volume_attachment(f"va-{d}-{j}", NODE, d, f"csi-{d}-{j}"))
    out = run(c, new_pod, [PLUGIN])
    if pre_filter == "Skip":
        assert out.pre_filter[PLUGIN] == "Skip"
    assert out.nodes[NODE] == want


def test_a_new_node_whose_volume_attachment_names_no_csi_pv_counts_nothing() -> None:
    pvs, pvcs, _ = fixtures([EBS])
    c = VolumeCluster([node(NODE)])
    c.add("persistentvolumes", *pvs).add("persistentvolumeclaims", *pvcs)
    c.add("csinodes", csi_node(NODE, {EBS: 1}))
    c.add("volumeattachments", volume_attachment("no-pv", NODE, EBS, None))
    c.add("volumeattachments", volume_attachment("gone-pv", NODE, EBS, "does-not-exist"))
    assert run(c, EBS_ONE, [PLUGIN]).nodes[NODE] is None


# ---- queueing hints --------------------------------------------------------------------


def _hint(resource: str, action: str, pod: Any, old: Any, new: Any) -> str:
    for reg in events_to_register():
        if reg.event.resource == resource and reg.event.action.label == action:
            assert reg.hint is not None
            got = reg.hint(Pod.from_dict(to_api(pod)), old, new)
            return "Queue" if got == QueueingHint.QUEUE else "Skip"
    raise AssertionError(f"no registration for {resource}/{action}")


def _parsed(p: Any, node_name: str = "") -> Pod:
    obj = to_api(p)
    if node_name:
        obj["spec"] = {**obj["spec"], "nodeName": node_name}
    return Pod.from_dict(obj)


POD_EBS = claims_pod("new", f"csi-{EBS}-2")


@pytest.mark.parametrize(
    ("deleted", "scheduled", "want"),
    [
        pytest.param(
            claims_pod("d", "placeholder"),
            True,
            "Queue",
            id="return-a-Queue-when-a-deleted-pod-has-a-PVC",
        ),
        pytest.param(
            volume_pod("d", {"name": "v", "awsElasticBlockStore": {}}),
            True,
            "Queue",
            id="return-a-Queue-when-a-deleted-pod-has-a-inline-migratable-volume",
        ),
        pytest.param(
            volume_pod("d"),
            True,
            "Skip",
            id="return-a-QueueSkip-when-a-deleted-pod-doesnt-have-any-volume",
        ),
        pytest.param(
            claims_pod("d", f"csi-{EBS}-0"),
            False,
            "Skip",
            id="return-a-QueueSkip-when-a-deleted-pod-is-not-scheduled",
        ),
    ],
)
def test_csi_limits_pod_deleted_hint(deleted: Any, scheduled: bool, want: str) -> None:
    old = _parsed(deleted, NODE if scheduled else "")
    assert _hint("Pod", "Delete", POD_EBS, old, None) == want


@pytest.mark.parametrize(
    ("pod", "added", "want"),
    [
        pytest.param(
            volume_pod("p", namespace="ns1"),
            pvc("x", namespace="ns2"),
            "Skip",
            id="a-pod-isnt-in-the-same-namespace-as-an-added-PVC",
        ),
        pytest.param(
            volume_pod("p", pvc_volume("pvc1"), namespace="ns1"),
            pvc("pvc1", namespace="ns1"),
            "Queue",
            id="a-pod-is-in-the-same-namespace-as-an-added-PVC",
        ),
        pytest.param(
            volume_pod("pod1", {"name": "ephemeral", "ephemeral": {}}, namespace="ns1"),
            pvc("pod1-ephemeral", namespace="ns1"),
            "Queue",
            id="a-pod-has-an-ephemeral-volume-related-to-an-added-PVC",
        ),
        pytest.param(
            volume_pod("p", pvc_volume("pvc1"), namespace="ns1"),
            pvc("pvc2", namespace="ns1"),
            "Skip",
            id="a-pod-doesnt-have-the-same-PVC-as-an-added-PVC",
        ),
        pytest.param(
            volume_pod("p", namespace="ns1"),
            pvc("pvc2", namespace="ns1"),
            "Skip",
            id="a-pod-doesnt-have-any-PVC-attached",
        ),
    ],
)
def test_csi_limits_added_pvc_hint(pod: Any, added: Any, want: str) -> None:
    assert _hint("PersistentVolumeClaim", "Add", pod, None, added) == want


def _va(attacher: str, *, pv_name: str | None = None, inline_driver: str | None = None) -> Any:
    source: Any = {"persistentVolumeName": pv_name} if pv_name else {}
    if inline_driver:
        source = {"inlineVolumeSpec": {"csi": {"driver": inline_driver}}}
    return {
        "metadata": {"name": "volumeattachment1"},
        "spec": {"nodeName": "fake-node", "attacher": attacher, "source": source},
    }


EBS_INLINE = {"name": "aws", "awsElasticBlockStore": {"volumeID": "test"}}
GCE_INLINE = {"name": "gce", "gcePersistentDisk": {"pdName": "test"}}


@pytest.mark.parametrize(
    ("pod", "va", "want"),
    [
        pytest.param(
            volume_pod("p", pvc_volume("pvc1"), namespace="ns1"),
            _va("test.storage.gke.io", pv_name="pv1"),
            "Queue",
            id="a-pod-has-PVC-when-VolumeAttachment-is-deleting",
        ),
        pytest.param(
            volume_pod("p", EBS_INLINE, namespace="ns1"),
            _va(EBS, inline_driver=EBS),
            "Queue",
            id="inline-migratable-AWSEBSDriver-VolumeAttachment-AWSEBSDriver-match",
        ),
        pytest.param(
            volume_pod("p", GCE_INLINE, namespace="ns1"),
            _va(EBS, inline_driver=EBS),
            "Skip",
            id="inline-migratable-GCEPDDriver-VolumeAttachment-AWSEBSDriver-no-match",
        ),
        pytest.param(
            volume_pod("p", EBS_INLINE, pvc_volume("pvc1"), namespace="ns1"),
            _va(EBS, inline_driver=EBS),
            "Queue",
            id="inline-migratable-and-PVC-VolumeAttachment-AWSEBSDriver",
        ),
        pytest.param(
            volume_pod("p", EBS_INLINE, pvc_volume("pvc1"), namespace="ns1"),
            _va("test.storage.gke.io", pv_name="pv1"),
            "Queue",
            id="inline-migratable-and-PVC-VolumeAttachment-other-driver",
        ),
        pytest.param(
            volume_pod("p", namespace="ns1"),
            _va("test.storage.gke.io", pv_name="pv1"),
            "Skip",
            id="a-pod-has-no-PVC-when-VolumeAttachment-is-deleting",
        ),
    ],
)
def test_csi_limits_deleted_volume_attachment_hint(pod: Any, va: Any, want: str) -> None:
    assert _hint("storage.k8s.io/VolumeAttachment", "Delete", pod, va, None) == want


def _csinode(count: int) -> Any:
    return csi_node("test-node", {EBS: count})


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(1, 2, "Queue", id="limit-raised-queue"),
        pytest.param(2, 1, "Skip", id="limit-decreased-skip-queueing"),
        pytest.param(1, 1, "Skip", id="limit-unchanged-skip-queueing"),
    ],
)
def test_csi_limits_after_csinode_updated_hint(old: int, new: int, want: str) -> None:
    pod = claims_pod("test-pod", f"csi-{EBS}-0", namespace="ns1")
    assert _hint("storage.k8s.io/CSINode", "Update", pod, _csinode(old), _csinode(new)) == want


def test_events_are_upstreams() -> None:
    assert [(r.event.label, r.hint is not None) for r in events_to_register()] == [
        ("storage.k8s.io/CSINodeAdd", False),
        ("storage.k8s.io/CSINodeUpdate", True),
        ("PodDelete", True),
        ("PersistentVolumeClaimAdd", True),
        ("storage.k8s.io/VolumeAttachmentDelete", True),
    ]

"""The embedded cluster's strategic merge patches (:mod:`ksched.sim.strategic`): each
case's result is what apimachinery's ``strategicpatch.StrategicMergeMapPatch`` over
``resourceapi.ResourceClaim`` followed by the typed round trip gives (checked against
upstream's code, see the module docstring), and through
``InMemoryCluster.patch_object`` the patch DRA's Unreserve sends."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cluster import APIError
from ksched.sim import InMemoryCluster
from ksched.sim.strategic import SCHEMAS, StrategicMergeError, strategic_merge_patch

Obj = dict[str, Any]
CLAIM = SCHEMAS["resourceclaims"]


def ref(uid: str, name: str = "") -> Obj:
    return {"resource": "pods", "name": name or uid.lower(), "uid": uid}


def claim(*reserved: Obj, **status: Any) -> Obj:
    st: Obj = dict(status)
    if reserved:
        st["reservedFor"] = list(reserved)
    return {"metadata": {"name": "c", "namespace": "default", "uid": "U"}, "status": st}


def unreserve(pod_uid: str) -> Obj:
    """What DRA's Unreserve sends (upstream and ksched alike)."""
    return {
        "metadata": {"uid": "U"},
        "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
    }


ALLOC = {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x"}]}}


@pytest.mark.parametrize(
    ("original", "patch", "want"),
    [
        pytest.param(
            claim(ref("A"), ref("B"), allocation=ALLOC),
            unreserve("A"),
            claim(ref("B"), allocation=ALLOC),
            id="unreserve-removes-the-pod-only",
        ),
        pytest.param(
            claim(ref("A"), allocation=ALLOC),
            unreserve("A"),
            claim(allocation=ALLOC),
            id="unreserve-of-the-last-pod-leaves-no-reservedFor",
        ),
        pytest.param(
            claim(ref("B"), allocation=ALLOC),
            unreserve("A"),
            claim(ref("B"), allocation=ALLOC),
            id="unreserve-of-another-pod-changes-nothing",
        ),
        pytest.param(
            claim(allocation=ALLOC),
            unreserve("A"),
            claim(allocation=ALLOC),
            id="unreserve-without-reservedFor",
        ),
        pytest.param(
            claim(ref("A"), ref("B")),
            {"status": {"reservedFor": [{"uid": "B", "name": "b2"}, ref("C")]}},
            claim(ref("A"), {"resource": "pods", "name": "b2", "uid": "B"}, ref("C")),
            id="merge-by-uid-keeps-server-items-and-appends-new-ones",
        ),
        pytest.param(
            claim(ref("A"), ref("B")),
            {"status": {"reservedFor": [ref("C"), ref("A")]}},
            claim(ref("C"), ref("A"), ref("B")),
            id="patch-order-first-interleaved-by-live-order",
        ),
        pytest.param(
            claim(ref("A"), ref("B")),
            {"status": {"reservedFor": [{"$patch": "replace"}, ref("C")]}},
            claim(ref("C")),
            id="replace-directive-in-a-list",
        ),
        pytest.param(
            claim(ref("A"), allocation=ALLOC),
            {"status": {"$patch": "replace", "reservedFor": [ref("C")]}},
            claim(ref("C")),
            id="replace-directive-in-a-map",
        ),
        pytest.param(
            claim(ref("A"), allocation=ALLOC),
            {"status": {"allocation": None}},
            claim(ref("A")),
            id="null-deletes-a-field",
        ),
        pytest.param(
            claim(devices=[{"driver": "d", "pool": "p", "device": "x"}]),
            {"status": {"devices": [{"driver": "d", "pool": "p", "device": "y"}]}},
            claim(devices=[{"driver": "d", "pool": "p", "device": "y"}]),
            id="a-list-without-patch-strategy-is-replaced",
        ),
        pytest.param(
            {**claim(), "metadata": {**claim()["metadata"], "finalizers": ["f1", "f2"]}},
            {"metadata": {"finalizers": ["f3", "f1"]}},
            {**claim(), "metadata": {**claim()["metadata"], "finalizers": ["f3", "f1", "f2"]}},
            id="finalizers-merge-as-a-set",
        ),
        pytest.param(
            {**claim(), "metadata": {**claim()["metadata"], "finalizers": ["f1", "f2"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}},
            {**claim(), "metadata": {**claim()["metadata"], "finalizers": ["f2"]}},
            id="delete-from-primitive-list",
        ),
        pytest.param(
            claim(ref("A")),
            {"status": {"allocation": {"devices": {"results": [], "$patch": "delete"}}}},
            claim(ref("A"), allocation={}),
            id="a-map-with-a-delete-directive-is-not-added",
        ),
    ],
)
def test_strategic_merge_patch(original: Obj, patch: Obj, want: Obj) -> None:
    assert strategic_merge_patch(original, patch, CLAIM) == want


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        pytest.param(
            {"status": {"reservedFor": [{"name": "x"}]}},
            "map: map[name:x] does not contain declared merge key: uid",
            id="element-without-merge-key",
        ),
        pytest.param(
            {"status": {"reservedFor": [{"$patch": "merge", "uid": "A"}]}},
            "merging lists cannot yet be specified in the patch",
            id="merge-directive-in-a-list",
        ),
        pytest.param(
            {"status": {"$patch": "nope"}},
            "unknown patch type: nope in map: map[$patch:nope]",
            id="unknown-directive",
        ),
        pytest.param(
            {"status": {"$setElementOrder/reservedFor": [{"uid": "A"}]}},
            "does not apply the $setElementOrder directive",
            id="set-element-order-refused",
        ),
    ],
)
def test_strategic_merge_patch_errors(patch: Obj, error: str) -> None:
    with pytest.raises(StrategicMergeError) as exc:
        strategic_merge_patch(claim(ref("A")), patch, CLAIM)
    assert error in str(exc.value)


async def test_the_cluster_applies_unreserve_to_the_status_only() -> None:
    c = InMemoryCluster()
    stored = c.create(
        "resourceclaims",
        {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {}}},
    )
    uid = stored["metadata"]["uid"]
    await c.update_object(
        kind="resourceclaims",
        obj={**stored, "status": {"allocation": ALLOC, "reservedFor": [ref("A"), ref("B")]}},
        subresource="status",
    )
    patch = {
        "metadata": {"uid": uid},
        "status": {"reservedFor": [{"$patch": "delete", "uid": "A"}]},
    }
    got = await c.patch_object(
        kind="resourceclaims",
        namespace="default",
        name="c",
        patch=patch,
        patch_type="strategic",
        subresource="status",
    )
    assert got["status"] == {"allocation": ALLOC, "reservedFor": [ref("B")]}
    assert got["metadata"]["uid"] == uid
    assert c.get("resourceclaims", "default/c")["status"]["reservedFor"] == [ref("B")]


async def test_the_cluster_refuses_a_patch_for_another_uid() -> None:
    c = InMemoryCluster()
    c.create("resourceclaims", {"metadata": {"name": "c", "namespace": "default"}, "spec": {}})
    with pytest.raises(APIError) as err:
        await c.patch_object(
            kind="resourceclaims",
            namespace="default",
            name="c",
            patch={"metadata": {"uid": "someone-else"}, "status": {"reservedFor": []}},
            patch_type="strategic",
            subresource="status",
        )
    assert err.value.status == 422
    assert err.value.message == (
        'ResourceClaim.resource.k8s.io "c" is invalid: metadata.uid: Invalid value: '
        '"someone-else": field is immutable'
    )


async def test_the_cluster_still_refuses_kinds_without_patch_metadata() -> None:
    c = InMemoryCluster()
    c.create("persistentvolumeclaims", {"metadata": {"name": "d", "namespace": "default"}})
    with pytest.raises(APIError) as err:
        await c.patch_object(
            kind="persistentvolumeclaims",
            namespace="default",
            name="d",
            patch={"metadata": {"labels": {"a": "b"}}},
            patch_type="strategic",
        )
    assert err.value.status == 415

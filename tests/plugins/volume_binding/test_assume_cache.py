"""The PV/PVC assume cache: upstream's passive assume cache tests.

Ported from pkg/scheduler/framework/plugins/volumebinding/passive_assume_cache_test.go
(TestBasicCache, TestPVCacheWithIndex, TestAssume, TestRestore, TestConcurrentAssume,
TestAssumeUpdateCache, TestDelayedInformerEvent) and assume_cache_test.go
(TestPVAssumeCache: two caches over one shared informer). Objects are compared by
identity, as upstream compares pointers.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ksched.plugins.volume_binding.assume_cache import AssumeCache, AssumeError
from tests.plugins.volume_harness import FakeInformer

Obj = dict[str, Any]


def make_obj(name: str, version: str, namespace: str = "") -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": version,
            "annotations": {},
        }
    }


def key_of(obj: Obj) -> str:
    m = obj["metadata"]
    return f"{m['namespace']}/{m['name']}" if m["namespace"] else m["name"]


def new_cache() -> tuple[FakeInformer, AssumeCache]:
    informer = FakeInformer("tests")
    cache = AssumeCache(
        informer,  # type: ignore[arg-type]
        "tests",
        index=lambda o: o["metadata"]["annotations"].get("test", ""),
    )
    return informer, cache


def update(informer: FakeInformer, obj: Obj) -> None:
    informer.add(obj)


def verify_list(cache: AssumeCache, expected: dict[str, Obj], value: str) -> None:
    got = cache.by_index(value)
    assert len(got) == len(expected)
    for obj in got:
        assert expected[obj["metadata"]["name"]] is obj


def test_basic_cache() -> None:
    informer, cache = new_cache()
    assert cache.get("nothere") is None
    assert cache.not_found("nothere") == 'tests "nothere" not found'
    objects: dict[str, Obj] = {}
    for i in range(10):
        obj = make_obj(f"test-{i}", "1")
        objects[obj["metadata"]["name"]] = obj
        informer.add(obj)
    verify_list(cache, objects, "")
    updated = make_obj("test-3", "1")
    update(informer, updated)
    objects["test-3"] = updated
    verify_list(cache, objects, "")
    deleted = objects.pop("test-7")
    informer.delete(deleted)
    verify_list(cache, objects, "")


def test_pv_cache_with_index() -> None:
    informer, cache = new_cache()
    objects1: dict[str, Obj] = {}
    objects2: dict[str, Obj] = {}
    for i in range(10):
        obj = make_obj(f"test-{i}", "1")
        obj["metadata"]["annotations"]["test"] = "test1"
        objects1[obj["metadata"]["name"]] = obj
        informer.add(obj)
    for i in range(10):
        obj = make_obj(f"test2-{i}", "1")
        obj["metadata"]["annotations"]["test"] = "test2"
        objects2[obj["metadata"]["name"]] = obj
        informer.add(obj)
    verify_list(cache, objects1, "test1")
    verify_list(cache, objects2, "test2")
    updated = make_obj("test-3", "2")
    updated["metadata"]["annotations"]["test"] = "test1"
    update(informer, updated)
    objects1["test-3"] = updated
    verify_list(cache, objects1, "test1")
    verify_list(cache, objects2, "test2")
    informer.delete(objects1.pop("test-7"))
    verify_list(cache, objects1, "test1")
    verify_list(cache, objects2, "test2")


def test_an_index_change_moves_the_object() -> None:
    informer, cache = new_cache()
    obj = make_obj("pv", "1")
    obj["metadata"]["annotations"]["test"] = "a"
    informer.add(obj)
    moved = make_obj("pv", "2")
    moved["metadata"]["annotations"]["test"] = "b"
    update(informer, moved)
    assert cache.by_index("a") == []
    assert cache.by_index("b") == [moved]


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        pytest.param(
            make_obj("pvc1", "5", "ns1"),
            make_obj("pvc1", "5", "ns1"),
            True,
            id="success-same-version",
        ),
        pytest.param(
            make_obj("pvc1", "5", "ns1"),
            make_obj("pvc1", "6", "ns1"),
            False,
            id="fail-new-higher-version",
        ),
        pytest.param(
            make_obj("pvc2", "5", "ns1"),
            make_obj("pvc1", "5", "ns1"),
            False,
            id="fail-old-not-found",
        ),
        pytest.param(
            make_obj("pvc1", "5", "ns1"),
            make_obj("pvc1", "4", "ns1"),
            False,
            id="fail-new-lower-version",
        ),
        pytest.param(
            make_obj("pvc1", "5", "ns1"),
            make_obj("pvc1", "a", "ns1"),
            False,
            id="fail-new-bad-version",
        ),
        pytest.param(
            make_obj("pvc1", "a", "ns1"),
            make_obj("pvc1", "5", "ns1"),
            False,
            id="fail-old-bad-version",
        ),
    ],
)
def test_assume(old: Obj, new: Obj, ok: bool) -> None:
    informer, cache = new_cache()
    informer.add(old)
    assert cache.get(key_of(old)) is old
    if ok:
        cache.assume(new)
    else:
        with pytest.raises(AssumeError):
            cache.assume(new)
    assert cache.get(key_of(old)) is (new if ok else old)


def test_assume_messages_are_upstreams() -> None:
    informer, cache = new_cache()
    informer.add(make_obj("pvc1", "5", "ns1"))
    with pytest.raises(AssumeError, match=r'^"ns1/pvc1" is out of sync \(stored: 5, assume: 6\)$'):
        cache.assume(make_obj("pvc1", "6", "ns1"))
    with pytest.raises(AssumeError, match=r'^tests "ns1/pvc2" not found$'):
        cache.assume(make_obj("pvc2", "5", "ns1"))


def test_restore() -> None:
    informer, cache = new_cache()
    old = make_obj("pvc1", "5", "ns1")
    new = make_obj("pvc1", "5", "ns1")
    cache.restore(make_obj("", ""))
    informer.add(old)
    assert cache.get(key_of(old)) is old
    cache.restore(old)
    assert cache.get(key_of(old)) is old
    cache.assume(new)
    assert cache.get(key_of(old)) is new
    cache.restore(new)
    assert cache.get(key_of(old)) is old


def test_concurrent_assume() -> None:
    informer, cache = new_cache()
    obj1 = make_obj("pvc1", "5", "ns1")
    obj1_update = make_obj("pvc1", "5", "ns1")
    informer.add(obj1)
    cache.assume(obj1_update)
    assert cache.get(key_of(obj1_update)) is obj1_update
    obj2 = make_obj("pvc1", "7", "ns1")
    obj2_update = make_obj("pvc1", "7", "ns1")
    informer.add(obj2)
    cache.assume(obj2_update)
    cache.restore(obj1_update)  # obj1 failed with a conflict
    assert cache.get(key_of(obj2_update)) is obj2_update


def test_assume_update_cache() -> None:
    informer, cache = new_cache()
    obj = make_obj("test-pvc0", "1", "test-ns")
    informer.add(obj)
    assert cache.get(key_of(obj)) is obj
    new = copy.deepcopy(obj)
    new["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] = "test-node"
    cache.assume(new)
    assert cache.get(key_of(obj)) is new
    informer.add(obj)  # a resync of the old object
    assert cache.get(key_of(obj)) is new


def test_delayed_informer_event() -> None:
    informer, cache = new_cache()
    obj1 = make_obj("test-pvc0", "1", "test-ns")
    obj2 = make_obj("test-pvc0", "2", "test-ns")
    informer.store[key_of(obj2)] = obj2  # the store only: the event comes later
    new = copy.deepcopy(obj2)
    new["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] = "test-node"
    cache.assume(new)
    for fn in informer._adds:
        fn(obj1)
    for fn in informer._deletes:
        fn(obj1)
    for fn in informer._adds:
        fn(obj2)
    assert cache.get(key_of(new)) is new


def test_two_caches_over_one_shared_informer() -> None:
    informer = FakeInformer("persistentvolumes")

    def by_class(o: Obj) -> str:
        return str(o.get("spec", {}).get("storageClassName", ""))

    first = AssumeCache(informer, "persistentvolumes", index=by_class)  # type: ignore[arg-type]
    pv = {"metadata": {"name": "pv1", "resourceVersion": "1"}, "spec": {"storageClassName": "sc1"}}
    informer.add(pv)
    second = AssumeCache(informer, "persistentvolumes", index=by_class)  # type: ignore[arg-type]
    assert [o["metadata"]["name"] for o in first.by_index("sc1")] == ["pv1"]
    assert [o["metadata"]["name"] for o in second.by_index("sc1")] == ["pv1"]

"""The cache: assume, confirm through the informer, forget, and out-of-order events."""

from __future__ import annotations

from ksched.backend.cache import Cache
from ksched.backend.compile import compile_pod
from tests.helpers import parsed_node, parsed_pod


def test_assumed_pod_is_confirmed_by_the_bound_pod_event() -> None:
    cache = Cache(seed=1)
    cache.upsert_node(parsed_node("n1"))
    pod = parsed_pod("p", cpu="500m")
    cache.assume(pod, compile_pod(pod), "n1")
    assert cache.is_assumed(pod.uid)
    cache.add_pod(parsed_pod("p", cpu="500m", node_name="n1"))
    assert not cache.is_assumed(pod.uid)
    assert cache.snapshot.requested("n1", "cpu") == 500


def test_forget_releases_the_resources() -> None:
    cache = Cache(seed=1)
    cache.upsert_node(parsed_node("n1"))
    pod = parsed_pod("p", cpu="500m")
    cache.assume(pod, compile_pod(pod), "n1")
    cache.forget(pod.uid)
    assert cache.snapshot.requested("n1", "cpu") == 0
    assert not cache.has_pod(pod.uid)


def test_pod_update_with_new_requests_is_reaccounted() -> None:
    cache = Cache(seed=1)
    cache.upsert_node(parsed_node("n1"))
    cache.add_pod(parsed_pod("p", cpu="500m", node_name="n1"))
    cache.add_pod(parsed_pod("p", cpu="1", node_name="n1"))
    assert cache.snapshot.requested("n1", "cpu") == 1000
    assert cache.snapshot.requested("n1", "pods") == 1
    assert cache.remove_pod("uid-p")
    assert cache.snapshot.requested("n1", "cpu") == 0


def test_node_update_keeps_the_pods_accounted() -> None:
    cache = Cache(seed=1)
    cache.upsert_node(parsed_node("n1", cpu="4"))
    cache.add_pod(parsed_pod("p", cpu="1", node_name="n1"))
    cache.upsert_node(parsed_node("n1", cpu="8"))
    assert cache.snapshot.allocatable("n1", "cpu") == 8000
    assert cache.snapshot.requested("n1", "cpu") == 1000


def test_a_terminating_pod_stops_counting_for_spreading() -> None:
    from ksched.framework.profile import default_profile

    cache = Cache(seed=1)
    for name, zone in (("n1", "a"), ("n2", "b")):
        cache.upsert_node(parsed_node(name, labels={"topology.kubernetes.io/zone": zone}))
    cache.add_pod(parsed_pod("p", node_name="n1", labels={"app": "x"}))
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "x"}},
            }
        ]
    }
    incoming = compile_pod(parsed_pod("new", labels={"app": "x"}, extra_spec=spread))
    profile = default_profile().kernels

    def feasible() -> set[str]:
        rows = cache.snapshot.explain(incoming, profile)
        return {r["node"] for r in rows if r["status"] is None}

    assert feasible() == {"n2"}
    terminating = parsed_pod("p", node_name="n1", labels={"app": "x"})
    terminating.deletion_timestamp = "2026-01-01T00:00:00Z"
    cache.add_pod(terminating)
    assert feasible() == {"n1", "n2"}

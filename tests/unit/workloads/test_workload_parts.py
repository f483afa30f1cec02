"""The pieces under the workload plugins: pod group states, Go quantities in
Coscheduling's "resource gap" message, object parsing, Coscheduling's queue order."""

from __future__ import annotations

import dataclasses

import pytest

from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod
from ksched.api.workloads import CoschedulingPodGroup, ElasticQuota, PodGroup
from ksched.backend.cache.podgroups import PodGroupStates
from ksched.backend.compile import compile_pod
from ksched.backend.queue import QueuedPodInfo
from ksched.plugins.coscheduling import Coscheduling
from ksched.plugins.coscheduling.quantity import GoQuantity, format_resource_list
from tests.unit.workloads.helpers import cosched_member, member, pod_group


def _pod(obj: dict, uid: str) -> Pod:
    obj["metadata"]["uid"] = uid
    return Pod.from_dict(obj)


def test_pod_group_state_follows_a_member_from_pending_to_bound() -> None:
    states = PodGroupStates(enabled=True)
    a, b = _pod(member("a", "g"), "ua"), _pod(member("b", "g"), "ub")
    states.add_member(a)
    states.add_member(b)
    g = states.get("default", "g")
    assert g is not None and (g.all_count, g.scheduled_count) == (2, 0)
    states.assume(a)
    assert g.scheduled_count == 1 and {p.uid for p in g.unscheduled_pods()} == {"ub"}
    copy = g.copy()
    copy.assume_pod(b)
    assert (copy.scheduled_count, g.scheduled_count) == (2, 1)  # a cycle's copy only
    states.forget(a)
    assert g.scheduled_count == 0
    bound = dataclasses.replace(a, node_name="n1")
    states.remove_member(a)
    states.add_member(bound)
    assert g.assigned == {"ua"}
    states.remove_member(bound)
    states.remove_member(b)
    assert states.get("default", "g") is None


def test_pod_group_states_are_not_tracked_without_the_gate() -> None:
    states = PodGroupStates(enabled=False)
    states.add_member(_pod(member("a", "g"), "ua"))
    assert states.get("default", "g") is None
    assert states.error("ns", "g") == "pod group state not found for pod group ns/g"


# Expected values printed by Go (k8s.io/apimachinery v0.36.5, fmt "%v" of a ResourceList).
@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("2", "{{2 0} {<nil>} 2 DecimalSI}"),
        ("1Gi", "{{1073741824 0} {<nil>} 1Gi BinarySI}"),
        ("500m", "{{500 -3} {<nil>} 500m DecimalSI}"),
        ("1.5", "{{15 -1} {<nil>}  DecimalSI}"),
        ("0.5", "{{5 -1} {<nil>}  DecimalSI}"),
        ("2k", "{{2 3} {<nil>} 2k DecimalSI}"),
        ("1e3", "{{1 3} {<nil>} 1e3 DecimalExponent}"),
        ("3G", "{{3 9} {<nil>} 3G DecimalSI}"),
        ("100Mi", "{{104857600 0} {<nil>} 100Mi BinarySI}"),
    ],
)
def test_quantities_print_as_go_prints_them(text: str, go: str) -> None:
    assert GoQuantity.parse(text).go_repr() == go


def test_subtraction_keeps_go_scales_and_formats() -> None:
    cpu = GoQuantity.parse("2")
    cpu.sub(GoQuantity.new_milli(500, "DecimalSI"))
    mem = GoQuantity.parse("1Gi")
    mem.sub(GoQuantity.new(1024, "BinarySI"))
    big = GoQuantity.parse("3G")
    big.sub(GoQuantity.new(1024, "BinarySI"))
    assert format_resource_list({"x": big, "memory": mem, "cpu": cpu}) == (
        "map[cpu:{{1500 -3} {<nil>}  DecimalSI} memory:{{1073740800 0} {<nil>}  BinarySI} "
        "x:{{2999998976 0} {<nil>}  DecimalSI}]"
    )


@pytest.mark.parametrize(
    ("kind", "obj", "field"),
    [
        (
            "PodGroup",
            {**pod_group("g", 2), "spec": {"schedulingPolicy": {"gang": {"minCount": "2"}}}},
            "spec.schedulingPolicy.gang.minCount",
        ),
        (
            "PodGroup",
            {"metadata": {"name": "g", "namespace": "n"}, "spec": {"minResources": {"cpu": "x"}}},
            "spec.minResources.cpu",
        ),
        (
            "ElasticQuota",
            {"metadata": {"name": "q", "namespace": "n"}, "spec": {"max": {"memory": []}}},
            "spec.max.memory",
        ),
    ],
)
def test_malformed_objects_name_the_field(kind: str, obj: dict, field: str) -> None:
    parse = {"PodGroup": PodGroup.from_dict, "ElasticQuota": ElasticQuota.from_dict}[kind]
    if "minResources" in obj["spec"]:
        parse = CoschedulingPodGroup.from_dict
    with pytest.raises(InvalidObjectError) as err:
        parse(obj)
    assert err.value.field == field


def test_pod_group_reads_policy_and_constraints() -> None:
    pg = PodGroup.from_dict(
        pod_group("g", 4, schedulingConstraints={"topology": [{"key": "zone"}]}, priority=7)
    )
    assert (pg.min_count, pg.topology_key, pg.has_constraints, pg.priority) == (4, "zone", True, 7)
    basic = PodGroup.from_dict(pod_group("b", None))
    assert (basic.is_gang, basic.has_constraints) == (False, False)


def test_coscheduling_queue_order_keeps_a_groups_pods_together() -> None:
    plugin = Coscheduling(clock=lambda: 100.0, wall_clock=lambda: 100.0)

    class _Groups:
        def get(self, ns: str, name: str) -> CoschedulingPodGroup | None:
            created = {"early": 10.0, "late": 50.0}.get(name)
            if created is None:
                return None
            return CoschedulingPodGroup(ns, name, created, 2, None, None, "")

    plugin._groups = _Groups()  # type: ignore[assignment]
    infos = []
    for name, group, t in [
        ("x1", "late", 1.0),
        ("solo", "", 30.0),
        ("y1", "early", 90.0),
        ("x2", "late", 2.0),
        ("y2", "early", 95.0),
    ]:
        obj = cosched_member(name, group) if group else cosched_member(name, "unused")
        if not group:
            obj["metadata"]["labels"] = {}
        pod = _pod(obj, f"u-{name}")
        infos.append(QueuedPodInfo(pod, compile_pod(pod), t, initial_attempt_timestamp=t))
    ordered = [i.pod.name for i in sorted(infos, key=plugin.sort_key)]
    # early group (created 10) first, then the lone pod (enqueued 30), then late (50).
    assert ordered == ["y1", "y2", "solo", "x1", "x2"]

"""A sibling of the pod compiled last is a copy of its kernel form
(``ksched.backend.compile.SiblingCompiler``, ``CompiledPod.sibling``): the copy must be
what compiling the pod gives, and anything that makes the two pods compile differently
must make the compiler compile afresh.

Each case builds a template pod and a second pod the way the informer delivers them (the
second shares every equal value with the first, ``share_unchanged``, and is parsed with
the first as its template, ``Pod.from_dict(like=...)``), changes one thing about the
second, and compares its compiled form with ``compile_pod``'s on everything the kernels
see: identity, requests, start time and the scheduling signature (a hash of namespace,
labels, spec terms, nomination, deletion mark and default spreading selector)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from ksched._core import CompiledPod, VolumeRestrictionsRequest
from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod
from ksched.backend.compile import SiblingCompiler, compile_pod
from ksched.client.informer import share_unchanged
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_pod

Obj = dict[str, Any]

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": True}


def _obj(name: str, *, uid: str, labels: dict[str, str] | None = None) -> Obj:
    obj = make_pod(name, labels=labels if labels is not None else {"app": "web"})
    obj["metadata"].update(uid=uid, resourceVersion=uid, creationTimestamp="2026-01-01T00:00:00Z")
    obj["metadata"]["ownerReferences"] = [dict(RS_OWNER)]
    obj["status"] = {"phase": "Pending"}
    return obj


def _siblings(change: Callable[[Obj], None] = lambda o: None) -> tuple[Pod, Pod]:
    """The template and a second pod of its template, with ``change`` made to the
    second's object before the informer shares its values with the first."""
    first = _obj("web-a", uid="uid-a")
    second = _obj("web-b", uid="uid-b")
    change(second)
    share_unchanged(first, second)
    template = Pod.from_dict(first)
    return template, Pod.from_dict(second, like=template)


def _seen(c: CompiledPod) -> tuple[Any, ...]:
    return (c.uid, c.namespace, c.name, c.requests, c.priority, c.start_time, c.signature)


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        *parents, last = path.split(".")
        node = obj
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value

    return change


def _more_cpu(obj: Obj) -> None:
    obj["spec"] = copy.deepcopy(obj["spec"])
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"


def _ephemeral_volume(obj: Obj) -> None:
    obj["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]


# (case, change to the second pod, whether the compiler may copy the template's form)
CASES: list[tuple[str, Callable[[Obj], None], bool]] = [
    ("same-template-copies", lambda o: None, True),
    ("start-time-is-the-pods-own", _set("status.startTime", "2026-02-03T04:05:06Z"), True),
    ("other-labels-compile-afresh", _set("metadata.labels", {"app": "db"}), False),
    ("other-namespace-compiles-afresh", _set("metadata.namespace", "other"), False),
    ("nominated-node-compiles-afresh", _set("status.nominatedNodeName", "n1"), False),
    (
        "deletion-mark-compiles-afresh",
        _set("metadata.deletionTimestamp", "2026-01-02T00:00:00Z"),
        False,
    ),
    ("other-requests-compile-afresh", _more_cpu, False),
    ("other-priority-compiles-afresh", _set("spec.priority", 7), False),
    (
        "other-tolerations-compile-afresh",
        _set("spec.tolerations", [{"key": "k", "operator": "Exists"}]),
        False,
    ),
]


@pytest.mark.parametrize(("change", "copies"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sibling_compiles_as_compile_pod(change: Callable[[Obj], None], copies: bool) -> None:
    template, pod = _siblings(change)
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    got = compiler.compile(pod, None)
    assert _seen(got) == _seen(compile_pod(pod))
    assert compiler.hits == (1 if copies else 0)


# A pod changed from the template (what the what-if explanations build): same ``raw``,
# one spec-derived field replaced.
CHANGED: list[tuple[str, dict[str, Any]]] = [
    ("more-cpu", {"requests": {"cpu": 1900, "memory": 524288000}}),
    ("priority", {"priority": 5}),
    ("no-host-ports", {"host_ports": []}),
    ("tolerations", {"tolerations": []}),
    ("node-selector", {"node_selector": {"zone": "a"}}),
    ("images", {"images": ["registry.k8s.io/other:1"]}),
    ("required-features", {"required_features": ("SomeFeature",)}),
    (
        "affinity",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
                        ]
                    }
                }
            }
        },
    ),
    (
        "spread",
        {
            "topology_spread_constraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        },
    ),
]


@pytest.mark.parametrize("changes", [c[1] for c in CHANGED], ids=[c[0] for c in CHANGED])
def test_a_pod_changed_from_the_template_compiles_afresh(changes: dict[str, Any]) -> None:
    template, _ = _siblings()
    changed = dataclasses.replace(template, uid="uid-c", name="web-c", **changes)
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    got = compiler.compile(changed, None)
    assert compiler.hits == 0
    assert _seen(got) == _seen(compile_pod(changed))


def test_a_pod_with_other_volumes_compiles_afresh() -> None:
    """The volume plugins' part of the kernel form comes from ``spec.volumes``."""
    template, _ = _siblings()
    raw = copy.deepcopy(template.raw)
    raw["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    changed = dataclasses.replace(template, uid="uid-c", name="web-c", raw=raw)
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    got = compiler.compile(changed, None)
    assert compiler.hits == 0
    assert got.signature == compile_pod(changed).signature != compile_pod(template).signature


def test_a_template_with_an_ephemeral_volume_is_never_copied() -> None:
    """The claim of an ephemeral volume is named after the pod: the volume limits count
    ``web-b-scratch``, not the template's ``web-a-scratch``."""
    first = _obj("web-a", uid="uid-a")
    _ephemeral_volume(first)
    second = _obj("web-b", uid="uid-b")
    second["spec"] = first["spec"]
    template = Pod.from_dict(first)
    pod = Pod.from_dict(second, like=template)
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    got = compiler.compile(pod, None)
    assert compiler.hits == 0
    assert got.signature == compile_pod(pod).signature
    assert got.signature != compile_pod(template).signature


def test_a_different_selector_compiles_afresh() -> None:
    template, pod = _siblings()
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    selector = {"matchLabels": {"app": "web"}}
    got = compiler.compile(pod, selector)
    assert compiler.hits == 0
    assert got.signature == compile_pod(pod, selector).signature
    assert got.signature != compile_pod(pod).signature


def test_the_selector_is_known_only_at_the_same_generation() -> None:
    template, pod = _siblings()
    compiler = SiblingCompiler()
    owners = pod.raw["metadata"]["ownerReferences"]
    compiler.compile(template, None, generation=3)
    assert compiler.selector_known(pod, 3, owners)
    assert not compiler.selector_known(pod, 4, owners)
    assert not compiler.selector_known(pod, 3, [{**RS_OWNER, "name": "web-2"}])
    assert not SiblingCompiler().selector_known(pod, 3, owners)


def test_an_identity_the_core_refuses_is_reported_as_compile_pod_reports_it() -> None:
    template, pod = _siblings(_set("metadata.name", "web-\ud800"))
    compiler = SiblingCompiler()
    compiler.compile(template, None)
    with pytest.raises(InvalidObjectError) as err:
        compiler.compile(pod, None)
    with pytest.raises(InvalidObjectError) as expected:
        compile_pod(pod)
    assert str(err.value) == str(expected.value)


def test_a_bound_pod_is_never_a_template() -> None:
    obj = _obj("web-a", uid="uid-a")
    obj["spec"]["nodeName"] = "n0"
    compiler = SiblingCompiler()
    compiler.compile(Pod.from_dict(obj), None)
    _, pod = _siblings()
    compiler.compile(pod, None)
    assert compiler.hits == 0


# ---- through the scheduler: what the selector is computed from changes ---------------


def _rs(name: str, selector: Obj) -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}


def _svc(selector: dict[str, str]) -> Obj:
    return {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": selector}}


WORKLOAD_CHANGES: list[tuple[str, Callable[[Scheduler], None]]] = [
    (
        "replicaset-created",
        lambda s: s._controller_changed(
            "replicasets", _rs("web-1", {"matchLabels": {"app": "web"}})
        ),
    ),
    ("service-created", lambda s: s._controller_changed("services", _svc({"app": "web"}))),
]


@pytest.mark.parametrize(
    "change", [c[1] for c in WORKLOAD_CHANGES], ids=[c[0] for c in WORKLOAD_CHANGES]
)
def test_a_workload_change_reaches_the_next_sibling(change: Callable[[Scheduler], None]) -> None:
    """The template was compiled before the workload existed; its sibling, compiled
    after, spreads among the workload's pods (its signature carries the selector)."""
    sched = Scheduler(InMemoryCluster(), {"default-scheduler": default_profile()}, seed=1)
    template, pod = _siblings()
    before = sched.compile(template)
    change(sched)
    got = sched.compile(pod)
    owners = [o for o in pod.raw["metadata"]["ownerReferences"] if isinstance(o, dict)]
    selector = sched.controllers.default_selector(pod.namespace, pod.labels, owners)
    assert selector is not None
    assert got.signature == compile_pod(pod, selector).signature
    assert got.signature != before.signature


def test_siblings_in_a_steady_workload_are_copies() -> None:
    sched = Scheduler(InMemoryCluster(), {"default-scheduler": default_profile()}, seed=1)
    sched._controller_changed("replicasets", _rs("web-1", {"matchLabels": {"app": "web"}}))
    template, pod = _siblings()
    sched.compile(template)
    got = sched.compile(pod)
    assert sched.compiler.hits == 1
    owners = [o for o in pod.raw["metadata"]["ownerReferences"] if isinstance(o, dict)]
    selector = sched.controllers.default_selector(pod.namespace, pod.labels, owners)
    assert _seen(got) == _seen(compile_pod(pod, selector))


def test_the_memoized_signature_follows_the_kernel_requests() -> None:
    """``signature`` is computed once per compiled pod and shared by its siblings; a
    copy with an attempt's kernel requests has none (it is not batchable), and the copy
    without them has the pod's again."""
    template, pod = _siblings()
    compiled = compile_pod(template)
    sig = compiled.signature
    assert sig is not None
    with_requests = compiled.with_requests([VolumeRestrictionsRequest(["claim"])])
    assert with_requests.signature is None
    assert with_requests.without_requests().signature == sig
    assert with_requests.sibling(pod.uid, pod.name, None).signature == sig
    assert compiled.sibling(pod.uid, pod.name, None).signature == sig

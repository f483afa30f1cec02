"""Differential tests: PodTopologySpread and InterPodAffinity kernels against ``reference.py``.

Hypothesis draws small random clusters from a deliberately narrow vocabulary, so that
labels, namespaces and topology values collide often: 3-12 nodes with hostname, zone and
region labels (each sometimes missing) and a few taints; up to 30 existing pods spread
over four namespaces (one of them, "ghost", without a Namespace object), some
terminating, some carrying their own (anti-)affinity; Namespace objects with or without a
team label; and an incoming pod with random spread constraints or affinity terms. Each
example runs ``Snapshot.explain`` with the plugin as the only Filter and Score plugin and
asserts that every node's status and normalized score equal the reference's.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plugins import reference
from tests.plugins.harness import (
    HOSTNAME,
    ZONE,
    Obj,
    affinity,
    cluster,
    explain,
    expr,
    node,
    node_affinity,
    node_selector_term,
    pod,
    selector,
    spread_constraint,
    term,
    toleration,
    weighted,
)

NAMESPACES = ["default", "ns-a", "ns-b", "ghost"]  # "ghost" never has a Namespace object
APPS = ["web", "db", "cache"]
TOPOLOGY_KEYS = [HOSTNAME, ZONE, "region"]
DIFF_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- vocabulary ---------------------------------------------------------------------


def maybe(strategy: st.SearchStrategy[Any], p_none: float = 0.5) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy) if p_none else strategy


label_sets = st.fixed_dictionaries(
    {},
    optional={
        "app": st.sampled_from(APPS),
        "tier": st.sampled_from(["fe", "be"]),
        "rev": st.sampled_from(["r1", "r2"]),
    },
)

requirements = st.one_of(
    st.builds(
        lambda v: expr("app", "In", *v), st.lists(st.sampled_from(APPS), min_size=1, max_size=2)
    ),
    st.builds(lambda v: expr("app", "NotIn", v), st.sampled_from(APPS)),
    st.just(expr("app", "Exists")),
    st.just(expr("tier", "Exists")),
    st.just(expr("tier", "DoesNotExist")),
    st.builds(lambda v: expr("tier", "In", v), st.sampled_from(["fe", "be"])),
)

#: Pod label selectors: mostly specific, sometimes empty ({}: all pods) or null (none).
label_selectors: st.SearchStrategy[Obj | None] = st.one_of(
    st.builds(lambda a: selector(labels={"app": a}), st.sampled_from(APPS)),
    st.builds(lambda rs: selector(*rs), st.lists(requirements, min_size=1, max_size=2)),
    st.builds(lambda a, r: selector(r, labels={"app": a}), st.sampled_from(APPS), requirements),
    st.just({}),
)

namespace_selectors = st.sampled_from(
    [
        {},
        selector(labels={"team": "t1"}),
        selector(expr("team", "In", "t2")),
        selector(expr("team", "DoesNotExist")),
    ]
)


@st.composite
def nodes(draw: st.DrawFn) -> list[Obj]:
    out = []
    for i in range(draw(st.integers(3, 12))):
        name = f"node-{i}"
        labels: dict[str, str] = {}
        if draw(st.integers(0, 9)):  # 90%: the hostname label
            labels[HOSTNAME] = name
        if draw(st.integers(0, 4)):  # 80%: a zone
            labels[ZONE] = draw(st.sampled_from(["z1", "z2", "z3"]))
        if draw(st.booleans()):
            labels["region"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.booleans()):
            labels["disk"] = draw(st.sampled_from(["ssd", "hdd"]))
        taints = []
        if draw(st.integers(0, 4)) == 0:
            effect = draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))
            taints.append(("dedicated", draw(st.sampled_from(["a", "b"])), effect))
        out.append(node(name, labels, taints=taints))
    return out


@st.composite
def namespace_objects(draw: st.DrawFn) -> dict[str, dict[str, str]]:
    out = {}
    for ns in NAMESPACES[:-1]:
        if draw(st.integers(0, 5)):  # usually the object exists
            team = draw(st.sampled_from([None, "t1", "t2"]))
            out[ns] = {} if team is None else {"team": team}
    return out


@st.composite
def affinity_terms(draw: st.DrawFn) -> Obj:
    ns_style = draw(st.integers(0, 3))
    namespaces = None
    namespace_selector = None
    if ns_style == 1:
        namespaces = draw(
            st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True)
        )
    elif ns_style == 2:
        namespace_selector = draw(namespace_selectors)
    elif ns_style == 3:
        namespaces = draw(st.lists(st.sampled_from(NAMESPACES), max_size=1))
        namespace_selector = draw(namespace_selectors)
    return term(
        draw(maybe(label_selectors, p_none=0.05)),
        draw(st.sampled_from(TOPOLOGY_KEYS)),
        namespaces=namespaces,
        namespace_selector=namespace_selector,
    )


@st.composite
def pod_affinities(draw: st.DrawFn, *, p_none: float) -> Obj | None:
    if draw(st.floats(0, 1)) < p_none:
        return None
    small = st.lists(affinity_terms(), max_size=2)
    prefs = st.lists(st.builds(weighted, st.integers(1, 10), affinity_terms()), max_size=2)
    return affinity(
        required=draw(small),
        preferred=draw(prefs),
        anti_required=draw(small),
        anti_preferred=draw(prefs),
    )


@st.composite
def existing_pods(draw: st.DrawFn, node_names: list[str], *, with_affinity: bool) -> list[Obj]:
    out = []
    for i in range(draw(st.integers(0, 30))):
        out.append(
            pod(
                f"e{i}",
                namespace=draw(st.sampled_from(NAMESPACES)),
                labels=draw(label_sets),
                node=draw(st.sampled_from(node_names)),
                deleting=draw(st.integers(0, 9)) == 0,
                affinity=draw(pod_affinities(p_none=0.7)) if with_affinity else None,
            )
        )
    return out


@st.composite
def placement(draw: st.DrawFn) -> dict[str, Any]:
    """nodeSelector / required node affinity / tolerations of the incoming pod."""
    out: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        out["node_selector"] = {"disk": draw(st.sampled_from(["ssd", "hdd"]))}
    if draw(st.integers(0, 3)) == 0:
        zones = draw(st.lists(st.sampled_from(["z1", "z2", "z3"]), min_size=1, max_size=2))
        out["node_affinity"] = node_affinity(
            required=[node_selector_term(expressions=[expr(ZONE, "In", *zones)])]
        )
    if draw(st.booleans()):
        out["tolerations"] = [toleration("dedicated", "Equal", draw(st.sampled_from(["a", "b"])))]
    return out


@st.composite
def spread_constraints(draw: st.DrawFn) -> list[Obj]:
    out: list[Obj] = []
    seen = set()
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(TOPOLOGY_KEYS))
        when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
        if (key, when) in seen:  # the API requires unique (topologyKey, whenUnsatisfiable)
            continue
        seen.add((key, when))
        sel = draw(maybe(label_selectors, p_none=0.1))
        out.append(
            spread_constraint(
                draw(st.integers(1, 3)),
                key,
                when,
                sel,
                # minDomains is only valid with DoNotSchedule.
                min_domains=draw(maybe(st.integers(1, 4))) if when == "DoNotSchedule" else None,
                node_affinity_policy=draw(maybe(st.sampled_from(["Honor", "Ignore"]))),
                node_taints_policy=draw(maybe(st.sampled_from(["Honor", "Ignore"]))),
                match_label_keys=["rev"] if sel is not None and draw(st.booleans()) else None,
            )
        )
    return out


spread_args = st.one_of(
    st.just({"defaultingType": "System"}),
    st.just({"defaultingType": "List"}),
    st.just(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        }
    ),
)


# --- comparison ---------------------------------------------------------------------


def outcome(result: dict[str, Obj], plugin: str) -> dict[str, Any]:
    """Per node: the filter status, or the plugin's normalized score when feasible."""
    return {
        name: e["status"] if e["status"] is not None else e["scores"][plugin]["normalized"]
        for name, e in sorted(result.items())
    }


def check(c: Obj, p: Obj, plugin: str, args: Obj) -> None:
    profile = ([plugin], [(plugin, 1)], {plugin: args})
    want = reference.explain(c, p, *profile)
    got = explain(c, p, *profile)
    if outcome(got, plugin) != outcome(want, plugin):
        detail = {
            "cluster": c,
            "pod": p,
            "args": args,
            "reference": want,
            "kernel": got,
        }
        raise AssertionError(
            f"{plugin}: kernel and reference disagree\n" + json.dumps(detail, indent=1, default=str)
        )


# --- the tests ----------------------------------------------------------------------


@DIFF_SETTINGS
@given(data=st.data())
def test_pod_topology_spread_matches_reference(data: st.DataObject) -> None:
    ns = data.draw(nodes(), label="nodes")
    pods = data.draw(existing_pods([n["name"] for n in ns], with_affinity=False), label="pods")
    namespaces = data.draw(namespace_objects(), label="namespaces")
    where = data.draw(placement(), label="placement")
    constraints = data.draw(spread_constraints(), label="constraints")
    p = pod(
        "incoming",
        namespace=data.draw(st.sampled_from(NAMESPACES), label="namespace"),
        labels=data.draw(label_sets, label="labels"),
        spread=constraints,
        node_selector=where.get("node_selector"),
        affinity={"nodeAffinity": where["node_affinity"]} if "node_affinity" in where else None,
        tolerations=where.get("tolerations", ()),
        default_spread_selector=data.draw(maybe(label_selectors), label="default selector"),
    )
    check(
        cluster(ns, pods, namespaces), p, "PodTopologySpread", data.draw(spread_args, label="args")
    )


@DIFF_SETTINGS
@given(data=st.data())
def test_inter_pod_affinity_matches_reference(data: st.DataObject) -> None:
    ns = data.draw(nodes(), label="nodes")
    pods = data.draw(existing_pods([n["name"] for n in ns], with_affinity=True), label="pods")
    namespaces = data.draw(namespace_objects(), label="namespaces")
    p = pod(
        "incoming",
        namespace=data.draw(st.sampled_from(NAMESPACES), label="namespace"),
        labels=data.draw(label_sets, label="labels"),
        affinity=data.draw(pod_affinities(p_none=0.1), label="affinity"),
    )
    args = {
        "hardPodAffinityWeight": data.draw(st.integers(0, 3), label="hardPodAffinityWeight"),
        "ignorePreferredTermsOfExistingPods": data.draw(st.booleans(), label="ignore"),
    }
    check(cluster(ns, pods, namespaces), p, "InterPodAffinity", args)


# --- nominated pods -----------------------------------------------------------------


def with_priority(p: Obj, priority: int) -> Obj:
    p["spec"]["priority"] = priority
    return p


@st.composite
def nominations(
    draw: st.DrawFn, node_names: list[str], incoming: Obj, *, with_affinity: bool
) -> list[tuple[Obj, str]]:
    """Pods nominated to nodes (preemption), of random priorities around the incoming
    pod's; sometimes the incoming pod itself (never counted against itself)."""
    out: list[tuple[Obj, str]] = []
    for i in range(draw(st.integers(0, 6))):
        # Mostly the incoming pod's namespace, where PodTopologySpread counts them.
        same_ns = draw(st.integers(0, 3)) > 0
        nom = pod(
            f"nom{i}",
            namespace=incoming["namespace"] if same_ns else draw(st.sampled_from(NAMESPACES)),
            labels=draw(label_sets),
            affinity=draw(pod_affinities(p_none=0.5)) if with_affinity else None,
        )
        out.append((with_priority(nom, draw(st.integers(0, 3))), draw(st.sampled_from(node_names))))
    if draw(st.integers(0, 4)) == 0:
        out.append((incoming, draw(st.sampled_from(node_names))))
    return out


@DIFF_SETTINGS
@given(data=st.data())
def test_pod_topology_spread_with_nominated_pods_matches_reference(data: st.DataObject) -> None:
    ns = data.draw(nodes(), label="nodes")
    names = [n["name"] for n in ns]
    pods = data.draw(existing_pods(names, with_affinity=False), label="pods")
    namespaces = data.draw(namespace_objects(), label="namespaces")
    where = data.draw(placement(), label="placement")
    p = pod(
        "incoming",
        namespace=data.draw(st.sampled_from(NAMESPACES), label="namespace"),
        labels=data.draw(label_sets, label="labels"),
        spread=data.draw(spread_constraints(), label="constraints"),
        node_selector=where.get("node_selector"),
        affinity={"nodeAffinity": where["node_affinity"]} if "node_affinity" in where else None,
        tolerations=where.get("tolerations", ()),
        default_spread_selector=data.draw(maybe(label_selectors), label="default selector"),
    )
    with_priority(p, data.draw(st.integers(0, 3), label="priority"))
    nominated = data.draw(nominations(names, p, with_affinity=False), label="nominated")
    check(
        cluster(ns, pods, namespaces, nominated),
        p,
        "PodTopologySpread",
        data.draw(spread_args, label="args"),
    )


@DIFF_SETTINGS
@given(data=st.data())
def test_inter_pod_affinity_with_nominated_pods_matches_reference(data: st.DataObject) -> None:
    ns = data.draw(nodes(), label="nodes")
    names = [n["name"] for n in ns]
    pods = data.draw(existing_pods(names, with_affinity=True), label="pods")
    namespaces = data.draw(namespace_objects(), label="namespaces")
    p = pod(
        "incoming",
        namespace=data.draw(st.sampled_from(NAMESPACES), label="namespace"),
        labels=data.draw(label_sets, label="labels"),
        affinity=data.draw(pod_affinities(p_none=0.1), label="affinity"),
    )
    with_priority(p, data.draw(st.integers(0, 3), label="priority"))
    nominated = data.draw(nominations(names, p, with_affinity=True), label="nominated")
    args = {
        "hardPodAffinityWeight": data.draw(st.integers(0, 3), label="hardPodAffinityWeight"),
        "ignorePreferredTermsOfExistingPods": data.draw(st.booleans(), label="ignore"),
    }
    check(cluster(ns, pods, namespaces, nominated), p, "InterPodAffinity", args)

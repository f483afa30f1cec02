"""InterPodAffinity: upstream's Filter and Score tables, against the kernels and the reference.

Ported from pkg/scheduler/framework/plugins/interpodaffinity: filtering_test.go
(TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes) and scoring_test.go
(TestPreferredAffinity, TestPreferredAffinityWithHardPodAffinitySymmetricWeight). Every
case runs on ``Snapshot.explain`` and on ``reference.py``.

Upstream's pods mostly live in namespace "" (the test helpers never set one); here that
namespace is "default", which, as upstream's "", has no Namespace object. Two upstream
cases leave the term's topologyKey empty, which the API server rejects (and so does
CompiledPod); they use "region" here, which does not change their outcome. Cases whose
only point is a PreFilter/PreScore error on an invalid label value are not ported (the
API server rejects such pods). Cases marked *derived* are not in upstream's tables; their
expectations are worked out from upstream's code in a comment.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.plugins import reference
from tests.plugins.harness import (
    Obj,
    affinity,
    cluster,
    exists,
    explain,
    expr,
    label_in,
    label_not_in,
    node,
    normalized,
    pod,
    selector,
    statuses,
    term,
    weighted,
)

PLUGIN = "InterPodAffinity"
AFFINITY = ("UnschedulableAndUnresolvable", "node(s) didn't match pod affinity rules")
ANTI = ("Unschedulable", "node(s) didn't match pod anti-affinity rules")
EXISTING = ("Unschedulable", "node(s) didn't satisfy existing pods anti-affinity rules")

#: The Namespace objects of upstream's scoring_test.go (also used by its filter tests).
TEAMS = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
TEAM1 = selector(expr("team", "In", "team1"))

Explain = Callable[..., dict[str, Obj]]


@pytest.fixture(params=["kernel", "reference"])
def run(request: pytest.FixtureRequest) -> Explain:
    return explain if request.param == "kernel" else reference.explain


def aff_in(key: str, topology_key: str, *values: str) -> Obj:
    """st.MakePod().PodAffinityIn / PodAntiAffinityIn: one In requirement."""
    return term(label_in(key, *values), topology_key)


def aff_not_in(key: str, topology_key: str, *values: str) -> Obj:
    return term(label_not_in(key, *values), topology_key)


def aff_exists(key: str, topology_key: str) -> Obj:
    return term(exists(key), topology_key)


# --- Filter: TestRequiredAffinitySingleNode ------------------------------------------

NODE1 = [node("node1", {"region": "r1", "zone": "z11"})]
SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}


def scan_pod(**kw: object) -> Obj:
    """Upstream's `pod`: labelled service=securityscan, bound to node1."""
    return pod("existing", node="node1", labels=SECURITYSCAN, **kw)  # type: ignore[arg-type]


SINGLE_NODE_CASES = [
    pytest.param(
        [],
        pod("p"),
        None,
        id="no-required-pod-affinity-rules-on-a-node-with-no-existing-pods",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(required=[aff_in("service", "region", "securityscan", "value2")]),
        ),
        None,
        id="satisfies-required-PodAffinity-In-matching-the-existing-pod",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[aff_not_in("service", "region", "securityscan3", "value3")]
            ),
        ),
        None,
        id="satisfies-required-PodAffinity-NotIn-matching-the-existing-pod",
    ),
    pytest.param(
        [pod("existing", namespace="ns", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[
                    term(
                        label_in("service", "securityscan", "value2"),
                        "region",
                        namespaces=["DiffNameSpace"],
                    )
                ]
            ),
        ),
        AFFINITY,
        id="does-not-satisfy-PodAffinity-because-of-different-namespace",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=SECURITYSCAN,
            affinity=affinity(required=[aff_in("service", "region", "antivirusscan", "value2")]),
        ),
        AFFINITY,
        id="does-not-satisfy-PodAffinity-unmatching-labelSelector",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[
                    term(
                        selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                        "region",
                    ),
                    term(
                        selector(
                            expr("service", "In", "securityscan"),
                            expr("service", "NotIn", "WrongValue"),
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        None,
        id="satisfies-PodAffinity-with-different-operators-in-multiple-terms",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[
                    term(
                        selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                        "region",
                    ),
                    term(
                        selector(
                            expr("service", "In", "securityscan2"),
                            expr("service", "NotIn", "WrongValue"),
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        AFFINITY,
        id="matchExpressions-are-ANDed-one-does-not-match",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[aff_in("service", "region", "securityscan", "value2")],
                anti_required=[aff_in("service", "node", "antivirusscan", "value2")],
            ),
        ),
        None,
        id="satisfies-PodAffinity-and-PodAntiAffinity-with-the-existing-pod",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=SECURITYSCAN,
                affinity=affinity(
                    anti_required=[aff_in("service", "node", "antivirusscan", "value2")]
                ),
            )
        ],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[aff_in("service", "region", "securityscan", "value2")],
                anti_required=[aff_in("service", "node", "antivirusscan", "value2")],
            ),
        ),
        None,
        id="satisfies-PodAffinity-PodAntiAffinity-and-symmetry-with-the-existing-pod",
    ),
    pytest.param(
        [scan_pod()],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[aff_in("service", "region", "securityscan", "value2")],
                anti_required=[aff_in("service", "zone", "securityscan", "value2")],
            ),
        ),
        ANTI,
        id="satisfies-PodAffinity-but-not-PodAntiAffinity-with-the-existing-pod",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=SECURITYSCAN,
                affinity=affinity(
                    anti_required=[aff_in("service", "zone", "securityscan", "value2")]
                ),
            )
        ],
        pod(
            "p",
            labels=SECURITYSCAN,
            affinity=affinity(
                required=[aff_in("service", "region", "securityscan", "value2")],
                anti_required=[aff_in("service", "node", "antivirusscan", "value2")],
            ),
        ),
        EXISTING,
        id="satisfies-PodAffinity-and-PodAntiAffinity-but-not-the-symmetry",
    ),
    pytest.param(
        # Upstream binds this pod to a node2 that is not in the snapshot; it matches no
        # term either way, so it sits on node1 here.
        [scan_pod()],
        pod(
            "p",
            labels=SECURITYSCAN,
            affinity=affinity(required=[aff_not_in("service", "region", "securityscan", "value2")]),
        ),
        AFFINITY,
        id="pod-does-not-match-its-own-PodAffinity-nor-the-existing-pod",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=SECURITYSCAN,
                affinity=affinity(
                    anti_required=[aff_in("service", "zone", "securityscan", "value2")]
                ),
            )
        ],
        pod("p", labels=SECURITYSCAN),
        EXISTING,
        id="existing-pod-anti-affinity-respected-without-own-affinity-violated",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=SECURITYSCAN,
                affinity=affinity(
                    anti_required=[aff_not_in("service", "zone", "securityscan", "value2")]
                ),
            )
        ],
        pod("p", labels=SECURITYSCAN),
        None,
        id="existing-pod-anti-affinity-respected-without-own-affinity-satisfied",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=S1,
                affinity=affinity(anti_required=[aff_exists("security", "zone")]),
            )
        ],
        pod(
            "p",
            labels=SECURITYSCAN,
            affinity=affinity(
                anti_required=[aff_exists("service", "region"), aff_exists("security", "region")]
            ),
        ),
        ANTI,
        id="satisfies-existing-pod-anti-affinity-but-not-its-own",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=S1,
                affinity=affinity(anti_required=[aff_exists("security", "zone")]),
            )
        ],
        pod(
            "p",
            labels=SECURITYSCAN,
            affinity=affinity(
                anti_required=[aff_exists("service", "zone"), aff_exists("security", "zone")]
            ),
        ),
        ANTI,
        id="anti-affinity-symmetry-a1-partial-match",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels=SECURITYSCAN,
                affinity=affinity(
                    anti_required=[aff_exists("service", "zone"), aff_exists("security", "zone")]
                ),
            )
        ],
        pod("p", labels=S1, affinity=affinity(anti_required=[aff_exists("security", "zone")])),
        EXISTING,
        id="anti-affinity-symmetry-a2-partial-match",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels={"def": "", "xyz": ""},
                affinity=affinity(
                    anti_required=[aff_exists("abc", "zone"), aff_exists("def", "zone")]
                ),
            )
        ],
        pod(
            "p",
            labels={"abc": "", "xyz": ""},
            affinity=affinity(anti_required=[aff_exists("abc", "zone"), aff_exists("def", "zone")]),
        ),
        ANTI,
        id="anti-affinity-symmetry-b1-partial-match",
    ),
    pytest.param(
        [
            pod(
                "existing",
                node="node1",
                labels={"abc": "", "xyz": ""},
                affinity=affinity(
                    anti_required=[aff_exists("abc", "zone"), aff_exists("def", "zone")]
                ),
            )
        ],
        pod(
            "p",
            labels={"def": "", "xyz": ""},
            affinity=affinity(anti_required=[aff_exists("abc", "zone"), aff_exists("def", "zone")]),
        ),
        ANTI,
        id="anti-affinity-symmetry-b2-partial-match",
    ),
    pytest.param(
        [pod("existing", namespace="subteam1.team1", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[
                    term(
                        label_in("service", "securityscan", "value2"),
                        "region",
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        None,
        id="affinity-with-namespaceSelector",
    ),
    pytest.param(
        [pod("existing", namespace="subteam1.team2", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            labels=S1,
            affinity=affinity(
                required=[
                    term(
                        label_in("service", "securityscan", "value2"),
                        "region",
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        AFFINITY,
        id="affinity-with-non-matching-namespaceSelector",
    ),
    pytest.param(
        [pod("existing", namespace="subteam2.team1", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            namespace="subteam1.team1",
            labels=S1,
            affinity=affinity(
                anti_required=[
                    term(
                        label_in("service", "securityscan", "value2"),
                        "zone",
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        ANTI,
        id="anti-affinity-with-matching-namespaceSelector",
    ),
    pytest.param(
        [pod("existing", namespace="subteam2.team1", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            namespace="subteam1.team1",
            labels=S1,
            affinity=affinity(
                anti_required=[
                    term(
                        label_in("service", "securityscan", "value2"), "zone", namespace_selector={}
                    )
                ]
            ),
        ),
        ANTI,
        id="anti-affinity-with-matching-all-namespaceSelector",
    ),
    pytest.param(
        [pod("existing", namespace="subteam1.team2", node="node1", labels=SECURITYSCAN)],
        pod(
            "p",
            namespace="subteam1.team1",
            labels=S1,
            affinity=affinity(
                anti_required=[
                    term(
                        label_in("service", "securityscan", "value2"),
                        "zone",
                        namespace_selector=TEAM1,
                    )
                ]
            ),
        ),
        None,
        id="anti-affinity-with-non-matching-namespaceSelector",
    ),
]


@pytest.mark.parametrize(("pods", "p", "want"), SINGLE_NODE_CASES)
def test_filter_single_node(
    run: Explain, pods: list[Obj], p: Obj, want: tuple[str, str] | None
) -> None:
    c = cluster(NODE1, pods, TEAMS)
    assert statuses(run(c, p, [PLUGIN])) == {"node1": want}


# --- Filter: TestRequiredAffinityMultipleNodes ---------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def nodes(**labels: dict[str, str]) -> list[Obj]:
    return [node(name, lbl) for name, lbl in labels.items()]


def abc(region_zone: Obj) -> list[Obj]:
    """nodeA/nodeB/... with region and zone, and hostname = the node name."""
    return [
        node(name, {"region": r, "zone": z, "hostname": name})
        for name, (r, z) in region_zone.items()
    ]


MULTI_NODE_CASES = [
    pytest.param(
        nodes(node1=CHINA, node2=CHINA_AZ1, node3=INDIA),
        [pod("p1", node="node1", labels={"foo": "bar"})],
        pod("p", affinity=affinity(required=[aff_in("foo", "region", "bar")])),
        [None, None, AFFINITY],
        id="all-nodes-with-the-same-topology-value-as-a-matching-pod-fit",
    ),
    pytest.param(
        nodes(nodeA={"zone": "az1", "hostname": "h1"}, nodeB={"zone": "az2", "hostname": "h2"}),
        [pod("p1", node="nodeA", labels={"foo": "bar"})],
        pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity=affinity(
                required=[aff_in("foo", "zone", "bar"), aff_in("service", "zone", "securityscan")]
            ),
        ),
        [None, None],
        id="first-pod-of-a-collection-is-not-blocked",
    ),
    pytest.param(
        nodes(
            nodeA={"zoneLabel": "az1", "hostname": "h1"},
            nodeB={"zoneLabel": "az2", "hostname": "h2"},
        ),
        [pod("p1", node="nodeA", labels={"foo": "bar"})],
        pod(
            "p",
            labels={"foo": "bar", "service": "securityscan"},
            affinity=affinity(
                required=[aff_in("foo", "zone", "bar"), aff_in("service", "zone", "securityscan")]
            ),
        ),
        [AFFINITY, AFFINITY],
        id="first-pod-of-a-collection-needs-nodes-with-the-topology-keys",
    ),
    pytest.param(
        nodes(
            nodeA={"region": "r1", "hostname": "nodeA"}, nodeB={"region": "r1", "hostname": "nodeB"}
        ),
        [pod("e", node="nodeA", labels={"foo": "abc"})],
        pod("p", affinity=affinity(anti_required=[aff_in("foo", "region", "abc")])),
        [ANTI, ANTI],
        id="anti-affinity-blocks-every-node-of-the-matching-pods-topology",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [pod("e", node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        pod(
            "p",
            affinity=affinity(
                anti_required=[
                    aff_in("foo", "region", "abc"),
                    aff_in("service", "zone", "securityscan"),
                ]
            ),
        ),
        [ANTI, ANTI],
        id="anti-affinity-matches-when-any-term-matches",
    ),
    pytest.param(
        nodes(nodeA=CHINA, nodeB=CHINA_AZ1, nodeC=INDIA),
        [pod("e", node="nodeA", labels={"foo": "abc"})],
        pod("p", affinity=affinity(anti_required=[aff_in("foo", "region", "abc")])),
        [ANTI, ANTI, None],
        id="anti-affinity-other-region-fits",
    ),
    pytest.param(
        nodes(nodeA=CHINA, nodeB=CHINA_AZ1, nodeC=INDIA),
        [
            pod("e1", namespace="NS1", node="nodeA", labels={"foo": "bar"}),
            pod(
                "e2",
                namespace="NS2",
                node="nodeC",
                affinity=affinity(anti_required=[aff_in("foo", "region", "123")]),
            ),
        ],
        pod(
            "p",
            namespace="NS1",
            labels={"foo": "123"},
            affinity=affinity(anti_required=[aff_in("foo", "region", "bar")]),
        ),
        [ANTI, ANTI, None],
        id="anti-affinity-of-a-pod-in-another-namespace-does-not-apply",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z1")}),
        [
            pod(
                "e",
                node="nodeA",
                affinity=affinity(anti_required=[aff_exists("foo", "invalid-node-label")]),
            )
        ],
        pod("p", labels={"foo": ""}),
        [None, None],
        id="existing-anti-affinity-with-a-topology-key-no-node-has",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z1")}),
        [pod("e", node="nodeA", labels={"foo": ""})],
        pod(
            "p",
            node_name="nodeA",
            affinity=affinity(anti_required=[aff_exists("foo", "invalid-node-label")]),
        ),
        [None, None],
        id="incoming-anti-affinity-with-a-topology-key-no-node-has",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [
            pod("e1", node="nodeA", affinity=affinity(anti_required=[aff_exists("foo", "zone")])),
            pod("e2", node="nodeA", affinity=affinity(anti_required=[aff_exists("bar", "region")])),
        ],
        pod("p", labels={"foo": "", "bar": ""}),
        [EXISTING, EXISTING],
        id="existing-anti-affinity-violated-on-all-nodes",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [pod("e1", node="nodeA", labels={"foo": ""}), pod("e2", node="nodeB", labels={"bar": ""})],
        pod(
            "p",
            affinity=affinity(
                anti_required=[aff_exists("foo", "zone"), aff_exists("bar", "region")]
            ),
        ),
        [ANTI, ANTI],
        id="incoming-anti-affinity-violated-on-all-nodes",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [
            pod(
                "e",
                node="nodeA",
                affinity=affinity(
                    anti_required=[
                        aff_exists("foo", "invalid-node-label"),
                        aff_exists("bar", "zone"),
                    ]
                ),
            )
        ],
        pod("p", labels={"foo": "", "bar": ""}),
        [EXISTING, None],
        id="existing-anti-affinity-term-counts-only-when-selector-and-topology-key-match",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [pod("podA", node="nodeA", labels={"foo": "", "bar": ""})],
        pod(
            "p",
            affinity=affinity(
                anti_required=[aff_exists("foo", "invalid-node-label"), aff_exists("bar", "zone")]
            ),
        ),
        [ANTI, None],
        id="incoming-anti-affinity-term-counts-only-when-selector-and-topology-key-match",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [
            pod(
                "e",
                node="nodeA",
                affinity=affinity(
                    anti_required=[aff_exists("foo", "region"), aff_exists("bar", "zone")]
                ),
            )
        ],
        pod("p", labels={"foo": "", "bar": ""}),
        [EXISTING, EXISTING],
        id="existing-anti-affinity-all-terms-with-valid-topology-keys",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [pod("e", node="nodeA", labels={"foo": "", "bar": ""})],
        pod(
            "p",
            affinity=affinity(
                anti_required=[aff_exists("foo", "region"), aff_exists("bar", "zone")]
            ),
        ),
        [ANTI, ANTI],
        id="incoming-anti-affinity-all-terms-with-valid-topology-keys",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2"), "nodeC": ("r1", "z3")}),
        [
            pod(
                "e1",
                node="nodeA",
                affinity=affinity(
                    anti_required=[aff_exists("foo", "zone"), aff_exists("labelA", "zone")]
                ),
            ),
            pod(
                "e2",
                node="nodeB",
                affinity=affinity(
                    anti_required=[aff_exists("bar", "zone"), aff_exists("labelB", "zone")]
                ),
            ),
        ],
        pod("p", labels={"foo": "", "bar": ""}),
        [EXISTING, EXISTING, None],
        id="existing-anti-affinity-on-nodeA-and-nodeB-only-nodeC-fits",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z1")}),
        [pod("pod1", node="nodeA", labels={"foo": "", "bar": ""})],
        pod(
            "p",
            affinity=affinity(required=[aff_exists("foo", "region"), aff_exists("bar", "zone")]),
        ),
        [None, None],
        id="incoming-affinity-all-terms-match-then-all-topology-keys",
    ),
    pytest.param(
        abc({"nodeA": ("r1", "z1"), "nodeB": ("r1", "z2")}),
        [
            pod("pod1", node="nodeA", labels={"foo": ""}),
            pod("pod2", node="nodeB", labels={"bar": ""}),
        ],
        pod(
            "p",
            affinity=affinity(required=[aff_exists("foo", "region"), aff_exists("bar", "zone")]),
        ),
        [AFFINITY, AFFINITY],
        id="incoming-affinity-terms-must-be-matched-by-the-same-pod",
    ),
]


@pytest.mark.parametrize(("ns", "pods", "p", "want"), MULTI_NODE_CASES)
def test_filter_multiple_nodes(
    run: Explain, ns: list[Obj], pods: list[Obj], p: Obj, want: list[tuple[str, str] | None]
) -> None:
    c = cluster(ns, pods, {"NS1": {}})
    got = statuses(run(c, p, [PLUGIN]))
    assert got == {n["name"]: w for n, w in zip(ns, want, strict=True)}


# --- Filter: derived cases -----------------------------------------------------------


def match(labels: dict[str, str]) -> Obj:
    return selector(labels=labels)


ZONES3 = [node(f"node-{i}", {"zone": f"z{i}"}) for i in (1, 2, 3)]
NO_TEAM = selector(expr("team", "DoesNotExist"))
WEB = {"app": "web"}


def test_incoming_namespace_selector_matching_no_labels_matches_every_namespace(
    run: Explain,
) -> None:
    # Derived (and checked against kube-scheduler v1.36.5 with the conformance harness):
    # mergeAffinityTermNamespacesIfNotEmpty adds the Namespace objects the incoming
    # pod's namespaceSelector selects to the term's namespaces and sets the selector to
    # Nothing on its copy of the term only; the term, matched from then on with nil
    # namespace labels, keeps its selector, and a selector that matches an empty label
    # set (DoesNotExist, NotIn) selects pods of every namespace: of a namespace without
    # an object ("ghost"), and of one the selector excludes ("t1", team=team1).
    c = cluster(
        ZONES3,
        [
            pod("in-ghost", namespace="ghost", node="node-1", labels=WEB),
            pod("in-plain", namespace="plain", node="node-2", labels=WEB),
            pod("in-t1", namespace="t1", node="node-3", labels=WEB),
        ],
        {"plain": {}, "t1": {"team": "team1"}},
    )
    p = pod(
        "p",
        namespace="plain",
        affinity=affinity(anti_required=[term(match(WEB), "zone", namespace_selector=NO_TEAM)]),
    )
    assert statuses(run(c, p, [PLUGIN])) == {"node-1": ANTI, "node-2": ANTI, "node-3": ANTI}
    # PreScore merges preferred terms alike: the pods of every namespace count.
    p = pod(
        "p",
        namespace="plain",
        affinity=affinity(
            preferred=[weighted(4, term(match(WEB), "zone", namespace_selector=NO_TEAM))]
        ),
    )
    raw = {n: e["scores"][PLUGIN]["raw"] for n, e in run(c, p, [], [(PLUGIN, 1)]).items()}
    assert raw == {"node-1": 4, "node-2": 4, "node-3": 4}
    # A selector that needs a label resolves against the Namespace objects only.
    team1 = selector(expr("team", "In", "team1"))
    p = pod(
        "p",
        namespace="plain",
        affinity=affinity(anti_required=[term(match(WEB), "zone", namespace_selector=team1)]),
    )
    assert statuses(run(c, p, [PLUGIN])) == {"node-1": None, "node-2": None, "node-3": ANTI}


def test_existing_namespace_selector_matches_labels_of_incoming_namespace(run: Explain) -> None:
    # Derived: an existing pod's namespaceSelector is matched against the labels of the
    # incoming pod's namespace; a namespace without an object has no labels, so a
    # DoesNotExist selector selects it.
    c = cluster(
        ZONES3,
        [
            pod(
                "guard",
                namespace="plain",
                node="node-1",
                affinity=affinity(
                    anti_required=[term(match(WEB), "zone", namespace_selector=NO_TEAM)]
                ),
            )
        ],
        {"plain": {}, "t1": {"team": "team1"}},
    )
    ghost = pod("p", namespace="ghost", labels=WEB)
    assert statuses(run(c, ghost, [PLUGIN])) == {"node-1": EXISTING, "node-2": None, "node-3": None}
    teamed = pod("p", namespace="t1", labels=WEB)
    assert statuses(run(c, teamed, [PLUGIN])) == {"node-1": None, "node-2": None, "node-3": None}


def test_empty_namespace_selector_means_every_namespace(run: Explain) -> None:
    # Derived: an empty namespaceSelector ({}) is labels.Everything(), which
    # mergeAffinityTermNamespacesIfNotEmpty leaves in place instead of resolving it
    # against Namespace objects, so it also matches pods of a namespace that has no
    # object (here "ghost"), in required and in preferred terms alike.
    c = cluster(ZONES3, [pod("e", namespace="ghost", node="node-1", labels=WEB)], {"plain": {}})
    every = term(match(WEB), "zone", namespace_selector={})
    p = pod("p", namespace="plain", affinity=affinity(anti_required=[every]))
    assert statuses(run(c, p, [PLUGIN])) == {"node-1": ANTI, "node-2": None, "node-3": None}
    p = pod("p", namespace="plain", affinity=affinity(preferred=[weighted(4, every)]))
    scores = {n: e["scores"][PLUGIN] for n, e in run(c, p, [], [(PLUGIN, 1)]).items()}
    assert scores == {
        "node-1": {"raw": 4, "normalized": 100},
        "node-2": {"raw": 0, "normalized": 0},
        "node-3": {"raw": 0, "normalized": 0},
    }


def test_terminating_pods_still_count(run: Explain) -> None:
    # Derived: unlike PodTopologySpread, InterPodAffinity does not skip pods with a
    # deletionTimestamp (NodeInfo.Pods includes them).
    c = cluster(ZONES3, [pod("leaving", node="node-1", labels=WEB, deleting=True)])
    p = pod("p", affinity=affinity(anti_required=[term(match(WEB), "zone")]))
    assert statuses(run(c, p, [PLUGIN])) == {"node-1": ANTI, "node-2": None, "node-3": None}
    p = pod("p", affinity=affinity(required=[term(match(WEB), "zone")]))
    assert statuses(run(c, p, [PLUGIN])) == {"node-1": None, "node-2": AFFINITY, "node-3": AFFINITY}


def test_first_pod_rule_needs_no_match_anywhere(run: Explain) -> None:
    # Derived: the first-pod-of-a-series escape only applies while no existing pod
    # matches all the terms; one matching pod in zone z1 confines the series to z1.
    p = pod("p", labels=WEB, affinity=affinity(required=[term(match(WEB), "zone")]))
    empty = cluster(ZONES3)
    assert set(statuses(run(empty, p, [PLUGIN])).values()) == {None}
    one = cluster(ZONES3, [pod("first", node="node-1", labels=WEB)])
    assert statuses(run(one, p, [PLUGIN])) == {
        "node-1": None,
        "node-2": AFFINITY,
        "node-3": AFFINITY,
    }
    # A matching pod on a node without the topology key leaves no count behind: the
    # escape still applies.
    unlabelled = cluster([*ZONES3, node("bare")], [pod("first", node="bare", labels=WEB)])
    assert statuses(run(unlabelled, p, [PLUGIN])) == {
        "node-1": None,
        "node-2": None,
        "node-3": None,
        "bare": AFFINITY,
    }


# --- Score: TestPreferredAffinity ----------------------------------------------------

S2 = {"security": "S2"}
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}


def pref(weight: int, t: Obj) -> Obj:
    return weighted(weight, t)


STAY_WITH_S1_IN_REGION = affinity(preferred=[pref(5, aff_in("security", "region", "S1"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[pref(6, aff_in("security", "region", "S2"))])
AFFINITY3 = affinity(
    preferred=[
        pref(
            8,
            term(selector(expr("security", "NotIn", "S1"), expr("security", "In", "S2")), "region"),
        ),
        pref(
            2,
            term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
        ),
    ]
)
HARD_AFFINITY = affinity(
    required=[
        aff_in("security", "region", "S1", "value2"),
        term(selector(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[pref(5, aff_in("security", "az", "S1"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[pref(5, aff_in("security", "az", "S2"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[pref(8, aff_in("security", "region", "S1"))],
    anti_preferred=[pref(5, aff_in("security", "az", "S2"))],
)
NS_SELECTOR_TERM = term(
    label_in("security", "S1"), "region", namespaces=["subteam2.team2"], namespace_selector=TEAM1
)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[pref(5, NS_SELECTOR_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(anti_preferred=[pref(5, NS_SELECTOR_TERM)])


def on(node_name: str, labels: dict[str, str] | None = None, **kw: object) -> Obj:
    return pod(f"on-{node_name}", node=node_name, labels=labels, **kw)  # type: ignore[arg-type]


PREFERRED_CASES = [
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [],
        pod("p", labels=S1),
        {"node1": 0, "node2": 0, "node3": 0},
        id="all-nodes-same-priority-as-affinity-is-nil",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION),
        {"node1": 100, "node2": 0, "node3": 0},
        id="affinity-matching-topology-key-and-pods-gets-high-score",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=CHINA_AZ1, node3=INDIA),
        [on("node1", S1)],
        pod("p", affinity=STAY_WITH_S1_IN_REGION),
        {"node1": 100, "node2": 100, "node3": 0},
        id="nodes-sharing-the-topology-value-of-a-match-score-the-same",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=CHINA, node4=CHINA, node5=INDIA),
        [
            on("node1", S2),
            on("node1", S2),
            on("node2", S2),
            on("node3", S2),
            on("node4", S2),
            on("node5", S2),
        ],
        pod("p", labels=S1, affinity=STAY_WITH_S2_IN_REGION),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        id="affinity-region-with-more-matches-scores-higher",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        pod("p", labels=S1, affinity=AFFINITY3),
        {"node1": 20, "node2": 100, "node3": 0},
        id="affinity-different-label-operators-some-match-failures",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [
            on("node1", S1, affinity=STAY_WITH_S1_IN_REGION),
            on("node2", S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", labels=S2),
        {"node1": 0, "node2": 100, "node3": 0},
        id="affinity-symmetry-preferred-terms-of-existing-pods",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [
            on("node1", S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
            on("node2", S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", namespace="subteam1.team1", labels=S1),
        {"node1": 100, "node2": 0, "node3": 0},
        id="affinity-symmetry-with-namespace-selector",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [
            on("node1", S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
            on("node2", S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", namespace="subteam1.team1", labels=S1),
        {"node1": 0, "node2": 100, "node3": 100},
        id="anti-affinity-symmetry-with-namespace-selector",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [on("node1", S1, affinity=HARD_AFFINITY), on("node2", S2, affinity=HARD_AFFINITY)],
        pod("p", labels=S1),
        {"node1": 100, "node2": 100, "node3": 0},
        id="affinity-symmetry-required-terms-of-existing-pods",
    ),
    pytest.param(
        nodes(node1=AZ1, node2=CHINA),
        [on("node1", S1), on("node2", S2)],
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
        id="anti-affinity-node-without-matching-pods-gets-high-score",
    ),
    pytest.param(
        nodes(node1=AZ1, node2=CHINA),
        [on("node1", S1), on("node2", S1)],
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
        id="anti-affinity-node-without-the-topology-key-gets-high-score",
    ),
    pytest.param(
        nodes(node1=AZ1, node2=INDIA),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        pod("p", labels=S1, affinity=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
        id="anti-affinity-node-with-more-matches-scores-lower",
    ),
    pytest.param(
        nodes(node1=AZ1, node2=AZ2),
        [
            on("node1", S1, affinity=AWAY_FROM_S2_IN_AZ),
            on("node2", S2, affinity=AWAY_FROM_S1_IN_AZ),
        ],
        pod("p", labels=S2),
        {"node1": 0, "node2": 100},
        id="anti-affinity-symmetry",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=AZ1),
        [on("node1", S1), on("node2", S1)],
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        {"node1": 100, "node2": 0},
        id="affinity-and-anti-affinity-preferred-terms",
    ),
    pytest.param(
        nodes(node1=CHINA_AZ1, node2=INDIA, node3=CHINA, node4=CHINA, node5=INDIA),
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        id="affinity-and-anti-affinity-pod-and-existing-pods-share-labels",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=AZ1, node3=INDIA, node4=AZ2),
        [
            on("node1", S1),
            on("node2", S2),
            on("node3", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on("node4", affinity=AWAY_FROM_S1_IN_AZ),
        ],
        pod("p", labels=S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
        id="affinity-anti-affinity-and-symmetry-together",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=CHINA),
        [on("node1", S1), on("node2", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        pod("p", labels=S1),
        {"node1": 0, "node2": 0},
        id="partial-nodes-in-a-topology-without-pods-with-affinity",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team2"),
            on("node2", S1, namespace="subteam2.team1"),
        ],
        pod("p", namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
        {"node1": 100, "node2": 0},
        id="affinity-with-pods-matching-namespaceSelector",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam2.team2"),
            on("node2", S1, namespace="subteam2.team1"),
        ],
        pod("p", namespace="subteam1.team1", labels=S1, affinity=AFFINITY_NAMESPACE_SELECTOR),
        {"node1": 100, "node2": 0},
        id="affinity-with-pods-matching-namespaceSelector-and-namespaces",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team2"),
            on("node2", S1, namespace="subteam2.team1"),
        ],
        pod("p", namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        {"node1": 0, "node2": 100},
        id="anti-affinity-with-pods-matching-namespaceSelector",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam1.team1"),
            on("node1", S1, namespace="subteam2.team2"),
            on("node2", S1, namespace="subteam2.team1"),
        ],
        pod("p", namespace="subteam1.team1", labels=S1, affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
        {"node1": 0, "node2": 100},
        id="anti-affinity-with-pods-matching-namespaceSelector-and-namespaces",
    ),
    pytest.param(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on("node2", S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", labels=S2),
        {"node1": 0, "node2": 100},
        id="do-not-ignore-preferred-terms-of-existing-pods",
    ),
]


@pytest.mark.parametrize(("ns", "pods", "p", "want"), PREFERRED_CASES)
def test_score_preferred(
    run: Explain, ns: list[Obj], pods: list[Obj], p: Obj, want: dict[str, int]
) -> None:
    c = cluster(ns, pods, TEAMS)
    args = {PLUGIN: {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}}
    assert normalized(run(c, p, [], [(PLUGIN, 1)], args), PLUGIN) == want


def test_score_ignore_preferred_terms_of_existing_pods(run: Explain) -> None:
    c = cluster(
        nodes(node1=CHINA, node2=INDIA),
        [
            on("node1", S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on("node2", S2, affinity=STAY_WITH_S2_IN_REGION),
        ],
        TEAMS,
    )
    args = {PLUGIN: {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": True}}
    result = run(c, pod("p", labels=S2), [], [(PLUGIN, 1)], args)
    assert {n: e["scores"][PLUGIN] for n, e in result.items()} == {
        "node1": {"raw": 0, "normalized": 0},
        "node2": {"raw": 0, "normalized": 0},
    }


# --- Score: TestPreferredAffinityWithHardPodAffinitySymmetricWeight -----------------

HARD_POD_AFFINITY = affinity(
    required=[
        term(
            label_in("service", "S1"),
            "region",
            namespaces=["default", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)


@pytest.mark.parametrize(
    ("namespace", "weight", "want"),
    [
        pytest.param(
            "default", 1, {"node1": 100, "node2": 100, "node3": 0}, id="with-default-weight"
        ),
        pytest.param("default", 0, {"node1": 0, "node2": 0, "node3": 0}, id="with-zero-weight"),
        pytest.param(
            "subteam1.team2",
            1,
            {"node1": 0, "node2": 0, "node3": 0},
            id="with-no-matching-namespace",
        ),
        pytest.param(
            "subteam1.team1",
            1,
            {"node1": 100, "node2": 100, "node3": 0},
            id="with-matching-NamespaceSelector",
        ),
        pytest.param(
            "subteam2.team2",
            1,
            {"node1": 100, "node2": 100, "node3": 0},
            id="with-matching-Namespaces",
        ),
    ],
)
def test_score_hard_pod_affinity_weight(
    run: Explain, namespace: str, weight: int, want: dict[str, int]
) -> None:
    c = cluster(
        nodes(node1=CHINA, node2=INDIA, node3=AZ1),
        [on("node1", affinity=HARD_POD_AFFINITY), on("node2", affinity=HARD_POD_AFFINITY)],
        TEAMS,
    )
    p = pod("p", namespace=namespace, labels={"service": "S1"})
    args = {PLUGIN: {"hardPodAffinityWeight": weight}}
    assert normalized(run(c, p, [], [(PLUGIN, 1)], args), PLUGIN) == want


def test_raw_scores_are_signed_sums_and_normalize_min_max(run: Explain) -> None:
    # Derived: raw = Σ matching weights (anti-affinity negative); normalized =
    # int(100 * (raw - min) / (max - min)) over the feasible nodes.
    c = cluster(
        nodes(node1=CHINA, node2=INDIA, node3=CHINA_AZ1, node4=AZ2),
        [on("node1", S1), on("node2", S2), on("node3", S2), on("node4", S2)],
    )
    p = pod(
        "p",
        affinity=affinity(
            preferred=[pref(7, aff_in("security", "region", "S1"))],
            anti_preferred=[pref(3, aff_in("security", "az", "S2"))],
        ),
    )
    result = run(c, p, [], [(PLUGIN, 2)], {PLUGIN: {"hardPodAffinityWeight": 1}})
    scores = {n: e["scores"][PLUGIN] for n, e in result.items()}
    assert scores == {
        "node1": {"raw": 7, "normalized": 100},
        "node2": {"raw": 0, "normalized": 30},
        "node3": {"raw": 4, "normalized": 70},
        "node4": {"raw": -3, "normalized": 0},
    }
    assert {n: e["total"] for n, e in result.items()} == {
        "node1": 200,
        "node2": 60,
        "node3": 140,
        "node4": 0,
    }

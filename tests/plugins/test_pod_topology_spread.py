"""PodTopologySpread: upstream's Filter and Score tables, against the kernels and the reference.

Ported from pkg/scheduler/framework/plugins/podtopologyspread: filtering_test.go
(TestSingleConstraint, TestMultipleConstraints) and scoring_test.go
(TestPodTopologySpreadScore, TestPreScoreSkip, TestPreScoreStateEmptyNodes). Every case
runs twice: on ``Snapshot.explain`` and on ``reference.py``, so a disagreement between the
kernels and upstream's expectations is caught here, and the differential tests can trust
the reference. Upstream's filter tables check status codes only; the reasons are checked
by ``test_filter_reasons``.

The node-inclusion policies (GA) and matchLabelKeys (GA) are always on in v1.36, so the
cases upstream runs with a feature gate off are ported with the gate on (their expected
results do not change) and "matchLabelKeys ignored when feature gate disabled" is left
out. Cases marked *derived* are not in upstream's tables: their expectations are worked
out by hand from upstream's code and noted in a comment.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.plugins import reference
from tests.plugins.harness import (
    HOSTNAME,
    ZONE,
    Obj,
    cluster,
    codes,
    exists,
    explain,
    match_labels,
    node,
    normalized,
    pod,
    required_node_affinity,
    selector,
    spread_constraint,
    statuses,
)

PLUGIN = "PodTopologySpread"
OK, UNSCHED, UNRES = "Success", "Unschedulable", "UnschedulableAndUnresolvable"
FOO, BAR = exists("foo"), exists("bar")
TAINT_UNSCHEDULABLE = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
LIST = {PLUGIN: {"defaultingType": "List"}}
SYSTEM = {PLUGIN: {"defaultingType": "System"}}

Explain = Callable[..., dict[str, Obj]]


@pytest.fixture(params=["kernel", "reference"])
def run(request: pytest.FixtureRequest) -> Explain:
    return explain if request.param == "kernel" else reference.explain


def hard(max_skew: int, key: str, sel: Obj | None, **kw: object) -> Obj:
    return spread_constraint(max_skew, key, "DoNotSchedule", sel, **kw)  # type: ignore[arg-type]


def soft(max_skew: int, key: str, sel: Obj | None, **kw: object) -> Obj:
    return spread_constraint(max_skew, key, "ScheduleAnyway", sel, **kw)  # type: ignore[arg-type]


def zone_nodes(*names_zones: tuple[str, str], key: str = "zone") -> list[Obj]:
    """Nodes labelled ``{key: zone, "node": name}``, as upstream's filter tables."""
    return [node(name, {key: zone, "node": name}) for name, zone in names_zones]


ABXY = [("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")]


def placed(counts: dict[str, int], labels: dict[str, str] | None = None, **kw: object) -> list[Obj]:
    """``counts[node]`` existing pods on each node, named p-<node suffix><i>."""
    labels = {"foo": ""} if labels is None else labels
    return [
        pod(f"p-{n.removeprefix('node-')}{i + 1}", node=n, labels=labels, **kw)  # type: ignore[arg-type]
        for n, k in counts.items()
        for i in range(k)
    ]


def incoming(*constraints: Obj, labels: dict[str, str] | None = None, **kw: object) -> Obj:
    return pod("p", labels={"foo": ""} if labels is None else labels, spread=constraints, **kw)  # type: ignore[arg-type]


# --- Filter -----------------------------------------------------------------------------

FILTER_CASES = [
    # TestSingleConstraint
    pytest.param(
        cluster(zone_nodes(*ABXY)),
        incoming(hard(1, "zone", FOO)),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="no-existing-pods",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY)),
        incoming(hard(1, "zone", BAR)),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="no-existing-pods-incoming-pod-does-not-match-itself",
    ),
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                pod("p-a1", namespace="ns1", node="node-a", labels={"foo": ""}),
                pod("p-b1", namespace="ns2", node="node-a", labels={"foo": ""}),
                *placed({"node-x": 1, "node-y": 1}),
            ],
        ),
        incoming(hard(1, "zone", FOO)),
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
        id="existing-pods-in-a-different-namespace-do-not-count",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-x": 1, "node-y": 1})),
        incoming(hard(1, "zone", None)),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="existing-pods-do-not-match-null-selector",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(hard(1, "zone", FOO)),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="pods-spread-across-zones-as-3/3-all-nodes-fit",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a"}),
                node("node-b", {"zon": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x"}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}),
        ),
        incoming(hard(1, "zone", FOO)),
        {"node-a": OK, "node-b": UNRES, "node-x": UNSCHED, "node-y": UNSCHED},
        id="pods-spread-across-zones-as-1/2-due-to-absence-of-label-zone-on-node-b",
    ),
    pytest.param(
        cluster(zone_nodes(("node-a", "zone1"), ("node-x", "zone2"))),
        incoming(hard(1, "rack", FOO)),
        {"node-a": UNRES, "node-x": UNRES},
        id="pod-cannot-be-scheduled-as-all-nodes-do-not-have-label-rack",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="pods-spread-across-nodes-as-2/1/0/3-only-node-x-fits",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(hard(2, "node", FOO)),
        {"node-a": UNSCHED, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
        id="pods-spread-across-nodes-as-2/1/0/3-maxSkew-2-node-b-and-node-x-fit",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(hard(1, "node", FOO), labels={"bar": ""}),
        {"node-a": UNSCHED, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
        id="pods-spread-across-nodes-as-2/1/0/3-but-pod-does-not-match-itself",
    ),
    pytest.param(
        # Only node-a and node-y count (2/~1~/~0~/3); NodeAffinity is not in the
        # profile, so node-b and node-x still pass this plugin.
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(
            hard(1, "node", FOO),
            affinity=required_node_affinity("node", "In", "node-a", "node-y"),
        ),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
        id="incoming-pod-has-nodeAffinity-pods-spread-as-2/~1~/~0~/3-hence-node-a-fits",
    ),
    pytest.param(
        cluster(
            [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
            [
                pod("p-a", node="node-a", labels={"foo": ""}, deleting=True),
                pod("p-b", node="node-b", labels={"foo": ""}),
            ],
        ),
        incoming(hard(1, "node", FOO)),
        {"node-a": OK, "node-b": UNSCHED},
        id="terminating-pods-should-be-excluded",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-b": 2, "node-y": 1})),
        incoming(hard(1, "zone", FOO), affinity=required_node_affinity("node", "NotIn", "node-b")),
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
        id="incoming-pod-has-nodeAffinity-pods-spread-as-0/~2~/0/1-hence-node-a-fits",
    ),
    pytest.param(
        cluster(
            [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
            placed({"node-a": 2, "node-b": 2, "node-c": 1}),
        ),
        incoming(hard(2, "node", FOO, min_domains=4)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-c": OK},
        id="spread-2/2/1-maxSkew-2-fewer-domains-than-minDomains-third-node-fits",
    ),
    pytest.param(
        cluster(
            [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
            placed({"node-a": 2, "node-b": 2, "node-c": 1}),
        ),
        incoming(hard(2, "node", FOO, min_domains=2)),
        {"node-a": OK, "node-b": OK, "node-c": OK},
        id="spread-2/2/1-maxSkew-2-more-domains-than-minDomains-all-nodes-fit",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 1, "node-b": 1, "node-y": 1})),
        incoming(hard(2, "zone", FOO, min_domains=3)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="zones-2/1-maxSkew-2-fewer-domains-than-minDomains-third-and-fourth-nodes-fit",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 1, "node-b": 1, "node-y": 1})),
        incoming(hard(2, "zone", FOO, min_domains=1)),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="zones-2/1-maxSkew-2-more-domains-than-minDomains-all-nodes-fit",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "node", FOO), node_selector={"foo": ""}),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="NodeAffinityPolicy-honored-with-nodeSelector",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "node", FOO, node_affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="NodeAffinityPolicy-ignored-with-nodeSelector",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "node", FOO), affinity=required_node_affinity("foo", "In", "")),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="NodeAffinityPolicy-honored-with-nodeAffinity",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(
            hard(1, "node", FOO, node_affinity_policy="Ignore"),
            affinity=required_node_affinity("foo", "In", ""),
        ),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="NodeAffinityPolicy-ignored-with-nodeAffinity",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}, taints=[TAINT_UNSCHEDULABLE]),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "node", FOO, node_taints_policy="Honor")),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="NodeTaintsPolicy-honored",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-x", {"node": "node-x", "foo": ""}),
                node("node-y", {"node": "node-y"}, taints=[TAINT_UNSCHEDULABLE]),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="NodeTaintsPolicy-ignored",
    ),
    # TestMultipleConstraints
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 3})),
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="two-constraints-on-zone-and-node-spreads-[3/3,2/1/0/3]",
    ),
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2, "node-b": 1, "node-y": 4})),
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
        id="two-constraints-on-zone-and-node-spreads-[3/4,2/1/0/4]",
    ),
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-y1", node="node-y", labels={"bar": ""}),
            ],
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="constraints-hold-different-labelSelectors-spreads-[1/0,1/0/0/1]",
    ),
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-x1", node="node-x", labels={"bar": ""}),
                pod("p-y1", node="node-y", labels={"bar": ""}),
            ],
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
        id="constraints-hold-different-labelSelectors-spreads-[1/0,0/0/1/1]",
    ),
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-a2", node="node-a", labels={"foo": "", "bar": ""}),
                pod("p-y1", node="node-y", labels={"foo": ""}),
                pod("p-y2", node="node-y", labels={"foo": "", "bar": ""}),
                pod("p-y3", node="node-y", labels={"foo": ""}),
            ],
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-a": UNSCHED, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
        id="constraints-hold-different-labelSelectors-spreads-[2/3,1/0/0/1]",
    ),
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-x1", node="node-x", labels={"bar": ""}),
                pod("p-y1", node="node-y", labels={"bar": ""}),
            ],
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", BAR), labels={"bar": ""}),
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
        id="constraints-hold-different-labelSelectors-but-pod-does-not-match-itself-on-zone",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a"}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2"}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-y3", node="node-y", labels={"foo": ""}),
            ],
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": OK, "node-x": UNRES, "node-y": UNSCHED},
        id="two-constraints-absence-of-label-node-on-node-x-spreads-[1/1,1/0/0/1]",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y"}),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(
            hard(1, "zone", FOO),
            hard(1, "node", FOO, node_affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="two-inclusion-constraints-zone-honor/ignore-node-ignore/ignore",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node("node-y", {"zone": "zone2", "node": "node-y"}, taints=[TAINT_UNSCHEDULABLE]),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "zone", FOO, node_taints_policy="Honor"), hard(1, "node", FOO)),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="two-inclusion-constraints-zone-honor/honor-node-honor/ignore",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node(
                    "node-y",
                    {"zone": "zone2", "node": "node-y", "foo": ""},
                    taints=[TAINT_UNSCHEDULABLE],
                ),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(hard(1, "zone", FOO), hard(1, "node", FOO), node_selector={"foo": ""}),
        {"node-a": UNSCHED, "node-b": OK, "node-x": OK, "node-y": UNSCHED},
        id="two-inclusion-constraints-zone-honor/ignore-node-honor/ignore",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
                node("node-b", {"zone": "zone1", "node": "node-b"}),
                node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
                node(
                    "node-y",
                    {"zone": "zone2", "node": "node-y", "foo": ""},
                    taints=[TAINT_UNSCHEDULABLE],
                ),
            ],
            placed({"node-a": 1, "node-b": 1, "node-y": 1}),
        ),
        incoming(
            hard(1, "zone", FOO, node_taints_policy="Honor"),
            hard(1, "node", FOO, node_affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": UNSCHED},
        id="two-inclusion-constraints-zone-honor/honor-node-ignore/ignore",
    ),
    # Derived: matchLabelKeys ANDs the pod's own value of "app" into the selector, so only
    # app=a pods count (zone1: 2, zone2: 0) and zone1 is rejected; the app=b pods in
    # zone2 would make zone2 the fuller zone without it.
    pytest.param(
        cluster(
            zone_nodes(*ABXY),
            [
                *placed({"node-a": 2}, labels={"foo": "", "app": "a"}),
                *placed({"node-x": 3}, labels={"foo": "", "app": "b"}),
            ],
        ),
        incoming(hard(1, "zone", FOO, match_label_keys=["app"]), labels={"foo": "", "app": "a"}),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="derived-matchLabelKeys-narrow-the-selector-to-the-pods-own-value",
    ),
    # Derived: a matchLabelKeys key the pod does not carry leaves the selector as is.
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 2})),
        incoming(hard(1, "zone", FOO, match_label_keys=["app"])),
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
        id="derived-matchLabelKeys-key-missing-on-the-pod-is-ignored",
    ),
    # Derived: an empty (not null) labelSelector matches every pod, but
    # countPodsMatchSelector counts nothing for an empty selector, so the domains all
    # read 0 and the pod (which matches itself) passes everywhere.
    pytest.param(
        cluster(zone_nodes(*ABXY), placed({"node-a": 3})),
        incoming(hard(1, "zone", {})),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="derived-empty-labelSelector-counts-no-pods",
    ),
]

DEFAULT_HARD = {
    PLUGIN: {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
}


@pytest.mark.parametrize(("c", "p", "want"), FILTER_CASES)
def test_filter(run: Explain, c: Obj, p: Obj, want: dict[str, str]) -> None:
    assert codes(run(c, p, [PLUGIN], [], LIST)) == want


def test_filter_list_default_constraint(run: Explain) -> None:
    # Derived: a DoNotSchedule constraint from the List defaults applies to a pod without
    # constraints of its own, with the selector of its owning workload; a pod that belongs
    # to no workload gets no default constraints.
    c = cluster(zone_nodes(*ABXY), placed({"node-a": 1}))
    owned = pod("p", labels={"foo": ""}, default_spread_selector=match_labels({"foo": ""}))
    assert codes(run(c, owned, [PLUGIN], [], DEFAULT_HARD)) == {
        "node-a": UNSCHED,
        "node-b": UNSCHED,
        "node-x": OK,
        "node-y": OK,
    }
    orphan = pod("p", labels={"foo": ""})
    assert set(codes(run(c, orphan, [PLUGIN], [], DEFAULT_HARD)).values()) == {OK}


def test_filter_reasons(run: Explain) -> None:
    c = cluster(
        [
            node("node-a", {"zone": "zone1"}),
            node("node-b", {"zone": "zone2"}),
            node("node-c", {"rack": "r1"}),
        ],
        placed({"node-a": 2}),
    )
    got = statuses(run(c, incoming(hard(1, "zone", FOO)), [PLUGIN], [], LIST))
    assert got == {
        "node-a": (UNSCHED, "node(s) didn't match pod topology spread constraints"),
        "node-b": None,
        "node-c": (
            UNRES,
            "node(s) didn't match pod topology spread constraints (missing required label)",
        ),
    }
    entry = run(c, incoming(hard(1, "zone", FOO)), [PLUGIN], [], LIST)["node-a"]
    assert entry["status"]["plugin"] == PLUGIN
    assert entry["scores"] == {}
    assert entry["total"] == 0


# --- Score ------------------------------------------------------------------------------


def host_nodes(*names: str, extra: dict[str, dict[str, str]] | None = None) -> list[Obj]:
    extra = extra or {}
    return [node(n, {HOSTNAME: n, **extra.get(n, {})}) for n in names]


def failed(*names: str, labels: dict[str, dict[str, str]] | None = None) -> list[Obj]:
    """Upstream's failedNodes: in the snapshot, rejected by another filter (here:
    cordoned, with NodeUnschedulable in the profile)."""
    labels = labels or {}
    return [node(n, labels.get(n, {HOSTNAME: n}), unschedulable=True) for n in names]


ABCD = ("node-a", "node-b", "node-c", "node-d")
ZONED = {"node-a": {"zone": "zone1"}, "node-b": {"zone": "zone1"}}
ZONED |= {"node-x": {"zone": "zone2"}, "node-y": {"zone": "zone2"}}

SCORE_CASES = [
    pytest.param(
        cluster(host_nodes("node-a", "node-b")),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 100, "node-b": 100},
        id="one-constraint-on-node-no-existing-pods",
    ),
    pytest.param(
        cluster([*host_nodes("node-a"), *failed("node-b")], placed({"node-a": 2, "node-b": 1})),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 100},
        id="one-constraint-on-node-only-one-node-is-candidate",
    ),
    pytest.param(
        cluster(host_nodes("node-a", "node-b"), placed({"node-a": 1, "node-b": 1})),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 100, "node-b": 100},
        id="one-constraint-on-node-all-nodes-have-the-same-number-of-matching-pods",
    ),
    pytest.param(
        cluster(host_nodes(*ABCD), placed({"node-a": 2, "node-b": 1, "node-d": 3})),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="one-constraint-on-node-all-4-nodes-are-candidates",
    ),
    pytest.param(
        cluster(host_nodes(*ABCD), placed({"node-a": 2, "node-b": 1, "node-d": 3})),
        incoming(soft(1, HOSTNAME, None)),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="one-constraint-on-node-null-selector",
    ),
    pytest.param(
        cluster(host_nodes(*ABCD), placed({"node-a": 2, "node-b": 1, "node-d": 3})),
        incoming(soft(2, HOSTNAME, FOO)),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        id="one-constraint-on-node-all-4-nodes-are-candidates-maxSkew-2",
    ),
    pytest.param(
        cluster(host_nodes(*ABCD), placed({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1})),
        incoming(soft(3, HOSTNAME, FOO)),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="one-constraint-on-node-all-4-nodes-are-candidates-maxSkew-3",
    ),
    pytest.param(
        cluster(host_nodes(*ABCD), placed({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1})),
        pod("p", labels={"foo": ""}, default_spread_selector=match_labels({"foo": ""})),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="system-defaulting-nodes-without-zone-pods-match-service",
    ),
    pytest.param(
        cluster(
            [*host_nodes("node-a", "node-b", "node-x"), *failed("node-y")],
            placed({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 33, "node-b": 83, "node-x": 100},
        id="one-constraint-on-node-3-out-of-4-nodes-are-candidates",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {HOSTNAME: "node-a"}),
                node("node-b", {"n": "node-b"}),
                node("node-x", {HOSTNAME: "node-x"}),
                *failed("node-y"),
            ],
            placed({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 16, "node-b": 0, "node-x": 100},
        id="one-constraint-on-node-3-out-of-4-candidates-one-node-lacks-the-topology-key",
    ),
    pytest.param(
        cluster(
            [
                *host_nodes("node-a", "node-b", "node-x", extra=ZONED),
                *failed("node-y", labels={"node-y": {"zone": "zone2", HOSTNAME: "node-y"}}),
            ],
            placed({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ),
        incoming(soft(1, "zone", FOO)),
        {"node-a": 75, "node-b": 75, "node-x": 100},
        id="one-constraint-on-zone-3-out-of-4-nodes-are-candidates",
    ),
    pytest.param(
        cluster(
            [
                *host_nodes("node-a", "node-x", extra=ZONED),
                *failed(
                    "node-b",
                    "node-y",
                    labels={
                        "node-b": {"zone": "zone1", HOSTNAME: "node-b"},
                        "node-y": {"zone": "zone2", HOSTNAME: "node-y"},
                    },
                ),
            ],
            placed({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}),
        ),
        incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, FOO)),
        {"node-a": 100, "node-x": 63},
        id="two-constraints-on-zone-and-node-2-out-of-4-nodes-are-candidates",
    ),
    pytest.param(
        cluster(
            host_nodes("node-a", "node-b", "node-x", "node-y", extra=ZONED),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}),
                pod("p-y1", node="node-y", labels={"foo": ""}),
                pod("p-y2", node="node-y", labels={"bar": ""}),
            ],
        ),
        incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
        id="two-constraints-on-zone-and-node-with-different-labelSelectors",
    ),
    pytest.param(
        cluster(
            host_nodes("node-a", "node-b", "node-x", "node-y", extra=ZONED),
            [
                pod("p-b1", node="node-b", labels={"bar": ""}),
                pod("p-x1", node="node-x", labels={"foo": ""}),
                pod("p-y1", node="node-y", labels={"foo": "", "bar": ""}),
            ],
        ),
        incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
        id="two-constraints-different-labelSelectors-some-nodes-have-0-pods",
    ),
    pytest.param(
        cluster(
            [
                *host_nodes("node-a", "node-b", "node-x", extra=ZONED),
                *failed("node-y", labels={"node-y": {"zone": "zone2", HOSTNAME: "node-y"}}),
            ],
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}),
                pod("p-y1", node="node-y", labels={"foo": ""}),
                pod("p-y2", node="node-y", labels={"bar": ""}),
            ],
        ),
        incoming(soft(1, "zone", FOO), soft(1, HOSTNAME, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 50, "node-b": 25, "node-x": 100},
        id="two-constraints-different-labelSelectors-3-out-of-4-nodes-are-candidates",
    ),
    pytest.param(
        cluster(
            host_nodes("node-a", "node-b"),
            [
                pod("p-a1", namespace="ns1", node="node-a", labels={"foo": ""}),
                pod("p-a2", node="node-a", labels={"foo": ""}),
                *placed({"node-b": 2}),
            ],
        ),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 100, "node-b": 33},
        id="existing-pods-in-a-different-namespace-do-not-count",
    ),
    pytest.param(
        cluster(
            host_nodes("node-a", "node-b"),
            [
                pod("p-a", node="node-a", labels={"foo": ""}, deleting=True),
                pod("p-b", node="node-b", labels={"foo": ""}),
            ],
        ),
        incoming(soft(1, HOSTNAME, FOO)),
        {"node-a": 100, "node-b": 0},
        id="terminating-pods-should-be-excluded",
    ),
    pytest.param(
        cluster(
            [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
            placed({"node-a": 2, "node-b": 2, "node-c": 1}),
        ),
        incoming(soft(2, "node", FOO, min_domains=10)),
        {"node-a": 75, "node-b": 75, "node-c": 100},
        id="minDomains-has-no-effect-when-ScheduleAnyway",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(soft(1, "node", FOO), node_selector={"foo": ""}),
        {"node-a": 0, "node-b": 33, "node-c": 100},
        id="NodeAffinityPolicy-honored-with-nodeSelector",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(soft(1, "node", FOO, node_affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-a": 66, "node-b": 100, "node-c": 100},
        id="NodeAffinityPolicy-ignored-with-nodeSelector",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(soft(1, "node", FOO), affinity=required_node_affinity("foo", "In", "")),
        {"node-a": 0, "node-b": 33, "node-c": 100},
        id="NodeAffinityPolicy-honored-with-nodeAffinity",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a", "foo": ""}),
                node("node-b", {"node": "node-b", "foo": ""}),
                node("node-c", {"node": "node-c"}),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(
            soft(1, "node", FOO, node_affinity_policy="Ignore"),
            affinity=required_node_affinity("foo", "In", ""),
        ),
        {"node-a": 66, "node-b": 100, "node-c": 100},
        id="NodeAffinityPolicy-ignored-with-nodeAffinity",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a"}),
                node("node-b", {"node": "node-b"}),
                node("node-c", {"node": "node-c"}, taints=[TAINT_UNSCHEDULABLE]),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(soft(1, "node", FOO, node_taints_policy="Honor")),
        {"node-a": 0, "node-b": 33, "node-c": 100},
        id="NodeTaintsPolicy-honored",
    ),
    pytest.param(
        cluster(
            [
                node("node-a", {"node": "node-a"}),
                node("node-b", {"node": "node-b"}),
                node("node-c", {"node": "node-c"}, taints=[TAINT_UNSCHEDULABLE]),
            ],
            placed({"node-a": 2, "node-b": 1, "node-c": 1}),
        ),
        incoming(soft(1, "node", FOO)),
        {"node-a": 66, "node-b": 100, "node-c": 100},
        id="NodeTaintsPolicy-ignored",
    ),
    pytest.param(
        cluster(
            host_nodes(
                *ABCD, extra={**ZONED, "node-c": {"zone": "zone2"}, "node-d": {"zone": "zone2"}}
            ),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-b1", node="node-b", labels={"foo": "", "bar": ""}),
                pod("p-y1", node="node-c", labels={"foo": ""}),
                pod("p-y2", node="node-c", labels={"bar": ""}),
            ],
        ),
        incoming(
            soft(1, "zone", selector(), match_label_keys=["foo"]),
            soft(1, HOSTNAME, selector(), match_label_keys=["bar"]),
            labels={"foo": "", "bar": ""},
        ),
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        id="matchLabelKeys-ANDed-with-an-empty-LabelSelector",
    ),
    pytest.param(
        cluster(
            host_nodes(
                *ABCD, extra={**ZONED, "node-c": {"zone": "zone2"}, "node-d": {"zone": "zone2"}}
            ),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}),
                pod("p-b1", node="node-b", labels={"foo": "", "bar": "", "baz": ""}),
                pod("p-c1", node="node-c", labels={"foo": ""}),
                pod("p-c2", node="node-c", labels={"bar": ""}),
                pod("p-d3", node="node-c", labels={"bar": "", "baz": ""}),
            ],
        ),
        incoming(
            soft(1, "zone", FOO),
            soft(1, HOSTNAME, BAR, match_label_keys=["baz"]),
            labels={"foo": "", "bar": "", "baz": ""},
        ),
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        id="matchLabelKeys-ANDed-with-a-non-empty-LabelSelector",
    ),
    # Derived from TestPreScoreStateEmptyNodes "system default constraints and a
    # replicaset": nodes without a zone are not ignored under the system defaults; they
    # form a zone "" that counts towards the zone weight (log(2+2), not log(1+2)) but
    # they skip the zone term of their own score. Raw: a 12, b 14, c 6, d 2.
    pytest.param(
        cluster(
            [
                node("node-a", {HOSTNAME: "node-a", ZONE: "mars"}),
                node("node-b", {HOSTNAME: "node-b", ZONE: "mars"}),
                node("node-c", {HOSTNAME: "node-c"}),
                node("node-d", {HOSTNAME: "node-d"}),
            ],
            placed({"node-a": 1, "node-b": 2, "node-c": 2}),
        ),
        pod("p", labels={"foo": "tar"}, default_spread_selector=FOO),
        {"node-a": 28, "node-b": 14, "node-c": 71, "node-d": 100},
        id="derived-system-defaults-nodes-without-zone-form-their-own-zone",
    ),
]


@pytest.mark.parametrize(("c", "p", "want"), SCORE_CASES)
def test_score(run: Explain, c: Obj, p: Obj, want: dict[str, int]) -> None:
    result = run(c, p, ["NodeUnschedulable", PLUGIN], [(PLUGIN, 1)], SYSTEM)
    assert normalized(result, PLUGIN) == want


@pytest.mark.parametrize(
    ("c", "p", "args"),
    [
        pytest.param(
            cluster(host_nodes("node-a", "node-b")),
            pod("p"),
            LIST,
            id="the-pod-has-no-soft-constraints",
        ),
        pytest.param(
            cluster([node("node-a", {"planet": "mars"})]),
            pod("p", labels={"foo": "bar", "baz": "sup"}),
            {
                PLUGIN: {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": 2,
                            "topologyKey": "planet",
                            "whenUnsatisfiable": "ScheduleAnyway",
                        }
                    ],
                }
            },
            id="default-constraints-and-a-replicaset-that-does-not-match",
        ),
        pytest.param(
            cluster(host_nodes("node-a", "node-b"), placed({"node-a": 3})),
            pod("p", labels={"foo": ""}, spread=[hard(1, HOSTNAME, FOO)]),
            SYSTEM,
            id="derived-only-hard-constraints-no-defaults-for-scoring",
        ),
    ],
)
def test_prescore_skip_scores_zero(run: Explain, c: Obj, p: Obj, args: dict[str, Obj]) -> None:
    result = run(c, p, [], [(PLUGIN, 2)], args)
    for entry in result.values():
        assert entry["scores"][PLUGIN] == {"raw": 0, "normalized": 0}
        assert entry["total"] == 0


def test_raw_scores_and_weighted_total(run: Explain) -> None:
    # 2/1/0/3 on hostname, maxSkew 1, weight log(4+2): raw = round(count * 1.79).
    c = cluster(host_nodes(*ABCD), placed({"node-a": 2, "node-b": 1, "node-d": 3}))
    result = run(c, incoming(soft(1, HOSTNAME, FOO)), [], [(PLUGIN, 2)], SYSTEM)
    assert {n: e["scores"][PLUGIN]["raw"] for n, e in result.items()} == {
        "node-a": 4,
        "node-b": 2,
        "node-c": 0,
        "node-d": 5,
    }
    assert {n: e["total"] for n, e in result.items()} == {
        "node-a": 40,
        "node-b": 120,
        "node-c": 200,
        "node-d": 0,
    }

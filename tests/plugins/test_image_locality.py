"""ImageLocality: upstream's Score table.

Ported from pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go
(TestImageLocalityPriority, TestNormalizedImageName).

Each container image (init containers included) already on the node adds its size scaled
by its spread, the fraction of *all* nodes in the snapshot that list that image name
(float product truncated to an integer). The sum is clamped to [23MB, 1000MB x number of
containers] and mapped to 0-100 with integer division. A pod image without a tag gets
":latest" before the lookup; node image names are used as listed. There is no
NormalizeScore: the normalized score is the raw one. Image volumes
(``spec.volumes[].image``) count like containers' images but not in the threshold.

The size of an image name is the cluster-wide one of upstream's cache (its image-state
summary): the size reported by the first node that listed the name, kept while any node
lists it, whatever the other nodes report.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ksched._core import Profile
from tests.plugins.harness import (
    Obj,
    cluster,
    compile_pod,
    container,
    explain,
    node,
    normalized,
    pod,
    raw,
    snapshot,
)

PLUGIN = "ImageLocality"
MB = 1024 * 1024

Images = list[tuple[list[str], int]]

NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []


def image_pod(*images: str, init: Sequence[str] = (), volumes: Sequence[str] = ()) -> Obj:
    p = pod(
        "p",
        containers=[container(image=img, name=f"c{i}") for i, img in enumerate(images)],
        init_containers=[container(image=img, name=f"i{i}") for i, img in enumerate(init)],
    )
    if volumes:
        p["spec"]["volumes"] = [
            {"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)
        ]
    return p


def locality_scores(
    nodes: Sequence[tuple[str, Images]],
    incoming: Obj,
    *,
    filters: Sequence[str] = (),
    unschedulable: Sequence[str] = (),
) -> dict[str, int]:
    """The plugin's scores on the feasible nodes; checks normalized equals raw."""
    c = cluster([node(n, images=imgs, unschedulable=n in unschedulable) for n, imgs in nodes])
    result = explain(c, incoming, list(filters), [(PLUGIN, 1)])
    got = normalized(result, PLUGIN)
    assert raw(result, PLUGIN) == got
    return got


@pytest.mark.parametrize(
    ("incoming", "nodes", "want"),
    [
        # node1: gcr.io/40 on 1 of 2 nodes: 20MB < 23MB -> 0.
        # node2: gcr.io/250: 100 * (125MB - 23MB) / (2000MB - 23MB) = 5.
        pytest.param(
            image_pod("gcr.io/40", "gcr.io/250"),
            [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
            {"node1": 0, "node2": 5},
            id="two-images-spread-on-two-nodes-prefer-larger",
        ),
        # node1: 100 * ((40MB + 300MB) / 2 - 23MB) / (2000MB - 23MB) = 7.
        pytest.param(
            image_pod("gcr.io/40", "gcr.io/300"),
            [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
            {"node1": 7, "node2": 0},
            id="two-images-on-one-node-prefer-it",
        ),
        # node1: 4000MB / 2 >= 2 x 1000MB: the maximum.
        pytest.param(
            image_pod("gcr.io/10", "gcr.io/4000"),
            [("node1", NODE_4000_30), ("node2", NODE_250_10)],
            {"node1": 100, "node2": 0},
            id="exceed-limit-use-limit",
        ),
        # node1: 100 * (4000MB / 3 - 23MB) / (2000MB - 23MB) = 66.
        pytest.param(
            image_pod("gcr.io/10", "gcr.io/4000"),
            [("node1", NODE_4000_30), ("node2", NODE_250_10), ("node3", NO_IMAGES)],
            {"node1": 66, "node2": 0, "node3": 0},
            id="exceed-limit-with-a-node-without-images",
        ),
        # node1: 100 * (600MB x 2/3 + 900MB x 2/3 - 23MB) / (3000MB - 23MB) = 32.
        # node2: 100 * (300MB / 3 + 600MB x 2/3 + 900MB x 2/3 - 23MB) / (3000MB - 23MB) = 36.
        pytest.param(
            image_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
            [("node1", NODE_600_40_900), ("node2", NODE_300_600_900), ("node3", NO_IMAGES)],
            {"node1": 32, "node2": 36, "node3": 0},
            id="multiple-large-images-node2-preferred",
        ),
        # node1: 100 * (30MB + 40MB / 2 - 23MB) / (2000MB - 23MB) = 1.
        pytest.param(
            image_pod("gcr.io/30", "gcr.io/40"),
            [("node1", NODE_20_30_40), ("node2", NODE_4000_30)],
            {"node1": 1, "node2": 0},
            id="multiple-small-images",
        ),
        # Image volumes count, but not as containers:
        # node1: 100 * (300MB / 2 - 23MB) / (1000MB - 23MB) = 12.
        pytest.param(
            image_pod("gcr.io/30", volumes=["gcr.io/300"]),
            [("node1", NODE_300_600_900), ("node2", NODE_4000_30)],
            {"node1": 12, "node2": 0},
            id="pod-with-ImageVolume",
        ),
        # Init containers count: node1: 100 * (300MB / 2 - 23MB) / (2000MB - 23MB) = 6.
        pytest.param(
            image_pod("gcr.io/30", init=["gcr.io/300"]),
            [("node1", NODE_40_300_2000), ("node2", NODE_20_30_40)],
            {"node1": 6, "node2": 0},
            id="init-containers-included",
        ),
    ],
)
def test_image_locality_priority(
    incoming: Obj, nodes: list[tuple[str, Images]], want: dict[str, int]
) -> None:
    assert locality_scores(nodes, incoming) == want


DIGEST = "sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2"


@pytest.mark.parametrize(
    ("pod_image", "node_name", "want"),
    [
        pytest.param("root", "root:latest", 100, id="add-latest-1"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", 100, id="add-latest-2"),
        pytest.param("root:tag", "root:tag", 100, id="keep-tag"),
        pytest.param(f"root@{DIGEST}", f"root@{DIGEST}", 100, id="keep-digest"),
        # Derived: node image names are not normalized, so an untagged node name never
        # matches (the pod's name became "root:latest").
        pytest.param("root", "root", 0, id="untagged-node-name-does-not-match"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root", 0, id="registry-port-is-not-a-tag"),
    ],
)
def test_normalized_image_name(pod_image: str, node_name: str, want: int) -> None:
    nodes = [("n", [([node_name], 2000 * MB)])]
    assert locality_scores(nodes, image_pod(pod_image)) == {"n": want}


def test_spread_counts_every_node_in_the_snapshot() -> None:
    """totalNumNodes and the image's node count cover all nodes, filtered or not: the
    image is on node1 and on unschedulable node2, so its spread is 2/3 and node1 scores
    100 * (500MB x 2/3 - 23MB) / (1000MB - 23MB) = 31."""
    nodes = [("node1", [(["x:1"], 500 * MB)]), ("node2", [(["x:1"], 500 * MB)]), ("node3", [])]
    got = locality_scores(
        nodes, image_pod("x:1"), filters=["NodeUnschedulable"], unschedulable=["node2"]
    )
    assert got == {"node1": 31, "node3": 0}


def test_spread_is_per_image_name() -> None:
    """An image's spread counts the nodes listing that *name*: node2 lists the image only
    as "a:1", so "b:1" is on 1 of 2 nodes (250MB: 23) while "a:1" is on both (500MB: 48)."""
    nodes = [("node1", [(["a:1", "b:1"], 500 * MB)]), ("node2", [(["a:1"], 500 * MB)])]
    assert locality_scores(nodes, image_pod("b:1")) == {"node1": 23, "node2": 0}
    assert locality_scores(nodes, image_pod("a:1")) == {"node1": 48, "node2": 48}


def test_same_image_in_two_containers_counts_twice() -> None:
    """100 * (2 x 600MB - 23MB) / (2 x 1000MB - 23MB) = 59."""
    nodes = [("n", [(["app:1"], 600 * MB)])]
    assert locality_scores(nodes, image_pod("app:1", "app:1")) == {"n": 59}


def test_one_size_per_image_name_the_first_nodes() -> None:
    """node1 lists app:1 at 900MB first, node2 at 100MB: both score with 900MB
    (100 * (900MB - 23MB) / (1000MB - 23MB) = 89), not node2 with its own 100MB (7)."""
    nodes = [("node1", [(["app:1"], 900 * MB)]), ("node2", [(["app:1"], 100 * MB)])]
    assert locality_scores(nodes, image_pod("app:1")) == {"node1": 89, "node2": 89}
    # Listed in the other order, the first node's 100MB is everyone's.
    assert locality_scores(list(reversed(nodes)), image_pod("app:1")) == {
        "node2": 7,
        "node1": 7,
    }


def test_the_size_outlives_the_node_that_reported_it() -> None:
    """The name keeps its first size while any node lists it; once no node does, the
    next node to list it sets it again (upstream add/removeNodeImageStates)."""
    c = cluster(
        [
            node("node1", images=[(["app:1"], 900 * MB)]),
            node("node2", images=[(["app:1"], 100 * MB)]),
            node("node3"),
        ]
    )
    snap = snapshot(c)
    profile = Profile([], [(PLUGIN, 1)])
    incoming = compile_pod(image_pod("app:1"))

    def scores() -> dict[str, int]:
        rows = snap.explain(incoming, profile)
        return {r["node"]: r["scores"][PLUGIN]["raw"] for r in rows}

    # 900MB on 2 of 3 nodes: 100 * (600MB - 23MB) / 977MB = 59.
    assert scores() == {"node1": 59, "node2": 59, "node3": 0}
    snap.remove_node("node1")
    # Still 900MB, now on 1 of 2 nodes: 100 * (450MB - 23MB) / 977MB = 43.
    assert scores() == {"node2": 43, "node3": 0}
    # node2 updated to list 300MB: it was the last holder, so the name starts anew.
    snap.upsert_node("node2", {"cpu": 1000}, {}, [], False, [(["app:1"], 300 * MB)])
    assert scores() == {"node2": 12, "node3": 0}

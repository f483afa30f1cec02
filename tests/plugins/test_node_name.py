"""NodeName: upstream's Filter table.

Ported from pkg/scheduler/framework/plugins/nodename/node_name_test.go (TestNodeName): a
pod that names a node in spec.nodeName fits only that node.
"""

from __future__ import annotations

import pytest

from tests.plugins.harness import cluster, explain, node, pod, statuses

PLUGIN = "NodeName"
MISMATCH = ("UnschedulableAndUnresolvable", "node(s) didn't match the requested node name")


@pytest.mark.parametrize(
    ("node_name", "want"),
    [
        pytest.param(None, None, id="no-host-specified"),
        pytest.param("foo", None, id="host-matches"),
        pytest.param("bar", MISMATCH, id="host-does-not-match"),
    ],
)
def test_filter(node_name: str | None, want: object) -> None:
    got = explain(cluster([node("foo")]), pod("p", node_name=node_name), [PLUGIN])
    assert statuses(got) == {"foo": want}


def test_only_the_named_node_fits() -> None:
    c = cluster([node("a"), node("b"), node("c")])
    got = explain(c, pod("p", node_name="b"), [PLUGIN])
    assert statuses(got) == {"a": MISMATCH, "b": None, "c": MISMATCH}
    assert got["a"]["status"]["plugin"] == PLUGIN

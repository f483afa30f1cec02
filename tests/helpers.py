"""Shared helpers: API objects shaped like the API server's, parsed the scheduler's way."""

from __future__ import annotations

from typing import Any

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.sim.workloads import make_node, make_pod


def parsed_pod(name: str, *, uid: str | None = None, **kwargs: Any) -> Pod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = uid or f"uid-{name}"
    obj["metadata"]["resourceVersion"] = "1"
    return Pod.from_dict(obj)


def parsed_node(name: str, **kwargs: Any) -> Node:
    return Node.from_dict(make_node(name, **kwargs))

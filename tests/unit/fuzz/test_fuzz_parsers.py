"""Property-based fuzzing of every parser that reads user or API-server input.

Each property starts from a valid, feature-rich seed (a pod with affinity, spreading,
tolerations, ports, init containers and overhead; a node with taints and images; a
configuration with profiles, plugin args and extenders), applies a few random
mutations (a subtree replaced by any JSON value — huge and negative integers, floats,
odd text, deep lists — a key deleted, or an unknown key added) and feeds the result
through the parser and what consumes its output:

* quantities: ``parse_quantity`` on any text or JSON value;
* pods: ``Pod.from_dict``, then ``compile_pod`` (the Rust ``CompiledPod``), then one
  scheduling attempt on a small snapshot (bound pods through the cache's fallback);
* nodes: ``Node.from_dict``, then ``Cache.upsert_node``, then an attempt;
* configurations: ``load_config_bytes`` of the mutated document as YAML and as JSON,
  of byte-level mutations of a valid file, then ``build_profiles``.

The only exceptions allowed are the project's own: :class:`QuantityError`,
:class:`InvalidObjectError`, :class:`ConfigError`, :class:`ProfileError`. Anything else
(``TypeError``, ``OverflowError``, ``RecursionError``, a plain ``ValueError`` from the
Rust core...) fails the property with the input hypothesis shrank it to.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.errors import InvalidObjectError, QuantityError
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.api.quantity import parse_quantity
from ksched.backend.cache import Cache
from ksched.backend.compile import compile_pod
from ksched.config import ConfigError, load_config_bytes
from ksched.profiles import ProfileError, build_profiles
from ksched.sim.workloads import make_node

Obj = dict[str, Any]

FUZZ = settings(
    max_examples=int(os.environ.get("KSCHED_FUZZ_EXAMPLES", "1000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---- values -----------------------------------------------------------------------

_INTS = st.one_of(
    st.integers(-(2**31), 2**31),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30]),
)
_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "1",
            "-1",
            "1e400",
            "9223372036854775807",
            "9223372036854775808Ki",
            "0.000000001m",
            "1.5Gi",
            "NaN",
            "Exists",
            "In",
            "Gt",
            "NoSchedule",
            "DoNotSchedule",
            "\ud800",
            "a/b",
            "kubernetes.io/hostname",
        ]
    ),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (dict keys and list indexes), the root included."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def mutated(draw: st.DrawFn, seed: Obj, max_mutations: int = 3) -> Any:
    """``seed`` with 1..max_mutations random edits (replace, delete, add a key)."""
    doc: Any = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        value = draw(JSON_VALUES)
        if not path:
            if action == "replace":
                doc = value
            continue
        parent = _parent(doc, path)
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(_TEXT)] = value
        else:
            parent[path[-1]] = value
    return doc


# ---- seeds ------------------------------------------------------------------------

_SELECTOR = {
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
}
POD_SEED: Obj = {
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "uid": "uid-1",
        "resourceVersion": "7",
        "labels": {"app": "web", "tier": "a"},
        "creationTimestamp": "2024-01-01T00:00:00Z",
    },
    "spec": {
        "schedulerName": "default-scheduler",
        "priority": 10,
        "nodeSelector": {"disk": "ssd"},
        "overhead": {"cpu": "10m"},
        "initContainers": [
            {
                "name": "init",
                "image": "busybox",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "50m", "memory": "10Mi"}},
                "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}],
            }
        ],
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.25",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "x.io/gpu": "1"}},
                "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": "0.0.0.0"}],
            }
        ],
        "tolerations": [
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "cores", "operator": "Gt", "values": ["2"]}
                            ],
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "NotIn",
                                    "values": ["bad"],
                                }
                            ],
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                    }
                ],
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "podAffinityTerm": {"topologyKey": "zone", "labelSelector": _SELECTOR},
                    }
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": _SELECTOR,
                        "namespaceSelector": {},
                        "matchLabelKeys": ["tier"],
                    }
                ]
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": _SELECTOR,
                "minDomains": 2,
                "nodeAffinityPolicy": "Honor",
                "nodeTaintsPolicy": "Ignore",
            }
        ],
        "schedulingGates": [{"name": "gate"}],
    },
    "status": {"phase": "Pending", "nominatedNodeName": "n1"},
}

NODE_SEED: Obj = {
    "metadata": {
        "name": "n1",
        "uid": "node-uid",
        "resourceVersion": "3",
        "labels": {"zone": "z1", "cores": "4", "disk": "ssd"},
    },
    "spec": {
        "unschedulable": False,
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", "x.io/gpu": "2"},
        "images": [{"names": ["nginx:1.25", "nginx"], "sizeBytes": 142_000_000}],
    },
}

CONFIG_SEED: Obj = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "parallelism": 8,
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 10,
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceNamespace": "kube-system",
        "resourceName": "ksched",
    },
    "clientConnection": {"qps": 50, "burst": 100, "contentType": "application/json"},
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "score": {
                    "enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                    "disabled": [{"name": "ImageLocality"}],
                }
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "RequestedToCapacityRatio",
                            "resources": [{"name": "cpu", "weight": 1}],
                            "requestedToCapacityRatio": {
                                "shape": [
                                    {"utilization": 0, "score": 0},
                                    {"utilization": 100, "score": 10},
                                ]
                            },
                        }
                    },
                },
                {
                    "name": "PodTopologySpread",
                    "args": {
                        "defaultingType": "List",
                        "defaultConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "ScheduleAnyway",
                            }
                        ],
                    },
                },
                {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 20}},
            ],
        },
        {"schedulerName": "batch", "percentageOfNodesToScore": 10},
    ],
    "extenders": [
        {
            "urlPrefix": "http://127.0.0.1:1/",
            "filterVerb": "filter",
            "weight": 1,
            "managedResources": [{"name": "x.io/gpu", "ignoredByScheduler": True}],
        }
    ],
}

# ---- helpers ----------------------------------------------------------------------

_PROFILE = build_profiles(
    load_config_bytes(
        b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
)["default-scheduler"]


def _cache() -> Cache:
    cache = Cache(seed=1)
    cache.upsert_node(Node.from_dict(NODE_SEED))
    cache.upsert_node(Node.from_dict(make_node("n2", labels={"zone": "z2"})))
    return cache


def _plain_pod() -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "plain", "namespace": "default", "uid": "plain"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
        }
    )


# ---- properties -------------------------------------------------------------------


@FUZZ
@given(st.one_of(_TEXT, JSON_VALUES))
def test_quantity_parser_raises_only_quantity_error(value: Any) -> None:
    with contextlib.suppress(QuantityError):
        parse_quantity(value)


@FUZZ
@given(mutated(POD_SEED))
def test_pod_parser_and_compile_raise_only_invalid_object_error(obj: Any) -> None:
    try:
        pod = Pod.from_dict(obj)
    except InvalidObjectError:
        return
    cache = _cache()
    try:
        compiled = compile_pod(pod)
    except InvalidObjectError:
        return
    cache.snapshot.schedule(compiled, _PROFILE.kernels, True)


@FUZZ
@given(mutated(POD_SEED))
def test_bound_pod_is_accounted_whatever_its_terms(obj: Any) -> None:
    if isinstance(obj, dict) and isinstance(obj.get("spec"), dict):
        obj["spec"]["nodeName"] = "n1"
    try:
        pod = Pod.from_dict(obj)
    except InvalidObjectError:
        return
    cache = _cache()
    cache.add_pod(pod)  # falls back to the accounting-only form, never raises
    assert cache.has_pod(pod.uid)
    cache.snapshot.schedule(compile_pod(_plain_pod()), _PROFILE.kernels, True)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(("metadata", "name"), id="name"),
        pytest.param(("metadata", "labels", "app"), id="label-value"),
    ],
)
def test_bound_pod_with_a_lone_surrogate_is_accounted(where: tuple[str, ...]) -> None:
    """Found by the fuzz test above: a string the core cannot encode (a lone surrogate,
    which ``json.loads`` or Python code can produce) made even the accounting-only form
    fail, so the cache raised instead of counting the bound pod on its node."""
    obj = copy.deepcopy(POD_SEED)
    obj["spec"]["nodeName"] = "n1"
    target = obj
    for key in where[:-1]:
        target = target.setdefault(key, {})
    target[where[-1]] = "\ud800"
    pod = Pod.from_dict(obj)
    cache = _cache()
    cache.add_pod(pod)
    assert cache.has_pod(pod.uid)
    result = cache.snapshot.schedule(compile_pod(_plain_pod()), _PROFILE.kernels, True)
    assert result is not None


@FUZZ
@given(mutated(NODE_SEED))
def test_node_parser_and_snapshot_raise_only_invalid_object_error(obj: Any) -> None:
    try:
        node = Node.from_dict(obj)
    except InvalidObjectError:
        return
    cache = _cache()
    try:
        cache.upsert_node(node)
    except InvalidObjectError:
        return
    cache.snapshot.schedule(compile_pod(Pod.from_dict(POD_SEED)), _PROFILE.kernels, True)


def _load(data: bytes) -> None:
    try:
        cfg = load_config_bytes(data, "fuzz.yaml")
    except ConfigError:
        return
    with contextlib.suppress(ProfileError):
        build_profiles(cfg)


@FUZZ
@given(mutated(CONFIG_SEED, max_mutations=4))
def test_config_loader_raises_only_config_error(doc: Any) -> None:
    _load(yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"))
    try:
        text = json.dumps(doc)
    except ValueError:
        return
    _load(text.encode("utf-8", "surrogatepass"))


_CONFIG_BYTES = yaml.safe_dump(CONFIG_SEED).encode()


@FUZZ
@given(
    st.lists(
        st.tuples(st.integers(0, len(_CONFIG_BYTES) - 1), st.integers(0, 255)),
        min_size=1,
        max_size=6,
    )
)
def test_config_loader_survives_byte_flips(flips: list[tuple[int, int]]) -> None:
    data = bytearray(_CONFIG_BYTES)
    for offset, byte in flips:
        data[offset] = byte
    _load(bytes(data))

"""Resource-name predicates (upstream v1helper rules) and scheduler units."""

from __future__ import annotations

import pickle

import pytest

from ksched.api.errors import InvalidObjectError, QuantityError
from ksched.api.quantity import parse_quantity
from ksched.api.resources import (
    is_extended_resource_name,
    is_pod_level_resource_name,
    is_scalar_resource_name,
    is_tracked_resource_name,
    resource_amount,
)

# name, extended, scalar, tracked
NAME_CASES = [
    ("cpu", "cpu", False, False, True),
    ("memory", "memory", False, False, True),
    ("ephemeral-storage", "ephemeral-storage", False, False, True),
    ("pods", "pods", False, False, True),
    ("gpu-vendor-domain", "nvidia.com/gpu", True, True, True),
    ("subdomain-prefix", "example.com/foo-bar_baz.1", True, True, True),
    ("hugepages", "hugepages-2Mi", False, True, True),
    ("attachable-volumes", "attachable-volumes-aws-ebs", False, True, True),
    ("prefixed-native", "kubernetes.io/batch-cpu", False, True, True),
    ("sub-prefixed-native", "foo.kubernetes.io/bar", False, True, True),
    ("unknown-unprefixed", "storage", False, False, False),
    ("requests-prefix", "requests.example.com/foo", False, False, False),
    ("empty-name-part", "example.com/", False, False, False),
    ("two-slashes", "example.com/a/b", False, False, False),
    ("uppercase-prefix", "Example.com/gpu", False, False, False),
    ("name-part-too-long", "example.com/" + "a" * 64, False, False, False),
    ("name-part-max-length", "example.com/" + "a" * 63, True, True, True),
    ("name-part-bad-end", "example.com/gpu-", False, False, False),
    ("prefix-too-long", "a" * 245 + ".com/gpu", False, False, False),
]


@pytest.mark.parametrize(
    ("name", "extended", "scalar", "tracked"),
    [c[1:] for c in NAME_CASES],
    ids=[c[0] for c in NAME_CASES],
)
def test_resource_name_predicates(name: str, extended: bool, scalar: bool, tracked: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar
    assert is_tracked_resource_name(name) is tracked


@pytest.mark.parametrize(
    ("name", "supported"),
    [
        ("cpu", True),
        ("memory", True),
        ("hugepages-1Gi", True),
        ("ephemeral-storage", False),
        ("nvidia.com/gpu", False),
    ],
)
def test_pod_level_resources(name: str, supported: bool) -> None:
    assert is_pod_level_resource_name(name) is supported


AMOUNT_CASES = [
    ("cpu-millicores", "cpu", "1.5", 1500),
    ("cpu-sub-milli-rounds-up", "cpu", "1n", 1),
    ("memory-bytes", "memory", "1Gi", 2**30),
    ("memory-fraction-rounds-up", "memory", "0.5", 1),
    ("ephemeral-bytes", "ephemeral-storage", "10G", 10**10),
    ("pods-count", "pods", "110", 110),
    ("gpu-count", "nvidia.com/gpu", "2", 2),
    ("hugepages-bytes", "hugepages-2Mi", "4Mi", 4 * 2**20),
]


@pytest.mark.parametrize(
    ("name", "text", "amount"), [c[1:] for c in AMOUNT_CASES], ids=[c[0] for c in AMOUNT_CASES]
)
def test_resource_amount(name: str, text: str, amount: int) -> None:
    assert resource_amount(name, parse_quantity(text)) == amount


def test_invalid_object_error_renders_one_line() -> None:
    err = InvalidObjectError(
        "Pod", "default/web-1", "spec.containers[0].resources.requests.cpu", "bad"
    )
    assert str(err) == "Pod default/web-1: spec.containers[0].resources.requests.cpu: bad"
    assert isinstance(err, ValueError)
    assert str(InvalidObjectError("Node", "n1", "", "bad")) == "Node n1: bad"
    again = pickle.loads(pickle.dumps(err))
    assert (again.kind, again.name, again.field, again.message) == (
        err.kind,
        err.name,
        err.field,
        err.message,
    )


def test_quantity_error_quotes_text_as_json() -> None:
    err = QuantityError('1"x', "bad", "f")
    assert str(err) == 'f: bad (got "1\\"x")'
    assert isinstance(err, ValueError)

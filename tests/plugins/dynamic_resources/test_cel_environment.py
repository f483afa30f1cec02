"""The allocator with selectors that use each library of upstream's CEL environment for
device selectors (Kubernetes' lists, IP, CIDR, URL, quantity, semver and format libraries,
cel-go's strings, lists and sets extensions, two-variable comprehensions) and its runtime
cost limit.

Each case is a claim for one device of a slice with one device; the verdicts, the
error texts and the costs were checked against upstream's own code
(`k8s.io/dynamic-resource-allocation/cel` v0.36.5: see
`rust/plugins/dynamic_resources/testdata/cel_upstream.jsonl`), and a selector that
passes `CELSelectorExpressionMaxCost` fails the allocation as upstream's stable
allocator reports it: "claim <ns>/<name>: selector #<i>: CEL runtime error: operation
cancelled: actual cost limit exceeded".
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.fixtures import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    SLICE1,
    allocate,
    allocation_result,
    claim_with_request,
    claim_with_requests,
    device,
    device_class,
    local_node_selector,
    request,
    result,
    slice_with_devices,
)

Obj = dict[str, Any]

ATTRS = f'device.attributes["{DRIVER_A}"]'
COST_EXCEEDED = "CEL runtime error: operation cancelled: actual cost limit exceeded"

GPU = device(
    DEVICE1,
    {"memory": "80Gi"},
    {
        "model": {"string": "a100"},
        "cores": {"int": 8},
        "ip": {"string": "10.1.2.3"},
        "endpoint": {"string": "https://gpu.example.com:8443/v1?zone=a&zone=b"},
        "driverVersion": {"version": "1.2.3"},
    },
)

ALLOCATED = (
    "allocated",
    [allocation_result(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
)
UNALLOCATABLE: tuple[str, Any] = ("unallocatable", [])


def claim_error(text: str) -> tuple[str, Any]:
    return ("error", [f"claim default/{CLAIM0}: selector #0: {text}"])


CASES: list[tuple[str, str, tuple[str, Any]]] = [
    # Kubernetes' lists library
    ("lists-max", f"[1, 8].max() == {ATTRS}.cores && [1, 2, 3].isSorted()", ALLOCATED),
    ("lists-sum", f"[1, 2].sum() > {ATTRS}.cores", UNALLOCATABLE),
    ("lists-index-of", f'["a100", "h100"].indexOf({ATTRS}.model) == 0', ALLOCATED),
    (
        "lists-min-of-empty",
        f"{ATTRS}.cores > 0 && [].min() == 1",
        claim_error("CEL runtime error: min called on empty list"),
    ),
    # IP and CIDR
    (
        "ip-family-and-cidr",
        f'ip({ATTRS}.ip).family() == 4 && cidr("10.0.0.0/8").containsIP({ATTRS}.ip)',
        ALLOCATED,
    ),
    ("cidr-elsewhere", f'cidr("192.168.0.0/16").containsIP(ip({ATTRS}.ip))', UNALLOCATABLE),
    (
        "cidr-masked",
        'cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8") && isCIDR("10.0.0.0/8")',
        ALLOCATED,
    ),
    (
        "ip-parse-error",
        f"ip({ATTRS}.model).isLoopback()",
        claim_error(
            'CEL runtime error: IP Address "a100" parse error during conversion from string:'
            ' ParseAddr("a100"): unable to parse IP'
        ),
    ),
    # URL
    (
        "url-parts",
        f'url({ATTRS}.endpoint).getPort() == "8443"'
        f' && url({ATTRS}.endpoint).getHostname() == "gpu.example.com"'
        f' && url({ATTRS}.endpoint).getQuery()["zone"] == ["a", "b"]',
        ALLOCATED,
    ),
    ("is-url", f"isURL({ATTRS}.model)", UNALLOCATABLE),
    # cel-go's strings (format), lists and sets extensions; quantity and semver
    ("format", f'"%s-%d".format([device.driver, 8]) == "{DRIVER_A}-8"', ALLOCATED),
    ("lists-extension", f"lists.range({ATTRS}.cores).reverse()[0] == 7", ALLOCATED),
    ("sets", f'sets.contains(["a100", "h100"], [{ATTRS}.model])', ALLOCATED),
    (
        "quantity-and-semver",
        f'device.capacity["{DRIVER_A}"].memory.isGreaterThan(quantity("40Gi"))'
        f' && {ATTRS}.driverVersion.isGreaterThan(semver("1.0.0"))',
        ALLOCATED,
    ),
    # Kubernetes' format library
    (
        "format-library-valid-label",
        f"!format.dns1123Label().validate({ATTRS}.model).hasValue()"
        ' && format.named("uuid").hasValue() && !format.named("nope").hasValue()',
        ALLOCATED,
    ),
    (
        "format-library-messages",
        f"format.uri().validate({ATTRS}.model).value()"
        " == ['parse \"a100\": invalid URI for request']",
        ALLOCATED,
    ),
    ("format-library-invalid", '!format.date().validate("2023-02-29").hasValue()', UNALLOCATABLE),
    # cel-go's two-variable comprehensions
    (
        "two-variable-exists",
        f'{ATTRS}.exists(k, v, k == "cores" && v == 8)'
        f" && [10, 20].transformList(i, x, x + i) == [10, 21]",
        ALLOCATED,
    ),
    # the runtime cost limit
    (
        "nested-ranges-within-the-cost-limit",
        "lists.range(100).all(i, lists.range(100).all(j, i >= 0))",
        ALLOCATED,
    ),
    (
        "nested-ranges-past-the-cost-limit",
        "lists.range(1000).all(i, lists.range(1000).all(j, i >= 0))",
        claim_error(COST_EXCEEDED),
    ),
    (
        "a-cost-error-is-not-absorbed-by-or",
        "lists.range(1000).all(i, lists.range(1000).all(j, j >= 0)) || true",
        claim_error(COST_EXCEEDED),
    ),
]


@pytest.mark.parametrize(("name", "selector", "want"), CASES, ids=[c[0] for c in CASES])
def test_selector_libraries(name: str, selector: str, want: tuple[str, Any]) -> None:
    outcome, values = allocate(
        [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, GPU)],
        [device_class(CLASS_A, DRIVER_A)],
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1, selector))],
    )
    assert (outcome, values) == want


def test_a_class_selector_past_the_cost_limit_fails_the_allocation() -> None:
    outcome, values = allocate(
        [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, GPU)],
        [device_class(CLASS_A, DRIVER_A, "lists.range(10000).map(i, lists.range(100)).size() > 0")],
        [claim_with_request(CLAIM0, REQ0, CLASS_A)],
    )
    assert (outcome, values) == ("error", [f"class {CLASS_A}: selector #1: {COST_EXCEEDED}"])

"""Upstream's allocator test table (``structured/internal/allocatortesting``), ported.

Each case keeps upstream's name; inputs are built with the same helpers
(:mod:`.fixtures`), and the expected allocations or errors are upstream's. The cases
cover the search order and backtracking, pools (obsolete and duplicate slices),
classes, ``All`` mode, admin access, network-attached devices, constraints, class and
claim config, the claim size limit, prioritized lists, device taints, partitionable
devices with shared counters, and consumable capacity.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.fixtures import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    allocate,
    allocation_result,
    claim_with_request,
    claim_with_requests,
    device,
    device_class,
    local_node_selector,
    node_labels,
    request,
    result,
    slice_with_devices,
    slice_with_one_device,
    sub_request,
)

Obj = dict[str, Any]


def mem(q: str, driver: str = DRIVER_A) -> str:
    return f'device.capacity["{driver}"].memory.compareTo(quantity("{q}")) >= 0'


def _small_and_large(order: list[str]) -> list[Obj]:
    sizes = {DEVICE1: "1Gi", DEVICE2: "2Gi"}
    devs = [device(d, {"memory": sizes[d]}) for d in order]
    return [slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, *devs)]


def _attr(**kw: Any) -> Obj:
    return dict(kw)


CASES: list[tuple[str, dict[str, Any], tuple[str, Any]]] = [
    (
        "simple",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "allocated",
            [allocation_result(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        ),
    ),
    (
        "other-node",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_B),
                slice_with_one_device(SLICE2, NODE2, POOL2, DRIVER_A),
            ],
            "node": NODE2,
            "labels": node_labels(REGION2),
        },
        (
            "allocated",
            [allocation_result(local_node_selector(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
        ),
    ),
    (
        "small-and-large",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    request(REQ0, CLASS_A, 1, mem("1Gi")),
                    request(REQ1, CLASS_A, 1, mem("2Gi")),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": _small_and_large([DEVICE1, DEVICE2]),
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2),
                )
            ],
        ),
    ),
    (
        "small-and-large-backtrack-requests",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    request(REQ0, CLASS_A, 1, mem("1Gi")),
                    request(REQ1, CLASS_A, 1, mem("2Gi")),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": _small_and_large([DEVICE2, DEVICE1]),
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2),
                )
            ],
        ),
    ),
    (
        "small-and-large-backtrack-claims",
        {
            "claims": [
                claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1, mem("1Gi"))),
                claim_with_requests(CLAIM1, None, request(REQ1, CLASS_A, 1, mem("2Gi"))),
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": _small_and_large([DEVICE2, DEVICE1]),
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)
                ),
                allocation_result(
                    local_node_selector(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)
                ),
            ],
        ),
    ),
    (
        "devices-split-across-different-slices",
        {
            "claims": [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A),
                slice_with_one_device(SLICE2, NODE1, POOL2, DRIVER_A),
            ],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ0, DRIVER_A, POOL2, DEVICE1),
                )
            ],
        ),
    ),
    (
        "obsolete-slice",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    "slice-1-obsolete",
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(DEVICE1),
                ),
                slice_with_devices(
                    "slice-1",
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 2},
                    DRIVER_A,
                    device(DEVICE2),
                ),
            ],
        },
        ("unallocatable", []),
    ),
    (
        "duplicate-slice",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(DEVICE1),
                ),
                slice_with_devices(
                    SLICE1 + "-2",
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(DEVICE1),
                ),
            ],
        },
        ("unschedulable", ["invalid resource pools were encountered"]),
    ),
    (
        "no-slices",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [],
        },
        ("unallocatable", []),
    ),
    (
        "not-enough-suitable-devices",
        {
            "claims": [
                claim_with_request(CLAIM0, REQ0, CLASS_A),
                claim_with_request(CLAIM0, REQ1, CLASS_A),
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("unallocatable", []),
    ),
    (
        "no-classes",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "error",
            [
                "claim default/claim-0, request req-0: could not retrieve device class class-a: "
                'deviceclass.resource.k8s.io "class-a" not found'
            ],
        ),
    ),
    (
        "empty-class",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, "")],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "error",
            [
                "claim default/claim-0, request req-0: missing device class name "
                "(unsupported request type?)"
            ],
        ),
    ),
    (
        "all-devices-single",
        {
            "claims": [
                claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 0, allocationMode="All"))
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "allocated",
            [allocation_result(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        ),
    ),
    (
        "all-devices-of-the-incomplete-pool",
        {
            "claims": [
                claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 0, allocationMode="All"))
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(DEVICE1),
                )
            ],
        },
        (
            "error",
            [
                "claim default/claim-0, request req-0: asks for all devices, but resource pool "
                "driver-a/pool-1 is currently being updated"
            ],
        ),
    ),
    (
        "all-devices-some-allocated",
        {
            "claims": [
                claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 0, allocationMode="All"))
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
            ],
            "allocated": [(DRIVER_A, POOL1, DEVICE1)],
        },
        ("unallocatable", []),
    ),
    (
        "all-devices-some-allocated-admin-access",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0, None, request(REQ0, CLASS_A, 0, allocationMode="All", adminAccess=True)
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))
            ],
            "allocated": [(DRIVER_A, POOL1, DEVICE1)],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                    result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
                )
            ],
        ),
    ),
    (
        "network-attached-device",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    None,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1),
                    nodeSelector={
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "region", "operator": "In", "values": [REGION1]}
                                ]
                            }
                        ]
                    },
                )
            ],
        },
        (
            "allocated",
            [
                allocation_result(
                    {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "region", "operator": "In", "values": [REGION1]}
                                ]
                            }
                        ]
                    },
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                )
            ],
        ),
    ),
    (
        "unsuccessful-allocation-network-attached-device",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    None,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1),
                    nodeSelector={
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "region", "operator": "In", "values": [REGION2]}
                                ]
                            }
                        ]
                    },
                )
            ],
        },
        ("unallocatable", []),
    ),
    (
        "already-allocated-devices",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
            "allocated": [(DRIVER_A, POOL1, DEVICE1)],
        },
        ("unallocatable", []),
    ),
    (
        "with-constraint",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    [{"matchAttribute": f"{DRIVER_A}/driverVersion"}],
                    request(REQ0, CLASS_A, 1),
                    request(REQ1, CLASS_A, 1),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, attributes={"driverVersion": {"version": "1.0.0"}}),
                    device("device-x", attributes={"driverVersion": {"version": "2.0.0"}}),
                    device(DEVICE2, attributes={"driverVersion": {"version": "1.0.0"}}),
                )
            ],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2),
                )
            ],
        ),
    ),
    (
        "with-constraint-non-existent-attribute",
        {
            "claims": [
                claim_with_request(
                    CLAIM0, REQ0, CLASS_A, {"matchAttribute": "missing.example.com/x"}
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("unallocatable", []),
    ),
    (
        "with-constraint-not-matching-int-attribute",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    [{"matchAttribute": f"{DRIVER_A}/numa"}],
                    request(REQ0, CLASS_A, 1),
                    request(REQ1, CLASS_A, 1),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, attributes={"numa": {"int": 1}}),
                    device(DEVICE2, attributes={"numa": {"int": 2}}),
                )
            ],
        },
        ("unallocatable", []),
    ),
    (
        "with-distinct-attribute",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    [{"distinctAttribute": f"{DRIVER_A}/numa"}],
                    request(REQ0, CLASS_A, 1),
                    request(REQ1, CLASS_A, 1),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, attributes={"numa": {"int": 1}}),
                    device("device-x", attributes={"numa": {"int": 1}}),
                    device(DEVICE2, attributes={"numa": {"int": 2}}),
                )
            ],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    result(REQ1, DRIVER_A, POOL1, DEVICE2),
                )
            ],
        ),
    ),
    (
        "with-class-device-config",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [
                device_class(
                    CLASS_A,
                    DRIVER_A,
                    config=[{"opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}}}],
                )
            ],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    config=[
                        {
                            "source": "FromClass",
                            "requests": [REQ0],
                            "opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}},
                        }
                    ],
                )
            ],
        ),
    ),
    (
        "claim-with-device-config",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    request(REQ0, CLASS_A),
                    config=[{"opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}}}],
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    result(REQ0, DRIVER_A, POOL1, DEVICE1),
                    config=[
                        {
                            "source": "FromClaim",
                            "opaque": {"driver": DRIVER_A, "parameters": {"k": "v"}},
                        }
                    ],
                )
            ],
        ),
    ),
    (
        "unknown-allocation-mode",
        {
            "claims": [
                claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 0, allocationMode="Other"))
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("error", ["claim default/claim-0, request req-0: unsupported count mode Other"]),
    ),
    (
        "unknown-constraint",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A, {})],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "error",
            [
                "claim default/claim-0, constraint #0: empty constraint "
                "(unsupported constraint type?)"
            ],
        ),
    ),
    (
        "too-many-devices-single-request",
        {
            "claims": [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 33))],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "error",
            [
                "claim default/claim-0, request req-0: adding 33 devices exceeds the claim limit "
                "of 32, with 0 already accounted for"
            ],
        ),
    ),
    (
        "prioritized-list-first-unavailable",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    {
                        "name": REQ0,
                        "firstAvailable": [
                            sub_request("subReq-0", CLASS_B, 1),
                            sub_request("subReq-1", CLASS_A, 1),
                        ],
                    },
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1), result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE1)
                )
            ],
        ),
    ),
    (
        "prioritized-list-non-available",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    {
                        "name": REQ0,
                        "firstAvailable": [
                            sub_request("subReq-0", CLASS_B, 2),
                            sub_request("subReq-1", CLASS_A, 2),
                        ],
                    },
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("unallocatable", []),
    ),
    (
        "tainted-device-not-tolerated",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                )
            ],
        },
        ("unallocatable", []),
    ),
    (
        "tainted-device-tolerated",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0,
                    None,
                    request(REQ0, CLASS_A, 1, tolerations=[{"key": "k", "operator": "Exists"}]),
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    POOL1,
                    DRIVER_A,
                    device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                )
            ],
        },
        (
            "allocated",
            [
                allocation_result(
                    local_node_selector(NODE1),
                    {
                        **result(REQ0, DRIVER_A, POOL1, DEVICE1),
                        "tolerations": [{"key": "k", "operator": "Exists"}],
                    },
                )
            ],
        ),
    ),
    (
        "partitionable-devices-single-device",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(
                        DEVICE1,
                        consumesCounters=[
                            {
                                "counterSet": "counter-set-1",
                                "counters": {"memory": {"value": "4Gi"}},
                            }
                        ],
                    ),
                    device(
                        DEVICE2,
                        consumesCounters=[
                            {
                                "counterSet": "counter-set-1",
                                "counters": {"memory": {"value": "6Gi"}},
                            }
                        ],
                    ),
                ),
                slice_with_devices(
                    "slice-counters",
                    None,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    sharedCounters=[
                        {"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}
                    ],
                ),
            ],
            "allocated": [],
        },
        (
            "allocated",
            [allocation_result(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        ),
    ),
    (
        "partitionable-devices-counters-exhausted",
        {
            "claims": [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [
                slice_with_devices(
                    SLICE1,
                    NODE1,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    device(
                        DEVICE1,
                        consumesCounters=[
                            {
                                "counterSet": "counter-set-1",
                                "counters": {"memory": {"value": "4Gi"}},
                            }
                        ],
                    ),
                    device(
                        DEVICE2,
                        consumesCounters=[
                            {
                                "counterSet": "counter-set-1",
                                "counters": {"memory": {"value": "6Gi"}},
                            }
                        ],
                    ),
                ),
                slice_with_devices(
                    "slice-counters",
                    None,
                    {"name": POOL1, "resourceSliceCount": 2, "generation": 1},
                    DRIVER_A,
                    sharedCounters=[
                        {"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}
                    ],
                ),
            ],
        },
        ("unallocatable", []),
    ),
    (
        # upstream plugin test "claim-parameters-CEL-runtime-error"
        "cel-runtime-error-missing-attribute",
        {
            "claims": [
                claim_with_requests(
                    CLAIM0, None, request(REQ0, CLASS_A, 1, 'device.attributes["x.example.com"].y')
                )
            ],
            "classes": [device_class(CLASS_A, DRIVER_A)],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("error", ["claim default/claim-0: selector #0: CEL runtime error: no such key: y"]),
    ),
]


CASES.append(
    (
        # upstream plugin test "class-parameters-CEL-runtime-error"
        "class-cel-runtime-error",
        {
            "claims": [claim_with_request(CLAIM0, REQ0, CLASS_A)],
            "classes": [
                device_class(CLASS_A, DRIVER_A, f'device.attributes["{DRIVER_A}"].healthy')
            ],
            "slices": [slice_with_one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        },
        ("error", ["class class-a: selector #1: CEL runtime error: no such key: healthy"]),
    )
)


@pytest.mark.parametrize(("name", "case", "want"), CASES, ids=[c[0] for c in CASES])
def test_allocator(name: str, case: dict[str, Any], want: tuple[str, Any]) -> None:
    outcome, values = allocate(
        case["slices"],
        case["classes"],
        case["claims"],
        node=case.get("node", NODE1),
        labels=case.get("labels"),
        allocated=case.get("allocated"),
    )
    want_outcome, want_values = want
    assert outcome == want_outcome, values
    if isinstance(want_values, str):
        assert values[0].startswith(want_values)
    else:
        assert values == want_values


def test_consumable_capacity_shares_a_device_until_its_capacity_is_used() -> None:
    """DRAConsumableCapacity: a device that allows multiple allocations is shared by
    claims until their requests use its capacity up; each share gets a share ID."""
    capacity_request = {"requests": {"memory": "4Gi"}}
    claims = [
        claim_with_requests(c, None, request(REQ0, CLASS_A, 1, capacity=capacity_request))
        for c in (CLAIM0, CLAIM1)
    ]
    slices = [
        slice_with_devices(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEVICE1, {"memory": "8Gi"}, allowMultipleAllocations=True),
        )
    ]
    outcome, values = allocate(slices, [device_class(CLASS_A, DRIVER_A)], claims)
    assert outcome == "allocated"
    results = [v["devices"]["results"][0] for v in values]
    assert [r["device"] for r in results] == [DEVICE1, DEVICE1]
    assert [r["consumedCapacity"] for r in results] == [{"memory": "4Gi"}, {"memory": "4Gi"}]
    assert results[0]["shareID"] != results[1]["shareID"]
    three = [
        *claims,
        claim_with_requests("claim-2", None, request(REQ0, CLASS_A, 1, capacity=capacity_request)),
    ]
    assert allocate(slices, [device_class(CLASS_A, DRIVER_A)], three)[0] == "unallocatable"

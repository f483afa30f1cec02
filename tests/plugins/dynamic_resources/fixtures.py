"""Object generators for the DynamicResources tests, named after the helpers of
upstream's ``structured/internal/allocatortesting`` and the plugin's tests, so that a
ported case reads like the original (``claim_with_request(CLAIM0, REQ0, CLASS_A)``)."""

from __future__ import annotations

from typing import Any

import orjson

from ksched import _core

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2 = "pool-1", "pool-2"
REQ0, REQ1 = "req-0", "req-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2 = "slice-1", "slice-2"
DEVICE1, DEVICE2 = "device-1", "device-2"

Obj = dict[str, Any]


def node_labels(region: str) -> dict[str, str]:
    """upstream ``node(name, region)``'s labels."""
    return {"region": region, "planet": "earth"}


def device_class(name: str, driver: str, *selectors: str, config: list[Obj] | None = None) -> Obj:
    """upstream ``class(name, driver)``: a class selecting the driver's devices."""
    exprs = [f'device.driver == "{driver}"', *selectors]
    spec: Obj = {"selectors": [{"cel": {"expression": e}} for e in exprs]}
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def device(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, Obj] | None = None,
    **extra: Any,
) -> Obj:
    d: Obj = {"name": name}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        d["attributes"] = attributes
    d.update(extra)
    return d


def slice_with_devices(
    name: str,
    node: str | None,
    pool: str | Obj,
    driver: str,
    *devices: Obj,
    **spec: Any,
) -> Obj:
    pool_obj = (
        {"name": pool, "resourceSliceCount": 1, "generation": 1} if isinstance(pool, str) else pool
    )
    s: Obj = {"driver": driver, "pool": pool_obj, "devices": list(devices)}
    if node == "*":
        s["allNodes"] = True
    elif node is not None:
        s["nodeName"] = node
    s.update(spec)
    return {"metadata": {"name": name}, "spec": s}


def slice_with_one_device(name: str, node: str | None, pool: str, driver: str) -> Obj:
    return slice_with_devices(name, node, pool, driver, device(DEVICE1))


def request(name: str, cls: str, count: int = 1, *selectors: str, **extra: Any) -> Obj:
    exactly: Obj = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    exactly.update(extra)
    return {"name": name, "exactly": exactly}


def sub_request(name: str, cls: str, count: int = 1, *selectors: str) -> Obj:
    s: Obj = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        s["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return s


def claim_with_requests(
    name: str, constraints: list[Obj] | None, *requests: Obj, config: list[Obj] | None = None
) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
    }


def claim_with_request(name: str, req: str, cls: str, *constraints: Obj) -> Obj:
    return claim_with_requests(name, list(constraints), request(req, cls))


def local_node_selector(node: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def result(req: str, driver: str, pool: str, dev: str, admin: bool = False) -> Obj:
    r: Obj = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if admin:
        r["adminAccess"] = True
    return r


def allocation_result(selector: Obj | None, *results: Obj, config: list[Obj] | None = None) -> Obj:
    devices: Obj = {"results": list(results)}
    if config:
        devices["config"] = config
    out: Obj = {"devices": devices}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def devices_with(slices: list[Obj], classes: list[Obj]) -> _core.DraDevices:
    d = _core.DraDevices()
    for s in slices:
        d.upsert_slice(s["metadata"]["name"], orjson.dumps(s))
    for c in classes:
        d.upsert_class(c["metadata"]["name"], orjson.dumps(c))
    return d


def allocate(
    slices: list[Obj],
    classes: list[Obj],
    claims: list[Obj],
    node: str = NODE1,
    labels: dict[str, str] | None = None,
    allocated: list[tuple[str, str, str]] | None = None,
) -> tuple[str, list[Any]]:
    """Run the allocator as Filter does; the allocations come back decoded."""
    d = devices_with(slices, classes)
    for i, (driver, pool, dev) in enumerate(allocated or []):
        # An allocated claim elsewhere takes each of these devices.
        results = [{"request": "r", "driver": driver, "pool": pool, "device": dev}]
        d.set_claim_allocation(f"other/claim-{i}", orjson.dumps({"devices": {"results": results}}))
    alloc = d.allocator([(f"default/{c['metadata']['name']}", orjson.dumps(c)) for c in claims])
    outcome, values = alloc.allocate(node, labels or node_labels(REGION1))
    if outcome == "allocated":
        return outcome, [orjson.loads(v) for v in values]
    return outcome, list(values)

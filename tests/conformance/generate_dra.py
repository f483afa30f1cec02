"""The Dynamic Resource Allocation objects of a generated case: what DynamicResources
reads.

Design. Two drivers (``gpu.example.com``, per node, and ``nic.example.com``, some of it
in a network-attached pool that several nodes share through a node selector), their
ResourceSlices (devices with string, int, bool and version attributes, a memory
capacity; pools of one or two slices, some slices of a pool not published yet), a
handful of DeviceClasses whose CEL selectors use what the DRA environment offers
(``device.driver``, attributes, ``capacity`` with ``quantity(...).compareTo``,
``semver``, ``has()``, string functions, ``cel.bind``) and one whose selector fails at
runtime on devices without the attribute (``no such key``, a message both sides
print). ResourceClaims in the pod's namespace ask with ``exactly`` (count, allocation
mode All, selectors of their own, adminAccess off) or ``firstAvailable`` subrequests,
with ``matchAttribute`` constraints; some are allocated (a node selector and device
results) and reserved for bound pods, whose devices are then in use. The pod to
schedule names claims directly or through a template (the claim the resourceclaim
controller would have created, recorded in ``status.resourceClaimStatuses``).

Two later parts draw from forks of the case's random source (:meth:`Gen.fork`), so the
objects above stay as earlier runs drew them: :func:`extended_resources` (DeviceClasses
with ``extendedResourceName``, the pod asking for such names, nodes advertising them or
not, bound pods holding allocated claims for them, a claim an earlier cycle made for
the pod) and :func:`binding_conditions` (devices with binding conditions or
``bindsToNode``, allocated claims carrying them, with timestamps and device statuses).

Cases avoid what gates the pod before the queue (a claim that does not exist), which
upstream's harness cannot pop: the pod's claims always exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.conformance.generate import Gen

Obj = dict[str, Any]

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
MODELS = ["a100", "h100", "t4"]

#: name -> CEL selector expressions (all must hold).
CLASSES: dict[str, list[str]] = {
    "gpu": [f'device.driver == "{GPU_DRIVER}"'],
    "gpu-big": [
        f'device.driver == "{GPU_DRIVER}"',
        f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    ],
    "gpu-new": [
        f'device.driver == "{GPU_DRIVER}" && '
        f'device.attributes["{GPU_DRIVER}"].driverVersion.isGreaterThan(semver("1.5.0"))'
    ],
    "gpu-model": [
        f'device.driver == "{GPU_DRIVER}" && '
        f'cel.bind(m, device.attributes["{GPU_DRIVER}"].model, m.startsWith("a") || m == "h100")'
    ],
    "nic": [f'device.driver == "{NIC_DRIVER}"'],
    "nic-fast": [
        f'device.driver == "{NIC_DRIVER}" && has(device.attributes["{NIC_DRIVER}"].speed) && '
        f'device.attributes["{NIC_DRIVER}"].speed >= 100'
    ],
    # A runtime error on devices lacking the attribute (the GPUs of old slices).
    "gpu-strict": [f'device.attributes["{GPU_DRIVER}"].ecc == true'],
    "any": [],
}


def device_classes(g: Gen) -> list[Obj]:
    out = []
    for name, exprs in CLASSES.items():
        if not g.chance(0.9):
            g.tag("dra:deviceclass-missing")
            continue
        spec: Obj = {}
        if exprs:
            spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
    return out


def gpu_device(g: Gen, i: int) -> Obj:
    attrs: Obj = {
        "model": {"string": g.pick(MODELS)},
        "index": {"int": i},
        "driverVersion": {"version": g.pick(["1.2.0", "1.6.1", "2.0.0"])},
    }
    if g.chance(0.6):
        attrs["ecc"] = {"bool": g.chance(0.7)}
    return {
        "name": f"gpu-{i}",
        "attributes": attrs,
        "capacity": {"memory": {"value": g.pick(["16Gi", "40Gi", "80Gi"])}},
    }


def nic_device(g: Gen, i: int) -> Obj:
    attrs: Obj = {"model": {"string": g.pick(["cx6", "cx7"])}}
    if g.chance(0.7):
        attrs["speed"] = {"int": g.pick([25, 100, 400])}
    return {"name": f"nic-{i}", "attributes": attrs}


def resource_slices(g: Gen, nodes: list[Obj]) -> list[Obj]:
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        if not g.chance(0.6):
            continue
        two = g.chance(0.15)
        for part in range(2 if two else 1):
            if two and part == 1 and g.chance(0.3):
                g.tag("dra:pool-incomplete")
                break  # the pool's second slice is not published yet
            devices = [gpu_device(g, part * 4 + i) for i in range(g.rng.randint(1, 3))]
            out.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpu-{part}"},
                    "spec": {
                        "driver": GPU_DRIVER,
                        "nodeName": name,
                        "pool": {
                            "name": name,
                            "generation": 1,
                            "resourceSliceCount": 2 if two else 1,
                        },
                        "devices": devices,
                    },
                }
            )
        if g.chance(0.3):
            out.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-nic"},
                    "spec": {
                        "driver": NIC_DRIVER,
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [nic_device(g, i) for i in range(g.rng.randint(1, 2))],
                    },
                }
            )
    if g.chance(0.4):
        # A network-attached pool reachable from the nodes of some zones.
        zones = g.some(["z1", "z2", "z3"], 1, 2)
        spec: Obj = {
            "driver": NIC_DRIVER,
            "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
            "devices": [nic_device(g, 10 + i) for i in range(g.rng.randint(1, 3))],
        }
        if g.chance(0.3):
            spec["allNodes"] = True
            g.tag("dra:slice.allNodes")
        else:
            spec["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "In",
                                "values": zones,
                            }
                        ]
                    }
                ]
            }
            g.tag("dra:slice.nodeSelector")
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "fabric"},
                "spec": spec,
            }
        )
    if out:
        g.tag("dra:slices")
    return out


def exact(g: Gen, cls: str) -> Obj:
    req: Obj = {"deviceClassName": cls}
    if g.chance(0.15):
        req["allocationMode"] = "All"
        g.tag("dra:request.All")
    elif g.chance(0.35):
        req["count"] = g.pick([1, 2, 3])
        g.tag("dra:request.count")
    if g.chance(0.25):
        req["selectors"] = [
            {
                "cel": {
                    "expression": g.pick(
                        [
                            f'device.attributes["{GPU_DRIVER}"].model == "{g.pick(MODELS)}"',
                            f'device.attributes["{GPU_DRIVER}"].index < 2',
                            f'device.capacity["{GPU_DRIVER}"].memory.isGreaterThan(quantity("20Gi"))',
                            f'"model" in device.attributes["{NIC_DRIVER}"]',
                        ]
                    )
                }
            }
        ]
        g.tag("dra:request.selectors")
    return req


def claim_spec(g: Gen) -> Obj:
    requests = []
    gpu_classes = ["gpu", "gpu", "gpu-big", "gpu-new", "gpu-model", "gpu-strict", "any", "nope"]
    for r in range(g.rng.randint(1, 2)):
        if g.chance(0.2):
            subs = []
            for s in range(g.rng.randint(2, 3)):
                sub = {"name": f"s{s}", **exact(g, g.pick(gpu_classes))}
                subs.append(sub)
            requests.append({"name": f"r{r}", "firstAvailable": subs})
            g.tag("dra:request.firstAvailable")
        else:
            cls = g.pick([*gpu_classes, "nic", "nic-fast"])
            requests.append({"name": f"r{r}", "exactly": exact(g, cls)})
            g.tag("dra:request.exactly")
    devices: Obj = {"requests": requests}
    if len(requests) > 1 and g.chance(0.4):
        devices["constraints"] = [
            {
                "requests": [r["name"] for r in requests],
                "matchAttribute": g.pick([f"{GPU_DRIVER}/model", f"{GPU_DRIVER}/driverVersion"]),
            }
        ]
        g.tag("dra:constraint.matchAttribute")
    return {"devices": devices}


def resource_claim(g: Gen, name: str, namespace: str, spec: Obj) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-claim-{namespace}-{name}"},
        "spec": spec,
    }


def allocate(g: Gen, claim: Obj, slices: list[Obj], pod: Obj) -> bool:
    """Give ``claim`` an allocation from a node's GPU slice, reserved for ``pod``
    (bound there); False when no slice fits."""
    node_slices = [
        s for s in slices if s["spec"].get("nodeName") and s["spec"]["driver"] == GPU_DRIVER
    ]
    if not node_slices:
        return False
    s = g.pick(node_slices)
    node = s["spec"]["nodeName"]
    device = g.pick(s["spec"]["devices"])["name"]
    request = claim["spec"]["devices"]["requests"][0]["name"]
    claim["spec"] = {
        "devices": {"requests": [{"name": request, "exactly": {"deviceClassName": "gpu"}}]}
    }
    claim["metadata"]["finalizers"] = [FINALIZER]
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": request,
                        "driver": GPU_DRIVER,
                        "pool": s["spec"]["pool"]["name"],
                        "device": device,
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        ],
    }
    pod["spec"]["nodeName"] = node
    return True


def dra_objects(g: Gen, nodes: list[Obj], pod: Obj) -> list[Obj]:
    """The DRA objects of a case (see the module docstring); sets the claims of ``pod``
    and of some bound pods in ``g.existing``."""
    if not g.chance(0.35):
        return []
    g.tag("scenario:dra")
    ns = pod["metadata"]["namespace"]
    objects = [*device_classes(g)]
    slices = resource_slices(g, nodes)
    objects += slices
    claims: list[Obj] = []
    # Bound pods holding allocated claims: their devices are in use.
    for p in g.existing:
        if not g.chance(0.25):
            continue
        c = resource_claim(
            g, f"held-{p['metadata']['name']}", p["metadata"]["namespace"], claim_spec(g)
        )
        if not allocate(g, c, slices, p):
            continue
        p["spec"]["resourceClaims"] = [{"name": "held", "resourceClaimName": c["metadata"]["name"]}]
        claims.append(c)
        g.tag("dra:claim.allocated-in-use")
    # The pod's claims.
    refs: list[Obj] = []
    statuses: list[Obj] = []
    for i in range(g.rng.randint(1, 2)):
        if g.chance(0.3):
            # Generated from a template: the claim the controller made, in the status.
            name = f"{pod['metadata']['name']}-t{i}-x7k2p"
            c = resource_claim(g, name, ns, claim_spec(g))
            c["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": f"t{i}"}
            c["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                    "uid": pod["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            refs.append({"name": f"t{i}", "resourceClaimTemplateName": "tmpl"})
            statuses.append({"name": f"t{i}", "resourceClaimName": name})
            g.tag("dra:claim.from-template")
        else:
            name = f"claim-{i}"
            c = resource_claim(g, name, ns, claim_spec(g))
            if g.chance(0.2):
                # Allocated already (for a bound pod of the namespace, or nobody).
                holder = next((p for p in g.existing if p["metadata"]["namespace"] == ns), None)
                if holder is not None and allocate(g, c, slices, holder):
                    holder["spec"].setdefault("resourceClaims", []).append(
                        {"name": f"shared-{i}", "resourceClaimName": name}
                    )
                    if g.chance(0.4):
                        c["status"]["reservedFor"] = []
                        del c["status"]["reservedFor"]
                        g.tag("dra:claim.allocated-unreserved")
                    else:
                        g.tag("dra:claim.allocated-shared")
            refs.append({"name": f"c{i}", "resourceClaimName": name})
            g.tag("dra:claim.direct")
        claims.append(c)
    pod["spec"]["resourceClaims"] = refs
    if statuses:
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
    g.tag("pod:resourceClaims")
    # Later parts draw from forks: the objects above stay as earlier runs drew them.
    extra = extended_resources(g.fork("dra-extended"), nodes, pod, slices, claims)
    binding_conditions(g.fork("dra-binding-conditions"), slices, claims)
    return [*objects, *extra, *claims]


def dra_args(g: Gen) -> Obj:
    g.tag("args:DynamicResources")
    return {
        "filterTimeout": g.pick(["0s", "10s", "30s"]),
        "bindingTimeout": g.pick(["1m0s", "10m0s"]),
    }


# ---- extended resources backed by DRA ---------------------------------------------------

#: The extended resource of the main generator (nodes' allocatable, pods' requests).
GPU_RESOURCE = "example.com/gpu"
NIC_RESOURCE = "example.com/nic"
CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: Creation times of the classes mapping one name: the newer one wins.
OLDER, NEWER = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def extended_class(name: str, resource: str, exprs: list[str], created: str) -> Obj:
    spec: Obj = {"extendedResourceName": resource}
    if exprs:
        spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": spec,
    }


def _set_allocatable(node: Obj, resource: str, value: str) -> None:
    node["status"]["allocatable"][resource] = value
    node["status"]["capacity"][resource] = value


def _request(c: Obj, resource: str, n: int) -> None:
    res = c.setdefault("resources", {})
    for part in ("requests", "limits"):
        if part == "requests" and "requests" not in res and "limits" in res:
            # Limits alone: the API server copies them to the requests.
            res["requests"] = dict(res["limits"])
        res.setdefault(part, {})[resource] = str(n)


def extended_resources(
    g: Gen, nodes: list[Obj], pod: Obj, slices: list[Obj], claims: list[Obj]
) -> list[Obj]:
    """DRAExtendedResource (beta, on in v1.36): DeviceClasses that map an extended
    resource name (``spec.extendedResourceName``; every class also maps its implicit
    ``deviceclass.resource.kubernetes.io/<class>``), the pod asking for such names in
    its containers (init containers and sidecars too), nodes that advertise the name in
    their allocatable (a device plugin: NodeResourcesFit counts it) or advertise none or
    0 of it (DRA allocates it), sometimes instead of the pod's own claims; bound pods
    whose claim for such resources is allocated (their devices are in use), and a claim
    an earlier cycle made for the pod (stale when it has requests: PostFilter deletes it).
    Returns the classes and claims; sets the pods' and nodes' fields."""
    if not g.chance(0.45):
        return []
    g.tag("scenario:dra-extended")
    out: list[Obj] = []
    if g.chance(0.85):
        out.append(extended_class("gpu-ext", GPU_RESOURCE, CLASSES["gpu"], OLDER))
        g.tag("dra:extended.class")
        if g.chance(0.3):
            # Two classes claim the name: the newer wins (the lower name on a tie).
            out.append(
                extended_class(
                    g.pick(["gpu-ext2", "a-gpu-ext"]),
                    GPU_RESOURCE,
                    CLASSES["gpu-big"],
                    g.pick([OLDER, NEWER]),
                )
            )
            g.tag("dra:extended.name-conflict")
    if g.chance(0.35):
        out.append(extended_class("nic-ext", NIC_RESOURCE, CLASSES["nic"], OLDER))
    # Nodes: a device plugin advertises the resource, or 0 of it, or nothing at all.
    for n in nodes:
        alloc = n["status"]["allocatable"]
        if GPU_RESOURCE not in alloc and g.chance(0.15):
            _set_allocatable(n, GPU_RESOURCE, "0")
            g.tag("node:extended-resource-zero")
        if g.chance(0.15):
            _set_allocatable(n, NIC_RESOURCE, g.pick(["1", "4"]))
        if g.chance(0.05):
            _set_allocatable(n, CLASS_PREFIX + "gpu", "2")
            g.tag("node:deviceclass-resource")
    # The pod's requests.
    names = [GPU_RESOURCE, GPU_RESOURCE, CLASS_PREFIX + "gpu", CLASS_PREFIX + "gpu-big"]
    names += [NIC_RESOURCE, CLASS_PREFIX + "nic", CLASS_PREFIX + "gpu-ext"]
    spec = pod["spec"]
    containers = spec["containers"]
    for name in g.some(names, 1, 2):
        c = g.pick(containers)
        _request(c, name, g.pick([1, 1, 2]))
        g.tag(f"pod:extended.{'implicit' if name.startswith(CLASS_PREFIX) else 'explicit'}")
        inits = spec.get("initContainers") or []
        if inits and g.chance(0.5):
            _request(g.pick(inits), name, g.pick([1, 2, 3]))
            g.tag("pod:extended.init-container")
    lean = g.chance(0.4)
    if lean or g.chance(0.2):
        # The extended resources alone: no claim of the pod's own (its claims stay,
        # unused by it).
        spec.pop("resourceClaims", None)
        (pod.get("status") or {}).pop("resourceClaimStatuses", None)
        g.tag("pod:extended.no-user-claims")
    if lean:
        # A pod that may well fit, so that DRA allocates its extended resources and
        # PreBind creates their claim: no volumes and no node constraints of its own.
        for key in ("volumes", "nodeSelector"):
            spec.pop(key, None)
        (spec.get("affinity") or {}).pop("nodeAffinity", None)
        for c in [*containers, *(spec.get("initContainers") or [])]:
            c.pop("volumeMounts", None)
            c.pop("volumeDevices", None)
        g.tag("scenario:dra-extended-lean")
    if g.chance(0.15):
        # The claim an earlier cycle created for the pod's extended resources: with
        # requests it is stale (Filter: "cannot schedule extended resource claim").
        c = resource_claim(
            g,
            f"{pod['metadata']['name']}-extended-resources-q8r2t",
            pod["metadata"]["namespace"],
            {},
        )
        c["metadata"]["annotations"] = {EXTENDED_ANNOTATION: "true"}
        c["metadata"]["ownerReferences"] = [_owner(pod)]
        if g.chance(0.7):
            c["spec"] = {
                "devices": {
                    "requests": [
                        {
                            "name": "container-0-request-0",
                            "exactly": {"deviceClassName": "gpu-ext", "count": 1},
                        }
                    ]
                }
            }
            g.tag("dra:extended.stale-claim")
        else:
            g.tag("dra:extended.earlier-claim")
        claims.append(c)
    # Bound pods on nodes without the resource, their claim for it allocated.
    gpu_nodes = {
        s["spec"]["nodeName"]
        for s in slices
        if s["spec"].get("nodeName") and s["spec"]["driver"] == GPU_DRIVER
    }
    for p in g.existing:
        node = p["spec"].get("nodeName")
        if node not in gpu_nodes or not any(o["metadata"]["name"] == "gpu-ext" for o in out):
            continue
        n = next(x for x in nodes if x["metadata"]["name"] == node)
        if n["status"]["allocatable"].get(GPU_RESOURCE, "0") != "0" or not g.chance(0.4):
            continue
        c0 = p["spec"]["containers"][0]
        _request(c0, GPU_RESOURCE, 1)
        request = _request_name(c0, GPU_RESOURCE)
        ext = {"name": request, "exactly": {"deviceClassName": "gpu-ext", "count": 1}}
        held = resource_claim(
            g,
            f"{p['metadata']['name']}-extended-resources-m4n9w",
            p["metadata"]["namespace"],
            {"devices": {"requests": [ext]}},
        )
        if not allocate(g, held, [s for s in slices if s["spec"].get("nodeName") == node], p):
            continue
        held["spec"] = {"devices": {"requests": [ext]}}
        held["metadata"]["annotations"] = {EXTENDED_ANNOTATION: "true"}
        held["metadata"]["ownerReferences"] = [_owner(p)]
        p.setdefault("status", {})["extendedResourceClaimStatus"] = {
            "requestMappings": [
                {"containerName": c0["name"], "resourceName": GPU_RESOURCE, "requestName": request}
            ],
            "resourceClaimName": held["metadata"]["name"],
        }
        claims.append(held)
        g.tag("existing:extended-resource-claim")
    return out


def _owner(pod: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
        "controller": True,
    }


def _request_name(c: Obj, resource: str) -> str:
    """``container-<i>-request-<j>`` of the claim of a pod's first container (no init
    containers): ``j`` is the resource's index among the container's sorted requests."""
    keys = sorted((c.get("resources") or {}).get("requests") or {})
    return f"container-0-request-{keys.index(resource)}"


# ---- binding conditions ------------------------------------------------------------------

BINDING_CONDITION = "attached"
BINDING_FAILURE = "attach-failed"
#: An allocation that waited longer than any bindingTimeout, and one that has not.
LONG_AGO, LATER = "2026-01-01T00:00:00Z", "2099-01-01T00:00:00Z"


def binding_conditions(g: Gen, slices: list[Obj], claims: list[Obj]) -> None:
    """DRADeviceBindingConditions (beta, on in v1.36): some devices need binding
    conditions before a pod may bind (``bindingConditions``/``bindingFailureConditions``;
    the allocator tries pools with them last) and some of the network-attached pool's bind
    to the node (``bindsToNode``: the allocation's node selector names the node). Claims
    allocated such devices carry the conditions in their results, an
    ``allocationTimestamp`` (long ago: timed out; or later) and sometimes the devices'
    status with the conditions true (ready) or the failure condition true (failed)."""
    if not slices or not g.chance(0.3):
        return
    g.tag("scenario:dra-binding-conditions")
    for s in slices:
        pooled = not s["spec"].get("nodeName")
        if not g.chance(0.5):
            continue
        for d in s["spec"]["devices"]:
            if g.chance(0.7):
                d["bindingConditions"] = [BINDING_CONDITION]
                d["bindingFailureConditions"] = [BINDING_FAILURE]
                g.tag("dra:device.bindingConditions")
            if pooled and g.chance(0.5):
                d["bindsToNode"] = True
                g.tag("dra:device.bindsToNode")
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): d
        for s in slices
        for d in s["spec"]["devices"]
    }
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation")
        if not alloc:
            continue
        statuses = []
        for r in alloc["devices"]["results"]:
            d = devices.get((r["driver"], r["pool"], r["device"]))
            if d is None or not d.get("bindingConditions"):
                continue
            r["bindingConditions"] = list(d["bindingConditions"])
            r["bindingFailureConditions"] = list(d["bindingFailureConditions"])
            outcome = g.pick(["none", "ready", "ready", "failed", "waiting"])
            g.tag(f"dra:claim.binding-{outcome}")
            if outcome == "none":
                continue
            conditions = [
                {
                    "type": BINDING_CONDITION,
                    "status": "True" if outcome == "ready" else "False",
                    "reason": "Attached" if outcome == "ready" else "Attaching",
                    "message": "",
                    "lastTransitionTime": LONG_AGO,
                }
            ]
            if outcome == "failed":
                conditions.append(
                    {
                        "type": BINDING_FAILURE,
                        "status": "True",
                        "reason": "AttachFailed",
                        "message": "fabric unreachable",
                        "lastTransitionTime": LONG_AGO,
                    }
                )
            statuses.append(
                {
                    "driver": r["driver"],
                    "pool": r["pool"],
                    "device": r["device"],
                    "conditions": conditions,
                }
            )
        if any(r.get("bindingConditions") for r in alloc["devices"]["results"]):
            alloc["allocationTimestamp"] = g.pick([LONG_AGO, LATER])
            when = "long-ago" if alloc["allocationTimestamp"] == LONG_AGO else "recently"
            g.tag(f"dra:claim.allocated-{when}")
        if statuses:
            c["status"]["devices"] = statuses

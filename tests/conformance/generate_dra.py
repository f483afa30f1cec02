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
    return [*objects, *claims]


def dra_args(g: Gen) -> Obj:
    g.tag("args:DynamicResources")
    return {
        "filterTimeout": g.pick(["0s", "10s", "30s"]),
        "bindingTimeout": g.pick(["1m0s", "10m0s"]),
    }

"""The case generator: seeded, valid for ksched's configuration loader, covering."""

from __future__ import annotations

import json
from collections import Counter

from ksched.config import load_config_bytes
from ksched.config.features import FeatureGate
from ksched.profiles import implemented_plugin_names
from tests.conformance.generate import (
    DEFAULT_PROFILE_PLUGINS,
    PLUGINS,
    Gen,
    Obj,
    PluginSpec,
    generate,
    unimplemented,
)


def test_a_case_is_a_function_of_seed_and_index() -> None:
    a, b = generate(7, 3), generate(7, 3)
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())
    assert a.features == b.features
    assert json.dumps(generate(7, 4).to_json()) != json.dumps(a.to_json())
    assert json.dumps(generate(8, 3).to_json()) != json.dumps(a.to_json())


def test_the_pod_to_schedule_is_the_last_object_and_pending() -> None:
    for i in range(50):
        case = generate(1, i)
        pod = case.objects[-1]
        assert pod["kind"] == "Pod"
        assert case.pod == f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        assert not pod["spec"].get("nodeName")


def test_configurations_load_in_ksched() -> None:
    for i in range(200):
        case = generate(2, i)
        flags = ",".join(f"{k}={str(v).lower()}" for k, v in case.gates.items())
        gates = FeatureGate.from_flags([flags] if flags else []).config_gates()
        load_config_bytes(json.dumps(case.config).encode(), f"case {i}", gates=gates)


def test_unimplemented_plugins_are_disabled_in_every_profile() -> None:
    missing = unimplemented()
    assert set(missing) == set(DEFAULT_PROFILE_PLUGINS) - implemented_plugin_names()
    for i in range(50):
        for profile in generate(3, i).config["profiles"]:
            disabled = [
                p["name"]
                for p in profile.get("plugins", {}).get("multiPoint", {}).get("disabled", [])
            ]
            assert disabled == missing


def test_every_plugin_gets_non_default_args_somewhere() -> None:
    kinds: Counter[str] = Counter()
    features: Counter[str] = Counter()
    for i in range(400):
        case = generate(4, i)
        features.update(case.features)
        for profile in case.config["profiles"]:
            for pc in profile.get("pluginConfig", []):
                kinds[pc["args"]["kind"]] += 1
    want = {
        spec.args_kind
        for spec in PLUGINS
        if spec.args_kind is not None and spec.name not in unimplemented()
    }
    assert want <= set(kinds)
    # A sample of what the docstring promises.
    for feature in (
        "pod:nodeAffinity.required.Gt",
        "pod:nodeAffinity.matchFields.In",
        "pod:toleration.effect.NoExecute",
        "pod:sidecar",
        "pod:pod-level-resources",
        "pod:hugepages",
        "pod:extended-resource",
        "pod:hostNetwork",
        "pod:spread.minDomains",
        "pod:spread.matchLabelKeys",
        "pod:podAntiAffinity.namespaceSelector",
        "pod:podAffinity.mismatchLabelKeys",
        "pod:image-volume",
        "pod:own-nomination",
        "cluster:nominated-pods",
        "node:image-sizes-differ",
        "existing:terminating",
        "scenario:preemption",
        "args:NodeResourcesFit.RequestedToCapacityRatio",
        "args:InterPodAffinity.ignorePreferredTermsOfExistingPods",
        "node:declaredFeatures",
        "pod:restartPolicyRules.RestartAllContainers",
        "args:VolumeBinding.bindTimeoutSeconds",
        "args:VolumeBinding.shape",
        "gate:StorageCapacityScoring",
        "args:DynamicResources",
        "volume:pvc.bound",
        "volume:pvc.unbound.sc-immediate",
        "volume:pvc.unbound.sc-wffc",
        "volume:pvc.missing",
        "volume:ephemeral",
        "volume:pv.nodeAffinity",
        "volume:csinode.allocatable",
        "volume:csinode.migrated-plugins",
        "volume:csistoragecapacity",
        "volume:inline.rbd",
        "volume:inline.iscsi",
        "existing:pvc",
        "dra:slices",
        "dra:request.firstAvailable",
        "dra:request.All",
        "dra:constraint.matchAttribute",
        "dra:claim.from-template",
        "dra:claim.allocated-in-use",
        "dra:extended.class",
        "dra:extended.name-conflict",
        "dra:extended.stale-claim",
        "pod:extended.implicit",
        "pod:extended.init-container",
        "pod:extended.no-user-claims",
        "existing:extended-resource-claim",
        "dra:device.bindingConditions",
        "dra:device.bindsToNode",
        "dra:claim.binding-failed",
        "dra:claim.allocated-long-ago",
        "scenario:affinity-preemption",
        "existing:podAntiAffinity.against-pod",
        "nominated:podAntiAffinity.against-pod",
        "pod:podAntiAffinity.namespaceSelector-matching-no-labels",
    ):
        assert features[feature] > 0, feature


def test_a_fork_draws_on_its_own_and_leaves_the_parent_stream_alone() -> None:
    """Parts added to the generator later draw from forks: the parent's stream, and so
    what the earlier parts drew, is the same whatever a fork draws."""
    import random

    a = Gen(random.Random("1:2"), "1:2")
    b = Gen(random.Random("1:2"), "1:2")
    fork = a.fork("extra")
    for _ in range(10):
        fork.rng.random()
    assert [a.rng.random() for _ in range(5)] == [b.rng.random() for _ in range(5)]
    assert fork.key == "1:2/extra" and fork.features is a.features
    assert a.fork("extra").rng.random() == Gen(random.Random("1:2/extra")).rng.random()


def test_a_plugin_entry_adds_its_objects_and_pod_fields_once_implemented() -> None:
    """How the volume and DRA plugins join: an entry with an ``objects`` hook."""

    def claim_objects(g: Gen, nodes: list[Obj], pod: Obj) -> list[Obj]:
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]
        g.tag("pod:pvc")
        return [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}}]

    entry = PluginSpec("VolumeBinding", objects=claim_objects)
    others = [p for p in PLUGINS if p.objects is None]
    on = generate(1, 0, missing=[], plugins=[*others, entry])
    assert "pod:pvc" in on.features
    assert [o["kind"] for o in on.objects].count("PersistentVolumeClaim") == 1
    off = generate(1, 0, missing=["VolumeBinding"], plugins=[*others, entry])
    assert "pod:pvc" not in off.features

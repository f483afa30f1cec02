"""``ksched run`` pieces that need no API server: profiles from the configuration, flag
overrides, refusals, and the graceful stop (on the embedded cluster)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from ksched import _core
from ksched.config import (
    Extender,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    load_config_bytes,
)
from ksched.options import parse, resolve_gates
from ksched.run import (
    RunError,
    check_supported,
    profiles_from_config,
    resolve_config,
    serve,
)
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def cfg(text: str = "") -> KubeSchedulerConfiguration:
    return load_config_bytes((HEAD + text).encode())


def test_default_profile_keeps_the_plugins_this_build_has_in_upstream_order() -> None:
    profiles = profiles_from_config(cfg())
    assert list(profiles) == ["default-scheduler"]
    p = profiles["default-scheduler"]
    upstream_filters = [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "NodeDeclaredFeatures",
    ]  # fmt: skip
    assert list(p.filters) == [f for f in upstream_filters if f in _core.FILTER_PLUGINS]
    # DynamicResources' Filter runs between InterPodAffinity and NodeDeclaredFeatures.
    assert p.dynamic_resources_at == len(p.filters) - 1
    weights = dict(p.scores)
    if "NodeResourcesFit" in _core.SCORE_PLUGINS:
        assert weights["NodeResourcesFit"] == 1
    if "TaintToleration" in _core.SCORE_PLUGINS:
        assert weights["TaintToleration"] == 3
    assert set(weights) <= set(_core.SCORE_PLUGINS)
    assert p.percentage_of_nodes_to_score == 0
    assert p.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"


def test_profiles_percentage_overrides_global_and_plugin_changes_apply() -> None:
    profiles = profiles_from_config(
        cfg(
            "percentageOfNodesToScore: 40\n"
            "profiles:\n"
            "- schedulerName: default-scheduler\n"
            "- schedulerName: batch-scheduler\n"
            "  percentageOfNodesToScore: 70\n"
            "  plugins:\n"
            "    score:\n"
            "      disabled: [{name: NodeResourcesFit}]\n"
            "  pluginConfig:\n"
            "  - name: NodeResourcesFit\n"
            "    args:\n"
            "      scoringStrategy: {type: MostAllocated}\n"
        )
    )
    assert profiles["default-scheduler"].percentage_of_nodes_to_score == 40
    batch = profiles["batch-scheduler"]
    assert batch.percentage_of_nodes_to_score == 70
    assert "NodeResourcesFit" not in dict(batch.scores)
    assert "NodeResourcesFit" in batch.filters
    assert batch.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"


def test_flags_override_the_file_and_unsupported_features_are_refused() -> None:
    c = resolve_config(parse(["--kubeconfig=/k"]))
    assert c.client_connection.kubeconfig == "/k"
    assert c.leader_election.leader_elect is True  # the v1 default
    check_supported(c)  # leader election is supported (ksched.leaderelection)
    c.leader_election.resource_lock = "endpointsleases"
    with pytest.raises(RunError, match="resourceLock"):
        check_supported(c)
    c = resolve_config(parse(["--leader-elect=false"]))
    check_supported(c)
    c.extenders.append(Extender(url_prefix="http://127.0.0.1:1", filter_verb="filter"))
    check_supported(c)  # extenders are supported...
    c.extenders.append(
        Extender(
            url_prefix="https://127.0.0.1:1",
            tls_config=ExtenderTLSConfig(insecure=True, ca_file="/nonexistent/ca.crt"),
        )
    )
    with pytest.raises(RunError, match="insecure flag is not allowed"):
        check_supported(c)  # ...but one whose TLS settings cannot be loaded stops the run


def test_storage_capacity_scoring_gate_gives_volume_binding_its_shape() -> None:
    # Off (v1.36's default): no shape, so VolumeBinding does not score.
    opts = parse([])
    gate = resolve_gates(opts)
    args = profiles_from_config(resolve_config(opts, gate), gate.config_gates())
    assert not args["default-scheduler"].plugin_args["VolumeBinding"].get("shape")
    opts = parse(["--feature-gates=StorageCapacityScoring=true"])
    gate = resolve_gates(opts)
    on = profiles_from_config(resolve_config(opts, gate), gate.config_gates())
    # upstream SetDefaults_VolumeBindingArgs: the emptiest node first.
    assert on["default-scheduler"].plugin_args["VolumeBinding"]["shape"] == [
        {"utilization": 0, "score": 10},
        {"utilization": 100, "score": 0},
    ]


async def test_stop_finishes_bindings_in_flight_and_takes_no_new_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ksched.scheduler.UNCLAIMED_AFTER", 0.0)
    gate = asyncio.Event()
    cluster = InMemoryCluster(bind_gate=gate)
    cluster.create("nodes", make_node("n1"))
    config = cfg(
        "leaderElection: {leaderElect: false}\n"
        "profiles:\n- schedulerName: default-scheduler\n- schedulerName: other\n"
    )
    registry = CollectorRegistry()
    stop = asyncio.Event()
    started = asyncio.Event()
    task = asyncio.get_running_loop().create_task(
        serve(config, cluster, stop=stop, registry=registry, on_started=lambda s: started.set())
    )
    await asyncio.wait_for(started.wait(), 5)
    for i in range(5):
        cluster.create("pods", make_pod(f"p{i}"))
    cluster.create("pods", make_pod("x", scheduler_name="nobody"))
    while cluster.bind_calls < 5:  # all five bindings are waiting on the API
        await asyncio.sleep(0.005)
    text = generate_latest(registry).decode()
    assert 'ksched_unclaimed_pods{scheduler_name="nobody"} 1.0' in text
    stop.set()
    await asyncio.sleep(0.05)
    cluster.create("pods", make_pod("late"))
    assert not task.done()  # waiting for the bindings
    gate.set()
    sched = await asyncio.wait_for(task, 5)
    bound = {p["metadata"]["name"] for p in cluster.objects("pods") if p["spec"].get("nodeName")}
    assert bound == {f"p{i}" for i in range(5)}
    assert sched.stats.bound == 5
    assert "ksched_unclaimed_pods" not in generate_latest(registry).decode()  # unregistered

"""``ksched replay`` of a recording with volumes, claims and a pod group: pods with
unbound claims bind where their volume is (the embedded PV controller finishes what
VolumeBinding starts), claims get their node's devices, and ``--feature-gates`` decides
whether the pod group is a gang (all or nothing) or plain pods."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ksched import cli, replay
from ksched.recording import Recording
from ksched.testing import (
    device_class,
    node,
    persistent_volume,
    persistent_volume_claim,
    pod,
    pod_group,
    resource_claim,
    resource_slice,
    storage_class,
)
from ksched.testing.scheduler import feature_gates_of

GANG_GATES = "GenericWorkload=true,GangScheduling=true"


def recording() -> Recording:
    """n0, n1, n2 with 2 cpu each; a local volume on n1, a GPU on n2, and three 800m
    members of a gang of three that select n0's pool (two of them fit there)."""
    return Recording(
        objects={
            "nodes": [
                node("n0", cpu="2", labels={"pool": "gang"}),
                *(node(f"n{i}", cpu="2") for i in (1, 2)),
            ],
            "storageclasses": [storage_class("local")],
            "persistentvolumes": [persistent_volume("pv-n1", storage_class="local", node="n1")],
            "persistentvolumeclaims": [persistent_volume_claim("data", storage_class="local")],
            "deviceclasses": [device_class("gpu", driver="gpu.example.com")],
            "resourceslices": [resource_slice("n2", driver="gpu.example.com")],
            "resourceclaims": [resource_claim("gpu", device_class="gpu")],
            "podgroups": [pod_group("gang", min_count=3)],
            "pods": [
                pod("p-volume", cpu="100m", claims=["data"]),
                pod("p-gpu", cpu="100m", resource_claims=["gpu"]),
                *(
                    pod(
                        f"member-{i}",
                        cpu="800m",
                        pod_group="gang",
                        spec={"nodeSelector": {"pool": "gang"}},
                    )
                    for i in range(3)
                ),
            ],
        },
        duration=1.0,
    )


@pytest.mark.parametrize(
    ("gates", "members_placed"),
    [pytest.param("", 2, id="plain-pods"), pytest.param(GANG_GATES, 0, id="gang")],
)
def test_volumes_claims_and_a_pod_group_replay(gates: str, members_placed: int) -> None:
    cfg = replay.default_replay_config(feature_gates_of(gates))
    (r,) = replay.run(recording(), [cfg], seed=1, timeout=60)
    assert r.placements["default/p-volume"] == "n1"
    assert r.placements["default/p-gpu"] == "n2"
    members = [p for p in r.placements if p.startswith("default/member-")]
    assert len(members) == members_placed


def test_the_command_takes_feature_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.json"
    recording().save(path)
    out = tmp_path / "out.json"
    argv = ["replay", str(path), "--feature-gates", GANG_GATES, "--json", str(out)]
    assert cli.main(argv) == 1  # the gang stays unschedulable
    doc = orjson.loads(out.read_bytes())
    (result,) = doc["results"]
    placed = set(result["placements"])
    assert {"default/p-volume", "default/p-gpu"} <= placed
    assert not any(p.startswith("default/member-") for p in placed)
    assert cli.main(["replay", str(path), "--feature-gates", "GangScheduling=true"]) == 2
    assert (
        "GangScheduling is enabled, but depends on features that are disabled"
        in capsys.readouterr().err
    )

"""The snapshot's per-node attachment counts (NodeVolumeLimits) stay equal to a
recount from scratch through any sequence of pod adds, removes, assumes and claim
volume changes: random sequences, each checked against a fresh snapshot built from the
final state."""

from __future__ import annotations

import random

import pytest

from ksched._core import CompiledPod, NodeVolumeLimitsRequest, Profile, Snapshot

DRIVER = "ebs.csi.aws.com"
NODES = ["n0", "n1", "n2"]
CLAIMS = [f"c{i}" for i in range(6)]
PROFILE = Profile(["NodeVolumeLimits"], [])


def pod(uid: str, claims: list[str], inline: list[str]) -> CompiledPod:
    return CompiledPod(
        uid,
        "default",
        uid,
        requests={},
        non_zero_cpu=0,
        non_zero_memory=0,
        volumes={
            "claims": claims,
            "limit_claims": claims,
            "disks": [],
            "inline": [(DRIVER, h) for h in inline],
        },
    )


def fresh(
    pods: dict[str, tuple[CompiledPod, str]], volumes: dict[str, str | None], limit: int
) -> Snapshot:
    snap = Snapshot(0)
    for n in NODES:
        snap.upsert_node(n, {"cpu": 1000, "memory": 1 << 30, "pods": 100}, {}, [], False)
        snap.set_csi_node(n, [(DRIVER, limit)])
    for claim, handle in volumes.items():
        snap.set_claim_volume(f"default/{claim}", None if handle is None else (DRIVER, handle))
    for p, node in pods.values():
        snap.add_pod(p, node)
    return snap


def verdicts(snap: Snapshot, handles: list[str]) -> dict[str, bool]:
    incoming = CompiledPod(
        "incoming", "default", "incoming", requests={}, non_zero_cpu=0, non_zero_memory=0
    ).with_requests([NodeVolumeLimitsRequest([(DRIVER, h) for h in handles])])
    return {row["node"]: row["status"] is None for row in snap.explain(incoming, PROFILE)}


@pytest.mark.parametrize("seed", range(12))
def test_attachment_counts_match_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.randint(1, 4)
    snap = fresh({}, {}, limit)
    pods: dict[str, tuple[CompiledPod, str]] = {}
    volumes: dict[str, str | None] = {}
    for step in range(60):
        op = rng.random()
        if op < 0.4:
            uid = f"p{step}"
            p = pod(
                uid,
                rng.sample(CLAIMS, rng.randint(0, 2)),
                [f"i{rng.randint(0, 3)}"] * rng.randint(0, 1),
            )
            node = rng.choice(NODES)
            (snap.assume if rng.random() < 0.3 else snap.add_pod)(p, node)
            pods[uid] = (p, node)
        elif op < 0.6 and pods:
            uid = rng.choice(sorted(pods))
            assert snap.remove_pod(uid)
            del pods[uid]
        else:
            claim = rng.choice(CLAIMS)
            # Two claims may share a handle: a volume is counted once per node.
            handle = None if rng.random() < 0.25 else f"h{rng.randint(0, 4)}"
            snap.set_claim_volume(f"default/{claim}", None if handle is None else (DRIVER, handle))
            volumes[claim] = handle
        wanted = [f"h{rng.randint(0, 4)}" for _ in range(rng.randint(1, 2))]
        assert verdicts(snap, wanted) == verdicts(fresh(pods, volumes, limit), wanted), step

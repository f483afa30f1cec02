"""My scheduling policy, tested: web pods spread over zones, databases one per node,
batch jobs packed — on a 30-node cluster, with my KubeSchedulerConfiguration."""

from ksched.testing import (
    assert_no_affinity_violations,
    assert_pods_per_node,
    assert_spread_skew,
    assert_unschedulable_count,
    pod,
)

CONFIG = {
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {
            "schedulerName": "batch",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}},
                }
            ],
        },
    ]
}
ZONE = "topology.kubernetes.io/zone"
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
}
ONE_PER_NODE = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}


def test_my_policy(ksched_cluster, ksched_scheduler):
    ksched_cluster.add_nodes(30, zones=["eu-1a", "eu-1b", "eu-1c"], cpu="8", memory="32Gi")
    sched = ksched_scheduler(CONFIG)

    out = sched.schedule(
        [pod(f"web-{i}", labels={"app": "web"}, spec=SPREAD) for i in range(60)]
        + [pod(f"db-{i}", labels={"app": "db"}, cpu="2", spec=ONE_PER_NODE) for i in range(10)]
        + [pod(f"job-{i}", cpu="1", scheduler_name="batch") for i in range(16)]
    )

    assert_unschedulable_count(out, 0)
    assert_spread_skew(out, ZONE, max_skew=1, selector={"app": "web"})
    assert_pods_per_node(out, selector={"app": "db"}, max=1)
    assert_no_affinity_violations(out)
    jobs = {out[f"job-{i}"] for i in range(16)}
    assert len(jobs) <= 4, f"batch jobs should be packed, got {sorted(jobs)}"


def test_why_a_pod_would_not_fit(ksched_cluster, ksched_scheduler):
    ksched_cluster.add_nodes(3, cpu="4")
    expl = ksched_scheduler(CONFIG).explain(pod("big", cpu="6"))
    assert expl.chosen is None
    assert expl.failed_scheduling.startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert all(v.plugin == "NodeResourcesFit" for v in expl.nodes)


def test_throughput(ksched_benchmark):
    result = ksched_benchmark("basic", config=CONFIG, nodes=500, pods=1000, rounds=2)
    assert result.placed == 1000

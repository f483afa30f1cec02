"""More of what a platform team checks: a cluster built from YAML, taints and
tolerations, preemption of low-priority pods, per-node utilization, the explanation of
one node, a cluster generated from a benchmark workload, and a test against a real
kube-apiserver with ksched itself running as the scheduler."""

import os
import subprocess
import sys
import time

import pytest

from ksched.testing import (
    Cluster,
    assert_unschedulable_count,
    assert_utilization,
    node,
    pod,
)

NODES_YAML = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  labels: {kubernetes.io/hostname: gpu-0, pool: gpu}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "4"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "4"}
  conditions: [{type: Ready, status: "True"}]
"""
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_taints_keep_general_pods_off_gpu_nodes(ksched_cluster, ksched_scheduler):
    ksched_cluster.add_yaml(NODES_YAML)
    ksched_cluster.add_nodes(2, name="general-{i}", cpu="4")
    sched = ksched_scheduler()
    out = sched.schedule(
        [pod(f"app-{i}") for i in range(6)]
        + [
            pod(
                "trainer",
                requests={"nvidia.com/gpu": "2"},
                spec={"tolerations": GPU_TOLERATION},
            )
        ]
    )
    assert out["trainer"] == "gpu-0"
    assert all(out[f"app-{i}"].startswith("general-") for i in range(6))
    why = sched.explain(pod("app-x"), all_nodes=True).node("gpu-0")
    assert why.plugin == "TaintToleration"
    # kube-scheduler v1.36's reason (it no longer names the taint).
    assert why.reason == "node(s) had untolerated taint(s)"


def test_high_priority_pods_preempt(ksched_cluster, ksched_scheduler):
    ksched_cluster.add_nodes(2, cpu="2")
    for i in range(2):
        ksched_cluster.add_pod(f"low-{i}", cpu="1500m", priority=0, node_name=f"node-{i}")
    out = ksched_scheduler().schedule(pod("urgent", cpu="1500m", priority=1000))
    assert_unschedulable_count(out, 0)
    assert len(out.evicted) == 1 and out.evicted[0].startswith("default/low-")
    assert_utilization(out, "cpu", max=0.8)


def test_a_generated_cluster():
    cluster = Cluster.from_workload("scheduling-basic", scale=0.02)
    assert len(cluster.nodes()) == 100
    assert len(cluster.workload_pods) == 200


def test_an_extra_node_object():
    n = node("big", cpu="64", memory="256Gi", labels={"pool": "big"})
    assert n["status"]["allocatable"]["cpu"] == "64"


@pytest.mark.skipif(
    not os.environ.get("KSCHED_CONTROLPLANE_BIN_DIR"),
    reason="needs the test control plane binaries (KSCHED_CONTROLPLANE_BIN_DIR)",
)
def test_ksched_binds_on_a_real_apiserver(ksched_control_plane, tmp_path):
    cp = ksched_control_plane
    cp.create_node(node("real-0"))
    status, body = cp.request("POST", "/api/v1/namespaces/default/pods", pod("e2e"))
    assert status == 201, body
    ksched = os.path.join(os.path.dirname(sys.executable), "ksched")
    proc = subprocess.Popen(
        [ksched, "run", "--kubeconfig", str(cp.kubeconfig), "--leader-elect=false",
         "--secure-port=0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, obj = cp.request("GET", "/api/v1/namespaces/default/pods/e2e")
            if obj["spec"].get("nodeName"):
                break
            time.sleep(0.2)
        assert obj["spec"].get("nodeName") == "real-0"
    finally:
        proc.terminate()
        proc.wait(30)
        cp.request("DELETE", "/api/v1/namespaces/default/pods/e2e")
        cp.request("DELETE", "/api/v1/nodes/real-0")

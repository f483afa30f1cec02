"""The workload kinds in ``ksched.cluster``: URLs, event resources, embedded cluster."""

from __future__ import annotations

import pytest

from ksched.backend.shared_informers import kind_of_resource
from ksched.client.api import object_path
from ksched.cluster import Kind
from ksched.sim import InMemoryCluster


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("podgroups", "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups/g"),
        (
            "podgroups.scheduling.x-k8s.io",
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/g",
        ),
        (
            "elasticquotas.scheduling.x-k8s.io",
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/elasticquotas/g",
        ),
    ],
)
def test_group_qualified_kinds_build_their_resource_urls(kind: Kind, path: str) -> None:
    assert object_path(kind, "ns", "g") == path
    assert object_path(kind, "ns", "g", "status") == path + "/status"


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("scheduling.k8s.io/PodGroup", "podgroups"),
        ("podgroups.v1alpha1.scheduling.x-k8s.io", "podgroups.scheduling.x-k8s.io"),
        ("elasticquotas.v1alpha1.scheduling.x-k8s.io", "elasticquotas.scheduling.x-k8s.io"),
    ],
)
def test_event_resources_name_the_right_informer(resource: str, kind: str) -> None:
    assert kind_of_resource(resource) == kind


async def test_embedded_cluster_keeps_status_of_podgroups_on_replace() -> None:
    c = InMemoryCluster()
    stored = c.create(
        "podgroups",
        {
            "metadata": {"namespace": "ns", "name": "g"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True"}]},
        },
    )
    replaced = await c.update_object(kind="podgroups", obj={**stored, "status": {}})
    assert replaced["status"]["conditions"][0]["status"] == "True"

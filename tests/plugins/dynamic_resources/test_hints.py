"""DynamicResources' queueing hints: upstream's ``TestIsSchedulableAfterClaimChange``
and ``TestIsSchedulableAfterPodChange`` tables, ported (the cases that feed objects of
the wrong type are left out: ksched's informers hand hints the API's dicts, and a hint
that raises counts as Queue)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import QueueingHint
from ksched.plugins.dynamic_resources import DynamicResources

Obj = dict[str, Any]
CLAIM_NAME = "my-pod-my-resource"
POD_UID = "1234"


def _pod(claims: list[Obj], statuses: list[Obj] | None = None, uid: str = POD_UID) -> Pod:
    obj: Obj = {
        "metadata": {"name": "my-pod", "namespace": "default", "uid": uid, "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
        "status": {"resourceClaimStatuses": statuses} if statuses else {},
    }
    return Pod.from_dict(obj)


TEMPLATE = [{"name": "my-resource", "resourceClaimTemplateName": "my-template"}]
IN_STATUS = [{"name": "my-resource", "resourceClaimName": CLAIM_NAME}]
pod_with_claim_template = _pod(TEMPLATE)
pod_with_claim_template_in_status = _pod(TEMPLATE, IN_STATUS)
pod_with_claim_name = _pod([{"name": "my-resource", "resourceClaimName": CLAIM_NAME}])
pod_with_two_claim_templates = _pod(
    [*TEMPLATE, {"name": "my-resource-2", "resourceClaimTemplateName": "my-template"}]
)

pending_claim: Obj = {
    "metadata": {
        "name": CLAIM_NAME,
        "namespace": "default",
        "uid": "claim-uid",
        "resourceVersion": "1",
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "my-pod",
                "uid": POD_UID,
                "controller": True,
            }
        ],
    },
    "spec": {
        "devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": "my-class"}}]}
    },
}
allocated_claim: Obj = {
    **pending_claim,
    "status": {
        "allocation": {
            "devices": {
                "results": [{"request": "req-1", "driver": "d", "pool": "p", "device": "x"}]
            }
        }
    },
}
other_allocated_claim: Obj = copy.deepcopy(allocated_claim)
other_allocated_claim["metadata"].update(name=CLAIM_NAME + "-other", uid="claim-uid-other")


def _with(obj: Obj, **changes: Any) -> Obj:
    out = copy.deepcopy(obj)
    for path, value in changes.items():
        target = out
        *parents, last = path.split("__")
        for p in parents:
            target = target.setdefault(p, {})
        target[last] = value
    return out


def _wrong_owner() -> Obj:
    claim = copy.deepcopy(allocated_claim)
    claim["metadata"]["ownerReferences"][0]["uid"] += "123"
    return claim


def _unrelated() -> Obj:
    claim = copy.deepcopy(allocated_claim)
    claim["metadata"]["name"] += "-foo"
    claim["metadata"]["uid"] += "123"
    return claim


def _deallocated() -> Obj:
    claim = copy.deepcopy(other_allocated_claim)
    claim["status"]["allocation"] = None
    return claim


CLAIM_CASES: list[tuple[str, Pod, list[Obj], Obj | None, Obj | None, QueueingHint]] = [
    ("skip-deletes", pod_with_claim_template, [], allocated_claim, None, QueueingHint.QUEUE_SKIP),
    (
        "skip-wrong-claim",
        pod_with_claim_template,
        [],
        None,
        _wrong_owner(),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-claim",
        pod_with_claim_template,
        [allocated_claim],
        None,
        _unrelated(),
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-on-add", pod_with_claim_name, [pending_claim], None, pending_claim, QueueingHint.QUEUE),
    (
        "skip-adding-finalizer",
        pod_with_claim_name,
        [pending_claim],
        pending_claim,
        _with(pending_claim, metadata__finalizers=["foo"]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-status-change",
        pod_with_claim_name,
        [pending_claim],
        pending_claim,
        _with(pending_claim, status__allocation={"devices": {"results": []}}),
        QueueingHint.QUEUE,
    ),
    (
        "claim-deallocate",
        pod_with_claim_name,
        [pending_claim, other_allocated_claim],
        other_allocated_claim,
        _deallocated(),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "claims", "old", "new", "want"), CLAIM_CASES, ids=[c[0] for c in CLAIM_CASES]
)
def test_is_schedulable_after_claim_change(
    name: str, pod: Pod, claims: list[Obj], old: Obj | None, new: Obj | None, want: QueueingHint
) -> None:
    pl = DynamicResources()
    for c in claims:
        pl.tracker.on_add(c)
    if new is not None:
        # As upstream's test: the informer has delivered the change before the hint runs.
        pl.tracker.on_add(_with(new, metadata__resourceVersion="2"))
    assert pl.is_schedulable_after_claim_change(pod, old, new) is want


def _incomplete() -> Pod:
    return _pod(
        [*TEMPLATE, {"name": "my-resource-2", "resourceClaimTemplateName": "my-template"}],
        [{"name": "my-resource", "resourceClaimName": CLAIM_NAME}],
    )


POD_CASES: list[tuple[str, list[Obj], Pod, Pod, QueueingHint]] = [
    (
        "complete",
        [pending_claim],
        pod_with_claim_template,
        pod_with_claim_template_in_status,
        QueueingHint.QUEUE,
    ),
    (
        "wrong-pod",
        [pending_claim],
        _pod(TEMPLATE, uid=POD_UID + "2"),
        pod_with_claim_template_in_status,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "missing-claim",
        [],
        pod_with_claim_template,
        pod_with_claim_template_in_status,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "incomplete",
        [pending_claim],
        pod_with_two_claim_templates,
        _incomplete(),
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "claims", "pod", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES]
)
def test_is_schedulable_after_pod_change(
    name: str, claims: list[Obj], pod: Pod, new: Pod, want: QueueingHint
) -> None:
    pl = DynamicResources()
    for c in claims:
        pl.tracker.on_add(c)
    assert pl.is_schedulable_after_pod_change(pod, None, new) is want

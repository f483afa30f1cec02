"""Listers of the workload objects (PodGroups, ElasticQuotas) over shared informers.

Upstream's plugins read PodGroups and ElasticQuotas through generated listers or a
controller-runtime cached client; here each kind has one shared informer
(:meth:`ksched.framework.interface.Handle.informer`) and a lister parses its objects on
first read after a change (keyed by ``resourceVersion``), so an extension point that
reads a group on every pod never parses it twice. A malformed object is logged once
per version and reads as absent, so the scheduler keeps serving every other group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ksched.api.errors import InvalidObjectError
from ksched.api.workloads import CoschedulingPodGroup, ElasticQuota, PodGroup
from ksched.backend.shared_informers import SharedInformer

log = logging.getLogger(__name__)

__all__ = ["Lister", "coscheduling_pod_groups", "elastic_quotas", "pod_groups"]

T = TypeVar("T")


class Lister(Generic[T]):
    """Parsed objects of one shared informer, by ``namespace/name``."""

    def __init__(self, informer: SharedInformer, parse: Callable[[dict[str, object]], T]) -> None:
        self.informer = informer
        self._parse = parse
        #: key → (resourceVersion, parsed object or None when invalid).
        self._cache: dict[str, tuple[str, T | None]] = {}

    def get(self, namespace: str, name: str) -> T | None:
        """The object, or None when absent or invalid."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self.informer.store.get(key)
        if obj is None:
            self._cache.pop(key, None)
            return None
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        hit = self._cache.get(key)
        if hit is not None and hit[0] == rv and rv:
            return hit[1]
        try:
            parsed: T | None = self._parse(obj)
        except InvalidObjectError as exc:
            log.error("ignoring invalid object: %s", exc)
            parsed = None
        self._cache[key] = (rv, parsed)
        return parsed

    def list(self, namespace: str | None = None) -> Iterator[T]:
        """Every valid object (of ``namespace`` when given)."""
        for key in list(self.informer.store):
            ns, _, name = key.rpartition("/")
            if namespace is not None and ns != namespace:
                continue
            obj = self.get(ns, name)
            if obj is not None:
                yield obj


def pod_groups(informer: SharedInformer) -> Lister[PodGroup]:
    """``scheduling.k8s.io/v1alpha2`` PodGroups."""
    return Lister(informer, PodGroup.from_dict)


def coscheduling_pod_groups(informer: SharedInformer) -> Lister[CoschedulingPodGroup]:
    """``scheduling.x-k8s.io/v1alpha1`` PodGroups."""
    return Lister(informer, CoschedulingPodGroup.from_dict)


def elastic_quotas(informer: SharedInformer) -> Lister[ElasticQuota]:
    """``scheduling.x-k8s.io/v1alpha1`` ElasticQuotas."""
    return Lister(informer, ElasticQuota.from_dict)

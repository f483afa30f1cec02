"""The scheduler: informers feed the cache and the queue; one loop schedules pods.

One asyncio event loop runs everything. Informer events are applied to the cache and
the queue between scheduling cycles, so a cycle sees one consistent snapshot. A cycle is
synchronous and short (:mod:`ksched.schedule_one`): pop a pod, one call into Rust,
assume the result, spawn the binding task. Bindings run concurrently; the loop never
waits for the API server.

Pods are claimed by ``spec.schedulerName``: a pod whose name matches a profile is
scheduled with that profile; any other pending pod is left alone (another scheduler's),
but counted per name so that a typo is visible.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ksched.api.errors import InvalidObjectError
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.cache import Cache
from ksched.backend.queue import SchedulingQueue
from ksched.client.informer import Informer
from ksched.cluster import ClusterAPI
from ksched.events import EventRecorder
from ksched.framework.profile import Profile
from ksched.schedule_one import Binder, SchedulingStats, schedule_one

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _scheduling_relevant_change(old: Obj, new: Obj) -> bool:
    """Whether anything but status and bookkeeping metadata changed."""
    if old.get("spec") != new.get("spec"):
        return True
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return any(
        om.get(f) != nm.get(f) for f in ("labels", "annotations", "deletionTimestamp", "uid")
    )


class Scheduler:
    """Schedules the pods of its profiles on the cluster behind ``api``."""

    def __init__(
        self,
        api: ClusterAPI,
        profiles: Mapping[str, Profile],
        *,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        seed: int | None = None,
        identity: str | None = None,
    ) -> None:
        if not profiles:
            raise ValueError("at least one profile is required")
        self.api = api
        self.profiles = dict(profiles)
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.cache = Cache(seed=seed)
        self.queue = SchedulingQueue(
            initial_backoff=pod_initial_backoff, max_backoff=pod_max_backoff
        )
        self.recorder = EventRecorder(api, instance=self.identity)
        self.stats = SchedulingStats()
        self.binder = Binder(self)
        #: Pending pods that no profile of ours handles: uid → schedulerName.
        self._unclaimed: dict[str, str] = {}
        self._unclaimed_warned: set[str] = set()
        #: Objects the informers could not parse, by "Kind ns/name" → message.
        self.invalid_objects: dict[str, str] = {}
        self.node_informer = Informer(
            api,
            "nodes",
            on_add=self._node_added,
            on_update=self._node_updated,
            on_delete=self._node_deleted,
        )
        self.pod_informer = Informer(
            api,
            "pods",
            on_add=self._pod_added,
            on_update=self._pod_updated,
            on_delete=self._pod_deleted,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self.synced = asyncio.Event()

    def unclaimed_pods(self) -> Counter[str]:
        """Pending pods per schedulerName that no profile of this scheduler handles."""
        return Counter(self._unclaimed.values())

    def handles(self, scheduler_name: str) -> bool:
        """Whether a profile of this scheduler claims pods with this schedulerName."""
        return scheduler_name in self.profiles

    # ---- informer handlers ---------------------------------------------------------

    def _invalid(self, exc: InvalidObjectError) -> None:
        key = f"{exc.kind} {exc.name}"
        if key not in self.invalid_objects:
            log.error("skipping invalid object: %s", exc)
        self.invalid_objects[key] = str(exc)

    def _parse_node(self, obj: Obj) -> Node | None:
        try:
            return Node.from_dict(obj)
        except InvalidObjectError as exc:
            self._invalid(exc)
            return None

    def _parse_pod(self, obj: Obj) -> Pod | None:
        try:
            return Pod.from_dict(obj)
        except InvalidObjectError as exc:
            self._invalid(exc)
            return None

    def _node_added(self, obj: Obj) -> None:
        node = self._parse_node(obj)
        if node is None:
            return
        self.invalid_objects.pop(f"Node {node.name}", None)
        self.cache.upsert_node(node)
        self.queue.move_all_to_active_or_backoff()

    def _node_updated(self, old: Obj, new: Obj) -> None:
        self._node_added(new)

    def _node_deleted(self, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(name, str):
            self.cache.remove_node(name)

    def _pod_added(self, obj: Obj) -> None:
        pod = self._parse_pod(obj)
        if pod is None:
            return
        self.invalid_objects.pop(f"Pod {pod.key}", None)
        self._unclaimed.pop(pod.uid, None)
        if pod.is_assigned:
            if pod.is_terminal:
                # A finished pod no longer holds resources on its node.
                if self.cache.remove_pod(pod.uid):
                    self.queue.move_all_to_active_or_backoff()
                return
            self.queue.delete(pod.uid)
            self.cache.add_pod(pod)
            return
        if pod.is_terminal:
            self.queue.delete(pod.uid)
            return
        if self.handles(pod.scheduler_name):
            self.queue.add(pod)
        else:
            self._unclaimed[pod.uid] = pod.scheduler_name
            if pod.scheduler_name not in self._unclaimed_warned:
                self._unclaimed_warned.add(pod.scheduler_name)
                log.warning(
                    "pod %s names schedulerName %r, which no profile of this scheduler "
                    "handles; leaving it to another scheduler",
                    pod.key,
                    pod.scheduler_name,
                )

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if not (new.get("spec") or {}).get("nodeName") and not _scheduling_relevant_change(
            old, new
        ):
            # A status-only update of a pending pod (e.g. our own PodScheduled=False
            # condition) must not retry it, as upstream's isPodUpdated ignores it.
            return
        self._pod_added(new)

    def _pod_deleted(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = str(meta.get("uid") or "")
        self._unclaimed.pop(uid, None)
        if spec.get("nodeName"):
            if self.cache.remove_pod(uid):
                self.queue.move_all_to_active_or_backoff()
        else:
            self.queue.delete(uid)

    # ---- running -------------------------------------------------------------------

    async def start(self) -> None:
        """Start the informers and wait until both caches are synced."""
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self.node_informer.run()))
        await self.node_informer.synced.wait()
        self._tasks.append(loop.create_task(self.pod_informer.run()))
        await self.pod_informer.synced.wait()
        self._tasks.append(loop.create_task(self.queue.run_flushers()))
        self.synced.set()

    async def run(self) -> None:
        """Schedule until :meth:`stop`. Starts the informers first if needed."""
        if not self.synced.is_set():
            await self.start()
        queue = self.queue
        while not self._stopping.is_set():
            info = queue.try_pop()
            if info is None:
                info = await queue.pop()
                if info is None:
                    break
            schedule_one(self, info)
            # Let informers and binding tasks run between cycles.
            await asyncio.sleep(0)

    def stop(self) -> None:
        """Stop taking pods; in-flight bindings finish (see :meth:`shutdown`)."""
        self._stopping.set()
        self.queue.close()

    async def shutdown(self) -> None:
        """Stop, wait for in-flight bindings and events, and stop the informers."""
        self.stop()
        await self.binder.drain()
        await self.recorder.drain()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

"""The bare binder: the end-to-end limit of a scheduler on one machine.

``python -m ksched.bench.barebinder --kubeconfig K --namespace NS --node-selector S
--ready-file R`` lists the nodes (``--node-selector``, a label selector) and then binds
every pending pod of ``NS`` that names the default scheduler, round-robin over the
nodes, as fast as the apiserver takes the bindings: the pods it lists first, then the
ones its watch reports. It decides nothing (no filter, no score, no cache, no events,
no status patches) and holds ``--concurrency`` bindings in flight through ksched's own
REST client (:mod:`ksched.client.rest`, the same HTTP as ksched's bindings), so its
throughput is what the apiserver, etcd and the client's HTTP allow on this machine. The
benchmark (``ksched bench --against bare-binder``) reports ksched's throughput as a
fraction of it.

The ready file is written once the node list and the first pod list are in and the
watch is open (the moment a scheduler's informers have synced). ``SIGTERM`` stops it
after the bindings in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ksched import aio
from ksched.client.kubeconfig import load_client_config
from ksched.client.rest import RestClient
from ksched.client.watching import watch
from ksched.cluster import APIError, Conflict, Gone, NotFound

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_CONCURRENCY = 32
_SCHEDULER_NAME = "default-scheduler"


class BareBinder:
    """Binds pending pods of one namespace round-robin over a fixed list of nodes."""

    def __init__(
        self, rest: RestClient, namespace: str, *, concurrency: int = DEFAULT_CONCURRENCY
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.concurrency = concurrency
        self.nodes: list[str] = []
        self.bound = 0
        self.errors = 0
        self._pending: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._seen: set[str] = set()
        self._pods_path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods"

    async def _list(self, path: str, params: dict[str, str]) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        cont = ""
        rv = ""
        while True:
            q = {**params, "limit": "1000", **({"continue": cont} if cont else {})}
            page = await self.rest.request_json("GET", path, params=q)
            meta = page.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or ())
            cont = str(meta.get("continue") or "")
            if not cont:
                return items, rv

    def _offer(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        uid = str(meta.get("uid") or "")
        if (
            not uid
            or uid in self._seen
            or spec.get("nodeName")
            or (spec.get("schedulerName") or _SCHEDULER_NAME) != _SCHEDULER_NAME
            or meta.get("deletionTimestamp")
        ):
            return
        self._seen.add(uid)
        self._pending.put_nowait((str(meta.get("name")), uid))

    async def start(self, node_selector: str) -> str:
        """List the nodes and the pending pods; the resource version to watch from."""
        nodes, _ = await self._list("/api/v1/nodes", {"labelSelector": node_selector})
        self.nodes = sorted(str(n["metadata"]["name"]) for n in nodes)
        if not self.nodes:
            raise RuntimeError(f"no node matches {node_selector!r}")
        pods, rv = await self._list(self._pods_path, {"fieldSelector": "spec.nodeName="})
        for p in pods:
            self._offer(p)
        return rv

    async def watch_pods(self, rv: str, opened: asyncio.Event) -> None:
        params = {"fieldSelector": "spec.nodeName="}
        while True:
            try:
                stream = watch(self.rest, self._pods_path, resource_version=rv, params=params)
                opened.set()
                async for ev in stream:
                    meta = ev.object.get("metadata") or {}
                    rv = str(meta.get("resourceVersion") or rv)
                    if ev.type in ("ADDED", "MODIFIED"):
                        self._offer(ev.object)
            except Gone:
                pods, rv = await self._list(self._pods_path, params)
                for p in pods:
                    self._offer(p)
            except (APIError, TimeoutError, OSError) as exc:
                log.warning("watch failed: %s; retrying", exc)
                await asyncio.sleep(0.1)

    async def _bind(self, name: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": self.namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"{self._pods_path}/{quote(name, safe='')}/binding"
        try:
            await self.rest.request("POST", path, json_body=body)
            self.bound += 1
        except (Conflict, NotFound):
            pass  # bound or deleted meanwhile
        except (APIError, TimeoutError, OSError) as exc:
            self.errors += 1
            log.warning("binding %s failed: %s", name, exc)

    async def bind_forever(self) -> None:
        """``concurrency`` workers, each binding the next pending pod to the next node."""
        nodes = itertools.cycle(self.nodes)

        async def worker() -> None:
            while True:
                name, uid = await self._pending.get()
                await self._bind(name, uid, next(nodes))

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))


async def _main(args: argparse.Namespace) -> int:
    config = load_client_config(kubeconfig=args.kubeconfig, qps=-1, burst=1)
    rest = RestClient(config, max_connections=args.concurrency)
    binder = BareBinder(rest, args.namespace, concurrency=args.concurrency)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        rv = await binder.start(args.node_selector)
        opened = asyncio.Event()
        tasks = [
            loop.create_task(binder.watch_pods(rv, opened)),
            loop.create_task(binder.bind_forever()),
        ]
        await opened.wait()
        if args.ready_file:
            tmp = Path(args.ready_file + ".tmp")
            tmp.write_text(f"{os.getpid()}\n")
            os.replace(tmp, args.ready_file)
        await stop.wait()
        for t in tasks:
            t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await rest.close()
    log.info("bound %d pods (%d errors)", binder.bound, binder.errors)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ksched.bench.barebinder")
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True, help="the namespace whose pods are bound")
    p.add_argument("--node-selector", required=True, help="label selector of the nodes")
    p.add_argument("--ready-file", default=None)
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return aio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())

"""``ksched explain``: why a pod is pending, why not node X, and where a pod that does
not exist yet would go.

::

    ksched explain NAMESPACE/POD [--node X] [--output json] [--all-nodes]
    ksched explain -f pod.yaml            # a Pod, or a Deployment's (any controller's) template
    ksched explain -f pod.yaml --cluster cluster.json.zst     # against a recording

The cluster is read through the read-only client (:mod:`ksched.readonly`): the command
starts the scheduler's informers exactly as ``ksched run`` would with the same
``--config`` (profiles, out-of-tree plugins, extenders), lets them sync, runs one
attempt per pod with :func:`ksched.explain.explain_pod`, and stops. A pod that is bound
already is explained as if it were pending now (its own resources taken off its node).

A pod from a manifest gets what the API server's admission would give it: the
namespace (``-n``, else the manifest's, else ``default``), ``schedulerName``
``default-scheduler``, the priority of its ``priorityClassName`` (or of the
``globalDefault`` PriorityClass), and DefaultTolerationSeconds' NoExecute tolerations
for ``node.kubernetes.io/not-ready`` and ``unreachable``. A controller's template is
explained as one of its pods, not as a set of replicas; a DaemonSet's pod is not pinned
to a node.

Exit status: 0 when every pod fits somewhere, 1 when some pod fits nowhere, 2 on an
error (bad arguments, configuration, manifest, unreachable cluster).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml

from ksched import aio
from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod
from ksched.cluster import APIError
from ksched.commands.common import (
    CommandError,
    add_cluster_arguments,
    add_gate_arguments,
    gates_of,
    load_scheduler_config,
    open_cluster,
    scheduler_parts,
)
from ksched.explain import ExplainError, Explanation, explain_pod, render

__all__ = ["add_parser", "main", "pod_from_manifest", "pods_from_manifests"]

EXIT_FITS = 0
EXIT_UNSCHEDULABLE = 1
EXIT_ERROR = 2

#: What DefaultTolerationSeconds adds to every pod that does not tolerate them already.
DEFAULT_NOT_READY_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)  # fmt: skip


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="why a pod is pending, why not node X: one scheduling attempt, node by node",
        description="Run one scheduling attempt of a pod on the current cluster with the same "
        "code and configuration as 'ksched run', binding nothing, and show every node's "
        "Filter verdict (the plugin that rejected it and why) and, for feasible nodes, each "
        "Score plugin's raw and normalized score and the weighted total; the node that "
        "would be chosen, or the FailedScheduling message upstream would write and the "
        "smallest changes that would make the pod fit.",
        epilog="exit status: 0 every pod fits, 1 some pod fits nowhere, 2 error",
    )
    p.add_argument("pod", nargs="?", metavar="NAMESPACE/POD", help="a pod of the cluster")
    p.add_argument(
        "-f",
        "--filename",
        metavar="FILE",
        help="a Pod or a controller (Deployment, ...) manifest: explain its pod as if created",
    )
    p.add_argument("-n", "--namespace", default=None, help="namespace for -f and a bare POD")
    p.add_argument("--config", help="KubeSchedulerConfiguration file (as ksched run --config)")
    p.add_argument("--profile", default=None, help="schedule with this profile (schedulerName)")
    p.add_argument(
        "--node", default=None, metavar="X", help='answer "why not node X" in one paragraph'
    )
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--all-nodes",
        action="store_true",
        help="examine and score every node (the default keeps percentageOfNodesToScore "
        "sampling, as the scheduler does, and says so)",
    )
    p.add_argument(
        "--limit", type=int, default=20, help="table rows per outcome group (0: every node)"
    )
    add_gate_arguments(p)
    add_cluster_arguments(p)
    p.set_defaults(func=main)


# ---- pods from manifests --------------------------------------------------------------


def _template(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    spec = doc.get("spec") or {}
    template = spec.get("template")
    if isinstance(template, dict):
        return template
    job = spec.get("jobTemplate")  # CronJob
    template = (job.get("spec") or {}).get("template") if isinstance(job, dict) else None
    return template if isinstance(template, dict) else None


def pods_from_manifests(
    text: str, source: str, *, namespace: str | None, classes: Mapping[str, int]
) -> list[Pod]:
    """The pods the manifests of ``text`` would create (see the module docstring).
    Raises :class:`CommandError` naming the document and field."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise CommandError(f"{source}: {exc}") from exc
    if not docs:
        raise CommandError(f"{source}: no object")
    return [
        pod_from_manifest(doc, source, namespace=namespace, classes=classes, index=i)
        for i, doc in enumerate(docs)
    ]


def pod_from_manifest(
    doc: Any,
    source: str,
    *,
    namespace: str | None,
    classes: Mapping[str, int],
    index: int = 0,
) -> Pod:
    """The pod one manifest (a Pod or a controller with a pod template) would create, as
    admission would complete it. Raises :class:`CommandError` naming the field."""
    i = index
    if not isinstance(doc, dict):
        raise CommandError(f"{source}: document {i + 1} is not an object")
    kind = str(doc.get("kind") or "")
    meta = doc.get("metadata") or {}
    name = str(meta.get("name") or meta.get("generateName") or f"pod-{i}")
    what = f"{source}: {kind or 'object'} {name}"
    if kind == "Pod" or (not kind and "containers" in (doc.get("spec") or {})):
        obj = copy.deepcopy(doc)
    else:
        tmpl = _template(doc)
        if tmpl is None:
            raise CommandError(f"{what}: not a Pod and has no spec.template")
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **copy.deepcopy(tmpl.get("metadata") or {}),
                "name": f"{name.rstrip('-')}-explain",
            },
            "spec": copy.deepcopy(tmpl.get("spec") or {}),
        }
    pod_meta = obj.setdefault("metadata", {})
    pod_meta["namespace"] = namespace or meta.get("namespace") or "default"
    pod_meta.setdefault("name", name)
    pod_meta.setdefault("uid", f"ksched-explain-{i}")
    pod_meta.setdefault("resourceVersion", "0")
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise CommandError(f"{what}: spec must be an object")
    spec.setdefault("schedulerName", "default-scheduler")
    if "priority" not in spec:
        cls = spec.get("priorityClassName")
        if cls:
            if cls not in classes:
                raise CommandError(
                    f"{what}: spec.priorityClassName: no PriorityClass {cls!r} in the cluster"
                )
            spec["priority"] = classes[cls]
        elif "" in classes:
            spec["priority"] = classes[""]
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        for t in DEFAULT_NOT_READY_TOLERATIONS:
            if not any(
                isinstance(x, dict)
                and x.get("key") == t["key"]
                and x.get("effect") in ("NoExecute", "", None)
                for x in tolerations
            ):
                tolerations.append(dict(t))
    obj["status"] = (
        {"phase": "Pending", **(obj.get("status") or {})} if kind == "Pod" else {"phase": "Pending"}
    )
    try:
        return Pod.from_dict(obj)
    except InvalidObjectError as exc:
        raise CommandError(f"{source}: {exc}") from exc


# ---- running ------------------------------------------------------------------------


def _render(expl: Explanation, args: argparse.Namespace, paragraph: str | None) -> str:
    if args.output == "json":
        doc = expl.as_dict()
        if paragraph is not None:
            doc["why"] = {"node": args.node, "text": paragraph}
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
    if paragraph is not None:
        return paragraph
    return render.table(expl, limit=args.limit) + "\n\n" + render.summary(expl)


async def _why_node(sched: Any, pod: Pod, expl: Explanation, args: argparse.Namespace) -> str:
    """The --node paragraph; a node sampling left out is explained from a full attempt."""
    v = expl.node(args.node)
    if v is not None and v.outcome == "not-examined":
        full = await explain_pod(
            sched, pod, profile=args.profile, all_nodes=True, suggest_nodes=(args.node,)
        )
        first = render.node_paragraph(expl, args.node)
        conditions = [s.condition for s in full.node_suggestions.get(args.node, [])]
        return first + " Examined, " + render.node_paragraph(full, args.node, fits_if=conditions)
    conditions = [s.condition for s in expl.node_suggestions.get(args.node, [])]
    return render.node_paragraph(expl, args.node, fits_if=conditions)


async def _main(args: argparse.Namespace) -> int:
    from ksched.scheduler import Scheduler

    if bool(args.pod) == bool(args.filename):
        raise CommandError("give one pod: NAMESPACE/POD or -f FILE")
    gates = gates_of(args)
    cfg = load_scheduler_config(args.config, gates)
    profiles, extenders = scheduler_parts(cfg, gates)
    source = await open_cluster(args, cfg, mode="ksched explain")
    sched = Scheduler(source.api, profiles, extenders=extenders, feature_gates=gates)
    try:
        await sched.start()
        if args.filename:
            path = Path(args.filename)
            text = sys.stdin.read() if args.filename == "-" else path.read_text()
            pods = pods_from_manifests(
                text, args.filename, namespace=args.namespace,
                classes=await source.priority_classes(),
            )  # fmt: skip
        else:
            key = args.pod if "/" in args.pod else f"{args.namespace or 'default'}/{args.pod}"
            obj = sched.pod_informer.store.get(key)
            if obj is None:
                raise CommandError(f"pod {key} not found in {source.description}")
            pods = [Pod.from_dict(obj)]
        outputs = []
        unschedulable = False
        for pod in pods:
            notes = []
            if pod.node_name:
                sched.cache.remove_pod(pod.uid)
                notes.append(f"bound to {pod.node_name}: explained as if it were pending now")
                pod = Pod.from_dict({**pod.raw, "spec": {**pod.raw["spec"], "nodeName": ""}})
            expl = await explain_pod(
                sched,
                pod,
                profile=args.profile,
                all_nodes=args.all_nodes,
                suggest_nodes=(args.node,) if args.node else (),
            )
            expl.notes[:0] = notes
            unschedulable = unschedulable or expl.chosen is None
            paragraph = await _why_node(sched, pod, expl, args) if args.node else None
            outputs.append(_render(expl, args, paragraph))
        print("\n\n".join(outputs))
        return EXIT_UNSCHEDULABLE if unschedulable else EXIT_FITS
    finally:
        await sched.shutdown()
        await source.close()


def main(args: argparse.Namespace) -> int:
    from ksched.bench.workload import WorkloadError
    from ksched.config import ConfigError
    from ksched.framework.extender import ExtenderError
    from ksched.profiles import ProfileError
    from ksched.recording import RecordingError

    try:
        return aio.run(_main(args))
    except (
        APIError,
        CommandError,
        ConfigError,
        ProfileError,
        ExtenderError,
        RecordingError,
        WorkloadError,
        ExplainError,
        InvalidObjectError,
        OSError,
    ) as exc:
        print(f"ksched explain: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except asyncio.CancelledError:  # pragma: no cover - interrupted
        return EXIT_ERROR

"""Compile parsed pods into the Rust extension's :class:`ksched._core.CompiledPod`.

A pod is compiled once per pod object and the result is reused by every scheduling
attempt and by the cache, until an update brings a new object.

The Rust constructor checks what :class:`~ksched.api.pod.Pod` keeps raw (affinity
terms, spread constraints, toleration operators and effects, requests) and raises a
plain ``ValueError`` whose text is ``Pod ns/name: field: message``. :func:`compile_pod`
turns it into the project's :class:`~ksched.api.errors.InvalidObjectError` with the
field split out, so a bad pod is reported like any other invalid object.

A *bound* pod whose terms cannot be compiled still occupies its node:
:func:`compile_bound_pod` then falls back to what the node's accounting needs (its
requests, host ports, labels and images), without the affinity, spreading and
tolerations that only matter for placing the pod itself, so the node is never
over-committed because one pod on it carries a malformed term.
"""

from __future__ import annotations

from typing import Any

from ksched._core import CompiledPod
from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod, start_time_of
from ksched.api.volume import volume_spec

__all__ = ["compile_bound_pod", "compile_pod"]


def _invalid(pod: Pod, exc: ValueError) -> InvalidObjectError:
    """The Rust core's ``Pod ns/name: field: message`` as an InvalidObjectError."""
    text = str(exc)
    prefix = f"Pod {pod.key}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
    field, sep, message = text.partition(": ")
    if not sep or not field or " " in field:
        field, message = "", text
    return InvalidObjectError("Pod", pod.key, field, message)


def compile_pod(pod: Pod, default_spread_selector: dict[str, Any] | None = None) -> CompiledPod:
    """The kernel-side form of ``pod``. ``default_spread_selector`` is the selector of the
    Services/controllers the pod belongs to (:mod:`ksched.backend.controllers`).

    Raises :class:`~ksched.api.errors.InvalidObjectError` naming the pod and the field
    when a term the kernels read is malformed."""
    try:
        return CompiledPod(
            pod.uid,
            pod.namespace,
            pod.name,
            requests=pod.requests,
            non_zero_cpu=pod.non_zero_cpu,
            non_zero_memory=pod.non_zero_memory,
            node_name=pod.node_name,
            nominated_node_name=pod.nominated_node_name,
            tolerations=[(t.key, t.operator, t.value, t.effect) for t in pod.tolerations],
            labels=pod.labels,
            priority=pod.priority,
            node_selector=pod.node_selector,
            affinity=pod.affinity,
            host_ports=pod.host_ports,
            images=pod.images,
            image_volumes=pod.image_volumes,
            topology_spread_constraints=pod.topology_spread_constraints,
            deleting=pod.deletion_timestamp is not None,
            default_spread_selector=default_spread_selector,
            start_time=start_time_of(pod),
            fit_score_requests=pod.fit_score_requests,
            volumes=volume_spec(pod),
            required_features=list(pod.required_features),
        )
    except ValueError as exc:
        raise _invalid(pod, exc) from None


def compile_bound_pod(pod: Pod) -> tuple[CompiledPod, InvalidObjectError | None]:
    """The kernel form of a pod bound to a node, and the error that made it fall back
    to the accounting-only form (None when the whole pod compiled).

    The accounting-only form always builds: a string the core cannot take (a lone
    surrogate, which a pod built in Python or read by ``json.loads`` can hold; the API
    server's JSON cannot) is passed with that character escaped, so the node still
    counts the pod's requests, ports and images."""
    try:
        return compile_pod(pod), None
    except InvalidObjectError as err:
        error = err
    fields: dict[str, Any] = {
        "requests": {k: max(v, 0) for k, v in pod.requests.items()},
        "non_zero_cpu": max(pod.non_zero_cpu, 0),
        "non_zero_memory": max(pod.non_zero_memory, 0),
        "node_name": pod.node_name,
        "labels": pod.labels,
        "priority": pod.priority,
        "host_ports": pod.host_ports,
        "images": pod.images,
        "image_volumes": pod.image_volumes,
        "deleting": pod.deletion_timestamp is not None,
        "start_time": start_time_of(pod),
        "fit_score_requests": pod.fit_score_requests,
        "volumes": volume_spec(pod),
    }
    ids = (pod.uid, pod.namespace, pod.name)
    try:
        compiled = CompiledPod(*ids, **fields)
    except ValueError:
        compiled = CompiledPod(*_encodable(ids), **{k: _encodable(v) for k, v in fields.items()})
    return compiled, error


def _encodable(value: Any) -> Any:
    """``value`` with every string's unencodable characters (lone surrogates) escaped."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_encodable(v) for v in value)
    return value

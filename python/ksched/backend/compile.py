"""Compile parsed pods into the Rust extension's :class:`ksched._core.CompiledPod`.

A pod is compiled once per pod object and the result is reused by every scheduling
attempt and by the cache, until an update brings a new object.

The Rust constructor checks what :class:`~ksched.api.pod.Pod` keeps raw (affinity
terms, spread constraints, toleration operators and effects, requests) and raises a
plain ``ValueError`` whose text is ``Pod ns/name: field: message``. :func:`compile_pod`
turns it into the project's :class:`~ksched.api.errors.InvalidObjectError` with the
field split out, so a bad pod is reported like any other invalid object.

Pods stamped from one template (a ReplicaSet's or a Job's) compile to the same thing
but for their identity. :class:`SiblingCompiler` remembers the pending pod it compiled
last and, for a pod that is provably its sibling, asks the core for a copy with the
new uid, name and start time (``CompiledPod.sibling``: ~0.3 against ~2.2 µs in the
core for a basic pod, and the copy shares the memoized scheduling signature) instead
of compiling again.
Provably: the constructor reads the pod's namespace, labels, the fields
:class:`~ksched.api.pod.Pod` derives from the spec, ``spec.volumes``,
``status.nominatedNodeName``, the deletion mark, ``status.startTime`` and the default
spreading selector. The sibling must hold the template's very spec-derived objects
(which ``Pod.from_dict(like=...)`` gives a pod whose spec shares every value with the
template's; parsed objects are read-only, so identity stands for equality) and its very
``spec.volumes``, equal namespace, labels, nomination and deletion mark, and an equal
selector, which the caller computes or vouches for with the generation of what it is
computed from (:class:`~ksched.backend.controllers.ControllerIndex`). A template whose
volumes concern the kernels is never reused: an ephemeral volume's claim is named after
the pod.

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

__all__ = ["SiblingCompiler", "compile_bound_pod", "compile_pod"]

_ABSENT: Any = object()


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


class SiblingCompiler:
    """:func:`compile_pod` for pending pods, reusing the last result for a sibling of
    the pod it compiled last (see the module docstring)."""

    __slots__ = ("_compiled", "_generation", "_selector", "_template", "hits")

    def __init__(self) -> None:
        self._template: Pod | None = None
        self._compiled: CompiledPod | None = None
        self._selector: dict[str, Any] | None = None
        self._generation: object = _ABSENT
        #: Pods compiled as a sibling (for tests and profiles).
        self.hits = 0

    def selector_known(self, pod: Pod, generation: object, owners: object) -> bool:
        """Whether ``pod``'s default spreading selector is the template's without
        computing it: the index it is computed from is at the same ``generation`` and
        the pod has the template's namespace, labels and owner references."""
        t = self._template
        return (
            t is not None
            and generation == self._generation
            and pod.namespace == t.namespace
            and (pod.labels is t.labels or pod.labels == t.labels)
            and owners == (t.raw.get("metadata") or {}).get("ownerReferences")
        )

    def compile(
        self,
        pod: Pod,
        selector: dict[str, Any] | None = None,
        *,
        generation: object = _ABSENT,
        same_selector: bool = False,
    ) -> CompiledPod:
        """``compile_pod(pod, selector)``. ``same_selector``: the caller vouches that
        the pod's selector is the template's (:meth:`selector_known`); ``selector`` is
        not read then. ``generation`` is remembered with the template for
        :meth:`selector_known`."""
        t = self._template
        compiled = self._compiled
        if (
            t is not None
            and compiled is not None
            and (same_selector or selector == self._selector)
            and _siblings(t, pod)
        ):
            try:
                out = compiled.sibling(pod.uid, pod.name, start_time_of(pod))
            except (TypeError, ValueError):
                pass  # an identity the core refuses: compile_pod reports it
            else:
                self.hits += 1
                return out
        if same_selector:
            selector = self._selector
        out = compile_pod(pod, selector)
        if not pod.node_name and volume_spec(pod) is None:
            self._template, self._compiled, self._selector = pod, out, selector
            self._generation = generation
        return out


def _siblings(t: Pod, pod: Pod) -> bool:
    """Whether ``pod`` compiles as the template ``t`` does but for its uid, name and
    start time, the selector aside (see the module docstring): every field the
    constructor reads is the template's very object (or an equal number or string).
    Identity, not equality, for the spec-derived fields: a sibling parsed with the
    template (``Pod.from_dict(like=...)``) holds the template's objects, while a pod
    changed from another (``dataclasses.replace``, as the what-if explanations make
    them) does not, even when its ``raw`` is the other's."""
    return (
        not pod.node_name
        and pod.namespace == t.namespace
        and pod.nominated_node_name == t.nominated_node_name
        and (pod.deletion_timestamp is None) == (t.deletion_timestamp is None)
        and (pod.labels is t.labels or pod.labels == t.labels)
        and pod.requests is t.requests
        and pod.non_zero_cpu == t.non_zero_cpu
        and pod.non_zero_memory == t.non_zero_memory
        and pod.fit_score_requests is t.fit_score_requests
        and pod.priority == t.priority
        and pod.tolerations is t.tolerations
        and pod.node_selector is t.node_selector
        and pod.affinity is t.affinity
        and pod.host_ports is t.host_ports
        and pod.images is t.images
        and pod.image_volumes is t.image_volumes
        and pod.topology_spread_constraints is t.topology_spread_constraints
        and pod.required_features is t.required_features
        # What ``volume_spec`` reads besides the name (the template's read nothing).
        and _volumes(pod) is _volumes(t)
    )


def _volumes(pod: Pod) -> object:
    spec = pod.raw.get("spec")
    return spec.get("volumes") if type(spec) is dict else None


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

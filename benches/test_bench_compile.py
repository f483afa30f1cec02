"""A pending pod's kernel form: compiled in full, or copied from its template's
(``ksched.backend.compile.SiblingCompiler``, issue 21), for a pod of the basic workload
parsed the way the informer delivers it (values shared with the pod before it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.compile import SiblingCompiler, compile_pod
from ksched.client.informer import share_unchanged
from ksched.sim.workloads import make_pod


def _pods() -> tuple[Pod, Pod]:
    objs = []
    for i in range(2):
        obj = make_pod(f"pod-{i}", namespace="sched-test")
        obj["metadata"].update(uid=f"uid-{i}", resourceVersion=str(i + 1))
        objs.append(obj)
    share_unchanged(objs[0], objs[1])
    template = Pod.from_dict(objs[0])
    return template, Pod.from_dict(objs[1], like=template)


def _compile_pod() -> Callable[[], Any]:
    _, pod = _pods()
    return lambda: compile_pod(pod)


def _sibling() -> Callable[[], Any]:
    template, pod = _pods()
    compiler = SiblingCompiler()
    compiler.compile(template)
    return lambda: compiler.compile(pod)


@pytest.mark.parametrize("how", [_compile_pod, _sibling], ids=["compile-pod", "sibling"])
def test_compile_pending_pod(benchmark, how: Callable[[], Callable[[], Any]]) -> None:  # type: ignore[no-untyped-def]
    run = how()
    compiled = benchmark(run)
    assert compiled.name == "pod-1" and compiled.signature is not None

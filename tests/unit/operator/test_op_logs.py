"""klog's text format and component-base's JSON format, as ksched.logs writes them."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from ksched import logs


@pytest.fixture
def streams() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    err, out = io.StringIO(), io.StringIO()
    yield err, out
    logs.configure(verbosity=0)  # back to stderr


HEADER = re.compile(r"^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) test_op_logs\.py:\d+\] ")


def text_of(streams: tuple[io.StringIO, io.StringIO], **kw: object) -> list[str]:
    err, _ = streams
    return [HEADER.sub(r"\1 ", line) for line in err.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("call", "want"),
    [
        pytest.param(
            lambda log: log.v(2).info(
                "Successfully bound pod to node",
                pod=logs.kref("default", "p"),
                node="n1",
                evaluatedNodes=8,
                feasibleNodes=3,
            ),
            [
                'I "Successfully bound pod to node" pod="default/p" node="n1" evaluatedNodes=8 '
                "feasibleNodes=3"
            ],
            id="structured-info",
        ),
        pytest.param(
            lambda log: log.error(
                "Error scheduling pod; retrying", err=ValueError("boom"), pod=logs.kref("ns", "p")
            ),
            ['E "Error scheduling pod; retrying" err="boom" pod="ns/p"'],
            id="error-puts-err-first",
        ),
        pytest.param(
            lambda log: log.error("Error without an error"),
            ['E "Error without an error"'],
            id="error-nil",
        ),
        pytest.param(
            lambda log: log.info("Using component config", config="a: 1\nb: 2\n"),
            ['I "Using component config" config=<', "\ta: 1", "\tb: 2", " >"],
            id="multi-line-string",
        ),
        pytest.param(
            lambda log: log.info('quote "x"', v=None, ok=True, ratio=0.5, items=["a", 1]),
            ['I "quote \\"x\\"" v=<nil> ok=true ratio=0.5 items=["a",1]'],
            id="value-kinds",
        ),
        pytest.param(
            lambda log: log.infof("Serving securely on %s", "127.0.0.1:10259"),
            ["I Serving securely on 127.0.0.1:10259"],
            id="unstructured",
        ),
        pytest.param(
            lambda log: log.with_values(pod=logs.kref("d", "p")).info("m", pod=logs.kref("d", "p")),
            ['I "m" pod="d/p"'],
            id="identical-repeat-dropped",
        ),
        pytest.param(
            lambda log: log.with_values(a=1, b=2).info("m", a=3),
            ['I "m" b=2 a=3'],
            id="changed-repeat-moves-last",
        ),
        pytest.param(lambda log: log.v(3).info("hidden at -v 2"), [], id="verbosity"),
    ],
)
def test_text_format(streams: tuple[io.StringIO, io.StringIO], call, want: list[str]) -> None:
    logs.configure(verbosity=2, stderr=streams[0], stdout=streams[1])
    call(logs.get_logger("test.logs"))
    assert text_of(streams) == want


def test_the_header_is_klogs(streams: tuple[io.StringIO, io.StringIO]) -> None:
    logs.configure(verbosity=0, stderr=streams[0])
    logs.get_logger("t").info("x")
    line = streams[0].getvalue()
    assert HEADER.match(line), line
    pid = HEADER.match(line).group(4)  # type: ignore[union-attr]
    assert line[22 : 22 + 7].strip() == pid  # right-aligned in 7 columns


@pytest.mark.parametrize(
    ("call", "want"),
    [
        pytest.param(
            lambda log: (
                log.with_values(pod=logs.kref("default", "p"))
                .v(2)
                .info("Successfully bound pod to node", pod=logs.kref("default", "p"), node="n1")
            ),
            [
                ("msg", "Successfully bound pod to node"),
                ("pod", {"name": "p", "namespace": "default"}),
                ("v", 2),
                ("pod", {"name": "p", "namespace": "default"}),
                ("node", "n1"),
            ],
            id="context-values-before-v-and-kept-twice",
        ),
        pytest.param(
            lambda log: log.error("The manifest file is empty, ignoring."),
            [("msg", "The manifest file is empty, ignoring.")],
            id="error-has-no-v",
        ),
        pytest.param(
            lambda log: log.error("failed", err=OSError("disk"), node=logs.kref("", "n1")),
            [("msg", "failed"), ("err", "disk"), ("node", {"name": "n1"})],
            id="error-err-and-cluster-scoped-ref",
        ),
        pytest.param(
            lambda log: log.infof("Serving securely on %s", "x"),
            [("msg", "Serving securely on x"), ("v", 0)],
            id="unstructured",
        ),
    ],
)
def test_json_format(streams: tuple[io.StringIO, io.StringIO], call, want: list) -> None:
    logs.configure(verbosity=2, fmt="json", stderr=streams[0])
    call(logs.get_logger("test.logs"))
    (line,) = streams[0].getvalue().splitlines()
    pairs = [
        (k, dict(v) if isinstance(v, list) else v)
        for k, v in json.loads(line, object_pairs_hook=list)
    ]
    assert [k for k, _ in pairs[:2]] == ["ts", "caller"]
    assert pairs[1][1].endswith(f"operator/test_op_logs.py:{pairs[1][1].rsplit(':', 1)[1]}")
    assert pairs[2:] == want


def test_vmodule_raises_one_files_verbosity(streams: tuple[io.StringIO, io.StringIO]) -> None:
    logs.configure(verbosity=0, vmodule=[("test_op_*", 4)], stderr=streams[0])
    logs.get_logger("t").v(4).info("shown")
    logs.get_logger("t").v(5).info("hidden")
    assert [ln.split("] ", 1)[1] for ln in streams[0].getvalue().splitlines()] == ['"shown"']


def test_split_stream_sends_errors_to_stderr_and_buffers_info(
    streams: tuple[io.StringIO, io.StringIO],
) -> None:
    err, out = streams
    logs.configure(verbosity=0, split_stream=True, info_buffer_size=1 << 20, stderr=err, stdout=out)
    log = logs.get_logger("t")
    log.info("an info")
    log.error("an error")
    assert "an error" in err.getvalue() and "an info" not in err.getvalue()
    assert out.getvalue() == ""  # buffered
    for h in logging.getLogger().handlers:
        h.flush()
    assert "an info" in out.getvalue()


def test_verbosity_can_change_at_run_time(streams: tuple[io.StringIO, io.StringIO]) -> None:
    logs.configure(verbosity=1, stderr=streams[0])
    log = logs.get_logger("t")
    assert not log.enabled(3)
    logs.set_verbosity(3)
    assert log.enabled(3) and logs.verbosity() == 3

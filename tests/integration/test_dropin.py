"""ksched beside kube-scheduler v1.36.5, in the same test control plane: what an operator
meets when swapping the binary must be the same.

* the command line: ``--help`` (byte for byte), flag parsing errors, feature-gate errors,
  and the effective configuration ``--write-config-to`` writes for a table of flag sets;
* after one identical workload (a bound pod and an unschedulable pod each, on a shared
  node, each scheduler under a profile of its own): the ``/metrics`` families with their
  types, HELP texts and label names, and ``/metrics/resources``;
* the log lines of the bound and of the unschedulable pod at ``-v 2``, in the text and in
  the JSON format: severity, message, keys in order, verbosity and values;
* the status code of every endpoint for every identity (anonymous, a bad token, a
  ServiceAccount without rights, one allowed the paths, the admin's client certificate),
  with profiling on and off;
* the events' ``reportingController`` and ``reportingInstance``.

A family, flag or line that upstream has and ksched lacks fails these tests unless it is
listed below with the reason.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane, KubeScheduler
from ksched.testing.ksched_process import KschedProcess, write_scheduler_config

pytestmark = pytest.mark.integration

Obj = dict[str, Any]

#: Upstream families ksched does not serve, and why.
UPSTREAM_ONLY: dict[str, str] = {
    # Go libraries linked into kube-scheduler register these; nothing in a scheduler
    # feeds them (kube-scheduler's own values stay 0).
    **dict.fromkeys(
        (
            "aggregator_discovery_aggregation_count_total",
            "aggregator_discovery_nopeer_requests_total",
            "aggregator_discovery_peer_aggregated_cache_hits_total",
            "aggregator_discovery_peer_aggregated_cache_misses_total",
            "apiserver_audit_event_total",
            "apiserver_audit_requests_rejected_total",
            "apiserver_envelope_encryption_dek_cache_fill_percent",
            "apiserver_storage_data_key_generation_duration_seconds",
            "apiserver_storage_data_key_generation_failures_total",
            "apiserver_storage_envelope_transformation_cache_misses_total",
            "apiserver_validation_declarative_validation_mismatch_total",
            "apiserver_validation_declarative_validation_panic_total",
            "apiserver_validation_duplicate_validation_error_total",
            "apiserver_webhooks_x509_insecure_sha1_total",
            "apiserver_webhooks_x509_missing_san_total",
        ),
        "an apiserver library family kube-scheduler links but never feeds",
    ),
    "rest_client_exec_plugin_certificate_rotation_age": "exec plugins run through the "
    "kubernetes package, which does not report client certificate lifetimes",
    "rest_client_exec_plugin_ttl_seconds": "same as rest_client_exec_plugin_*",
    "rest_client_transport_cache_entries": "Go's transport cache has no aiohttp equivalent",
    "rest_client_transport_cert_rotation_gc_calls_total": "Go's transport cache",
    "rest_client_transport_create_calls_total": "Go's transport cache",
    **dict.fromkeys(
        (
            "workqueue_adds_total",
            "workqueue_depth",
            "workqueue_longest_running_processor_seconds",
            "workqueue_queue_duration_seconds",
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_work_duration_seconds",
        ),
        "the work queues of client-go's certificate-reload controllers (DynamicCABundle, "
        "DynamicServingCertificateController, RequestHeaderAuthRequestController); ksched "
        "has no client-go work queue",
    ),
    **dict.fromkeys(
        (
            "scheduler_batch_cache_flushed_total",
            "scheduler_get_node_hint_duration_seconds",
            "scheduler_store_schedule_results_duration_seconds",
        ),
        "opportunistic batching's cache of scored nodes between cycles; ksched batches "
        "pods of one signature in one core call and keeps no such cache",
    ),
}
#: Families recorded in sampled cycles only (10%, as upstream): either side may have
#: none after this short workload.
SAMPLED = frozenset({"scheduler_plugin_execution_duration_seconds"})
#: ksched families with series that upstream has none for in this workload (client_golang
#: hides a vector without series, as ksched does), and ksched's own.
KSCHED_ONLY: dict[str, str] = {
    "scheduler_queueing_hint_execution_duration_seconds": "registered upstream; ksched "
    "records the hints of events that came while the pods waited",
    "apiserver_client_certificate_expiration_seconds": "observed for client certificates",
}
_KSCHED_PREFIXES = ("ksched_", "python_")


# ---- running the two binaries ------------------------------------------------------------


def upstream(cp: ControlPlane, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cp.kube_scheduler), *args], capture_output=True, text=True, timeout=timeout
    )


def ksched(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ksched", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _strip_klog(text: str) -> str:
    """The message of a klog line without its header (time, pid, file)."""
    return re.sub(r"^[IWEF]\d{4} [\d:.]+ +\d+ [^\]]+\] ", "", text.strip())


def test_help_is_upstreams(control_plane: ControlPlane) -> None:
    up, ks = upstream(control_plane, "--help"), ksched("--help")
    assert (up.returncode, ks.returncode) == (0, 0)
    assert ks.stdout == up.stdout


def test_flag_list_is_upstreams(control_plane: ControlPlane) -> None:
    def flags(text: str) -> list[str]:
        return re.findall(r"^\s+(?:-\w, )?(--[a-z0-9-]+)", text, re.M)

    up = flags(upstream(control_plane, "--help").stdout)
    assert len(up) == 62
    assert flags(ksched("--help").stdout) == up


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--bogus"], id="unknown-flag"),
        pytest.param(["--secure-port=abc"], id="bad-int"),
        pytest.param(["--leader-elect-lease-duration=5"], id="duration-without-unit"),
        pytest.param(["--v=x"], id="bad-level"),
        pytest.param(["--config"], id="missing-value"),
        pytest.param(["--leader-elect", "false"], id="bool-takes-no-separate-value"),
        pytest.param(["--tls-sni-cert-key=onlyone"], id="bad-named-cert-key"),
    ],
)
def test_command_line_errors_are_upstreams(control_plane: ControlPlane, args: list[str]) -> None:
    up, ks = upstream(control_plane, *args), ksched(*args)
    assert ks.returncode == up.returncode == 1
    up_err = [ln for ln in up.stderr.splitlines() if ln.startswith("Error:")]
    ks_err = [ln for ln in ks.stderr.splitlines() if ln.startswith("Error:")]
    assert ks_err == [e.replace('"kube-scheduler"', '"ksched run"') for e in up_err]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--feature-gates=Foo=true"], id="unknown-gate"),
        pytest.param(["--feature-gates=SchedulerQueueingHints=false"], id="locked-gate"),
        pytest.param(["--feature-gates=GangScheduling=true"], id="missing-dependency"),
        pytest.param(["--feature-gates=CoordinatedLeaderElection=maybe"], id="bad-value"),
        pytest.param(["--feature-gates=wardle:A=true"], id="unknown-component"),
        # Upstream ranges over a Go map of prefix -> gates (component-base
        # compatibility/registry.go): which error it meets first changes run to run.
        pytest.param(["--feature-gates=A=true,kube:B=true"], id="mixed-prefixes"),
        pytest.param(["--emulated-version=1.35.1"], id="patch-version"),
        pytest.param(["--min-compatibility-version=1.36", "--emulated-version=1.35"], id="min"),
        pytest.param(["--logging-format=yaml"], id="unknown-log-format"),
        pytest.param(["--log-text-split-stream"], id="alpha-log-option"),
        pytest.param(["--show-hidden-metrics-for-version=1.30"], id="hidden-metrics-version"),
    ],
)
def test_startup_errors_are_upstreams(control_plane: ControlPlane, args: list[str]) -> None:
    common = [f"--kubeconfig={control_plane.kubeconfig}", "--secure-port=0", *args]
    up, ks = upstream(control_plane, *common), ksched(*common)
    assert (ks.returncode, up.returncode) == (1, 1), (up.stderr[-2000:], ks.stderr[-2000:])

    def error(text: str) -> str:
        lines = [_strip_klog(ln) for ln in text.splitlines() if ln.strip()]
        failed = [ln for ln in lines if ln.startswith('"command failed"')]
        return failed[-1] if failed else lines[-1]

    either = MAP_ORDER_ERRORS.get(error(up.stderr))
    if either is not None:
        assert error(ks.stderr) in either
    else:
        assert error(ks.stderr) == error(up.stderr)


#: Start-up errors upstream picks between by Go map order: each maps to the set of them.
_MIXED_PREFIXES = frozenset(
    (
        '"command failed" err="set kube feature gates with default empty prefix or kube: '
        'prefix consistently, do not mix use"',
        '"command failed" err="unrecognized feature gate: B"',
    )
)
MAP_ORDER_ERRORS = dict.fromkeys(_MIXED_PREFIXES, _MIXED_PREFIXES)


def test_version(control_plane: ControlPlane) -> None:
    up, ks = upstream(control_plane, "--version"), ksched("--version")
    assert up.stdout.startswith("Kubernetes v1.36.5")
    # ksched reports the release it follows, with its own version as build metadata.
    assert re.fullmatch(r"Kubernetes v1\.36\.5\+ksched\.[\w.]+\n", ks.stdout)
    up_raw, ks_raw = upstream(control_plane, "--version=raw"), ksched("--version=raw")
    prefix = 'version.Info{Major:"1", Minor:"36", EmulationMajor:"", EmulationMinor:""'
    assert up_raw.stdout.startswith(prefix) and ks_raw.stdout.startswith(prefix)


VB_SHAPE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: KUBECONFIG}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: VolumeBinding
    args:
      shape:
      - {utilization: 0, score: 0}
      - {utilization: 100, score: 10}
"""


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(["--kubeconfig=KUBECONFIG"], id="defaults"),
        pytest.param(
            [
                "--kubeconfig=KUBECONFIG",
                "--kube-api-qps=20.5",
                "--kube-api-burst=40",
                "--kube-api-content-type=application/json",
                "--profiling=false",
                "--contention-profiling=false",
                "--leader-elect=false",
            ],
            id="deprecated-flags-without-config",
        ),
        pytest.param(
            [
                "--config=CONFIG",
                "--kubeconfig=/ignored",
                "--kube-api-qps=1",
                "--profiling=false",
                "--leader-elect-lease-duration=30s",
                "--leader-elect-renew-deadline=20s",
                "--leader-elect-retry-period=3s",
                "--leader-elect-resource-name=other",
                "--leader-elect-resource-namespace=other-ns",
            ],
            id="config-file-with-leader-election-flags",
        ),
        pytest.param(
            ["--config=CONFIG", "--feature-gates=StorageCapacityScoring=true"],
            id="gate-that-config-validation-needs",
        ),
    ],
)
def test_write_config_to_is_upstreams(
    control_plane: ControlPlane, tmp_path: Path, flags: list[str]
) -> None:
    cfg = tmp_path / "cfg.yaml"
    text = VB_SHAPE.replace("KUBECONFIG", str(control_plane.kubeconfig))
    if "StorageCapacityScoring" not in " ".join(flags):
        text = text.split("  pluginConfig:")[0]
    cfg.write_text(text)
    args = [
        f.replace("KUBECONFIG", str(control_plane.kubeconfig)).replace("CONFIG", str(cfg))
        for f in flags
    ]
    outs = {}
    for name, run in (("upstream", upstream), ("ksched", ksched)):
        out = tmp_path / f"{name}.yaml"
        res = (
            run(control_plane, *args, f"--write-config-to={out}")  # type: ignore[call-arg]
            if name == "upstream"
            else run(*args, f"--write-config-to={out}")
        )
        assert res.returncode == 0, res.stderr[-3000:]
        outs[name] = out.read_text()
    assert outs["ksched"] == outs["upstream"]


def test_a_gate_ksched_does_not_act_on_is_accepted_and_logged(control_plane: ControlPlane) -> None:
    res = ksched(
        f"--kubeconfig={control_plane.kubeconfig}",
        "--feature-gates=KubeletInUserNamespace=true",
        "--write-config-to=/dev/null",
    )
    assert res.returncode == 0, res.stderr
    assert 'featureGate="KubeletInUserNamespace" value=true' in res.stderr
    assert "not acted on by ksched" in res.stderr


# ---- one workload, side by side -------------------------------------------------------------


def https(
    port: int,
    path: str,
    *,
    token: str | None = None,
    cert: tuple[Path, Path] | None = None,
    method: str = "GET",
    body: bytes | None = None,
    timeout: float = 10.0,
) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}{path}", data=body, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def service_account_token(cp: ControlPlane, namespace: str, name: str) -> str:
    status, body = cp.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
    )
    assert status == 201, body
    status, body = cp.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 201, body
    return str(body["status"]["token"])


def profile_config(scheduler_name: str) -> Obj:
    """One profile with the default plugins, DynamicResources and the volume plugins
    included (the failure message, PostFilter's sentences and all, is compared word for
    word)."""
    return {"profiles": [{"schedulerName": scheduler_name}]}


class Pair:
    """Upstream and ksched, started with the same flags, and what they did."""

    def __init__(
        self, up: KubeScheduler, ks: KschedProcess, names: dict[str, str], tag: str, ns: str
    ) -> None:
        self.up = up
        self.ks = ks
        self.tag = tag
        self.namespace = ns
        #: scheduler → its pods' name prefix.
        self.names = names

    def log(self, which: str) -> str:
        return self.up.log_path.read_text() if which == "upstream" else self.ks.text()

    def port(self, which: str) -> int:
        return self.up.port if which == "upstream" else self.ks.port


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def start_pair(cp: ControlPlane, tmp: Path, tag: str, extra: list[str]) -> Iterator[Pair]:
    ns = f"dropin-{tag}-{uuid.uuid4().hex[:6]}"
    assert cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    node = f"dropin-{tag}-{uuid.uuid4().hex[:6]}"
    cp.create_node(make_node(node, cpu="4", memory="8Gi"))
    up = cp.start_kube_scheduler(profile_config(f"upstream-{tag}"), args=["-v=2", *extra])
    cfg = write_scheduler_config(
        tmp / f"ksched-{tag}.json",
        {
            "clientConnection": {"kubeconfig": str(cp.kubeconfig)},
            "leaderElection": {"leaderElect": False},
            **profile_config(f"ksched-{tag}"),
        },
    )
    ks = KschedProcess(
        [
            f"--config={cfg}",
            f"--authentication-kubeconfig={cp.kubeconfig}",
            f"--authorization-kubeconfig={cp.kubeconfig}",
            f"--client-ca-file={cp.ca_file}",
            "-v=2",
            *extra,
        ],
        tmp / f"ksched-{tag}.log",
    )
    try:
        ks.wait_serving(60)
        wait_for(
            lambda: https(ks.port, "/readyz")[0] == 200 and https(up.port, "/readyz")[0] == 200,
            60,
            "both ready",
        )
        names = {"upstream": "up", "ksched": "ks"}
        for sched, prefix in names.items():
            name = f"{sched}-{tag}"
            bound = make_pod(f"{prefix}-bound", namespace=ns, scheduler_name=name)
            big = make_pod(f"{prefix}-big", namespace=ns, scheduler_name=name, cpu="100")
            for pod in (bound, big):
                pod.pop("status", None)
                status, body = cp.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
                assert status == 201, body

        def settled() -> bool:
            _, body = cp.request("GET", f"/api/v1/namespaces/{ns}/pods")
            pods = {p["metadata"]["name"]: p for p in body["items"]}
            ok = all(pods[f"{p}-bound"]["spec"].get("nodeName") for p in names.values())
            failed = all(
                any(
                    c.get("type") == "PodScheduled" and c.get("status") == "False"
                    for c in (pods[f"{p}-big"].get("status") or {}).get("conditions") or []
                )
                for p in names.values()
            )
            return ok and failed

        wait_for(settled, 60, "one pod bound and one unschedulable per scheduler")
        time.sleep(1.0)  # events and last log lines
        yield Pair(up, ks, names, tag, ns)
    finally:
        ks.stop()
        up.stop()
        cp.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods",
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")
        cp.request("DELETE", f"/api/v1/nodes/{node}")


@pytest.fixture(scope="module")
def text_pair(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    yield from start_pair(control_plane, tmp_path_factory.mktemp("text"), "text", [])


@pytest.fixture(scope="module")
def json_pair(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    yield from start_pair(
        control_plane, tmp_path_factory.mktemp("json"), "json", ["--logging-format=json"]
    )


# ---- metrics ------------------------------------------------------------------------------


class Family:
    def __init__(self, name: str) -> None:
        self.name = name
        self.type = ""
        self.help = ""
        self.labels: set[frozenset[str]] = set()
        self.samples = 0


def families(text: str) -> dict[str, Family]:
    out: dict[str, Family] = {}
    current: Family | None = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, doc = line[7:].partition(" ")
            current = out.setdefault(name, Family(name))
            current.help = doc
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            current = out.setdefault(name, Family(name))
            current.type = kind
        elif line and not line.startswith("#"):
            assert current is not None
            m = re.match(r"([a-zA-Z_:][\w:]*)(\{(.*)\})? ", line)
            assert m is not None, line
            labels = frozenset(
                k for k, _ in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or "")
            ) - {"le", "quantile"}
            current.labels.add(labels)
            current.samples += 1
    return out


def scrape(port: int, path: str, cp: ControlPlane) -> str:
    status, text = https(port, path, cert=(cp.client_cert_file, cp.client_key_file))
    assert status == 200, text[:500]
    return text


def test_metric_families_types_help_and_labels_are_upstreams(
    text_pair: Pair, control_plane: ControlPlane
) -> None:
    up = families(scrape(text_pair.port("upstream"), "/metrics", control_plane))
    ks = families(scrape(text_pair.port("ksched"), "/metrics", control_plane))
    missing = sorted(
        n
        for n in up
        if not n.startswith("go_") and n not in ks and n not in UPSTREAM_ONLY and n not in SAMPLED
    )
    assert missing == [], f"upstream families ksched lacks: {missing}"
    extra = sorted(
        n
        for n in ks
        if n not in up
        and not n.startswith(_KSCHED_PREFIXES)
        and n not in KSCHED_ONLY
        and n not in SAMPLED
    )
    assert extra == [], f"ksched families upstream does not have: {extra}"
    # client_golang prints no family without a sample (a vector without children).
    assert [n for n, f in ks.items() if not f.samples] == []
    for name in sorted(set(up) & set(ks)):
        u, k = up[name], ks[name]
        assert (name, k.type) == (name, u.type)
        assert (name, k.help) == (name, u.help)
        assert (name, k.labels) == (name, u.labels)
    # The Go runtime's families have Python equivalents.
    assert {"python_info", "python_gc_collections_total"} <= set(ks)
    # Both scheduled one pod and failed one.
    for fams in (up, ks):
        assert fams["scheduler_schedule_attempts_total"].samples >= 2


def samples(text: str, family: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``family``: label pairs → value."""
    out: dict[frozenset[tuple[str, str]], float] = {}
    for line in text.splitlines():
        m = re.match(rf"{family}(\{{(.*)\}})? (\S+)$", line)
        if m:
            pairs = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            out[pairs] = float(m.group(3))
    return out


def test_plugin_evaluation_series_are_upstreams(
    text_pair: Pair, control_plane: ControlPlane
) -> None:
    """Every plugin at PreFilter, Filter, PreScore and Score has its series from the
    framework's creation on, as upstream's instrumented plugins; both schedulers have
    counted their two pods' evaluations."""
    family = "scheduler_plugin_evaluation_total"
    by_side = {}
    for which in ("upstream", "ksched"):
        text = scrape(text_pair.port(which), "/metrics", control_plane)
        profile = f"{which}-{text_pair.tag}"
        got = {
            frozenset(p for p in labels if p[0] != "profile"): v
            for labels, v in samples(text, family).items()
            if ("profile", profile) in labels
        }
        by_side[which] = got
    up, ks = by_side["upstream"], by_side["ksched"]
    assert sorted(map(sorted, ks)) == sorted(map(sorted, up))
    # The bound pod went through Filter and (one node) no Score; the big one failed Filter.
    for series in (up, ks):
        fit = frozenset({("plugin", "NodeResourcesFit"), ("extension_point", "Filter")})
        assert series[fit] >= 2


def test_resource_metrics_are_upstreams(text_pair: Pair, control_plane: ControlPlane) -> None:
    def samples(which: str) -> set[str]:
        text = scrape(text_pair.port(which), "/metrics/resources", control_plane)
        prefix = text_pair.names[which]
        out = set()
        for line in text.splitlines():
            if line.startswith("kube_pod_resource") and f'pod="{prefix}-' in line:
                line = line.replace(f'pod="{prefix}-', 'pod="X-')
                line = line.replace(f"{which}-{text_pair.tag}", "S")
                name, _, value = line.rpartition(" ")
                out.add(f"{name} {float(value)}")
        return out

    up, ks = samples("upstream"), samples("ksched")
    assert up and ks == up
    up_f = families(scrape(text_pair.port("upstream"), "/metrics/resources", control_plane))
    ks_f = families(scrape(text_pair.port("ksched"), "/metrics/resources", control_plane))
    assert {n: (f.type, f.help) for n, f in ks_f.items()} == {
        n: (f.type, f.help) for n, f in up_f.items()
    }


# ---- logs -----------------------------------------------------------------------------------

#: Messages of a pod's life that both must log at -v 2 (in this order per pod).
POD_MESSAGES = {
    "bound": ["Successfully bound pod to node"],
    "big": [
        "No preemption candidate is found; preemption is not helpful for scheduling",
        "Unable to schedule pod; no fit; waiting",
    ],
}


def _text_record(line: str) -> tuple[str, str, list[tuple[str, str]]]:
    """(severity, message, [(key, value)]) of a structured klog text line."""
    severity = line[0]
    rest = _strip_klog(line)
    m = re.match(r'"((?:[^"\\]|\\.)*)"(.*)$', rest)
    assert m is not None, line
    pairs = re.findall(r' (\w+)=("(?:[^"\\]|\\.)*"|\S+)', m.group(2))
    return severity, m.group(1), pairs


def _normalize(value: str, which: str, prefix: str, tag: str) -> str:
    return value.replace(f"{prefix}-", "X-").replace(f"{which}-{tag}", "S")


def first_records(pair: Pair, which: str, pod: str, fmt: str) -> list[Any]:
    """The first record of each expected message about ``pod``, normalized."""
    prefix = pair.names[which]
    wanted = POD_MESSAGES[pod]
    seen: dict[str, Any] = {}
    for line in pair.log(which).splitlines():
        if f"{prefix}-{pod}" not in line:
            continue
        if fmt == "json":
            if not line.startswith("{"):
                continue
            pairs = json.loads(line, object_pairs_hook=list)
            doc = dict(pairs)
            msg = doc.get("msg")
            if msg in wanted and msg not in seen:
                keys = [
                    (k, _normalize(json.dumps(v, sort_keys=True), which, prefix, pair.tag))
                    for k, v in pairs
                    if k not in ("ts", "caller", "msg")
                ]
                seen[msg] = keys
        else:
            if not re.match(r"^[IWEF]\d{4} ", line) or '] "' not in line:
                continue
            severity, msg, kv = _text_record(line)
            if msg in wanted and msg not in seen:
                seen[msg] = (
                    severity,
                    [(k, _normalize(v, which, prefix, pair.tag)) for k, v in kv],
                )
    assert list(seen) == [m for m in wanted if m in seen], seen
    return [seen.get(m) for m in wanted]


@pytest.mark.parametrize("pod", ["bound", "big"])
def test_text_log_lines_of_a_pod_are_upstreams(text_pair: Pair, pod: str) -> None:
    up = first_records(text_pair, "upstream", pod, "text")
    ks = first_records(text_pair, "ksched", pod, "text")
    assert None not in up, text_pair.log("upstream")[-3000:]
    assert ks == up


@pytest.mark.parametrize("pod", ["bound", "big"])
def test_json_log_lines_of_a_pod_are_upstreams(json_pair: Pair, pod: str) -> None:
    up = first_records(json_pair, "upstream", pod, "json")
    ks = first_records(json_pair, "ksched", pod, "json")
    assert None not in up, json_pair.log("upstream")[-3000:]
    assert ks == up


def test_startup_log_messages_are_upstreams(text_pair: Pair) -> None:
    for which in ("upstream", "ksched"):
        log = text_pair.log(which)
        assert '"Starting Kubernetes Scheduler" version="v1.36.5' in log
        assert re.search(r"\] Serving securely on 127\.0\.0\.1:\d+\n", log), which
        assert '"Using component config" config=<' in log
        assert '] FLAG: --v="2"' in log


# ---- events -------------------------------------------------------------------------------


def test_events_report_the_profile_and_host_as_upstream(
    text_pair: Pair, control_plane: ControlPlane
) -> None:
    status, body = control_plane.request("GET", "/apis/events.k8s.io/v1/events")
    assert status == 200
    got: dict[str, set[tuple[str, str, str]]] = {}
    for which, prefix in text_pair.names.items():
        got[which] = {
            (e["reason"], e["reportingController"], e["reportingInstance"])
            for e in body["items"]
            if e["regarding"]["name"].startswith(f"{prefix}-")
            and e["regarding"]["namespace"] == text_pair.namespace
        }
    host = socket.gethostname()
    for which in ("upstream", "ksched"):
        sched = f"{which}-{text_pair.tag}"
        assert got[which] == {
            ("Scheduled", sched, f"{sched}-{host}"),
            ("FailedScheduling", sched, f"{sched}-{host}"),
        }


# ---- endpoints per identity -----------------------------------------------------------------

PATHS = [
    "/healthz",
    "/livez",
    "/readyz",
    "/healthz/ping",
    "/readyz/shutdown",
    "/metrics",
    "/metrics/resources",
    "/metrics/slis",
    "/configz",
    "/flagz",
    "/statusz",
    "/debug/pprof/",
    "/debug/pprof/goroutine?debug=1",
    "/debug/pprof/cmdline",
    "/debug/pprof",
    "/debug/flags/v",
    "/nope",
]


@pytest.fixture(scope="module")
def identities(control_plane: ControlPlane) -> Iterator[dict[str, Obj]]:
    cp = control_plane
    ns = f"ids-{uuid.uuid4().hex[:6]}"
    assert cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    role = f"dropin-reader-{ns}"
    urls = ["/metrics", "/metrics/*", "/configz", "/flagz", "/statusz", "/debug/*"]
    assert (
        cp.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {"metadata": {"name": role}, "rules": [{"nonResourceURLs": urls, "verbs": ["get"]}]},
        )[0]
        == 201
    )
    reader = service_account_token(cp, ns, "reader")
    nobody = service_account_token(cp, ns, "nobody")
    assert (
        cp.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
            },
        )[0]
        == 201
    )
    time.sleep(1.0)  # RBAC caches
    try:
        yield {
            "anonymous": {},
            "bad-token": {"token": "not-a-token"},
            "no-rights": {"token": nobody},
            "reader": {"token": reader},
            "admin-cert": {"cert": (cp.client_cert_file, cp.client_key_file)},
        }
    finally:
        cp.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}")
        cp.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")


def status_matrix(port: int, identities: dict[str, Obj]) -> dict[tuple[str, str], int]:
    out = {}
    for who, creds in identities.items():
        for path in PATHS:
            out[(who, path)] = https(port, path, **creds)[0]
        out[(who, "PUT /debug/flags/v")] = https(
            port, "/debug/flags/v", method="PUT", body=b"2", **creds
        )[0]
    return out


def test_endpoint_status_codes_per_identity_are_upstreams(
    text_pair: Pair, identities: dict[str, Obj]
) -> None:
    up = status_matrix(text_pair.port("upstream"), identities)
    ks = status_matrix(text_pair.port("ksched"), identities)
    assert ks == up
    assert up[("admin-cert", "/flagz")] == 200 and up[("anonymous", "/metrics")] == 403


def _flagz(text: str) -> dict[str, str]:
    lines = text.split("\n")
    assert lines[:3] == [
        "",
        "kube-scheduler flagz",
        "Warning: This endpoint is not meant to be machine parseable, has no formatting "
        "compatibility guarantees and is for debugging purposes only.",
    ], text
    out = {}
    for line in lines[3:]:
        if line:
            m = re.match(r"([a-z0-9-]+)(: |:|=| )(.*)$", line)
            assert m is not None, line
            out[m.group(1)] = m.group(3)
    return out


#: Flags both were given the same value for (or neither was given).
SAME_FLAGS = ("v", "leader-elect", "profiling", "feature-gates", "logging-format",
              "authorization-always-allow-paths", "kube-api-qps", "tls-min-version")  # fmt: skip


def test_zpages_answer_as_upstream(text_pair: Pair, control_plane: ControlPlane) -> None:
    cert = (control_plane.client_cert_file, control_plane.client_key_file)
    flagz = {}
    for which in ("upstream", "ksched"):
        port = text_pair.port(which)
        status, text = https(port, "/flagz", cert=cert)
        assert status == 200
        flagz[which] = _flagz(text)
        status, text = https(port, "/statusz", cert=cert)
        assert status == 200 and "kube-scheduler statusz" in text
        assert re.search(r"^Paths(:|: |=| ) /configz /flagz /healthz /livez /metrics /readyz$",
                         text, re.M), (which, text)  # fmt: skip
        accept = "application/json;as=Flagz;v=v1beta1;g=config.k8s.io"
        status, body = https_accept(port, "/flagz", accept, cert)
        assert status == 200 and json.loads(body)["kind"] == "Flagz"
        status, _ = https_accept(port, "/flagz", "application/json", cert)
        assert status == 406
    assert flagz["ksched"].keys() == flagz["upstream"].keys()
    for name in SAME_FLAGS:
        assert (name, flagz["ksched"][name]) == (name, flagz["upstream"][name])


def https_accept(port: int, path: str, accept: str, cert: tuple[Path, Path]) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def unprofiled(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, int]]:
    cp = control_plane
    tmp = tmp_path_factory.mktemp("unprofiled")
    # --profiling is ignored next to --config (upstream too): the config turns it off.
    up = cp.start_kube_scheduler({"enableProfiling": False})
    cfg = write_scheduler_config(
        tmp / "cfg.json",
        {
            "clientConnection": {"kubeconfig": str(cp.kubeconfig)},
            "leaderElection": {"leaderElect": False},
            "enableProfiling": False,
            "profiles": [{"schedulerName": "ksched-unprofiled"}],
        },
    )
    ks = KschedProcess(
        [
            f"--config={cfg}",
            f"--authentication-kubeconfig={cp.kubeconfig}",
            f"--authorization-kubeconfig={cp.kubeconfig}",
            f"--client-ca-file={cp.ca_file}",
        ],
        tmp / "ksched.log",
    )
    try:
        ks.wait_serving(60)
        yield up.port, ks.port
    finally:
        ks.stop()
        up.stop()


def test_profiling_off_as_upstream(unprofiled: tuple[int, int], identities: dict[str, Obj]) -> None:
    up_port, ks_port = unprofiled
    up, ks = status_matrix(up_port, identities), status_matrix(ks_port, identities)
    assert ks == up
    assert up[("admin-cert", "/debug/pprof/")] == 404


def test_the_cpu_profile_samples_the_scheduler(
    text_pair: Pair, control_plane: ControlPlane
) -> None:
    cert = (control_plane.client_cert_file, control_plane.client_key_file)
    port = text_pair.port("ksched")
    status, text = https(port, "/debug/pprof/profile?seconds=1", cert=cert, timeout=20)
    assert status == 200
    # Folded stacks, one line per stack with its sample count; the endpoint's own
    # handler was busy during the second.
    assert re.search(r"^\S.*;.* \d+$", text, re.M) or text.startswith("# no busy samples")
    status, text = https(port, "/debug/pprof/goroutine?debug=1", cert=cert)
    assert status == 200 and "asyncio task" in text and "thread " in text
    assert https(port, "/debug/pprof/profile?seconds=1", token="not-a-token")[0] == 401
    assert https(port, "/debug/pprof/profile?seconds=1")[0] == 403

"""The ``ksched`` commands around configuration, as kube-scheduler's flags behave:
``validate-config FILE``, ``run --write-config-to FILE`` and ``simulate --config FILE``;
how ``ksched simulate`` ends (all placed, no progress possible, timeout) and its help.

The effective config they print is compared with what the real kube-scheduler v1.36.5
wrote for the same input (``tests/unit/config/upstream``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ksched import cli, simulate
from ksched.sim.workloads import WORKLOADS

CONFIG_TESTS = Path(__file__).resolve().parents[1] / "config"
UPSTREAM = CONFIG_TESTS / "upstream"
GOLDEN = CONFIG_TESTS / "golden"
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def write(tmp_path: Path, body: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return path


@pytest.mark.parametrize(
    ("config", "upstream"),
    [
        pytest.param(GOLDEN / "empty.in.yaml", "empty", id="empty"),
        pytest.param(UPSTREAM / "two_profiles_in_tree.in.yaml", "two_profiles_in_tree", id="two"),
        pytest.param(UPSTREAM / "json.in.json", "json", id="json-input"),
    ],
)
def test_validate_config_prints_what_upstream_writes(
    config: Path, upstream: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["validate-config", str(config)]) == 0
    out, err = capsys.readouterr()
    assert out == (UPSTREAM / f"{upstream}.upstream.yaml").read_text()
    assert err == ""


def test_validate_config_prints_every_error_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        """\
        parallelism: 0
        profiles:
        - schedulerName: a
        - schedulerName: a
          plugins:
            filter:
              enabled: [{name: NoSuchPlugin}]
        """,
    )
    assert cli.main(["validate-config", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"{path}: invalid KubeSchedulerConfiguration (3 errors):"
    assert (
        lines[1]
        == "  - parallelism: Invalid value: 0: should be an integer value greater than zero"
    )
    assert lines[2].startswith(
        '  - profiles[1].plugins.filter.enabled[0]: Invalid value: "NoSuchPlugin": plugin does '
        "not exist; known plugins: CapacityScheduling, Coscheduling, DefaultBinder, "
    )
    assert lines[3] == "  - profiles[1].schedulerName: Duplicate value: {}"


def test_validate_config_of_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["validate-config", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read config file" in capsys.readouterr().err


def test_validate_config_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["validate-config"])
    assert info.value.code == 2


@pytest.mark.parametrize("case", ["two_profiles_in_tree", "weights_in_tree", "extenders"])
def test_run_write_config_to_writes_what_upstream_writes_and_exits(
    case: str, tmp_path: Path
) -> None:
    out = tmp_path / "effective.yaml"
    config = UPSTREAM / f"{case}.in.yaml"
    # Extenders and leader election are refused by `ksched run`, but writing the
    # config comes first, as upstream (it exits before connecting to anything).
    assert cli.main(["run", "--config", str(config), "--write-config-to", str(out)]) == 0
    assert out.read_text() == (UPSTREAM / f"{case}.upstream.yaml").read_text()


def test_run_write_config_to_refuses_an_invalid_config(tmp_path: Path) -> None:
    out = tmp_path / "effective.yaml"
    config = write(tmp_path, "percentageOfNodesToScore: 101\n")
    assert cli.main(["run", "--config", str(config), "--write-config-to", str(out)]) == 1
    assert not out.exists()


def test_simulate_with_config_schedules_with_its_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(
        tmp_path,
        """\
        profiles:
        - schedulerName: default-scheduler
          percentageOfNodesToScore: 50
          plugins:
            score:
              disabled: [{name: "*"}]
              enabled: [{name: NodeResourcesFit, weight: 1}]
          pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy: {type: MostAllocated}
        """,
    )
    argv = ["simulate", "--nodes", "20", "--pods", "60", "--seed", "1", "--no-progress"]
    assert cli.main([*argv, "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "scheduled           60/60" in out
    # MostAllocated packs the 60 pods (100m cpu of 4) onto very few of the 20 nodes.
    used = int(out.split("placement           ")[1].split(" nodes used")[0])
    assert used <= 3


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            "profiles:\n- schedulerName: other\n",
            "no profile handles the workload's pods (schedulerName default-scheduler); "
            "profiles: other",
            id="no-default-scheduler-profile",
        ),
        pytest.param(
            "parallelism: -1\n",
            "parallelism: Invalid value: -1: should be an integer value greater than zero",
            id="invalid",
        ),
    ],
)
def test_simulate_with_a_config_it_cannot_use(
    body: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, body)
    argv = ["simulate", "--nodes", "5", "--pods", "5", "--no-progress", "--config", str(config)]
    assert cli.main(argv) == cli.EXIT_ERROR
    assert message in capsys.readouterr().err


def test_simulate_preemption_without_sizes_uses_the_workloads_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """PreemptionBasic needs its low-priority pods: given only --nodes, the workload's
    sizes scale to them (4 existing pods and 1 preemptor per node)."""
    argv = ["simulate", "--workload", "preemption", "--nodes", "20", "--no-progress"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "preemption: 20 nodes, 80 existing pods, 20 new pods" in out
    assert "scheduled           20/20" in out


def test_simulate_ends_by_itself_when_some_pods_can_never_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One pod per host with 20 hosts: 10 of the 30 pods can never fit. The run ends
    once nothing can progress (long before --timeout), counts them with their
    FailedScheduling message, and exits 1."""
    argv = [
        "simulate",
        "--workload",
        "pod-anti-affinity",
        "--nodes",
        "20",
        "--existing-pods",
        "0",
        "--pods",
        "30",
        "--timeout",
        "300",
        "--no-progress",
    ]
    assert cli.main(argv) == cli.EXIT_UNSCHEDULABLE
    out = capsys.readouterr().out
    assert "scheduled           20/30" in out
    assert "unschedulable       10 pods (no progress possible" in out
    assert (
        "10 pods: 0/20 nodes are available: 20 node(s) didn't match pod anti-affinity rules." in out
    )


def test_simulate_timeout_with_pods_still_in_progress_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "--nodes", "50", "--pods", "20000", "--timeout", "0", "--no-progress"]
    assert cli.main(argv) == cli.EXIT_ERROR
    captured = capsys.readouterr()
    assert "--timeout 0s reached" in captured.err
    assert "still pending when the timeout ended the run" in captured.out


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_workload_places_all_its_pods_at_its_default_shape(workload: str) -> None:
    """The default sizes make sense: scaled down to 40 nodes (as --nodes 40 scales
    them), every new pod of every workload fits."""
    nodes, existing, pods = WORKLOADS[workload].sizes
    scale = 40 / nodes
    report = simulate.run(
        nodes=40,
        pods=round(pods * scale),
        existing_pods=round(existing * scale),
        workload=workload,
        seed=3,
        progress=False,
        timeout=120,
    )
    assert report.outcome == simulate.ALL_PLACED, report.format()
    assert report.scheduled == round(pods * scale)


def test_help_lists_every_workload_and_the_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["simulate", "--help"])
    out = capsys.readouterr().out
    for name in WORKLOADS:
        assert f"  {name} " in out
    assert "exit status:" in out and "some pods are unschedulable" in out
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out  # no raw markup
    for command in ("simulate", "bench", "run", "validate-config"):
        assert command in out


def test_kube_scheduler_is_a_console_command_with_upstreams_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import tomllib

    scripts = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())[
        "project"
    ]["scripts"]
    assert scripts["kube-scheduler"] == "ksched.cli:kube_scheduler_main"
    assert cli.kube_scheduler(["--help"]) == 0
    assert capsys.readouterr().out.startswith("The Kubernetes scheduler is a control plane")
    assert cli.kube_scheduler(["--leader-elect", "false"]) == 1
    assert capsys.readouterr().err.endswith(
        'Error: "kube-scheduler" does not take any arguments, got ["false"]\n'
    )
    assert cli.kube_scheduler(["--nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Usage:\n  kube-scheduler [flags]\n") and err.endswith(
        "\nError: unknown flag: --nope\n"
    )

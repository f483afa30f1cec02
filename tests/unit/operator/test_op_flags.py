"""kube-scheduler's command line without a cluster: pflag's syntax and errors, the help
layout, and how the flags change the configuration (upstream ``Options.ApplyTo``)."""

from __future__ import annotations

import pytest

from ksched.config import decode_config_bytes
from ksched.options import FlagError, HelpRequested, parse
from ksched.options.flags import new_flag_sets
from ksched.options.pflag import FlagSets, format_float32

HEAD = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("argv", "name", "value"),
    [
        pytest.param(["--secure-port=1234"], "secure-port", 1234, id="equals"),
        pytest.param(["--secure-port", "1234"], "secure-port", 1234, id="separate-value"),
        pytest.param(["--secure-port=0x10"], "secure-port", 16, id="go-base-prefix"),
        pytest.param(["--leader-elect"], "leader-elect", True, id="bare-bool"),
        pytest.param(["--leader-elect=F"], "leader-elect", False, id="go-bool-spelling"),
        pytest.param(["--leader_elect=false"], "leader-elect", False, id="underscore-normalized"),
        pytest.param(["-v", "3"], "v", 3, id="shorthand-separate"),
        pytest.param(["-v4"], "v", 4, id="shorthand-attached"),
        pytest.param(["-v=5"], "v", 5, id="shorthand-equals"),
        pytest.param(
            ["--leader-elect-lease-duration=1m30s"],
            "leader-elect-lease-duration",
            90_000_000_000,
            id="go-duration",
        ),
        pytest.param(
            ["--tls-cipher-suites=A,B", "--tls-cipher-suites=C"],
            "tls-cipher-suites",
            ["A", "B", "C"],
            id="slices-accumulate",
        ),
        pytest.param(
            ["--authorization-always-allow-paths=/x"],
            "authorization-always-allow-paths",
            ["/x"],
            id="first-set-replaces-the-default",
        ),
        pytest.param(
            ["--feature-gates=A=true", "--feature-gates=kube:B=false"],
            "feature-gates",
            {"": ["A=true"], "kube": ["B=false"]},
            id="feature-gates-repeat",
        ),
        pytest.param(
            ["--vmodule=schedule_one=4,queue=5"],
            "vmodule",
            [("schedule_one", 4), ("queue", 5)],
            id="vmodule",
        ),
        pytest.param(
            ["--allow-metric-labels=m,l='a,b'"],
            "allow-metric-labels",
            {"m,l": "'a,b'"},
            id="string-to-string",
        ),
        pytest.param(["--kube-api-qps=20.5"], "kube-api-qps", 20.5, id="float32"),
        pytest.param(
            ["--log-json-info-buffer-size=2Ki"], "log-json-info-buffer-size", 2048, id="quantity"
        ),
        pytest.param(["--bind-address=::1"], "bind-address", "::1", id="ip"),
        pytest.param(["--version"], "version", "true", id="version-bare"),
        pytest.param(["--version=raw"], "version", "raw", id="version-raw"),
    ],
)
def test_values(argv: list[str], name: str, value: object) -> None:
    opts = parse(argv)
    assert opts.get(name) == value
    assert opts.changed(name)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        pytest.param(["--bogus"], "unknown flag: --bogus", id="unknown"),
        pytest.param(["--leader"], "unknown flag: --leader", id="no-prefix-matching"),
        pytest.param(["-x"], "unknown shorthand flag: 'x' in -x", id="unknown-shorthand"),
        pytest.param(["--config"], "flag needs an argument: --config", id="missing-value"),
        pytest.param(["-v"], "flag needs an argument: 'v' in -v", id="shorthand-missing"),
        pytest.param(
            ["--secure-port=abc"],
            'invalid argument "abc" for "--secure-port" flag: '
            'strconv.ParseInt: parsing "abc": invalid syntax',
            id="int",
        ),
        pytest.param(
            ["--kube-api-burst=3000000000"],
            'invalid argument "3000000000" for '
            '"--kube-api-burst" flag: strconv.ParseInt: parsing "3000000000": value out '
            "of range",
            id="int32-range",
        ),
        pytest.param(
            ["--leader-elect=maybe"],
            'invalid argument "maybe" for "--leader-elect" '
            'flag: strconv.ParseBool: parsing "maybe": invalid syntax',
            id="bool",
        ),
        pytest.param(
            ["--v=-1"],
            'invalid argument "-1" for "-v, --v" flag: strconv.ParseUint: '
            'parsing "-1": invalid syntax',
            id="level",
        ),
        pytest.param(
            ["--bind-address=nope"],
            'invalid argument "nope" for "--bind-address" flag: failed to parse IP: "nope"',
            id="ip",
        ),
        pytest.param(
            ["--leader-elect-retry-period=2"],
            'invalid argument "2" for '
            '"--leader-elect-retry-period" flag: time: missing unit in duration "2"',
            id="duration",
        ),
        pytest.param(["---x"], "bad flag syntax: ---x", id="bad-syntax"),
    ],
)
def test_errors(argv: list[str], error: str) -> None:
    with pytest.raises(FlagError) as exc:
        parse(argv)
    assert str(exc.value) == error


def test_help_and_positional_arguments() -> None:
    assert parse(["-h"]).get("help") is True
    with pytest.raises(FlagError, match="unknown flag: --h"):
        parse(["--h"])
    bare = FlagSets("demo")
    with pytest.raises(HelpRequested):
        bare.parse(["--help"])
    opts = parse(["--leader-elect", "false", "--", "--v=2"])
    assert opts.args == ["false", "--v=2"] and opts.get("v") == 0


def test_there_are_62_flags_in_upstreams_nine_sections() -> None:
    fss = new_flag_sets()
    assert [s.name for s in fss.sets] == [
        "misc",
        "secure serving",
        "authentication",
        "authorization",
        "deprecated",
        "leader election",
        "feature gate",
        "metrics",
        "logs",
        "global",
    ]
    assert len(list(fss)) == 62


def test_help_layout_aligns_each_section_and_shows_non_zero_defaults() -> None:
    fss = FlagSets("demo")
    sec = fss.section("misc")
    sec.string("name", "", "The name.")
    sec.string("kind", "leases", "The kind.")
    sec.bool("enabled", True, "Whether it is on.")
    sec.bool("off", False, "Whether it is off.")
    sec.duration("every", 2_000_000_000, "How often.\nSecond line.")
    assert fss.usage() == (
        "Usage:\n  demo [flags]\n\nMisc flags:\n\n"
        "      --enabled          Whether it is on. (default true)\n"
        "      --every duration   How often.\n"
        "                         Second line. (default 2s)\n"
        '      --kind string      The kind. (default "leases")\n'
        "      --name string      The name.\n"
        "      --off              Whether it is off.\n"
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [(50.0, "50"), (0.5, "0.5"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"), (20.5, "20.5")],
)
def test_float32_prints_as_go(value: float, text: str) -> None:
    assert format_float32(value) == text


def test_print_flags_quotes_every_value_as_upstream() -> None:
    lines = parse(["--v=2", "--feature-gates=A=true"]).print_flags()
    assert 'FLAG: --v="2"' in lines
    assert 'FLAG: --feature-gates="A=true"' in lines
    assert 'FLAG: --leader-elect-lease-duration="15s"' in lines
    assert 'FLAG: --pod-max-in-unschedulable-pods-duration="5m0s"' in lines
    assert 'FLAG: --authorization-always-allow-paths="[/healthz,/readyz,/livez]"' in lines


@pytest.mark.parametrize(
    ("argv", "with_config", "want"),
    [
        pytest.param(
            [
                "--kubeconfig=/k",
                "--kube-api-qps=7",
                "--kube-api-burst=9",
                "--profiling=false",
                "--kube-api-content-type=application/json",
            ],
            False,
            {
                "kubeconfig": "/k",
                "qps": 7.0,
                "burst": 9,
                "profiling": False,
                "content_type": "application/json",
            },
            id="deprecated-flags-without-config",
        ),
        pytest.param(
            ["--kubeconfig=/k", "--kube-api-qps=7", "--profiling=false"],
            True,
            {"kubeconfig": "/from-file", "qps": 50.0, "profiling": True},
            id="deprecated-flags-ignored-with-config",
        ),
        pytest.param(
            [
                "--leader-elect=false",
                "--leader-elect-resource-name=x",
                "--leader-elect-resource-namespace=y",
                "--leader-elect-lease-duration=30s",
            ],
            True,
            {
                "leader_elect": False,
                "resource_name": "x",
                "resource_namespace": "y",
                "lease_duration": "30s",
            },
            id="leader-election-flags-with-config",
        ),
        pytest.param(
            [],
            True,
            {"leader_elect": True, "resource_name": "kube-scheduler"},
            id="file-values-kept",
        ),
    ],
)
def test_apply_merges_the_flags_as_upstream(
    argv: list[str], with_config: bool, want: dict[str, object]
) -> None:
    text = HEAD + (b"clientConnection: {kubeconfig: /from-file}\n" if with_config else b"")
    cfg = decode_config_bytes(text)
    opts = parse([*argv, "--config=/f.yaml"] if with_config else argv)
    opts.apply(cfg)
    cc, le = cfg.client_connection, cfg.leader_election
    got = {
        "kubeconfig": cc.kubeconfig,
        "qps": cc.qps,
        "burst": cc.burst,
        "content_type": cc.content_type,
        "profiling": cfg.enable_profiling,
        "leader_elect": le.leader_elect,
        "resource_name": le.resource_name,
        "resource_namespace": le.resource_namespace,
        "lease_duration": str(le.lease_duration),
    }
    assert {k: got[k] for k in want} == want

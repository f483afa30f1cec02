"""Loading: YAML/JSON parsing, apiVersion checks, strict decoding, the CLI entry point.

Strict-decoding expectations follow ``pkg/scheduler/apis/config/scheme/scheme_test.go``
(``TestCodecsDecodePluginConfig``: "v1 NodeResourcesFitArgs shape encoding is
strict", "plugin group and kind should match the type", "out-of-tree plugin args")
and ``cmd/kube-scheduler/app/options/configfile.go``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from config_testlib import HEADER, errors_of, load

from ksched.config import (
    ConfigError,
    InterPodAffinityArgs,
    NodeResourcesFitArgs,
    UnknownArgs,
    dump_yaml,
    load_config,
    load_config_bytes,
    validate_config_main,
    write_config,
)

# ------------------------------------------------------------------------ versions


@pytest.mark.parametrize(
    ("version", "release"),
    [("v1beta1", "v1.26"), ("v1beta2", "v1.28"), ("v1beta3", "v1.29")],
)
def test_removed_api_versions_say_when_and_what_to_use(version: str, release: str) -> None:
    body = f"apiVersion: kubescheduler.config.k8s.io/{version}\nkind: KubeSchedulerConfiguration\n"
    assert errors_of(body, header=False) == [
        f'apiVersion: apiVersion "kubescheduler.config.k8s.io/{version}" was removed in '
        f'Kubernetes {release}; kube-scheduler v1.36 only serves "kubescheduler.config.k8s.io/v1": '
        "change apiVersion to kubescheduler.config.k8s.io/v1 (see the v1 migration notes for "
        "renamed and removed fields)"
    ]


def test_wrong_kind() -> None:
    body = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeProxyConfiguration\n"
    assert errors_of(body, header=False) == [
        'no kind "KubeProxyConfiguration" is registered for version '
        '"kubescheduler.config.k8s.io/v1" (expected apiVersion '
        '"kubescheduler.config.k8s.io/v1", kind "KubeSchedulerConfiguration")'
    ]


def test_missing_kind_and_api_version() -> None:
    assert errors_of("parallelism: 3\n", header=False) == ["Object 'Kind' is missing"]
    assert errors_of("kind: KubeSchedulerConfiguration\n", header=False) == [
        "Object 'apiVersion' is missing"
    ]


def test_api_version_and_kind_must_be_strings() -> None:
    assert errors_of("apiVersion: [a]\nkind: KubeSchedulerConfiguration\n", header=False) == [
        "apiVersion: cannot unmarshal array into Go value of type string"
    ]
    assert errors_of("apiVersion: v1\nkind: {a: b}\n", header=False) == [
        "kind: cannot unmarshal object into Go value of type string"
    ]


def test_document_must_be_an_object() -> None:
    assert errors_of("- a\n- b\n", header=False) == ["the configuration must be a YAML/JSON object"]


def test_several_documents_are_rejected() -> None:
    errs = errors_of(HEADER + "---\n" + HEADER, header=False)
    assert errs == ["expected one YAML document, found several"]


# ------------------------------------------------------------------- strict decoding


def test_unknown_fields_name_the_full_path() -> None:
    body = """\
    foo: 1
    leaderElection:
      leaderElects: true
    profiles:
    - schedulerName: a
      plugins:
        score:
          enabled:
          - name: ImageLocality
            wieght: 3
    """
    assert errors_of(body) == [
        'unknown field "foo"',
        'unknown field "leaderElection.leaderElects"',
        'unknown field "profiles[0].plugins.score.enabled[0].wieght"',
    ]


def test_duplicate_fields_yaml() -> None:
    body = "parallelism: 4\nparallelism: 5\nprofiles:\n- schedulerName: a\n  schedulerName: b\n"
    assert errors_of(body) == [
        'duplicate field "parallelism"',
        'duplicate field "profiles[0].schedulerName"',
    ]


def test_duplicate_fields_json() -> None:
    data = (
        b'{"apiVersion": "kubescheduler.config.k8s.io/v1", '
        b'"kind": "KubeSchedulerConfiguration", "parallelism": 1, "parallelism": 2}'
    )
    with pytest.raises(ConfigError) as info:
        load_config_bytes(data, "c.json")
    assert info.value.lines() == ['duplicate field "parallelism"']


def test_json_documents_load() -> None:
    data = (
        b'{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",'
        b' "parallelism": 8, "profiles": [{"schedulerName": "json-scheduler"}]}'
    )
    cfg = load_config_bytes(data, "c.json")
    assert cfg.parallelism == 8
    assert cfg.profiles[0].scheduler_name == "json-scheduler"


def test_unknown_fields_in_plugin_args_are_strict() -> None:
    # The seed article's InterPodAffinity "ignoredKeyPaths" is not a field of the args.
    body = """\
    profiles:
    - schedulerName: default-scheduler
      pluginConfig:
      - name: InterPodAffinity
        args:
          ignoredKeyPaths: [/spec/affinity]
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: RequestedToCapacityRatio
            requestedToCapacityRatio:
              shape:
              - utilization: 0
                score: 0
                scoer: 1
    """
    assert errors_of(body) == [
        'unknown field "profiles[0].pluginConfig[0].args.ignoredKeyPaths"',
        'unknown field "profiles[0].pluginConfig[1].args.scoringStrategy.'
        'requestedToCapacityRatio.shape[0].scoer"',
    ]


def test_wrong_types() -> None:
    body = """\
    parallelism: "16"
    enableProfiling: 1
    leaderElection:
      leaseDuration: 15
      renewDeadline: 10 seconds
    profiles:
    - schedulerName: 7
      pluginConfig:
      - name: VolumeBinding
        args:
          bindTimeoutSeconds: 1.5
    """
    assert errors_of(body) == [
        "parallelism: cannot unmarshal string into Go value of type int32",
        "enableProfiling: cannot unmarshal number into Go value of type bool",
        "leaderElection.leaseDuration: cannot unmarshal number into Go value of type v1.Duration",
        'leaderElection.renewDeadline: time: invalid duration "10 seconds"',
        "profiles[0].schedulerName: cannot unmarshal number into Go value of type string",
        "profiles[0].pluginConfig[0].args.bindTimeoutSeconds: cannot unmarshal number into Go "
        "value of type int64",
    ]


def test_int32_overflow() -> None:
    assert errors_of("parallelism: 4294967296\n") == [
        "parallelism: cannot unmarshal number into Go value of type int32"
    ]


def test_plugin_args_kind_must_match() -> None:
    body = """\
    profiles:
    - pluginConfig:
      - name: InterPodAffinity
        args:
          kind: NodeResourcesFitArgs
          apiVersion: kubescheduler.config.k8s.io/v1
    """
    assert errors_of(body) == [
        "profiles[0].pluginConfig[0].args: args for plugin InterPodAffinity were not of type "
        "InterPodAffinityArgs.kubescheduler.config.k8s.io, got "
        "NodeResourcesFitArgs.kubescheduler.config.k8s.io"
    ]


def test_plugin_args_api_version_must_be_v1() -> None:
    body = """\
    profiles:
    - pluginConfig:
      - name: InterPodAffinity
        args:
          apiVersion: kubescheduler.config.k8s.io/v1beta3
          hardPodAffinityWeight: 2
    """
    assert errors_of(body) == [
        'profiles[0].pluginConfig[0].args.apiVersion: no kind "InterPodAffinityArgs" is '
        'registered for version "kubescheduler.config.k8s.io/v1beta3" (only '
        "kubescheduler.config.k8s.io/v1 is supported)"
    ]


def test_plugin_args_may_carry_version_and_kind() -> None:
    body = """\
    profiles:
    - pluginConfig:
      - name: InterPodAffinity
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: InterPodAffinityArgs
          hardPodAffinityWeight: 2
    """
    args = load(body).profiles[0].plugin_config[0].args
    assert isinstance(args, InterPodAffinityArgs) and args.hard_pod_affinity_weight == 2


def test_out_of_tree_plugin_args_are_kept_verbatim() -> None:
    # Mirrors scheme_test.go "out-of-tree plugin args".
    body = """\
    profiles:
    - schedulerName: net-scheduler
      plugins:
        multiPoint:
          enabled:
          - name: NetworkOverhead
      pluginConfig:
      - name: NetworkOverhead
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: NetworkOverheadArgs
          weightsName: UserDefined
    """
    cfg = load(body, extra=["NetworkOverhead"])
    (pc,) = [pc for pc in cfg.profiles[0].plugin_config if pc.name == "NetworkOverhead"]
    assert pc.args == UnknownArgs(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "NetworkOverheadArgs",
            "weightsName": "UserDefined",
        }
    )
    assert "      weightsName: UserDefined\n    name: NetworkOverhead\n" in dump_yaml(cfg)


def test_plugin_config_without_args_gets_defaults() -> None:
    body = "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n"
    args = load(body).profiles[0].plugin_config[0].args
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.scoring_strategy is not None
    assert args.scoring_strategy.type == "LeastAllocated"


def test_seed_article_latency_profile_loads() -> None:
    # /work/shared/seeds/001: a second profile with a heavier MostAllocated fit score.
    body = """\
    leaderElection:
      leaderElect: true
    profiles:
      - schedulerName: default-scheduler
      - schedulerName: latency-scheduler
        plugins:
          score:
            enabled:
              - name: NodeResourcesFit
                weight: 2
        pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: MostAllocated
    """
    cfg = load(body)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "latency-scheduler"]


# ---------------------------------------------------------------------------- files


def test_load_config_and_write_config_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "in.yaml"
    src.write_text(HEADER + "parallelism: 8\n", encoding="utf-8")
    cfg = load_config(src)
    out = tmp_path / "out.yaml"
    write_config(cfg, out)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("apiVersion: kubescheduler.config.k8s.io/v1\nclientConnection:\n")
    assert "parallelism: 8\n" in text
    assert dump_yaml(load_config(out)) == text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.yaml")
    assert str(info.value).endswith("cannot read config file: No such file or directory")


def test_validate_config_main_prints_effective_config(tmp_path: Path) -> None:
    src = tmp_path / "ok.yaml"
    src.write_text(HEADER, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert validate_config_main(src, stdout=out, stderr=err) == 0
    assert err.getvalue() == ""
    assert "schedulerName: default-scheduler\n" in out.getvalue()


def test_validate_config_main_prints_every_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.yaml"
    src.write_text(HEADER + "parallelism: 0\npodInitialBackoffSeconds: 0\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert validate_config_main(src, stdout=out, stderr=err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == (
        f"{src}: invalid KubeSchedulerConfiguration (2 errors):\n"
        "  - parallelism: Invalid value: 0: should be an integer value greater than zero\n"
        "  - podInitialBackoffSeconds: Invalid value: 0: must be greater than 0\n"
    )


# ------------------------------------------------------------------ hostile files


def _deep_yaml(levels: int) -> str:
    return "foo: " + "[" * levels + "]" * levels + "\n"


def _deep_json(levels: int) -> str:
    return (
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "foo": '
        + "[" * levels
        + "]" * levels
        + "}"
    )


def _laughs(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        pytest.param(
            (HEADER + "# caf\xe9\n").encode("latin-1"),
            "the file is not valid UTF-8: byte 0xe9 at offset 81 (line 3): invalid "
            "continuation byte",
            id="invalid-utf8-in-a-comment",
        ),
        pytest.param(
            HEADER.encode("utf-16-le"),
            "invalid YAML",
            id="utf16-without-bom-is-not-utf8",
        ),
        pytest.param(
            (HEADER + _deep_yaml(5000)).encode(),
            "the document is nested more than 100 levels deep (line 3)",
            id="yaml-sequences-5000-deep",
        ),
        pytest.param(
            (HEADER + "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 5000))).encode(),
            "the document is nested more than 100 levels deep (line 103)",
            id="yaml-mappings-5000-deep",
        ),
        pytest.param(
            _deep_json(5000).encode(),
            "the document is nested more than 100 levels deep (line 1)",
            id="json-arrays-5000-deep",
        ),
        pytest.param(
            (HEADER + "a: &a [1, *a]\n").encode(),
            "alias *a refers to a node that contains it (line 3)",
            id="yaml-alias-inside-its-own-anchor",
        ),
        pytest.param(
            (HEADER + _laughs(9)).encode(),
            "the document expands to more than 1,000,000 nodes (YAML aliases)",
            id="yaml-billion-laughs",
        ),
    ],
)
def test_hostile_files_get_an_error_naming_the_file(
    tmp_path: Path, data: bytes, error: str
) -> None:
    src = tmp_path / "sched.yaml"
    src.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_config(src)
    assert str(info.value).startswith(f"{src}: {error}")
    out, err = io.StringIO(), io.StringIO()
    assert validate_config_main(src, stdout=out, stderr=err) == 1
    assert err.getvalue().startswith(f"{src}: invalid KubeSchedulerConfiguration (1 error):\n")
    assert "Traceback" not in err.getvalue()


def test_nesting_up_to_the_limit_is_decoded() -> None:
    # 1 (the document) + 1 (profiles) + 1 (its item) + ... stays within MAX_DEPTH: the
    # strict decoder then reports the unknown field, no recursion error.
    assert errors_of(_deep_yaml(98)) == ['unknown field "foo"']


def test_aliases_that_expand_moderately_load() -> None:
    cfg = load(
        """\
        profiles:
        - schedulerName: a
          plugins: &plugins {score: {disabled: [{name: ImageLocality}]}}
        - schedulerName: b
          plugins: *plugins
        """
    )
    assert [p.scheduler_name for p in cfg.profiles] == ["a", "b"]
    assert cfg.profiles[0].plugins == cfg.profiles[1].plugins

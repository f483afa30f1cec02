"""kube-scheduler v1.36's command line: its 62 flags in its nine sections, and what they
do to the configuration.

:func:`new_flag_sets` declares every flag with upstream's name, type, default and usage
text (``cmd/kube-scheduler/app/options``, ``k8s.io/apiserver`` serving and delegated
auth options, ``component-base`` leader election, feature gate, metrics and logs
options, ``verflag``), so ``kube-scheduler --help`` prints upstream's help.
:func:`parse` parses a command line into :class:`Options`; :meth:`Options.apply` merges
the flags into the loaded configuration exactly as upstream's ``Options.ApplyTo`` does:

* without ``--config``: the defaulted configuration, then the deprecated flags
  (``--profiling``, ``--contention-profiling``, ``--kubeconfig``,
  ``--kube-api-content-type``, ``--kube-api-qps``, ``--kube-api-burst``) and the
  leader-election flags, each only when given;
* with ``--config``: the file, then the leader-election flags when given (the deprecated
  ones are ignored, as their help says);
* ``--master`` overrides the API server address either way, and
  ``--pod-max-in-unschedulable-pods-duration`` sets the queue's flush age either way.

What ksched does with the serving, authentication, authorization, metrics and logs
flags is up to the components that read :class:`Options` (``ksched.run``,
``ksched.server``, ``ksched.logs``); the docstring of each says where it differs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.config import KubeSchedulerConfiguration
from ksched.config.duration import Duration
from ksched.config.features import FeatureGate
from ksched.options.pflag import (
    BoolValue,
    FlagSets,
    Float32Value,
    Int32SliceValue,
    IntValue,
    IPValue,
    LevelValue,
    MultimapValue,
    NamedCertKey,
    NamedCertKeyValue,
    QuantityValue,
    StringSliceValue,
    StringToStringValue,
    VersionValue,
    VModuleValue,
)

__all__ = [
    "COMMAND",
    "LONG_HELP",
    "SHADOW_COMMAND",
    "SHADOW_HELP",
    "Options",
    "new_flag_sets",
    "parse",
]

COMMAND = "kube-scheduler"
#: Shadow mode (:mod:`ksched.shadow`): kube-scheduler's flags and ``--shadow-scheduler-name``.
SHADOW_COMMAND = "ksched shadow"

SHADOW_HELP = """Shadow mode: decide beside the cluster's active scheduler and act on nothing.
For every pod the active scheduler binds (or reports unschedulable), compute
ksched's own decision with the same configuration and count how the two compare
in ksched_shadow_decisions_total{result}; never bind, patch, delete, send events
or take a Lease (read-only RBAC: deploy/rbac-readonly.yaml). Takes
kube-scheduler's flags."""

LONG_HELP = """The Kubernetes scheduler is a control plane process which assigns
Pods to Nodes. The scheduler determines which Nodes are valid placements for
each Pod in the scheduling queue according to constraints and available
resources. The scheduler then ranks each valid Node and binds the Pod to a
suitable Node. Multiple different schedulers may be used within a cluster;
kube-scheduler is the reference implementation.
See [scheduling](https://kubernetes.io/docs/concepts/scheduling-eviction/)
for more information about scheduling and the kube-scheduler component."""

S = 1_000_000_000

#: ``cliflag.PreferredTLSCipherNames`` / ``InsecureTLSCipherNames`` (Go's crypto/tls).
PREFERRED_CIPHERS = (
    "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256, "
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
)
INSECURE_CIPHERS = (
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, TLS_ECDHE_ECDSA_WITH_RC4_128_SHA, "
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, "
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA, TLS_RSA_WITH_3DES_EDE_CBC_SHA, "
    "TLS_RSA_WITH_AES_128_CBC_SHA, TLS_RSA_WITH_AES_128_CBC_SHA256, "
    "TLS_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_CBC_SHA, "
    "TLS_RSA_WITH_AES_256_GCM_SHA384, TLS_RSA_WITH_RC4_128_SHA"
)

_NOT_WITH_CONFIG = " This parameter is ignored if a config file is specified in --config."


def new_flag_sets(gate: FeatureGate | None = None, *, shadow: bool = False) -> FlagSets:
    """kube-scheduler's ``NamedFlagSets``, in upstream's section order. With ``shadow``,
    ``ksched shadow``'s: the same flags after a ``shadow`` section of its own."""
    gate = gate if gate is not None else FeatureGate()
    command = SHADOW_COMMAND if shadow else COMMAND
    fss = FlagSets(command)
    if shadow:
        fss.section("shadow").add(
            "shadow-scheduler-name",
            StringSliceValue(),
            [],
            "Judge the decisions of the scheduler of the pods with these schedulerNames "
            "(comma-separated, repeatable; each needs a profile of that name). The default "
            "is the schedulerNames of the configured profiles.",
        )

    misc = fss.section("misc")
    misc.string("config", "", "The path to the configuration file.")
    misc.string(
        "write-config-to", "", "If set, write the configuration values to this file and exit."
    )
    misc.string(
        "master",
        "",
        "The address of the Kubernetes API server (overrides any value in kubeconfig)",
    )

    ss = fss.section("secure serving")
    ss.add(
        "bind-address",
        IPValue(),
        "0.0.0.0",
        "The IP address on which to listen for the --secure-port port. The associated "
        "interface(s) must be reachable by the rest of the cluster, and by CLI/web clients. "
        "If blank or an unspecified address (0.0.0.0 or ::), all interfaces and IP address "
        "families will be used.",
    )
    ss.add(
        "secure-port",
        IntValue(),
        10259,
        "The port on which to serve HTTPS with authentication and authorization. If 0, "
        "don't serve HTTPS at all.",
    )
    ss.bool(
        "permit-port-sharing",
        False,
        "If true, SO_REUSEPORT will be used when binding the port, which allows more than one "
        "instance to bind on the same address and port. [default=false]",
    )
    ss.bool(
        "permit-address-sharing",
        False,
        "If true, SO_REUSEADDR will be used when binding the port. This allows binding to "
        "wildcard IPs like 0.0.0.0 and specific IPs in parallel, and it avoids waiting for "
        "the kernel to release sockets in TIME_WAIT state. [default=false]",
    )
    ss.string(
        "cert-dir",
        "",
        "The directory where the TLS certs are located. If --tls-cert-file and "
        "--tls-private-key-file are provided, this flag will be ignored.",
    )
    ss.string(
        "tls-cert-file",
        "",
        "File containing the default x509 Certificate for HTTPS. (CA cert, if any, "
        "concatenated after server cert). If HTTPS serving is enabled, and --tls-cert-file "
        "and --tls-private-key-file are not provided, a self-signed certificate and key are "
        "generated for the public address and saved to the directory specified by --cert-dir.",
    )
    ss.string(
        "tls-private-key-file",
        "",
        "File containing the default x509 private key matching --tls-cert-file.",
    )
    ss.add(
        "tls-cipher-suites",
        StringSliceValue(),
        [],
        "Comma-separated list of cipher suites for the server. If omitted, the default Go "
        "cipher suites will be used. \n"
        f"Preferred values: {PREFERRED_CIPHERS}. \n"
        f"Insecure values: {INSECURE_CIPHERS}.",
    )
    ss.add(
        "tls-curve-preferences",
        Int32SliceValue(),
        [],
        "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key "
        "exchange mechanisms for the server. The supported values depend on the Go version "
        "used. See https://pkg.go.dev/crypto/tls#CurveID for values supported for each Go "
        "version. The order of the list is ignored, and key exchange mechanisms are chosen "
        "by Go from this list using an internal preference order. If omitted, the default "
        "Go curves will be used.",
    )
    ss.string(
        "tls-min-version",
        "",
        "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, "
        "VersionTLS12, VersionTLS13",
    )
    ss.add(
        "tls-sni-cert-key",
        NamedCertKeyValue(),
        [],
        "A pair of x509 certificate and private key file paths, optionally suffixed with a "
        "list of domain patterns which are fully qualified domain names, possibly with "
        "prefixed wildcard segments. The domain patterns also allow IP addresses, but IPs "
        "should only be used if the apiserver has visibility to the IP address requested by "
        "a client. If no domain patterns are provided, the names of the certificate are "
        "extracted. Non-wildcard matches trump over wildcard matches, explicit domain "
        "patterns trump over extracted names. For multiple key/certificate pairs, use the "
        '--tls-sni-cert-key multiple times. Examples: "example.crt,example.key" or '
        '"foo.crt,foo.key:*.foo.com,foo.com".',
    )
    ss.add(
        "http2-max-streams-per-connection",
        IntValue(),
        0,
        "The limit that the server gives to clients for the maximum number of streams in an "
        "HTTP/2 connection. Zero means to use golang's default.",
    )
    ss.bool(
        "disable-http2-serving", False, "If true, HTTP2 serving will be disabled [default=false]"
    )

    authn = fss.section("authentication")
    authn.string(
        "authentication-kubeconfig",
        "",
        "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
        "tokenreviews.authentication.k8s.io. This is optional. If empty, all token requests "
        "are considered to be anonymous and no client CA is looked up in the cluster.",
    )
    authn.duration(
        "authentication-token-webhook-cache-ttl",
        10 * S,
        "The duration to cache responses from the webhook token authenticator.",
    )
    authn.bool(
        "authentication-skip-lookup",
        False,
        "If false, the authentication-kubeconfig will be used to lookup missing "
        "authentication configuration from the cluster.",
    )
    authn.bool(
        "authentication-tolerate-lookup-failure",
        True,
        "If true, failures to look up missing authentication configuration from the cluster "
        "are not considered fatal. Note that this can result in authentication that treats "
        "all requests as anonymous.",
    )
    authn.string(
        "client-ca-file",
        "",
        "If set, any request presenting a client certificate signed by one of the authorities "
        "in the client-ca-file is authenticated with an identity corresponding to the "
        "CommonName of the client certificate.",
    )
    authn.strings(
        "requestheader-username-headers",
        ["x-remote-user"],
        "List of request headers to inspect for usernames. X-Remote-User is common.",
    )
    authn.strings(
        "requestheader-uid-headers",
        [],
        "List of request headers to inspect for UIDs. X-Remote-Uid is suggested. Requires "
        "the RemoteRequestHeaderUID feature to be enabled.",
    )
    authn.strings(
        "requestheader-group-headers",
        ["x-remote-group"],
        "List of request headers to inspect for groups. X-Remote-Group is suggested.",
    )
    authn.strings(
        "requestheader-extra-headers-prefix",
        ["x-remote-extra-"],
        "List of request header prefixes to inspect. X-Remote-Extra- is suggested.",
    )
    authn.string(
        "requestheader-client-ca-file",
        "",
        "Root certificate bundle to use to verify client certificates on incoming requests "
        "before trusting usernames in headers specified by --requestheader-username-headers. "
        "WARNING: generally do not depend on authorization being already done for incoming "
        "requests.",
    )
    authn.strings(
        "requestheader-allowed-names",
        [],
        "List of client certificate common names to allow to provide usernames in headers "
        "specified by --requestheader-username-headers. If empty, any client certificate "
        "validated by the authorities in --requestheader-client-ca-file is allowed.",
    )

    authz = fss.section("authorization")
    authz.string(
        "authorization-kubeconfig",
        "",
        "kubeconfig file pointing at the 'core' kubernetes server with enough rights to "
        "create subjectaccessreviews.authorization.k8s.io. This is optional. If empty, all "
        "requests not skipped by authorization are forbidden.",
    )
    authz.duration(
        "authorization-webhook-cache-authorized-ttl",
        10 * S,
        "The duration to cache 'authorized' responses from the webhook authorizer.",
    )
    authz.duration(
        "authorization-webhook-cache-unauthorized-ttl",
        10 * S,
        "The duration to cache 'unauthorized' responses from the webhook authorizer.",
    )
    authz.strings(
        "authorization-always-allow-paths",
        ["/healthz", "/readyz", "/livez"],
        "A list of HTTP paths to skip during authorization, i.e. these are authorized without "
        "contacting the 'core' kubernetes server.",
    )

    dep = fss.section("deprecated")
    dep.bool(
        "profiling",
        True,
        "DEPRECATED: enable profiling via web interface host:port/debug/pprof/." + _NOT_WITH_CONFIG,
    )
    dep.bool(
        "contention-profiling",
        True,
        "DEPRECATED: enable block profiling, if profiling is enabled." + _NOT_WITH_CONFIG,
    )
    dep.string(
        "kubeconfig",
        "",
        "DEPRECATED: path to kubeconfig file with authorization and master location "
        "information." + _NOT_WITH_CONFIG,
    )
    dep.string(
        "kube-api-content-type",
        "application/vnd.kubernetes.protobuf",
        "DEPRECATED: content type of requests sent to apiserver." + _NOT_WITH_CONFIG,
    )
    dep.add(
        "kube-api-qps",
        Float32Value(),
        50.0,
        "DEPRECATED: QPS to use while talking with kubernetes apiserver." + _NOT_WITH_CONFIG,
    )
    dep.add(
        "kube-api-burst",
        IntValue(32, "int32"),
        100,
        "DEPRECATED: burst to use while talking with kubernetes apiserver." + _NOT_WITH_CONFIG,
    )
    dep.duration(
        "pod-max-in-unschedulable-pods-duration",
        300 * S,
        "DEPRECATED: the maximum time a pod can stay in unschedulablePods. If a pod stays in "
        "unschedulablePods for longer than this value, the pod will be moved from "
        "unschedulablePods to backoffQ or activeQ. This flag is deprecated and will be "
        "removed in a future version.",
    )

    le = fss.section("leader election")
    le.bool(
        "leader-elect",
        True,
        "Start a leader election client and gain leadership before executing the main loop. "
        "Enable this when running replicated components for high availability.",
    )
    le.duration(
        "leader-elect-lease-duration",
        15 * S,
        "The duration that non-leader candidates will wait after observing a leadership "
        "renewal until attempting to acquire leadership of a led but unrenewed leader slot. "
        "This is effectively the maximum duration that a leader can be stopped before it is "
        "replaced by another candidate. This is only applicable if leader election is "
        "enabled.",
    )
    le.duration(
        "leader-elect-renew-deadline",
        10 * S,
        "The interval between attempts by the acting master to renew a leadership slot "
        "before it stops leading. This must be less than the lease duration. This is only "
        "applicable if leader election is enabled.",
    )
    le.duration(
        "leader-elect-retry-period",
        2 * S,
        "The duration the clients should wait between attempting acquisition and renewal of "
        "a leadership. This is only applicable if leader election is enabled.",
    )
    le.string(
        "leader-elect-resource-lock",
        "leases",
        "The type of resource object that is used for locking during leader election. "
        "Supported options are 'leases'.",
    )
    le.string(
        "leader-elect-resource-name",
        "kube-scheduler",
        "The name of resource object that is used for locking during leader election.",
    )
    le.string(
        "leader-elect-resource-namespace",
        "kube-system",
        "The namespace of resource object that is used for locking during leader election.",
    )

    fg = fss.section("feature gate")
    fg.strings(
        "emulated-version",
        [],
        "The versions different components emulate their capabilities (APIs, features, ...) "
        "of.\nIf set, the component will emulate the behavior of this version instead of the "
        "underlying binary version.\nVersion format could only be major.minor, for example: "
        "'--emulated-version=wardle=1.2,kube=1.31'.\nOptions are: kube=1.33..1.36(default:1.36)"
        '\nIf the component is not specified, defaults to "kube"',
    )
    fg.strings(
        "min-compatibility-version",
        [],
        "The min version of control plane components the server should be compatible with.\n"
        "Must be less or equal to the emulated-version. Version format could only be "
        "major.minor, for example: '--min-compatibility-version=wardle=1.2,kube=1.31'.\n"
        "Options are: kube=1.33..1.36(default:1.35)"
        '\nIf the component is not specified, defaults to "kube"',
    )
    fg.add(
        "feature-gates",
        MultimapValue(),
        {},
        "Comma-separated list of component:key=value pairs that describe feature gates for "
        "alpha/experimental features of different components.\nIf the component is not "
        'specified, defaults to "kube". This flag can be repeatedly invoked. For example: '
        "--feature-gates 'wardle:featureA=true,wardle:featureB=false' --feature-gates "
        "'kube:featureC=true'Options are:\n" + "\n".join(gate.known_features()),
    )

    metrics = fss.section("metrics")
    metrics.string(
        "show-hidden-metrics-for-version",
        "",
        "The previous version for which you want to show hidden metrics. Only the previous "
        "minor version is meaningful, other values will not be allowed. The format is "
        "<major>.<minor>, e.g.: '1.16'. The purpose of this format is make sure you have the "
        "opportunity to notice if the next release hides additional metrics, rather than "
        "being surprised when they are permanently removed in the release after that.",
    )
    metrics.strings(
        "disabled-metrics",
        [],
        "This flag provides an escape hatch for misbehaving metrics. You must provide the "
        "fully qualified metric name in order to disable it. Disclaimer: disabling metrics is "
        "higher in precedence than showing hidden metrics.",
    )
    metrics.add(
        "allow-metric-labels",
        StringToStringValue(),
        {},
        "The map from metric-label to value allow-list of this label. The key's format is "
        "<MetricName>,<LabelName>. The value's format is <allowed_value>,<allowed_value>..."
        "e.g. metric1,label1='v1,v2,v3', metric1,label2='v1,v2,v3' metric2,label1='v1,v2,v3'.",
    )
    metrics.string(
        "allow-metric-labels-manifest",
        "",
        "The path to the manifest file that contains the allow-list mapping. The format of "
        "the file is the same as the flag --allow-metric-labels, i.e., \nallowListMapping:\n"
        '  "metric1,label1": "value11,value12"\n  "metric2,label2": ""\n'
        "Note that the flag --allow-metric-labels will override the manifest file.",
    )

    logs = fss.section("logs")
    logs.duration("log-flush-frequency", 5 * S, "Maximum number of seconds between log flushes")
    logs.string(
        "logging-format",
        "text",
        'Sets the log format. Permitted formats: "json" (gated by LoggingBetaOptions), "text".',
    )
    logs.bool(
        "log-json-split-stream",
        False,
        "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. "
        "The default is to write a single stream to stdout. Enable the LoggingAlphaOptions "
        "feature gate to use this.",
    )
    logs.add(
        "log-json-info-buffer-size",
        QuantityValue(),
        0,
        "[Alpha] In JSON format with split output streams, the info messages can be buffered "
        "for a while to increase performance. The default value of zero bytes disables "
        "buffering. The size can be specified as number of bytes (512), multiples of 1000 "
        "(1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the "
        "LoggingAlphaOptions feature gate to use this.",
    )
    logs.bool(
        "log-text-split-stream",
        False,
        "[Alpha] In text format, write error messages to stderr and info messages to stdout. "
        "The default is to write a single stream to stdout. Enable the LoggingAlphaOptions "
        "feature gate to use this.",
    )
    logs.add(
        "log-text-info-buffer-size",
        QuantityValue(),
        0,
        "[Alpha] In text format with split output streams, the info messages can be buffered "
        "for a while to increase performance. The default value of zero bytes disables "
        "buffering. The size can be specified as number of bytes (512), multiples of 1000 "
        "(1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the "
        "LoggingAlphaOptions feature gate to use this.",
    )
    logs.add("v", LevelValue(), 0, "number for the log level verbosity", shorthand="v")
    logs.add(
        "vmodule",
        VModuleValue(),
        [],
        "comma-separated list of pattern=N settings for file-filtered logging (only works "
        "for text log format)",
    )

    glob = fss.section("global")
    glob.add(
        "version",
        VersionValue(),
        "false",
        "--version, --version=raw prints version information and quits; --version=vX.Y.Z... "
        "sets the reported version",
        no_opt="true",
    )
    glob.add("help", BoolValue(), False, f"help for {command}", shorthand="h")
    return fss


def _secs(ns: int) -> float:
    return ns / 1e9


@dataclass(slots=True)
class Options:
    """The parsed command line (:func:`parse`); ``flags`` keeps every flag, its value and
    whether it was given (``/flagz`` and the ``FLAG:`` log lines read them)."""

    flags: FlagSets
    gate: FeatureGate
    args: list[str] = field(default_factory=list)
    #: ``ksched shadow`` (:mod:`ksched.shadow`) rather than ``kube-scheduler``.
    shadow: bool = False

    def get(self, name: str) -> Any:
        return self.flags.value(name)

    def changed(self, name: str) -> bool:
        return self.flags.changed(name)

    # ---- the flags, typed ----------------------------------------------------------

    @property
    def config(self) -> str:
        return str(self.get("config"))

    @property
    def write_config_to(self) -> str:
        return str(self.get("write-config-to"))

    @property
    def master(self) -> str:
        return str(self.get("master"))

    @property
    def bind_address(self) -> str:
        return str(self.get("bind-address"))

    @property
    def secure_port(self) -> int:
        return int(self.get("secure-port"))

    @property
    def sni_cert_keys(self) -> list[NamedCertKey]:
        return list(self.get("tls-sni-cert-key"))

    @property
    def authentication_kubeconfig(self) -> str:
        return str(self.get("authentication-kubeconfig"))

    @property
    def authorization_kubeconfig(self) -> str:
        return str(self.get("authorization-kubeconfig"))

    @property
    def always_allow_paths(self) -> list[str]:
        return list(self.get("authorization-always-allow-paths"))

    @property
    def token_cache_ttl(self) -> float:
        return _secs(self.get("authentication-token-webhook-cache-ttl"))

    @property
    def authorized_ttl(self) -> float:
        return _secs(self.get("authorization-webhook-cache-authorized-ttl"))

    @property
    def unauthorized_ttl(self) -> float:
        return _secs(self.get("authorization-webhook-cache-unauthorized-ttl"))

    @property
    def pod_max_in_unschedulable(self) -> float:
        return _secs(self.get("pod-max-in-unschedulable-pods-duration"))

    @property
    def shadow_scheduler_names(self) -> list[str]:
        """``--shadow-scheduler-name`` (shadow mode only; empty: the profiles' names)."""
        return list(self.get("shadow-scheduler-name")) if self.shadow else []

    @property
    def verbosity(self) -> int:
        return int(self.get("v"))

    # ---- configuration -------------------------------------------------------------

    def apply(self, cfg: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
        """Upstream ``ApplyDeprecated`` (without ``--config``) and
        ``ApplyLeaderElectionTo`` on ``cfg`` (the file's, or the defaulted one)."""
        ch = self.changed
        if not self.config:
            if ch("profiling"):
                cfg.enable_profiling = bool(self.get("profiling"))
            if ch("contention-profiling"):
                cfg.enable_contention_profiling = bool(self.get("contention-profiling"))
            cc = cfg.client_connection
            if ch("kubeconfig"):
                cc.kubeconfig = str(self.get("kubeconfig"))
            if ch("kube-api-content-type"):
                cc.content_type = str(self.get("kube-api-content-type"))
            if ch("kube-api-qps"):
                cc.qps = float(self.get("kube-api-qps"))
            if ch("kube-api-burst"):
                cc.burst = int(self.get("kube-api-burst"))
        le = cfg.leader_election
        if ch("leader-elect"):
            le.leader_elect = bool(self.get("leader-elect"))
        if ch("leader-elect-lease-duration"):
            le.lease_duration = Duration(int(self.get("leader-elect-lease-duration")))
        if ch("leader-elect-renew-deadline"):
            le.renew_deadline = Duration(int(self.get("leader-elect-renew-deadline")))
        if ch("leader-elect-retry-period"):
            le.retry_period = Duration(int(self.get("leader-elect-retry-period")))
        if ch("leader-elect-resource-lock"):
            le.resource_lock = str(self.get("leader-elect-resource-lock"))
        if ch("leader-elect-resource-name"):
            le.resource_name = str(self.get("leader-elect-resource-name"))
        if ch("leader-elect-resource-namespace"):
            le.resource_namespace = str(self.get("leader-elect-resource-namespace"))
        return cfg

    def print_flags(self) -> list[str]:
        """``cliflag.PrintFlags``: one ``FLAG: --name="value"`` line per flag."""
        from ksched.options.pflag import go_quote

        return [f"FLAG: --{f.name}={go_quote(f.text())}" for f in self.flags]


def parse(argv: Sequence[str], *, shadow: bool = False) -> Options:
    """Parse kube-scheduler's command line (``ksched shadow``'s with ``shadow``); raises
    :class:`~ksched.options.pflag.FlagError` (or ``HelpRequested``) as pflag/cobra would.
    Feature gates are resolved by :func:`resolve_gates` once the flags are known."""
    fss = new_flag_sets(shadow=shadow)
    args = fss.parse(argv)
    return Options(flags=fss, gate=FeatureGate(), args=args, shadow=shadow)


def resolve_gates(opts: Options) -> FeatureGate:
    """``ComponentGlobalsRegistry.Set``: the feature gates the flags ask for (raises
    :class:`~ksched.config.features.FeatureGateError`)."""
    fg: dict[str, list[str]] = opts.get("feature-gates")
    values = [f"{k}:{v}" if k else v for k, vs in fg.items() for v in vs]
    opts.gate = FeatureGate.from_flags(
        values,
        emulated_version=opts.get("emulated-version"),
        min_compatibility_version=opts.get("min-compatibility-version"),
    )
    return opts.gate


def in_cluster() -> bool:
    """``rest.InClusterConfig`` would find a service (not ``ErrNotInCluster``)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and bool(
        os.environ.get("KUBERNETES_SERVICE_PORT")
    )

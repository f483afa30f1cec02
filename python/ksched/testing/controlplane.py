"""A real Kubernetes control plane for tests: etcd + kube-apiserver on loopback, and
kube-controller-manager on demand (the ``ksched_control_plane`` fixture, public as
``ksched.testing.ControlPlane``).

The binaries (kube-apiserver, kube-scheduler, kube-controller-manager v1.36 and etcd
v3.6) are built from Go
modules by ``hack/build-control-plane.sh`` and cached under ``~/.cache/ksched/bin/``
(``$KSCHED_CACHE_DIR``); :func:`ensure_binaries` runs that script, which is a no-op
when the cached binaries match the pinned go.mod files.

:class:`ControlPlane` then

* generates a CA, a serving certificate for 127.0.0.1/localhost/kubernetes.default,
  an admin client certificate (``O=system:masters``) and a service-account signing key;
* starts etcd on free loopback ports with a temporary data directory;
* starts kube-apiserver with only the secure port, client-certificate authentication,
  ``--authorization-mode=Node,RBAC`` and waits for ``/readyz``;
* writes an admin kubeconfig (certificates embedded);
* can restart the apiserver on the same port against the same etcd;
* starts kube-controller-manager with the controllers a test names
  (:meth:`ControlPlane.start_controller_manager`): the PV binder that completes volume
  bindings the scheduler starts, the resourceclaim controller that turns claim templates
  into claims, the garbage collector...;
* stops both and removes every file on :meth:`ControlPlane.stop`.

Admission: no kubelet runs and kube-controller-manager only when a test starts it, so
the admission plugins that depend on them are disabled, as upstream's scheduler
integration tests do:

* ``ServiceAccount`` — needs the service-account controller to create the ``default``
  ServiceAccount; with it enabled every pod create fails. Pods get no token volume.
* ``TaintNodesByCondition`` — would add ``node.kubernetes.io/not-ready:NoSchedule`` to
  every new Node, which only the node lifecycle controller removes.
* ``StorageObjectInUseProtection`` — adds PVC/PV finalizers only a controller removes.

Everything else keeps the v1.36 defaults (``Priority`` resolves ``priorityClassName``
against the bootstrapped system classes, ``DefaultTolerationSeconds`` adds the usual
300s NoExecute tolerations, ``PodSecurity``, ``NamespaceLifecycle``, ``ResourceQuota``,
``LimitRanger``, ...). API Priority and Fairness is off (faster start, no throttling of
benchmark clients) and the endpoint reconciler is ``none`` (127.0.0.1 is not a valid
endpoint address), again as upstream's test servers do.

Also missing unless a test starts kube-controller-manager: the aggregated ClusterRoles ``view``,
``edit`` and ``admin`` exist but have no rules (the aggregation controller fills them),
namespaces deleted stay ``Terminating`` with their objects, and no garbage collection
or ServiceAccount tokens happen. Grant test identities explicit (Cluster)Roles.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import importlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "BINARIES",
    "ControlPlane",
    "ControlPlaneError",
    "ControllerManager",
    "KubeScheduler",
    "build_script",
    "control_plane",
    "ensure_binaries",
]

#: The binaries hack/build-control-plane.sh produces (ksched-conformance: the
#: differential conformance harness of tests/conformance).
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
    "ksched-conformance",
)

#: Service CIDR handed to the apiserver; its first address is the ``kubernetes`` Service.
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DISABLED_ADMISSION_PLUGINS = (
    "ServiceAccount",
    "TaintNodesByCondition",
    "StorageObjectInUseProtection",
)


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


# --------------------------------------------------------------------------- binaries


def build_script() -> Path:
    """Locate ``hack/build-control-plane.sh``.

    Looks next to this source tree first (editable installs, ``PYTHONPATH=python``),
    then in ``$KSCHED_REPO_ROOT`` and the current directory and its parents.
    """
    candidates: list[Path] = [Path(__file__).resolve().parents[3]]
    if root := os.environ.get("KSCHED_REPO_ROOT"):
        candidates.insert(0, Path(root))
    cwd = Path.cwd().resolve()
    candidates += [cwd, *cwd.parents]
    for base in candidates:
        script = base / "hack" / "build-control-plane.sh"
        if script.is_file():
            return script
    raise ControlPlaneError(
        "hack/build-control-plane.sh not found; run from the ksched repository, set "
        "KSCHED_REPO_ROOT, or point KSCHED_CONTROLPLANE_BIN_DIR at prebuilt binaries"
    )


def ensure_binaries(*, stream: IO[str] | None = None, timeout: float = 3600.0) -> Path:
    """Return the directory holding etcd, kube-apiserver and kube-scheduler.

    ``$KSCHED_CONTROLPLANE_BIN_DIR`` short-circuits the build. Otherwise the build script
    runs (a few hundred milliseconds when everything is cached; many minutes the first
    time). Its progress goes to ``stream`` (default: the real stderr).
    """
    if preset := os.environ.get("KSCHED_CONTROLPLANE_BIN_DIR"):
        bin_dir = Path(preset)
    else:
        script = build_script()
        out = stream if stream is not None else sys.__stderr__
        try:
            proc = subprocess.run(
                ["bash", str(script)],
                stdout=subprocess.PIPE,
                stderr=out if out is not None else None,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ControlPlaneError(f"{script} did not finish within {timeout:.0f}s") from exc
        if proc.returncode != 0:
            raise ControlPlaneError(
                f"{script} failed with exit code {proc.returncode}; see its output above"
            )
        lines = proc.stdout.strip().splitlines()
        if not lines:
            raise ControlPlaneError(f"{script} printed no binary directory")
        bin_dir = Path(lines[-1])
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"missing binaries in {bin_dir}: {', '.join(missing)}")
    return bin_dir


# ------------------------------------------------------------------------------ PKI


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


class _CertificateAuthority:
    """A throw-away CA that signs serving and client certificates (ECDSA P-256)."""

    def __init__(self, common_name: str = "ksched-test-ca") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=True), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return _cert_pem(self.cert)

    def issue(
        self,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        server_names: Sequence[str] = (),
        server_ips: Sequence[str] = (),
        client: bool = False,
    ) -> tuple[bytes, bytes]:
        """Return ``(cert_pem, key_pem)`` for a leaf certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        if server_names or server_ips:
            sans: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
            sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return _cert_pem(cert), _key_pem(key)


def _service_account_key_pem() -> bytes:
    """RSA-2048 key for signing service-account tokens (RS256, what clusters use)."""
    return _key_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))


# --------------------------------------------------------------------------- helpers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _preexec_die_with_parent() -> None:  # pragma: no cover - runs in the child
    # Linux: SIGKILL the child when the spawning thread's process dies, so a killed
    # pytest never leaks etcd/apiserver processes.
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class _Proc:
    """One child process with its log file, in its own process group."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        stamp = datetime.datetime.now(datetime.UTC).isoformat()
        self.log.write(f"\n===== {stamp} starting: {' '.join(argv)}\n".encode())
        self.log.flush()
        # PR_SET_PDEATHSIG fires when the *thread* that forked exits; only arm it when
        # spawning from the main thread, which lives as long as the process.
        preexec = (
            _preexec_die_with_parent
            if sys.platform == "linux" and threading.current_thread() is threading.main_thread()
            else None
        )
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 15.0, *, kill: bool = False) -> None:
        if self.alive():
            sig = signal.SIGKILL if kill else signal.SIGTERM
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(10)
        self.log.close()


class ControllerManager:
    """A kube-controller-manager v1.36 process started by
    :meth:`ControlPlane.start_controller_manager`."""

    def __init__(self, cp: ControlPlane, proc: _Proc, controllers: Sequence[str]) -> None:
        self._cp = cp
        self._proc = proc
        self.controllers = tuple(controllers)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def log_path(self) -> Path:
        return self._proc.log_path

    def alive(self) -> bool:
        return self._proc.alive()

    def stop(self, *, kill: bool = False) -> None:
        self._proc.stop(kill=kill)
        with contextlib.suppress(ValueError):
            self._cp._controller_managers.remove(self)

    def __enter__(self) -> ControllerManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class KubeScheduler:
    """An upstream kube-scheduler v1.36 process started by
    :meth:`ControlPlane.start_kube_scheduler`.

    ``port`` serves ``/healthz``, ``/readyz`` and ``/metrics`` over HTTPS (self-signed);
    :meth:`metrics` fetches the Prometheus text as the admin.
    """

    def __init__(self, cp: ControlPlane, proc: _Proc, port: int, config_path: Path) -> None:
        self._cp = cp
        self._proc = proc
        self.port = port
        self.config_path = config_path

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def log_path(self) -> Path:
        return self._proc.log_path

    def alive(self) -> bool:
        return self._proc.alive()

    def _get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(str(self._cp.client_cert_file), str(self._cp.client_key_file))
        req = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise ControlPlaneError(
                    f"kube-scheduler exited (code {self._proc.popen.returncode}); "
                    f"log tail:\n{_tail(self.log_path)}"
                )
            with contextlib.suppress(OSError):
                if self._get("/healthz", timeout=2)[0] == 200:
                    return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"kube-scheduler not healthy after {timeout:.0f}s; "
                    f"log tail:\n{_tail(self.log_path)}"
                )
            time.sleep(0.1)

    def metrics(self) -> str:
        """The scheduler's ``/metrics`` text (admin client cert, RBAC-authorized)."""
        status, text = self._get("/metrics", timeout=30)
        if status != 200:
            raise ControlPlaneError(f"/metrics answered {status}: {text[:500]}")
        return text

    def stop(self, *, kill: bool = False) -> None:
        self._proc.stop(kill=kill)
        with contextlib.suppress(ValueError):
            self._cp._schedulers.remove(self)

    def __enter__(self) -> KubeScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------------ ControlPlane


class ControlPlane:
    """etcd + kube-apiserver on 127.0.0.1, with an admin kubeconfig.

    Use as a context manager or call :meth:`start` / :meth:`stop`::

        with ControlPlane() as cp:
            status, body = cp.request("GET", "/api/v1/nodes")
            subprocess.run(["kubectl", "--kubeconfig", cp.kubeconfig, ...])

    Attributes after :meth:`start`: ``url``, ``port``, ``etcd_url``, ``kubeconfig``,
    ``ca_file``, ``client_cert_file``, ``client_key_file``, ``bin_dir``, ``workdir``,
    ``start_seconds`` (time from launching etcd to a ready apiserver).
    """

    def __init__(
        self,
        *,
        bin_dir: Path | str | None = None,
        workdir: Path | str | None = None,
        apiserver_args: Sequence[str] = (),
        etcd_args: Sequence[str] = (),
        verbosity: int = 1,
        keep_workdir: bool | None = None,
        ready_timeout: float = 120.0,
        audit_policy: Mapping[str, Any] | None = None,
    ) -> None:
        self.bin_dir: Path | None = Path(bin_dir) if bin_dir is not None else None
        #: An ``audit.k8s.io/v1`` Policy: the apiserver then logs the requests it selects
        #: to :attr:`audit_log` (JSON lines), read back with :meth:`audit_events`.
        self.audit_policy = dict(audit_policy) if audit_policy is not None else None
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path()
        self.apiserver_args = list(apiserver_args)
        self.etcd_args = list(etcd_args)
        self.verbosity = verbosity
        self.keep_workdir = (
            keep_workdir
            if keep_workdir is not None
            else os.environ.get("KSCHED_KEEP_CONTROLPLANE", "") not in ("", "0")
        )
        self.ready_timeout = ready_timeout
        self.port = 0
        self.etcd_port = 0
        self.etcd_peer_port = 0
        self.start_seconds = 0.0
        self._etcd: _Proc | None = None
        self._apiserver: _Proc | None = None
        self._ca: _CertificateAuthority | None = None
        self._ssl: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._started = False
        self._schedulers: list[KubeScheduler] = []
        self._controller_managers: list[ControllerManager] = []

    # ----------------------------------------------------------------- properties

    @property
    def url(self) -> str:
        """``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (user ``ksched-admin``, group ``system:masters``)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def pki_dir(self) -> Path:
        return self.workdir / "pki"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    @property
    def client_cert_file(self) -> Path:
        return self.pki_dir / "admin.crt"

    @property
    def client_key_file(self) -> Path:
        return self.pki_dir / "admin.key"

    @property
    def apiserver_log(self) -> Path:
        return self.workdir / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.workdir / "etcd.log"

    @property
    def audit_log(self) -> Path:
        """The apiserver's audit log (written only with an ``audit_policy``)."""
        return self.workdir / "audit.log"

    def audit_events(self, user: str | None = None) -> list[dict[str, Any]]:
        """The audit events logged so far (``audit_policy``), of ``user`` if given."""
        try:
            lines = self.audit_log.read_text().splitlines()
        except FileNotFoundError:
            return []
        events = [json.loads(line) for line in lines if line.strip()]
        if user is not None:
            events = [e for e in events if (e.get("user") or {}).get("username") == user]
        return events

    def binary(self, name: str) -> Path:
        """Path of ``etcd``, ``kube-apiserver`` or ``kube-scheduler`` (upstream, v1.36)."""
        if self.bin_dir is None:
            self.bin_dir = ensure_binaries()
        return self.bin_dir / name

    @property
    def kube_scheduler(self) -> Path:
        """The upstream kube-scheduler binary built alongside the apiserver."""
        return self.binary("kube-scheduler")

    @property
    def apiserver_pid(self) -> int | None:
        return self._apiserver.pid if self._apiserver and self._apiserver.alive() else None

    def env(self) -> dict[str, str]:
        """``os.environ`` plus ``KUBECONFIG`` pointing at the admin kubeconfig."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        """Build/locate binaries, write PKI, start etcd and the apiserver, wait ready."""
        with self._lock:
            if self._started:
                return self
            if self.bin_dir is None:
                self.bin_dir = ensure_binaries()
            if self._own_workdir:
                self.workdir = Path(tempfile.mkdtemp(prefix="ksched-controlplane-"))
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._started = True
            try:
                t0 = time.monotonic()
                self._write_pki()
                self._start_etcd()
                for attempt in range(3):
                    self.port = _free_port()
                    try:
                        self._start_apiserver()
                        break
                    except ControlPlaneError:
                        # Lost the race for the free port to another process: try another.
                        if attempt == 2 or "address already in use" not in _tail(
                            self.apiserver_log, 30
                        ):
                            raise
                        self._apiserver = None
                self._write_kubeconfig(
                    self.kubeconfig, self.client_cert_file, self.client_key_file, "ksched-admin"
                )
                self.start_seconds = time.monotonic() - t0
            except BaseException:
                self._stop_locked()
                raise
        return self

    def stop(self) -> None:
        """Stop the apiserver and etcd; remove the work directory (unless kept)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        for sched in list(self._schedulers):
            sched.stop()
        for kcm in list(self._controller_managers):
            kcm.stop()
        if self._apiserver is not None:
            self._apiserver.stop()
            self._apiserver = None
        if self._etcd is not None:
            self._etcd.stop()
            self._etcd = None
        if self._started and self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        elif self._started and self.keep_workdir:
            print(f"control plane files kept in {self.workdir}", file=sys.__stderr__)
        self._started = False

    def stop_apiserver(self, *, kill: bool = False) -> None:
        """Stop only the apiserver (SIGTERM, or SIGKILL with ``kill=True``)."""
        with self._lock:
            if self._apiserver is not None:
                self._apiserver.stop(kill=kill)
                self._apiserver = None

    def start_apiserver(self) -> None:
        """Start the apiserver again on the same port and etcd; wait until ready."""
        with self._lock:
            if not self._started:
                raise ControlPlaneError("control plane is not started")
            if self._apiserver is not None and self._apiserver.alive():
                return
            deadline = time.monotonic() + 30
            while not _port_is_free(self.port):
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"port {self.port} still busy after apiserver stop")
                time.sleep(0.1)
            self._start_apiserver()

    def restart_apiserver(self, *, kill: bool = False) -> float:
        """Stop and start the apiserver (same port, same etcd). Returns the downtime in s."""
        t0 = time.monotonic()
        self.stop_apiserver(kill=kill)
        self.start_apiserver()
        return time.monotonic() - t0

    # -------------------------------------------------------------------- clients

    def ssl_context(self) -> ssl.SSLContext:
        """TLS context trusting the test CA and presenting the admin client certificate."""
        if self._ssl is None:
            ctx = ssl.create_default_context(cafile=str(self.ca_file))
            ctx.load_cert_chain(str(self.client_cert_file), str(self.client_key_file))
            self._ssl = ctx
        return self._ssl

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """Plain HTTPS request as the admin; returns ``(status, decoded JSON or text)``.

        HTTP error statuses are returned, not raised.
        """
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def create_node(self, obj: Any) -> str:
        """Create a node, status included, in one call; returns its name. The apiserver
        keeps a Node's ``status`` on create (unlike a Pod's) and defaults
        ``status.allocatable`` from ``status.capacity`` when it is absent, so capacity,
        allocatable and conditions need no second call. Raises ``RuntimeError`` naming
        the node when the API refuses it."""
        name = str(obj["metadata"]["name"])
        status, body = self.request("POST", "/api/v1/nodes", obj)
        if status != 201:
            raise RuntimeError(f"creating node {name}: HTTP {status}: {body}")
        return name

    def kubeconfig_for(self, user: str, groups: Sequence[str] = ()) -> Path:
        """Kubeconfig for a non-admin identity (client cert CN=user, O=groups).

        The user has no permissions until RBAC grants them, e.g. to test the RBAC
        rules ksched's deployment manifests ship.
        """
        assert self._ca is not None, "control plane is not started"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        cert, key = self._ca.issue(user, organizations=groups, client=True)
        cert_file = _write(self.pki_dir / f"user-{safe}.crt", cert)
        key_file = _write(self.pki_dir / f"user-{safe}.key", key)
        path = self.workdir / f"{safe}.kubeconfig"
        self._write_kubeconfig(path, cert_file, key_file, user)
        return path

    def start_kube_scheduler(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        args: Sequence[str] = (),
        wait: bool = True,
    ) -> KubeScheduler:
        """Run the upstream kube-scheduler (same v1.36 build) against this apiserver.

        ``config`` is a ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``)
        as a dict; ``clientConnection.kubeconfig`` defaults to the admin kubeconfig and
        leader election defaults to off. The scheduler serves HTTPS on a free loopback
        port (``.port``). Stopped by :meth:`KubeScheduler.stop` or :meth:`stop`.
        """
        if not self._started:
            raise ControlPlaneError("control plane is not started")
        cfg: dict[str, Any] = json.loads(json.dumps(dict(config or {})))
        cfg.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
        cfg.setdefault("kind", "KubeSchedulerConfiguration")
        cfg.setdefault("clientConnection", {}).setdefault("kubeconfig", str(self.kubeconfig))
        cfg.setdefault("leaderElection", {}).setdefault("leaderElect", False)
        n = len(list(self.workdir.glob("kube-scheduler-*.config.json")))
        config_path = self.workdir / f"kube-scheduler-{n}.config.json"
        _write(config_path, json.dumps(cfg, indent=2).encode())
        port = _free_port()
        argv = [
            str(self.kube_scheduler),
            f"--config={config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            # No controller publishes the client CA for delegated authentication here,
            # so name it: the admin client certificate then authenticates /metrics.
            f"--client-ca-file={self.ca_file}",
            f"--v={self.verbosity}",
            *args,
        ]
        proc = _Proc("kube-scheduler", argv, self.workdir / f"kube-scheduler-{n}.log")
        sched = KubeScheduler(self, proc, port, config_path)
        self._schedulers.append(sched)
        if wait:
            try:
                sched.wait_healthy()
            except BaseException:
                sched.stop(kill=True)
                raise
        return sched

    def start_controller_manager(
        self,
        controllers: Sequence[str],
        *,
        args: Sequence[str] = (),
        wait: bool = True,
    ) -> ControllerManager:
        """Run the upstream kube-controller-manager (same v1.36 build) with only
        ``controllers`` (its ``--controllers`` names, e.g. ``persistentvolume-binder``,
        ``resourceclaim-controller``, ``garbage-collector-controller``).

        It uses the admin identity (no per-controller service accounts, no leader
        election) and serves nothing. With ``wait``, returns once the process has
        started each of ``controllers`` (its log says so).
        """
        if not self._started:
            raise ControlPlaneError("control plane is not started")
        n = len(list(self.workdir.glob("kube-controller-manager-*.log")))
        argv = [
            str(self.binary("kube-controller-manager")),
            f"--kubeconfig={self.kubeconfig}",
            f"--controllers={','.join(controllers)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            # Serving is off: nothing here scrapes it, and a port is one more race.
            "--secure-port=0",
            f"--root-ca-file={self.ca_file}",
            f"--service-account-private-key-file={self.pki_dir / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # Controllers resync quickly: tests wait on them.
            "--min-resync-period=10s",
            "--pvclaimbinder-sync-period=1s",
            f"--v={max(self.verbosity, 2)}",
            *args,
        ]
        log_path = self.workdir / f"kube-controller-manager-{n}.log"
        proc = _Proc("kube-controller-manager", argv, log_path)
        kcm = ControllerManager(self, proc, controllers)
        self._controller_managers.append(kcm)
        if wait:
            deadline = time.monotonic() + 60
            while True:
                if not proc.alive():
                    kcm.stop()
                    raise ControlPlaneError(
                        f"kube-controller-manager exited (code {proc.popen.returncode}); "
                        f"log tail:\n{_tail(log_path)}"
                    )
                with contextlib.suppress(OSError):
                    text = log_path.read_text(errors="replace")
                    if all(f'starting..." controller="{c}"' in text for c in controllers):
                        break
                if time.monotonic() > deadline:
                    kcm.stop(kill=True)
                    raise ControlPlaneError(
                        "kube-controller-manager started no controller within 60s; "
                        f"log tail:\n{_tail(log_path)}"
                    )
                time.sleep(0.1)
        return kcm

    def kubernetes_client(self, kubeconfig: Path | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin (or the given kubeconfig)."""
        config: Any = importlib.import_module("kubernetes.config")
        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until ``/readyz`` answers 200 (and the default namespace exists)."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.ready_timeout)
        last = ""
        while True:
            if self._apiserver is None or not self._apiserver.alive():
                code = self._apiserver.popen.returncode if self._apiserver else None
                raise ControlPlaneError(
                    f"kube-apiserver exited (code {code}) before becoming ready; "
                    f"log tail:\n{_tail(self.apiserver_log)}"
                )
            try:
                status, body = self.request("GET", "/readyz", timeout=5)
                if status == 200:
                    status, body = self.request("GET", "/api/v1/namespaces/default", timeout=5)
                    if status == 200:
                        return
                last = f"{status}: {body!s:.500}"
            except (OSError, urllib.error.URLError) as e:
                last = repr(e)
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"kube-apiserver not ready after {timeout or self.ready_timeout:.0f}s "
                    f"(last: {last}); log tail:\n{_tail(self.apiserver_log)}"
                )
            time.sleep(0.1)

    # -------------------------------------------------------------------- internal

    def _write_pki(self) -> None:
        self.pki_dir.mkdir(parents=True, exist_ok=True)
        ca = self._ca = _CertificateAuthority()
        _write(self.ca_file, ca.cert_pem, 0o644)
        service_ip = str(next(ipaddress.ip_network(SERVICE_CIDR).hosts()))
        cert, key = ca.issue(
            "kube-apiserver",
            server_names=(
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
            server_ips=("127.0.0.1", "::1", service_ip),
        )
        _write(self.pki_dir / "apiserver.crt", cert)
        _write(self.pki_dir / "apiserver.key", key)
        cert, key = ca.issue("ksched-admin", organizations=("system:masters",), client=True)
        _write(self.client_cert_file, cert)
        _write(self.client_key_file, key)
        _write(self.pki_dir / "sa.key", _service_account_key_pem())

    def _write_kubeconfig(self, path: Path, cert: Path, key: Path, user: str) -> None:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ksched-test",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": _b64(self.ca_file.read_bytes()),
                    },
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": _b64(cert.read_bytes()),
                        "client-key-data": _b64(key.read_bytes()),
                    },
                }
            ],
            "contexts": [
                {"name": "ksched-test", "context": {"cluster": "ksched-test", "user": user}}
            ],
            "current-context": "ksched-test",
            "preferences": {},
        }
        # JSON is valid YAML: every kubeconfig loader reads it.
        _write(path, json.dumps(cfg, indent=2).encode())

    def _start_etcd(self) -> None:
        data_dir = self.workdir / "etcd-data"
        for attempt in range(5):
            self.etcd_port, self.etcd_peer_port = _free_port(), _free_port()
            peer = f"http://127.0.0.1:{self.etcd_peer_port}"
            argv = [
                str(self.binary("etcd")),
                "--name=ksched-test",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=ksched-test={peer}",
                "--initial-cluster-state=new",
                # Throw-away data: skip fsync (much faster on slow CI disks).
                "--unsafe-no-fsync",
                "--log-level=warn",
                "--quota-backend-bytes=8589934592",
                *self.etcd_args,
            ]
            self._etcd = _Proc("etcd", argv, self.etcd_log)
            if self._wait_etcd():
                return
            self._etcd.stop(kill=True)
            self._etcd = None
            shutil.rmtree(data_dir, ignore_errors=True)
            if "address already in use" not in _tail(self.etcd_log, 20) or attempt == 4:
                break
        raise ControlPlaneError(f"etcd failed to start; log tail:\n{_tail(self.etcd_log)}")

    def _wait_etcd(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._etcd is None or not self._etcd.alive():
                return False
            try:
                with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as r:
                    if json.loads(r.read()).get("health") == "true":
                        return True
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        return False

    def _apiserver_argv(self) -> list[str]:
        pki = self.pki_dir
        return [
            str(self.binary("kube-apiserver")),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={self.ca_file}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--disable-admission-plugins={','.join(DISABLED_ADMISSION_PLUGINS)}",
            "--enable-priority-and-fairness=false",
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            "--profiling=false",
            f"--v={self.verbosity}",
            *self._audit_args(),
            *self.apiserver_args,
        ]

    def _audit_args(self) -> list[str]:
        if self.audit_policy is None:
            return []
        policy = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", **self.audit_policy}
        path = _write(self.workdir / "audit-policy.json", json.dumps(policy).encode())
        return [
            f"--audit-policy-file={path}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            # Written before the response is sent: a test reads it right after its calls.
            "--audit-log-mode=blocking",
        ]

    def _start_apiserver(self) -> None:
        self._ssl = None
        self._apiserver = _Proc("kube-apiserver", self._apiserver_argv(), self.apiserver_log)
        self.wait_ready()


@contextlib.contextmanager
def control_plane(**kwargs: Any) -> Iterator[ControlPlane]:
    """``with control_plane() as cp: ...`` — start, yield, always stop."""
    cp = ControlPlane(**kwargs)
    try:
        yield cp.start()
    finally:
        cp.stop()

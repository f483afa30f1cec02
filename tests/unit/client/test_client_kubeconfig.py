"""Connection settings through the kubernetes package's loaders, as kube-scheduler's
--kubeconfig / --master resolve them."""

from __future__ import annotations

import base64
import datetime
import json
import ssl
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ksched.client.kubeconfig import ClientConfigError, load_client_config

SERVER = "https://127.0.0.1:6443"


def write(tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> Path:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster or {"server": SERVER}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(cfg))
    return path


def self_signed() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ksched-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_bearer_token_and_insecure_skip_tls_verify(tmp_path: Path) -> None:
    path = write(tmp_path, {"token": "abc"}, {"server": SERVER, "insecure-skip-tls-verify": True})
    cfg = load_client_config(kubeconfig=str(path), qps=7, burst=9)
    assert cfg.host == SERVER and (cfg.qps, cfg.burst) == (7, 9)
    assert await cfg.credentials.header() == "Bearer abc"
    assert cfg.ssl_context is not None and cfg.ssl_context.verify_mode == ssl.CERT_NONE
    assert cfg.source == f"kubeconfig {path}"


async def test_ca_and_client_certificate_data(tmp_path: Path) -> None:
    cert, key = self_signed()
    path = write(
        tmp_path,
        {"client-certificate-data": b64(cert), "client-key-data": b64(key)},
        {"server": SERVER, "certificate-authority-data": b64(cert), "tls-server-name": "kube"},
    )
    cfg = load_client_config(kubeconfig=str(path))
    assert await cfg.credentials.header() is None  # the certificate authenticates
    ctx = cfg.ssl_context
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "ksched-test"),),)]
    assert cfg.server_hostname == "kube"


async def test_token_file_and_master_override(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    path = write(tmp_path, {"tokenFile": str(tmp_path / "token")})
    cfg = load_client_config(kubeconfig=str(path), master="https://10.0.0.1:8443/")
    assert cfg.host == "https://10.0.0.1:8443"
    assert await cfg.credentials.header() == "Bearer from-file"


async def test_exec_plugin_is_rerun_when_its_token_expires(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    counter.write_text("0")
    plugin = tmp_path / "plugin"
    plugin.write_text(
        "#!/bin/sh\n"
        f"n=$(($(cat {counter}) + 1)); echo $n > {counter}\n"
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"t-%s","expirationTimestamp":"2000-01-01T00:00:00Z"}}\' $n\n'
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    cfg = load_client_config(kubeconfig=str(write(tmp_path, user)))
    creds = cfg.credentials
    assert creds.refreshable
    first = await creds.header()
    assert first is not None and first.startswith("Bearer t-")
    assert await creds.header() == first  # not re-run on every request
    refreshed = await creds.header(force=True)  # e.g. after a 401
    assert refreshed is not None and refreshed != first


def test_master_alone_needs_no_kubeconfig() -> None:
    cfg = load_client_config(master="http://127.0.0.1:8080")
    assert cfg.host == "http://127.0.0.1:8080" and cfg.ssl_context is None


def test_nothing_given_outside_a_cluster_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ClientConfigError, match="in-cluster configuration failed"):
        load_client_config()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="missing-file"),
        pytest.param("::: not yaml", id="not-yaml"),
        pytest.param('{"apiVersion": "v1", "kind": "Config"}', id="no-contexts"),
    ],
)
def test_unusable_kubeconfig_names_the_file(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "bad.kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ClientConfigError, match=r"bad\.kubeconfig"):
        load_client_config(kubeconfig=str(path))

"""The secure port's TLS: the serving certificate and the TLS flags.

The certificate is the one given (``--tls-cert-file``/``--tls-private-key-file``) or, as
kube-scheduler does without one, a self-signed pair made at start-up: a throw-away CA
``localhost-ca@<unix time>`` signing ``localhost@<unix time>`` for ``localhost``, the
loopback addresses, the host name and the bind address. With ``--cert-dir`` the pair is
kept there as ``kube-scheduler.crt``/``kube-scheduler.key`` (reused when readable);
otherwise nothing is written to disk except a private temporary file that :mod:`ssl`
needs to load the pair, removed at once.

The TLS flags map onto OpenSSL: ``--tls-min-version``, ``--tls-cipher-suites`` (Go's
names, translated; TLS 1.3 suites are not configurable, as in Go), and
``--tls-curve-preferences`` (Go curve ids; Python's :mod:`ssl` sets a single ECDH group,
so the first supported one of the list is used, where Go offers them all).
``--tls-sni-cert-key`` pairs are served by server name through an SNI callback.
The server speaks HTTP/1.1 only (aiohttp has no HTTP/2 server), so
``--disable-http2-serving`` is always in effect.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ServingTLS",
    "TLSConfigError",
    "self_signed_files",
    "self_signed_pair",
    "server_ssl_context",
]


def self_signed_pair(bind_address: str = "") -> tuple[bytes, bytes]:
    """``(cert_chain_pem, key_pem)`` of a fresh self-signed serving certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp())
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost-ca@{stamp}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    host = socket.gethostname()
    if host and host != "localhost":
        names.append(x509.DNSName(host))
    ips = {"127.0.0.1", "::1"}
    if bind_address and bind_address not in ("0.0.0.0", "::"):
        ips.add(bind_address)
    for ip in sorted(ips):
        names.append(x509.IPAddress(ipaddress.ip_address(ip)))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    chain = cert.public_bytes(pem) + ca.public_bytes(pem)
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return chain, key_pem


#: Go crypto/tls cipher suite names → OpenSSL names (``cliflag.TLSCipherSuites``). The
#: TLS 1.3 suites cannot be restricted (Go ignores them in the list too).
GO_CIPHERS: dict[str, str | None] = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
}

#: ``--tls-min-version`` names.
TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

#: Go ``tls.CurveID`` values → OpenSSL group names.
GO_CURVES: dict[int, str] = {
    23: "prime256v1",
    24: "secp384r1",
    25: "secp521r1",
    29: "X25519",
}

PAIR_NAME = "kube-scheduler"


class TLSConfigError(ValueError):
    """A TLS flag cannot be applied; the message names the flag."""


@dataclass(slots=True)
class ServingTLS:
    """What the secure port's TLS needs from the serving and authentication flags."""

    cert_file: str = ""
    key_file: str = ""
    #: ``--cert-dir``: where a self-signed pair is kept (``kube-scheduler.crt/.key``).
    cert_dir: str = ""
    bind_address: str = ""
    #: PEM bundles whose client certificates are asked for (client CA, request-header
    #: CA, either from a file or from the cluster's ConfigMap).
    client_ca_pems: Sequence[bytes] = ()
    min_version: str = ""
    cipher_suites: Sequence[str] = ()
    curve_preferences: Sequence[int] = ()
    #: ``--tls-sni-cert-key``: (cert file, key file, names).
    sni: Sequence[tuple[str, str, Sequence[str]]] = ()


def _load_pair(ctx: ssl.SSLContext, cert_file: str, key_file: str) -> None:
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise TLSConfigError(
            f"failed to load certificate {cert_file} and key {key_file}: {exc}"
        ) from exc


def _load_pem_pair(ctx: ssl.SSLContext, chain: bytes, key: bytes) -> None:
    fd, path = tempfile.mkstemp(prefix="ksched-serving-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(key + chain)
        ctx.load_cert_chain(path)
    finally:
        os.unlink(path)


def self_signed_files(cert_dir: str, bind_address: str) -> tuple[str, str]:
    """``MaybeDefaultWithSelfSignedCerts`` with ``--cert-dir``: reuse a readable
    ``kube-scheduler.crt``/``.key`` there, or write a fresh self-signed pair."""
    cert_file = os.path.join(cert_dir, PAIR_NAME + ".crt")
    key_file = os.path.join(cert_dir, PAIR_NAME + ".key")
    if os.access(cert_file, os.R_OK) and os.access(key_file, os.R_OK):
        return cert_file, key_file
    chain, key = self_signed_pair(bind_address)
    os.makedirs(cert_dir, mode=0o755, exist_ok=True)
    with open(cert_file, "wb") as f:
        f.write(chain)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return cert_file, key_file


def _base_context(tls: ServingTLS) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if tls.min_version:
        if tls.min_version not in TLS_VERSIONS:
            raise TLSConfigError(f'unknown tls version "{tls.min_version}"')
        ctx.minimum_version = TLS_VERSIONS[tls.min_version]
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.cipher_suites:
        names: list[str] = []
        for suite in tls.cipher_suites:
            if suite not in GO_CIPHERS:
                raise TLSConfigError(f"Cipher suite {suite} not supported or doesn't exist")
            openssl = GO_CIPHERS[suite]
            if openssl is not None and openssl not in names:
                names.append(openssl)
        if names:
            try:
                ctx.set_ciphers(":".join(names))
            except ssl.SSLError as exc:
                raise TLSConfigError(
                    f"--tls-cipher-suites: none of {', '.join(tls.cipher_suites)} is "
                    f"available in this OpenSSL build: {exc}"
                ) from exc
    curves = [GO_CURVES[c] for c in tls.curve_preferences if c in GO_CURVES]
    if curves:
        # Python's ssl module sets one ECDH group; the first supported one is used.
        ctx.set_ecdh_curve(curves[0])
    for pem in tls.client_ca_pems:
        ctx.load_verify_locations(cadata=pem.decode("ascii", errors="replace"))
    if tls.client_ca_pems:
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def _cert_names(cert_file: str) -> list[str]:
    """The DNS names and IP addresses of a certificate (its CN when it has no SANs)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    with open(cert_file, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [*san.get_values_for_type(x509.DNSName)]
        names += [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        names = []
    if not names:
        names = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    return names


def _match(server_name: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        head, _, rest = server_name.partition(".")
        return bool(head) and rest == pattern[2:]
    return server_name == pattern


def server_ssl_context(tls: ServingTLS) -> ssl.SSLContext:
    """The secure port's TLS context: the given pair, a pair in ``--cert-dir``, or an
    in-memory self-signed one; ``--tls-min-version`` (default TLS 1.2),
    ``--tls-cipher-suites``, ``--tls-curve-preferences``; client certificates are
    asked for (not required) when a client CA is configured; ``--tls-sni-cert-key``
    pairs are picked by the client's server name (explicit names over names taken
    from the certificate, exact names over wildcards)."""
    ctx = _base_context(tls)
    if tls.cert_file or tls.key_file:
        if not (tls.cert_file and tls.key_file):
            raise TLSConfigError("--tls-cert-file and --tls-private-key-file go together")
        _load_pair(ctx, tls.cert_file, tls.key_file)
    elif tls.cert_dir:
        cert_file, key_file = self_signed_files(tls.cert_dir, tls.bind_address)
        _load_pair(ctx, cert_file, key_file)
    else:
        chain, key = self_signed_pair(tls.bind_address)
        _load_pem_pair(ctx, chain, key)
    if tls.sni:
        explicit: list[tuple[str, ssl.SSLContext]] = []
        extracted: list[tuple[str, ssl.SSLContext]] = []
        for cert_file, key_file, names in tls.sni:
            sub = _base_context(tls)
            _load_pair(sub, cert_file, key_file)
            if names:
                explicit.extend((n, sub) for n in names)
            else:
                extracted.extend((n, sub) for n in _cert_names(cert_file))

        def pick(sock: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
            if not server_name:
                return
            for table in (explicit, extracted):
                for wildcard in (False, True):
                    for pattern, sub in table:
                        if pattern.startswith("*.") == wildcard and _match(server_name, pattern):
                            sock.context = sub
                            return

        ctx.sni_callback = pick
    return ctx

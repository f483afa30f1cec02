"""The serving certificate: the one given (``--tls-cert-file``/``--tls-private-key-file``)
or, as kube-scheduler does without one, a self-signed pair made at start-up: a throw-away
CA ``localhost-ca@<unix time>`` signing ``localhost@<unix time>`` for ``localhost``,
the loopback addresses, the host name and the bind address. Nothing is written to disk
except a private temporary file that :mod:`ssl` needs to load the pair, removed at once.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile

__all__ = ["self_signed_pair", "server_ssl_context"]


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


def server_ssl_context(
    *,
    cert_file: str = "",
    key_file: str = "",
    client_ca_file: str = "",
    bind_address: str = "",
) -> ssl.SSLContext:
    """TLS ≥ 1.2 server context; asks for (but does not require) a client certificate
    when a client CA is configured."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file or key_file:
        if not (cert_file and key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        ctx.load_cert_chain(cert_file, key_file)
    else:
        chain, key = self_signed_pair(bind_address)
        fd, path = tempfile.mkstemp(prefix="ksched-serving-", suffix=".pem")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(key + chain)
            ctx.load_cert_chain(path)
        finally:
            os.unlink(path)
    if client_ca_file:
        ctx.load_verify_locations(cafile=client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx

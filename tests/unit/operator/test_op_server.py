"""The secure port's pieces without an API server: z-pages negotiation, delegated
authentication (request headers, client certificates, tokens, anonymous), authorization
shortcuts and cache TTLs, TLS flags, pprof."""

from __future__ import annotations

import contextlib
import datetime
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from multidict import CIMultiDict

from ksched.server import pprof, zpages
from ksched.server.auth import ANONYMOUS, AuthError, ClientCA, DelegatingAuth, RequestHeaderConfig
from ksched.server.certs import ServingTLS, TLSConfigError, server_ssl_context
from ksched.sim import InMemoryCluster

# ---- z-pages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "status", "ctype"),
    [
        pytest.param("", 200, "text/plain; charset=utf-8", id="no-accept"),
        pytest.param("*/*", 200, "text/plain; charset=utf-8", id="anything"),
        pytest.param("text/plain", 200, "text/plain; charset=utf-8", id="text"),
        pytest.param(
            "application/json;as=Flagz;v=v1beta1;g=config.k8s.io",
            200,
            "application/json;g=config.k8s.io;v=v1beta1;as=Flagz",
            id="structured",
        ),
        pytest.param(
            "application/yaml;as=Flagz;v=v1alpha1;g=config.k8s.io",
            200,
            "application/yaml;g=config.k8s.io;v=v1alpha1;as=Flagz",
            id="yaml-alpha",
        ),
        pytest.param("application/json", 406, "application/json", id="json-without-kind"),
        pytest.param(
            "application/json;as=Statusz;v=v1beta1;g=config.k8s.io",
            406,
            "application/json",
            id="other-kind",
        ),
        pytest.param("image/png", 406, "application/json", id="unknown"),
    ],
)
def test_flagz_negotiation(accept: str, status: int, ctype: str) -> None:
    flags = {"v": "2", "leader-elect": "true"}
    page = zpages.negotiate(
        accept,
        "Flagz",
        lambda: zpages.flagz_text("kube-scheduler", flags),
        lambda v: zpages.flagz_object("kube-scheduler", flags, v),
    )
    assert (page.status, page.content_type) == (status, ctype)
    if status == 406:
        assert json.loads(page.body)["reason"] == "NotAcceptable"
    if "v1alpha1" in accept:
        assert "deprecated" in page.headers["Warning"]


def test_flagz_text_is_upstreams_layout() -> None:
    text = zpages.flagz_text("kube-scheduler", {"v": "2", "config": ""})
    head, _, body = text.partition("purposes only.\n")
    assert head == (
        "\nkube-scheduler flagz\nWarning: This endpoint is not meant to be machine parseable, "
        "has no formatting compatibility guarantees and is for debugging "
    )
    sep = body.split("\n")[0][len("config") :]
    assert sep in zpages.DELIMITERS
    assert body == f"config{sep}\nv{sep}2\n"


def test_statusz_aggregates_the_listed_paths() -> None:
    assert zpages.aggregate_paths(
        ["/configz", "/flagz", "/healthz", "/livez", "/metrics", "/metrics/resources", "/readyz"]
    ) == ["/configz", "/flagz", "/healthz", "/livez", "/metrics", "/readyz"]
    doc = zpages.statusz_object(
        "kube-scheduler",
        "v1beta1",
        start=0.0,
        binary_version="1.36.5",
        emulation_version="1.36",
        paths=["/metrics"],
    )
    assert doc["startTime"] == "1970-01-01T00:00:00Z"
    assert doc["goVersion"].startswith("python3.")
    assert doc["paths"] == ["/metrics"]


# ---- delegated authentication ---------------------------------------------------------------


def _ca(name: str) -> tuple[Any, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(ca: tuple[Any, Any], cn: str, orgs: tuple[str, ...] = ()) -> bytes:
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


def _pem(ca: tuple[Any, Any]) -> bytes:
    return bytes(ca[0].public_bytes(serialization.Encoding.PEM))


async def test_authentication_order_is_upstreams() -> None:
    client, proxy = _ca("client-ca"), _ca("front-proxy-ca")
    api = InMemoryCluster()
    api.tokens["good"] = {"username": "prom", "groups": ["monitoring"]}
    auth = DelegatingAuth(
        api,
        client_ca=ClientCA(_pem(client)),
        request_header=RequestHeaderConfig(
            ca=ClientCA(_pem(proxy)), allowed_names=("front-proxy-client",)
        ),
    )
    headers = CIMultiDict(
        [("X-Remote-User", "alice"), ("X-Remote-Group", "devs"), ("X-Remote-Extra-Scopes", "a")]
    )
    user = await auth.authenticate(
        authorization=None, peer_cert=_leaf(proxy, "front-proxy-client"), headers=headers
    )
    assert (user.name, user.groups, user.extra) == (
        "alice",
        ("devs", "system:authenticated"),
        (("scopes", ("a",)),),
    )
    with pytest.raises(AuthError) as exc:  # a proxy certificate with a CN not allowed
        await auth.authenticate(
            authorization=None, peer_cert=_leaf(proxy, "intruder"), headers=headers
        )
    assert exc.value.status == 401
    user = await auth.authenticate(
        authorization="Bearer good", peer_cert=_leaf(client, "admin", ("system:masters",))
    )
    assert (user.name, user.groups) == ("admin", ("system:masters", "system:authenticated"))
    user = await auth.authenticate(authorization="Bearer good", peer_cert=_leaf(proxy, "x"))
    assert user.name == "prom"  # no username header: the token decides
    assert await auth.authenticate(authorization=None) == ANONYMOUS


async def test_without_a_token_review_client_tokens_are_anonymous() -> None:
    auth = DelegatingAuth(None)
    assert await auth.authenticate(authorization="Bearer anything") == ANONYMOUS


async def test_authorization_shortcuts_and_separate_cache_ttls() -> None:
    api = InMemoryCluster()
    allowed = {"yes": True}
    api.authorize = lambda spec: allowed["yes"]
    now = [0.0]
    auth = DelegatingAuth(
        api, authz_reviewer=api, allow_ttl=100.0, deny_ttl=1.0, clock=lambda: now[0]
    )
    masters = (await auth.authenticate(authorization=None, peer_cert=None)).__class__(
        "admin", groups=("system:masters",)
    )
    await auth.authorize(masters, verb="get", path="/metrics")  # no review
    assert auth.access_reviews == 0
    bob = masters.__class__("bob", groups=("system:authenticated",))
    await auth.authorize(bob, verb="get", path="/metrics")
    allowed["yes"] = False
    now[0] = 50.0
    await auth.authorize(bob, verb="get", path="/metrics")  # still the cached allow
    assert auth.access_reviews == 1
    carol = bob.__class__("carol")
    with pytest.raises(AuthError):
        await auth.authorize(carol, verb="get", path="/metrics")
    allowed["yes"] = True
    now[0] = 52.0  # the denial expired after 1 s
    await auth.authorize(carol, verb="get", path="/metrics")
    assert auth.access_reviews == 3
    with pytest.raises(AuthError) as exc:  # no authorization client: denied
        await DelegatingAuth(api).authorize(bob, verb="get", path="/metrics")
    assert exc.value.status == 403


# ---- TLS ------------------------------------------------------------------------------------


def test_cert_dir_keeps_and_reuses_the_self_signed_pair(tmp_path: Path) -> None:
    server_ssl_context(ServingTLS(cert_dir=str(tmp_path / "certs")))
    crt = tmp_path / "certs" / "kube-scheduler.crt"
    first = crt.read_bytes()
    assert (tmp_path / "certs" / "kube-scheduler.key").stat().st_mode & 0o077 == 0
    server_ssl_context(ServingTLS(cert_dir=str(tmp_path / "certs")))
    assert crt.read_bytes() == first


@pytest.mark.parametrize(
    ("tls", "error"),
    [
        pytest.param(
            ServingTLS(min_version="VersionTLS14"),
            'unknown tls version "VersionTLS14"',
            id="min-version",
        ),
        pytest.param(
            ServingTLS(cipher_suites=("TLS_FOO",)),
            "Cipher suite TLS_FOO not supported or doesn't exist",
            id="cipher",
        ),
        pytest.param(
            ServingTLS(cert_file="/x.crt"),
            "--tls-cert-file and --tls-private-key-file go together",
            id="half-pair",
        ),
    ],
)
def test_tls_flags_are_checked(tls: ServingTLS, error: str) -> None:
    with pytest.raises(TLSConfigError) as exc:
        server_ssl_context(tls)
    assert str(exc.value) == error


def test_tls_min_version_and_ciphers_apply() -> None:
    ctx = server_ssl_context(
        ServingTLS(
            min_version="VersionTLS13",
            cipher_suites=("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
        )
    )
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    names = {c["name"] for c in ctx.get_ciphers()}
    assert "ECDHE-RSA-AES128-GCM-SHA256" in names
    assert "ECDHE-RSA-AES256-GCM-SHA384" not in names


# ---- pprof ----------------------------------------------------------------------------------


def test_the_cpu_profile_samples_busy_threads_only() -> None:
    import threading

    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    t = threading.Thread(target=spin, name="busy")
    t.start()
    try:
        stacks, total = pprof.Profiler().cpu_profile(0.3)
    finally:
        stop.set()
        t.join()
    assert total > 0
    assert any("spin (test_op_server.py" in stack for stack in stacks)
    assert not any(stack.endswith("select (selectors.py") for stack in stacks)


def test_one_cpu_profile_at_a_time() -> None:
    import threading

    p = pprof.Profiler()
    t = threading.Thread(target=p.cpu_profile, args=(0.5,))
    t.start()
    try:
        import time

        time.sleep(0.05)
        with pytest.raises(pprof.ProfileBusy):
            p.cpu_profile(0.1)
    finally:
        t.join()


def _pair_files(tmp_path: Path, ca: tuple[Any, Any], cn: str, dns: list[str]) -> tuple[str, str]:
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    cert = builder.sign(ca_key, hashes.SHA256())
    crt, keyf = tmp_path / f"{cn}.crt", tmp_path / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyf.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(crt), str(keyf)


def _served_cn(server: ssl.SSLContext, server_name: str) -> str:
    """The CN of the certificate ``server`` presents to a client asking for
    ``server_name`` (a handshake over memory BIOs)."""
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname=server_name)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(20):
        for side in (c, s):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if c.version() and s.version():
            break
    der = c.getpeercert(binary_form=True)
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def test_sni_pairs_are_chosen_by_server_name(tmp_path: Path) -> None:
    ca = _ca("ca")
    default = _pair_files(tmp_path, ca, "default", ["default.example"])
    explicit = _pair_files(tmp_path, ca, "explicit", ["ignored.example"])
    wild = _pair_files(tmp_path, ca, "wild", ["*.foo.example"])
    ctx = server_ssl_context(
        ServingTLS(
            cert_file=default[0],
            key_file=default[1],
            sni=[(*explicit, ("api.foo.example",)), (*wild, ())],
        )
    )
    assert _served_cn(ctx, "api.foo.example") == "explicit"  # explicit names first
    assert _served_cn(ctx, "db.foo.example") == "wild"  # names from the certificate
    assert _served_cn(ctx, "other.example") == "default"

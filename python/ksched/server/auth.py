"""Delegated authentication and authorization, as kube-scheduler's secure port does it
(``k8s.io/apiserver`` ``DelegatingAuthenticationOptions`` /
``DelegatingAuthorizationOptions``).

Authentication, in upstream's order (``DelegatingAuthenticatorConfig.New``):

1. request headers (``--requestheader-*``, or the ``extension-apiserver-authentication``
   ConfigMap): a client certificate issued by the request-header CA, whose CN is in the
   allowed names (any when none are listed), lets the first non-empty username header
   name the user, with the group, UID and ``X-Remote-Extra-*`` headers;
2. a client certificate issued by the client CA (``--client-ca-file`` or the ConfigMap):
   the user is its CN, the groups its O values;
3. a bearer token: a ``TokenReview`` decides; a token the API server does not accept —
   or a review that fails — is ``401 Unauthorized``;
4. no credentials: ``system:anonymous`` in group ``system:unauthenticated`` (anonymous
   requests are enabled, as in kube-scheduler).

Every authenticated user also gets the group ``system:authenticated``.

Authorization (``DelegatingAuthorizationOptions``): a member of ``system:masters`` is
allowed everything without a review; a path in ``--authorization-always-allow-paths``
(default ``/healthz``, ``/readyz``, ``/livez``; a trailing ``*`` matches a prefix) is
allowed for anyone; anything else asks a ``SubjectAccessReview`` for the non-resource path
and the lowercase HTTP verb (``get``, ``put``...); without an authorization client every
such request is denied. Denied is ``403 Forbidden`` — also for an anonymous request,
exactly as upstream (``forbidden: User "system:anonymous" cannot get path "/metrics"``); a
review that fails is ``500``.

Token reviews are cached for ``--authentication-token-webhook-cache-ttl``, allowed and
denied access decisions for ``--authorization-webhook-cache-authorized-ttl`` and
``-unauthorized-ttl`` (10 s each by default), so a Prometheus scrape costs the API server
two requests at most every 10 s per identity.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.cluster import APIError, ReviewAPI

__all__ = [
    "ALWAYS_ALLOW_PATHS",
    "ANONYMOUS",
    "AuthError",
    "ClientCA",
    "DelegatingAuth",
    "RequestHeaderConfig",
    "UserInfo",
    "path_allowed",
]

log = logging.getLogger(__name__)

#: kube-scheduler's ``--authorization-always-allow-paths`` default.
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
#: Upstream's webhook cache TTLs (seconds).
CACHE_TTL = 10.0


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @classmethod
    def from_review(cls, user: dict[str, Any]) -> UserInfo:
        extra = user.get("extra") or {}
        return cls(
            name=str(user.get("username") or ""),
            uid=str(user.get("uid") or ""),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=tuple(sorted((str(k), tuple(str(x) for x in v)) for k, v in extra.items())),
        )


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
AUTHENTICATED = "system:authenticated"
#: ``DelegatingAuthorizationOptions.AlwaysAllowGroups``.
ALWAYS_ALLOW_GROUPS = ("system:masters",)


class ClientCA:
    """A CA bundle that client certificates are checked against (issuer and signature of
    the leaf the TLS layer already verified against the union of the bundles)."""

    def __init__(self, pem: bytes, source: str = "") -> None:
        from cryptography import x509

        self.pem = pem
        self.source = source
        self.certs = x509.load_pem_x509_certificates(pem)

    def issued(self, leaf: Any) -> bool:
        for ca in self.certs:
            if ca.subject != leaf.issuer:
                continue
            try:
                leaf.verify_directly_issued_by(ca)
            except Exception as exc:  # InvalidSignature, or a key type it cannot check
                log.debug("client certificate not issued by %s: %s", self.source, exc)
                continue
            return True
        return False


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """``--requestheader-*`` (or the ConfigMap's ``requestheader-*`` keys)."""

    ca: ClientCA
    username_headers: tuple[str, ...] = ("x-remote-user",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("x-remote-group",)
    extra_prefixes: tuple[str, ...] = ("x-remote-extra-",)
    allowed_names: tuple[str, ...] = ()


def _with_authenticated(user: UserInfo) -> UserInfo:
    if AUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)


def _subject(leaf: Any) -> tuple[str, tuple[str, ...]]:
    from cryptography.x509.oid import NameOID

    cn = [str(a.value) for a in leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [str(a.value) for a in leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return (cn[0] if cn else ""), tuple(orgs)


class AuthError(Exception):
    """The request cannot be served: ``status`` is 401, 403 or 500; ``message`` the
    Status text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def path_allowed(path: str, patterns: Iterable[str]) -> bool:
    """``authorizerfactory.NewPathAuthorizer``: exact paths, or prefixes ending in ``*``."""
    for p in patterns:
        if p.endswith("*"):
            if path.startswith(p[:-1]):
                return True
        elif path == p:
            return True
    return False


class _TTLCache:
    def __init__(self, ttl: float, clock: Callable[[], float], size: int = 4096) -> None:
        self.ttl = ttl
        self.clock = clock
        self.size = size
        self._items: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        hit = self._items.get(key)
        if hit is None:
            return None
        if hit[0] < self.clock():
            del self._items[key]
            return None
        return hit[1]

    def put(self, key: Any, value: Any) -> None:
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[key] = (self.clock() + self.ttl, value)


class DelegatingAuth:
    """Authenticate and authorize one request through the API server."""

    def __init__(
        self,
        reviewer: ReviewAPI | None,
        *,
        authz_reviewer: ReviewAPI | None = None,
        always_allow_paths: Sequence[str] = ALWAYS_ALLOW_PATHS,
        always_allow_groups: Sequence[str] = ALWAYS_ALLOW_GROUPS,
        anonymous: bool = True,
        cache_ttl: float = CACHE_TTL,
        allow_ttl: float | None = None,
        deny_ttl: float | None = None,
        client_ca: ClientCA | None = None,
        request_header: RequestHeaderConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_client_cert: Callable[[Any], None] | None = None,
        on_review: Callable[[str, int, float], None] | None = None,
    ) -> None:
        self.reviewer = reviewer
        #: Reviews access (``--authorization-kubeconfig``); None denies every request
        #: that no other rule allows.
        self.authz_reviewer = authz_reviewer
        self.always_allow_paths = tuple(always_allow_paths)
        self.always_allow_groups = frozenset(always_allow_groups)
        self.anonymous = anonymous
        self.client_ca = client_ca
        self.request_header = request_header
        self._tokens = _TTLCache(cache_ttl, clock)
        self._allowed = _TTLCache(allow_ttl if allow_ttl is not None else cache_ttl, clock)
        self._denied = _TTLCache(deny_ttl if deny_ttl is not None else cache_ttl, clock)
        self._on_client_cert = on_client_cert
        self._on_review = on_review
        self._clock = clock
        self.token_reviews = 0
        self.access_reviews = 0

    async def authenticate(
        self,
        *,
        authorization: str | None,
        cert_user: UserInfo | None = None,
        peer_cert: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> UserInfo:
        """The user of a request: ``peer_cert`` is the client certificate (DER) the TLS
        layer verified, ``headers`` the request's headers (for request-header
        authentication); ``cert_user`` is an already authenticated certificate user."""
        if cert_user is not None:
            return _with_authenticated(cert_user)
        leaf = None
        if peer_cert:
            from cryptography import x509

            leaf = x509.load_der_x509_certificate(peer_cert)
        rh = self.request_header
        if leaf is not None and rh is not None and headers is not None and rh.ca.issued(leaf):
            user = self._from_headers(rh, leaf, headers)
            if user is not None:
                return user
        if leaf is not None and self.client_ca is not None and self.client_ca.issued(leaf):
            if self._on_client_cert is not None:
                self._on_client_cert(leaf)
            name, orgs = _subject(leaf)
            if name:
                return _with_authenticated(UserInfo(name, groups=orgs))
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token and self.reviewer is not None:
                return await self._review_token(token)
            # Without a TokenReview client no token authenticator runs: anonymous.
            # Another scheme: no authenticator takes it; upstream falls through.
        if self.anonymous:
            return ANONYMOUS
        raise AuthError(401, "Unauthorized")

    @staticmethod
    def _from_headers(
        rh: RequestHeaderConfig, leaf: Any, headers: Mapping[str, str]
    ) -> UserInfo | None:
        cn, _ = _subject(leaf)
        if rh.allowed_names and cn not in rh.allowed_names:
            raise AuthError(401, "Unauthorized")
        getall = getattr(headers, "getall", None)

        def values(name: str) -> list[str]:
            if getall is not None:
                return [v for v in getall(name, []) if v]
            v = headers.get(name)
            return [v] if v else []

        name = next((v for h in rh.username_headers for v in values(h)[:1]), "")
        if not name:
            return None
        uid = next((v for h in rh.uid_headers for v in values(h)[:1]), "")
        groups = tuple(v for h in rh.group_headers for v in values(h))
        extra: dict[str, list[str]] = {}
        for prefix in rh.extra_prefixes:
            for key in headers:
                if key.lower().startswith(prefix.lower()):
                    ek = urllib.parse.unquote(key[len(prefix) :].lower())
                    for v in values(key):
                        extra.setdefault(ek, []).append(v)
        return _with_authenticated(
            UserInfo(
                name,
                uid=uid,
                groups=groups,
                extra=tuple(sorted((k, tuple(v)) for k, v in extra.items())),
            )
        )

    async def _review_token(self, token: str) -> UserInfo:
        cached = self._tokens.get(token)
        if cached is None:
            if self.reviewer is None:
                raise AuthError(401, "Unauthorized")
            self.token_reviews += 1
            began = self._clock()
            try:
                status = await self.reviewer.create_token_review(spec={"token": token})
            except (APIError, OSError, TimeoutError) as exc:
                self._reviewed("authn", exc, began)
                log.error("unable to authenticate the request: TokenReview failed: %s", exc)
                raise AuthError(401, "Unauthorized") from exc
            self._reviewed("authn", None, began)
            user = status.get("user") if status.get("authenticated") else None
            cached = (
                _with_authenticated(UserInfo.from_review(user)) if isinstance(user, dict) else False
            )
            self._tokens.put(token, cached)
        if cached is False:
            raise AuthError(401, "Unauthorized")
        assert isinstance(cached, UserInfo)
        return cached

    def _reviewed(self, kind: str, exc: BaseException | None, began: float) -> None:
        if self._on_review is not None:
            code = 201 if exc is None else int(getattr(exc, "code", 0) or 0)
            self._on_review(kind, code, self._clock() - began)

    async def authorize(self, user: UserInfo, *, verb: str, path: str) -> None:
        """Return when allowed; raise :class:`AuthError` (403 or 500) otherwise."""
        if self.always_allow_groups.intersection(user.groups):
            return
        if path_allowed(path, self.always_allow_paths):
            return
        key = (user, verb, path)
        decision = self._allowed.get(key) or self._denied.get(key)
        if decision is None:
            if self.authz_reviewer is None:
                decision = (False, "")
            else:
                self.access_reviews += 1
                spec: dict[str, Any] = {
                    "user": user.name,
                    "groups": list(user.groups),
                    "nonResourceAttributes": {"path": path, "verb": verb},
                }
                if user.uid:
                    spec["uid"] = user.uid
                if user.extra:
                    spec["extra"] = {k: list(v) for k, v in user.extra}
                began = self._clock()
                try:
                    status = await self.authz_reviewer.create_subject_access_review(spec=spec)
                except (APIError, OSError, TimeoutError) as exc:
                    self._reviewed("authz", exc, began)
                    log.error("SubjectAccessReview for %s %s failed: %s", verb, path, exc)
                    raise AuthError(500, f'Internal Server Error: "{path}": {exc}') from exc
                self._reviewed("authz", None, began)
                allowed = bool(status.get("allowed")) and not status.get("denied")
                decision = (allowed, str(status.get("reason") or ""))
                (self._allowed if allowed else self._denied).put(key, decision)
        allowed, reason = decision
        if not allowed:
            msg = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
            raise AuthError(403, f"{msg}: {reason}" if reason else msg)

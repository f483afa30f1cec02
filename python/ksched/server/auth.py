"""Delegated authentication and authorization, as kube-scheduler's secure port does it
(``k8s.io/apiserver`` ``DelegatingAuthenticationOptions`` /
``DelegatingAuthorizationOptions``).

Authentication, in order:

1. a client certificate that verifies against ``--client-ca-file`` (when given): the
   user is its CN, the groups its O values;
2. a bearer token: a ``TokenReview`` decides; a token the API server does not accept —
   or a review that fails — is ``401 Unauthorized``;
3. no credentials: ``system:anonymous`` in group ``system:unauthenticated`` (anonymous
   requests are enabled, as in kube-scheduler).

Authorization: a path in ``--authorization-always-allow-paths`` (default ``/healthz``,
``/readyz``, ``/livez``; a trailing ``*`` matches a prefix) is allowed for anyone;
anything else asks a ``SubjectAccessReview`` for the non-resource path and the lowercase
HTTP method as verb (``get``). Denied is ``403 Forbidden`` — also for an anonymous
request, exactly as upstream (``forbidden: User "system:anonymous" cannot get path
"/metrics"``); a review that fails is ``500``.

Both reviews are cached for 10 seconds (upstream's default token and authorization
webhook cache TTLs), so a Prometheus scrape costs the API server two requests at most
every 10s per identity.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.cluster import APIError, ReviewAPI

__all__ = [
    "ALWAYS_ALLOW_PATHS",
    "ANONYMOUS",
    "AuthError",
    "DelegatingAuth",
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
        anonymous: bool = True,
        cache_ttl: float = CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        #: Reviews access (``--authorization-kubeconfig``); defaults to ``reviewer``.
        self.authz_reviewer = authz_reviewer if authz_reviewer is not None else reviewer
        self.always_allow_paths = tuple(always_allow_paths)
        self.anonymous = anonymous
        self._tokens = _TTLCache(cache_ttl, clock)
        self._decisions = _TTLCache(cache_ttl, clock)
        self.token_reviews = 0
        self.access_reviews = 0

    async def authenticate(
        self, *, authorization: str | None, cert_user: UserInfo | None = None
    ) -> UserInfo:
        if cert_user is not None:
            return cert_user
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return await self._review_token(token)
            # Another scheme: no authenticator takes it; upstream falls through.
        if self.anonymous:
            return ANONYMOUS
        raise AuthError(401, "Unauthorized")

    async def _review_token(self, token: str) -> UserInfo:
        cached = self._tokens.get(token)
        if cached is None:
            if self.reviewer is None:
                raise AuthError(401, "Unauthorized")
            self.token_reviews += 1
            try:
                status = await self.reviewer.create_token_review(spec={"token": token})
            except (APIError, OSError, TimeoutError) as exc:
                log.error("unable to authenticate the request: TokenReview failed: %s", exc)
                raise AuthError(401, "Unauthorized") from exc
            user = status.get("user") if status.get("authenticated") else None
            cached = UserInfo.from_review(user) if isinstance(user, dict) else False
            self._tokens.put(token, cached)
        if cached is False:
            raise AuthError(401, "Unauthorized")
        assert isinstance(cached, UserInfo)
        return cached

    async def authorize(self, user: UserInfo, *, verb: str, path: str) -> None:
        """Return when allowed; raise :class:`AuthError` (403 or 500) otherwise."""
        if path_allowed(path, self.always_allow_paths):
            return
        key = (user, verb, path)
        decision = self._decisions.get(key)
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
                try:
                    status = await self.authz_reviewer.create_subject_access_review(spec=spec)
                except (APIError, OSError, TimeoutError) as exc:
                    log.error("SubjectAccessReview for %s %s failed: %s", verb, path, exc)
                    raise AuthError(500, f'Internal Server Error: "{path}": {exc}') from exc
                allowed = bool(status.get("allowed")) and not status.get("denied")
                decision = (allowed, str(status.get("reason") or ""))
            self._decisions.put(key, decision)
        allowed, reason = decision
        if not allowed:
            msg = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
            raise AuthError(403, f"{msg}: {reason}" if reason else msg)

"""Authentication: the credentials of a request become a ``UserInfo``.

kube-apiserver tries its authenticators in turn (client certificate, static tokens, then
ServiceAccount tokens...) and unions the result with ``system:authenticated``. A request that
presents no credentials is anonymous; one whose ``Authorization: Bearer`` token no
authenticator accepts is a 401, never anonymous: a client with a stale token must learn it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Protocol

from aiohttp import web

from kubesim.core.attributes import ALL_AUTHENTICATED, UserInfo
from kubesim.plugins.authentication import unauthorized

__all__ = [
    "Chain",
    "PeerAuthenticator",
    "StaticTokens",
    "TokenAuthenticator",
    "bearer_token",
    "new_token",
    "with_authenticated_group",
]


def bearer_token(request: web.Request) -> str | None:
    """The request's bearer token; None without an Authorization header.

    A header that is not ``Bearer <token>`` (another scheme, an empty token) carries no token
    kube-apiserver's bearer authenticator would read, so it is treated as no credentials.
    """
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def new_token() -> str:
    """An unguessable static token."""
    return secrets.token_urlsafe(32)


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``group.AuthenticatedGroupAdder``: every authenticated user is in system:authenticated."""
    if ALL_AUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)


class StaticTokens:
    """``--token-auth-file``: token → user. Answers None for tokens it does not know.

    kubesim gives its admin kubeconfig such a token when a server authorizes requests over HTTP, so
    the admin stays all-powerful (``system:masters``) while every other identity is checked.
    """

    def __init__(self) -> None:
        self._users: dict[str, UserInfo] = {}

    def add(self, token: str, user: UserInfo) -> str:
        self._users[token] = with_authenticated_group(user)
        return token

    def lookup(self, token: str) -> UserInfo | None:
        return self._users.get(token)


class TokenAuthenticator(Protocol):
    """``authenticator.Token``: the token's user, None when this source does not accept it."""

    def lookup(self, token: str) -> UserInfo | None: ...


class PeerAuthenticator(Protocol):
    """The TLS client certificate's user; None without one; ``unauthorized()`` when it is not
    acceptable."""

    def authenticate_peer(self, request: web.Request) -> UserInfo | None: ...


class Chain:
    """The client certificate (if any), then bearer-token authenticators in order; unknown
    tokens are a 401.

    kube-apiserver's union in its order: the TLS client certificate first (when the server serves
    TLS: ``kubesim.plugins.authentication.pki.ClientCertificates``), then the bearer-token
    authenticators (static tokens, then ServiceAccount tokens:
    ``kubesim.plugins.authentication.serviceaccounts``). A certificate that authenticates wins over
    any token, as in kube-apiserver.
    """

    def __init__(
        self,
        tokens: Sequence[TokenAuthenticator],
        *,
        certificates: PeerAuthenticator | None = None,
    ) -> None:
        self.tokens = list(tokens)
        self.certificates = certificates

    def authenticate(self, request: web.Request) -> UserInfo | None:
        if self.certificates is not None:
            user = self.certificates.authenticate_peer(request)
            if user is not None:
                return user
        token = bearer_token(request)
        if token is None:
            return None
        for source in self.tokens:
            user = source.lookup(token)
            if user is not None:
                return user
        raise unauthorized()

"""Authentication: the credentials of a request become a ``UserInfo``.

kube-apiserver's authentication filter asks its authenticators in turn (``authenticator.Request``
of ``k8s.io/apiserver/pkg/authentication``): a bearer token — fixed tokens (``tokens``,
``--token-auth-file``) or ServiceAccount tokens from the TokenRequest API
(``serviceaccounts``) — or a TLS client certificate signed by the server's CA (``pki``); a
request without credentials is ``system:anonymous``, credentials presented but not valid are a
401 ``Unauthorized`` whatever the authorization mode. ``reviews`` answers ``TokenReview`` and
``SelfSubjectReview``.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from kube.apierrors import StatusError
from kubesim.core.attributes import UserInfo

__all__ = ["Authenticator", "unauthorized"]


class Authenticator(Protocol):
    """``authenticator.Request``: the request's user, None when it carries no credentials
    (anonymous); raises ``unauthorized()`` for credentials that do not authenticate."""

    def authenticate(self, request: web.Request) -> UserInfo | None: ...


def unauthorized() -> StatusError:
    """The 401 kube-apiserver answers for credentials it cannot authenticate."""
    return StatusError(401, "Unauthorized", "Unauthorized", has_details=False)

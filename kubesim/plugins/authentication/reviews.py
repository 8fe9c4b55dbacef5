"""``TokenReview`` and ``SelfSubjectReview`` (``authentication.k8s.io/v1``): create-only kinds.

Each answers a decoded body; the endpoints serve them (``kubesim.endpoints.subresources``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from kube.times import format_time
from kubesim.core.attributes import UserInfo
from kubesim.core.errors import bad_request
from kubesim.core.scheme import ResourceType
from kubesim.plugins.authentication.serviceaccounts import ServiceAccountTokens, TokenInvalid
from kubesim.plugins.authentication.tokens import TokenAuthenticator

__all__ = ["IdentityReviews"]

GROUP_VERSION: Final = "authentication.k8s.io/v1"


class IdentityReviews:
    """The two reviews over the server's clock, token authenticators (asked in order) and
    ServiceAccount tokens (whose audiences are the server's).

    * ``SelfSubjectReview`` (``kubectl auth whoami``) answers the requester's own ``UserInfo``:
      whoever the authentication filter made of the request (certificate, token or anonymous), as
      ``pkg/registry/authentication/selfsubjectreview`` does.
    * ``TokenReview`` (what webhook token authenticators and the kubelet call) runs a bearer token
      through the server's token authenticators, not the client certificate, for the audiences in
      ``spec.audiences`` (default: the server's). An empty ``spec.token`` is kube's 400; a token
      that does not authenticate is a 201 with ``status.authenticated`` unset and ``status.error``
      (``pkg/registry/authentication/tokenreview``).
    """

    def __init__(
        self,
        clock: Callable[[], float],
        token_authenticators: Callable[[], Sequence[TokenAuthenticator]],
        service_account_tokens: ServiceAccountTokens,
    ) -> None:
        self.clock = clock
        self.token_authenticators = token_authenticators
        self.service_account_tokens = service_account_tokens

    def self_subject_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "kind": "SelfSubjectReview",
            "apiVersion": GROUP_VERSION,
            "metadata": {"creationTimestamp": format_time(self.clock())},
            "status": {"userInfo": user.to_dict()},
        }

    def token_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise bad_request("token is required for TokenReview in authentication")
        wanted = spec.get("audiences") or []
        if not isinstance(wanted, list):
            wanted = []
        audiences = [str(a) for a in wanted]
        status: dict[str, Any] = {"user": {}}
        for source in self.token_authenticators():
            try:
                if isinstance(source, ServiceAccountTokens):
                    found = source.review(token, audiences)
                    accepted = [a for a in audiences if a in source.audiences] or list(
                        audiences or source.audiences
                    )
                else:
                    found = source.lookup(token)
                    accepted = audiences or list(self.service_account_tokens.audiences)
            except TokenInvalid as exc:
                status["error"] = f"[invalid bearer token, {exc}]"
                break
            if found is not None:
                status = {"authenticated": True, "user": found.to_dict(), "audiences": accepted}
                break
        return {
            "kind": "TokenReview",
            "apiVersion": GROUP_VERSION,
            "metadata": {"creationTimestamp": None},
            "spec": json.loads(json.dumps(spec)),
            "status": status,
        }

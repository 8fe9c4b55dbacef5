"""``TokenReview`` and ``SelfSubjectReview`` (``authentication.k8s.io/v1``): create-only kinds.

* ``SelfSubjectReview`` (``kubectl auth whoami``) answers the requester's own ``UserInfo`` —
  whoever the authentication filter made of the request (certificate, token or anonymous), as
  ``pkg/registry/authentication/selfsubjectreview`` does.
* ``TokenReview`` (what webhook token authenticators and the kubelet call) runs a bearer token
  through the server's token authenticators — not the client certificate — for the audiences
  in ``spec.audiences`` (default: the server's). An empty ``spec.token`` is kube's 400; a token
  that does not authenticate is a 201 with ``status.authenticated`` unset and ``status.error``
  (``pkg/registry/authentication/tokenreview``).

Both are registered in ``ApiServer.virtual`` by ``install``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kube.times import format_time
from kubesim.auth.serviceaccounts import ServiceAccountTokens, TokenInvalid, decode_request
from kubesim.core.errors import bad_request

if TYPE_CHECKING:
    from aiohttp import web

    from kubesim.apiserver.server import RequestContext
    from kubesim.core.scheme import ResourceType
    from kubesim.sim import Simulator

__all__ = ["install"]

GROUP_VERSION = "authentication.k8s.io/v1"


def install(sim: Simulator) -> None:
    """Serve ``selfsubjectreviews`` and ``tokenreviews`` on this simulator."""

    async def self_subject_review(ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        from kubesim.apiserver.server import json_response

        decode_request(ctx.body, ctx.request.headers.get("Content-Type", ""))  # 400 on garbage
        body = {
            "kind": "SelfSubjectReview",
            "apiVersion": GROUP_VERSION,
            "metadata": {"creationTimestamp": format_time(sim.registry.clock())},
            "status": {"userInfo": ctx.user.to_dict()},
        }
        return json_response(body, 201)

    async def token_review(ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        from kubesim.apiserver.server import json_response

        req = decode_request(ctx.body, ctx.request.headers.get("Content-Type", ""))
        spec = req.get("spec") if isinstance(req.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise bad_request("token is required for TokenReview in authentication")
        wanted = spec.get("audiences") or []
        if not isinstance(wanted, list):
            wanted = []
        audiences = [str(a) for a in wanted]
        status: dict[str, Any] = {"user": {}}
        for source in sim.token_authenticators():
            try:
                if isinstance(source, ServiceAccountTokens):
                    user = source.review(token, audiences)
                    accepted = [a for a in audiences if a in source.audiences] or list(
                        audiences or source.audiences
                    )
                else:
                    user = source.lookup(token)
                    accepted = audiences or list(sim.service_account_tokens.audiences)
            except TokenInvalid as exc:
                status["error"] = f"[invalid bearer token, {exc}]"
                break
            if user is not None:
                status = {"authenticated": True, "user": user.to_dict(), "audiences": accepted}
                break
        out = {
            "kind": "TokenReview",
            "apiVersion": GROUP_VERSION,
            "metadata": {"creationTimestamp": None},
            "spec": json.loads(json.dumps(spec)),
            "status": status,
        }
        return json_response(out, 201)

    sim.server.virtual[("authentication.k8s.io", "selfsubjectreviews")] = self_subject_review
    sim.server.virtual[("authentication.k8s.io", "tokenreviews")] = token_review

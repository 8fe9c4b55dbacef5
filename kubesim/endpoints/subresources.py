"""The HTTP side of create-only storage: subresources (eviction, binding, a ServiceAccount's
token) and the review kinds, each decoded here and answered by storage that knows no HTTP.

kubesim's storage lives below the endpoints (``kubesim.plugins.eviction``,
``kubesim.plugins.binding``, ``kubesim.plugins.authentication.serviceaccounts`` and the
reviews of ``kubesim.plugins.authentication`` and ``kubesim.plugins.authorization``); these
adapters plug it into ``ApiServer.subresources`` and ``ApiServer.virtual``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from kubesim.core.attributes import UserInfo
from kubesim.core.errors import method_not_allowed
from kubesim.core.scheme import ResourceType
from kubesim.endpoints.codec import decode_body, decode_request, json_response
from kubesim.endpoints.request import RequestContext
from kubesim.endpoints.server import SubresourceHandler
from kubesim.registry.generic import check_dry_run

if TYPE_CHECKING:  # the storage is built where the server is assembled
    from kubesim.plugins.authentication.serviceaccounts import ServiceAccountTokens

__all__ = ["NamedCreater", "Review", "named_create", "review", "token_request"]

# A review kind's storage: (its type, the URL's namespace, the requester, the decoded body)
# -> the answered review.
Review = Callable[[ResourceType, str, UserInfo, dict[str, Any]], dict[str, Any]]


def _create_only(ctx: RequestContext) -> list[str]:
    """The create handler's first checks: the verb, then the ``dryRun`` query (its values).

    kube-apiserver serves these kinds through the same create handler as any resource
    (``handlers.CreateNamedResource`` / ``CreateResource``): the verb must be ``create`` (else the
    generic 405), the ``dryRun`` query is validated as ``CreateOptions`` (422), the body is decoded,
    the storage's ``Create`` answers and the response is a 201.
    """
    if ctx.info.verb != "create":
        raise method_not_allowed()
    dry_run = [v for v in ctx.query.getall("dryRun", []) if v != ""]
    check_dry_run(dry_run, kind="CreateOptions")
    return dry_run


class NamedCreater(Protocol):
    """Create-only storage of a named subresource (kube's ``rest.NamedCreater``): eviction and
    binding. ``body_type`` is what a request body is decoded as."""

    body_type: ResourceType

    def create(
        self, namespace: str, name: str, body: Mapping[str, Any], *, dry_run: list[str]
    ) -> dict[str, Any]: ...


def named_create(storage: NamedCreater) -> SubresourceHandler:
    """``pods/eviction`` or ``pods/binding``: the storage answers the 201's body (an eviction
    also checks the body's dry run against the query's)."""

    async def handle(ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        dry_run = _create_only(ctx)
        body = decode_body(ctx, storage.body_type)
        status = storage.create(ctx.info.namespace, ctx.info.name, body, dry_run=dry_run)
        return json_response(status, 201)

    return handle


def token_request(tokens: ServiceAccountTokens) -> SubresourceHandler:
    """``serviceaccounts/token``: the TokenRequest API (no dry run: tokens are not stored)."""

    async def handle(ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        if ctx.info.verb != "create":
            raise method_not_allowed()
        body = decode_request(ctx.body, ctx.request.headers.get("Content-Type", ""))
        return json_response(tokens.token_request(ctx.info.namespace, ctx.info.name, body), 201)

    return handle


def review(answer: Review, *, lenient: bool = False) -> SubresourceHandler:
    """A review kind (``ApiServer.virtual``): create only, never stored, answered as 201.
    ``lenient``: decoded as the authentication reviews are (``decode_request``).

    Two decoders, as kube has: ``decode_body`` (the server's, with field validation) for Eviction,
    Binding and the access reviews; ``decode_request`` for TokenRequest, TokenReview and
    SelfSubjectReview, which kubectl may send as protobuf and which accept an empty body as an
    empty request.
    """

    async def handle(ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        if lenient:
            body = decode_request(ctx.body, ctx.request.headers.get("Content-Type", ""))
        else:
            body = decode_body(ctx, rt)
        return json_response(answer(rt, ctx.info.namespace, ctx.user, body), 201)

    return handle

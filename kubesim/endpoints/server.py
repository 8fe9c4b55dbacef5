"""The API server: kube-apiserver's filter chain, then dispatch to the handlers, on aiohttp.

``ApiServer`` runs each request through the filters in kube-apiserver's order
(``pkg/endpoints/filters``) and dispatches it to the handlers, subresources and reviews;
``/_kubesim/`` control endpoints are kubesim's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from prometheus_client import CollectorRegistry

from kubesim.core.attributes import ANONYMOUS, MASTERS, Attributes, UserInfo, with_attributes
from kubesim.core.errors import (
    StatusError,
    internal_error,
    method_not_allowed,
    not_found_path,
    request_entity_too_large,
)
from kubesim.core.scheme import ResourceType, Scheme
from kubesim.endpoints import fieldvalidation
from kubesim.endpoints.codec import json_response, status_response
from kubesim.endpoints.handlers import ResourceHandlers
from kubesim.endpoints.nonresource import NonResourcePaths
from kubesim.endpoints.request import RequestContext, attributes_of, parse_request_info
from kubesim.endpoints.requestlog import RequestLog, RequestRecord
from kubesim.plugins.authentication import Authenticator
from kubesim.plugins.authorization import AlwaysAllow, Authorizer, Decision, forbidden_error
from kubesim.registry.admission import AdmissionNotes, collecting_admission_notes
from kubesim.registry.generic import GenericStore

__all__ = [
    "ApiServer",
    "DropConnection",
    "Impersonator",
    "RequestHook",
    "SubresourceHandler",
]

# kube-apiserver reads at most this much of a write's body (``MaxRequestBodyBytes``, 3 MiB by
# default: twice etcd's default request limit, as a JSON body shrinks when stored as protobuf)
MAX_REQUEST_BODY_BYTES: Final = 3 * 1024 * 1024
_WRITES: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})

log = logging.getLogger("kubesim")


class DropConnection(Exception):
    """Raised by a request hook: close the connection without any answer."""


RequestHook = Callable[[RequestContext], Awaitable[web.StreamResponse | None]]
SubresourceHandler = Callable[[RequestContext, ResourceType], Awaitable[web.StreamResponse]]
# Impersonation: (request, authenticated user) -> the user to act as; raises StatusError (403).
Impersonator = Callable[[RequestContext, UserInfo], UserInfo]


class Anonymous:
    """No authenticator configured: every request is ``system:anonymous``."""

    def authenticate(self, request: web.Request) -> UserInfo | None:
        return None


class ApiServer:
    """The aiohttp application serving the Kubernetes API over a ``GenericStore``."""

    def __init__(
        self,
        registry: GenericStore,
        scheme: Scheme,
        *,
        request_log: RequestLog | None = None,
        version_minor: str = "32",
        bookmark_interval: float = 60.0,
    ) -> None:
        self.registry = registry
        self.scheme = scheme
        self.log = request_log if request_log is not None else RequestLog()
        self.version_minor = version_minor
        self.request_hooks: list[RequestHook] = []
        self.authenticator: Authenticator = Anonymous()
        self.authorizer: Authorizer = AlwaysAllow()
        self.impersonator: Impersonator | None = None
        # create-only kinds answered without storing: (group, plural) -> handler
        self.virtual: dict[tuple[str, str], SubresourceHandler] = {}
        self.subresources: dict[tuple[str, str, str], SubresourceHandler] = {}
        # /_kubesim/<name> control endpoints: name -> handler(request) -> response
        self.control: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {}
        self.paths = NonResourcePaths(scheme, version_minor=version_minor)
        self.handlers = ResourceHandlers(registry, self.log, bookmark_interval=bookmark_interval)
        for rt in scheme.types:
            if rt.subresource("status") is not None:
                self.subresources[(rt.group, rt.plural, "status")] = self.handlers.status
            if rt.subresource("scale") is not None:
                self.subresources[(rt.group, rt.plural, "scale")] = self.handlers.scale
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self._handle)

    @property
    def metrics(self) -> CollectorRegistry:
        """``/metrics``: the server's own registry (the scheduler loop's metrics)."""
        return self.paths.metrics

    @property
    def server_address(self) -> str:
        """Where the server listens (``host:port``), as discovery's ``serverAddress``."""
        return self.paths.server_address

    @server_address.setter
    def server_address(self, address: str) -> None:
        self.paths.server_address = address

    # --- the chain --------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        """One request, in the order kube-apiserver's filters run:

        1. ``RequestInfo`` is derived from the path (``kubesim.endpoints.request``), giving the
           verb;
        2. authentication (``kubesim.plugins.authentication``: bad credentials are a 401),
           impersonation (``kubesim.endpoints.impersonation``, ``kubectl --as``) and
           authorization (``kubesim.plugins.authorization``: a denial is kube's 403); the user
           goes into the request log with the verdict, and the rest runs with the request's
           ``Attributes`` current, for admission;
        3. the request hooks run (``request_hooks``): fault injection and latency plug in here
           and may delay, answer with a Status, or drop the connection (``DropConnection``);
        4. dispatch (``_dispatch``);
        5. errors become ``Status`` bodies (``kubesim.endpoints.codec``); anything unexpected
           is a 500 InternalError Status, never a traceback; the request is appended to the
           request log, with the warnings and audit annotations validating admission added.
        """
        path = request.path
        if path.startswith("/_kubesim/") or path == "/_kubesim":
            return await self._control(request)
        info = parse_request_info(request.method, path, request.query)
        body = await request.read()
        record = RequestRecord(
            time=time.time(),
            verb=info.verb,
            method=request.method,
            path=path,
            query={k: request.query.getall(k) for k in request.query},
            namespace=info.namespace,
            name=info.name,
            resource=info.resource,
            subresource=info.subresource,
            group=info.group,
            version=info.version,
            raw_body=body,
            user_agent=request.headers.get("User-Agent", ""),
        )
        ctx = RequestContext(request, info, body, record)
        if info.is_resource:
            ctx.rt = self.scheme.lookup(info.group, info.version, info.resource)
        resp: web.StreamResponse | None = None
        notes = AdmissionNotes()
        try:
            attrs = self._authenticate_and_authorize(ctx)
            with with_attributes(attrs), collecting_admission_notes(notes):
                for hook in self.request_hooks:
                    resp = await hook(ctx)
                    if resp is not None:
                        break
                if resp is None:
                    resp = await self._dispatch(ctx)
        except StatusError as err:
            resp = status_response(err)
        except DropConnection:
            record.code = 0
            self.log.append(record)
            if request.transport is not None:
                request.transport.close()
            raise web.HTTPServiceUnavailable() from None  # never written: transport is gone
        except (ConnectionResetError, TimeoutError):
            raise
        except Exception as exc:  # never a traceback to the client
            log.exception("kubesim: %s %s failed", request.method, path)
            resp = status_response(internal_error(f"{type(exc).__name__}: {exc}"))
        # Headers set here, not in an on_response_prepare signal: one await less per request.
        fieldvalidation.add_warning_headers(request, resp, notes.warnings)
        record.audit_annotations.update(notes.audit_annotations)
        if not record.code:
            record.code = resp.status
            self.log.append(record)
        return resp

    def _authenticate_and_authorize(self, ctx: RequestContext) -> Attributes:
        """Filters 2a: who is asking (401 on bad credentials), as whom, and may they (403)."""
        record = ctx.record
        user = self.authenticator.authenticate(ctx.request) or ANONYMOUS
        record.user = user.name  # who asked, also when impersonating them is refused
        record.groups = user.groups
        if self.impersonator is not None:
            acting = self.impersonator(ctx, user)
            if acting is not user:
                record.impersonated_by = user.name
                user = acting
        ctx.user = user
        record.user = user.name
        record.groups = user.groups
        attrs = attributes_of(ctx.info, user, ctx.request.query)
        ctx.attributes = attrs
        decision, reason = self.authorize(attrs)
        record.authorization = "allow" if decision is Decision.ALLOW else "deny"
        record.authorization_reason = reason
        if decision is not Decision.ALLOW:
            raise forbidden_error(attrs, reason)
        return attrs

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        """The authorizer chain: ``system:masters`` first (privileged group), then the mode."""
        if MASTERS in attrs.user.groups:
            return Decision.ALLOW, ""
        return self.authorizer.authorize(attrs)

    async def _dispatch(self, ctx: RequestContext) -> web.StreamResponse:
        """Non-resource paths (``nonresource``), the REST verbs of stored kinds (``handlers``),
        a registered subresource (``subresources``: ``status``, ``scale``, and the
        create-only ``pods/eviction``, ``pods/binding``, ``serviceaccounts/token``), or a
        review kind (``virtual``: create-only, never stored). A write's body over
        ``MAX_REQUEST_BODY_BYTES`` (3 MiB, kube-apiserver's default ``MaxRequestBodyBytes``,
        ``limitedReadBody`` in its handlers) is a 413 RequestEntityTooLarge."""
        info = ctx.info
        if not info.is_resource:
            return self.paths.serve(ctx)
        rt = ctx.rt
        if rt is None:
            raise not_found_path()
        if info.verb in _WRITES and len(ctx.body) > MAX_REQUEST_BODY_BYTES:
            raise request_entity_too_large(MAX_REQUEST_BODY_BYTES)
        if info.subresource:
            handler = self.subresources.get((rt.group, rt.plural, info.subresource))
            if handler is None or not info.name:
                raise not_found_path()
            return await handler(ctx, rt)
        if rt.namespaced is False and info.namespace:
            raise not_found_path()
        verb = info.verb
        virtual = self.virtual.get((rt.group, rt.plural))
        if virtual is not None or self.scheme.is_virtual(rt):
            if verb != "create" or virtual is None or info.name:
                raise method_not_allowed()
            return await virtual(ctx, rt)
        if verb == "get":
            return self.handlers.get(ctx, rt)
        if verb == "list":
            return self.handlers.list(ctx, rt)
        if verb == "watch":
            return await self.handlers.watch(ctx, rt)
        if verb == "create":
            if info.name or (rt.namespaced and not info.namespace):
                raise method_not_allowed()
            return self.handlers.create(ctx, rt)
        if not info.name and verb in ("update", "patch"):
            raise method_not_allowed()
        if verb == "update":
            return self.handlers.update(ctx, rt, "")
        if verb == "patch":
            return self.handlers.patch(ctx, rt, "")
        if verb == "delete":
            return self.handlers.delete(ctx, rt)
        if verb == "deletecollection":
            return self.handlers.delete_collection(ctx, rt)
        raise method_not_allowed()

    # --- /_kubesim/ -------------------------------------------------------------------------

    async def _control(self, request: web.Request) -> web.StreamResponse:
        """``/_kubesim/`` control endpoints, kubesim's own. Once an authorizer other than
        AlwaysAllow is installed they answer only members of ``system:masters`` (the admin
        kubeconfig): fault injection and the request log are no business of a
        ServiceAccount."""
        name = request.path[len("/_kubesim/") :].strip("/") if request.path != "/_kubesim" else ""
        if not isinstance(self.authorizer, AlwaysAllow):
            try:
                user = self.authenticator.authenticate(request) or ANONYMOUS
            except StatusError as err:
                return status_response(err)
            if MASTERS not in user.groups:
                attrs = Attributes(
                    user, request.method.lower(), is_resource=False, path=request.path
                )
                return status_response(forbidden_error(attrs))
        if name in {"requests", "requests/reset"}:
            if request.method == "GET" and name == "requests":
                return json_response({"requests": self.log.to_list()})
            if request.method in ("DELETE", "POST"):
                self.log.clear()
                return json_response({"cleared": True})
        handler = self.control.get(name)
        if handler is not None:
            return await handler(request)
        if name == "":
            return json_response({"endpoints": sorted(["requests", *self.control])})
        return status_response(not_found_path())

"""The HTTP front: kube-apiserver's handler chain and REST endpoints on aiohttp.

Per request, in the order kube-apiserver's filters run:

1. ``RequestInfo`` is derived from the path exactly as ``RequestInfoFactory`` does
   (``/api/v1/namespaces/{ns}/{resource}/{name}/{subresource}``, ``/apis/{group}/{version}/...``,
   the deprecated ``/watch/`` prefix, ``?watch=1``, ``namespaces/{name}/status``), giving the
   verb (get, list, watch, create, update, patch, delete, deletecollection);
2. the request hooks run (``ApiServer.request_hooks``): phase-2 fault injection and latency plug
   in here and may delay, answer with a Status, or drop the connection (``DropConnection``);
2a. authentication, impersonation and authorization (``kubesim.auth``): the user goes into the
   request log with the verdict; bad credentials are a 401, a denial kube's 403; the handler
   then runs with the request's ``Attributes`` current, for admission;
3. the endpoint runs: discovery, the generic REST verbs (``kubesim.registry.generic``), watch
   (``kubesim.apiserver.watch``), or a registered subresource handler (``ApiServer.subresources``,
   where ``pods/eviction`` is plugged in by phase 2);
4. errors become ``Status`` bodies (``kubesim.core.errors``) with ``Retry-After`` when
   ``retryAfterSeconds > 0``; anything unexpected is a 500 InternalError Status, never a
   traceback;
5. the request is appended to the request log.

Responses are always JSON: clients that offer protobuf (``application/vnd.kubernetes.protobuf,
application/json``) decode by the response's Content-Type and fall back to JSON, as client-go
does. Request bodies may be JSON or YAML, and protobuf for the kinds kubectl's typed client
sends that way (``kubesim.apiserver.protobuf``). A DELETE reads its options from the body when
there is one (JSON, YAML or protobuf ``DeleteOptions``) and from the query only otherwise, as
``handlers.DeleteResource`` does. ``/scale`` subresources serve an ``autoscaling/v1`` Scale
(``kubesim.registry.scale``). The review kinds (``SelfSubjectAccessReview``, ``TokenReview``,
...) are create-only and never stored: ``ApiServer.virtual`` answers them.

``/_kubesim/`` control endpoints are kubesim's own; once an authorizer other than AlwaysAllow
is installed they answer only members of ``system:masters`` (the admin kubeconfig), since
fault injection and the request log are no business of a ServiceAccount.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import yaml
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kube.labels import (
    FieldRequirement,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from kube.strict import decode_json
from kubesim.apiserver import discovery, fieldvalidation, openapi, protobuf
from kubesim.apiserver.requestlog import RequestLog, RequestRecord
from kubesim.apiserver.watch import DEFAULT_TIMEOUT, WatchRequest, watch_stream
from kubesim.auth import AlwaysAllow, Authenticator, Authorizer, Decision, forbidden_error
from kubesim.core.attributes import ANONYMOUS, MASTERS, Attributes, UserInfo, with_attributes
from kubesim.core.errors import (
    StatusError,
    bad_request,
    expired,
    internal_error,
    not_found_path,
    too_large_resource_version,
    unsupported_media_type,
)
from kubesim.core.names import path_segment_name_errors
from kubesim.core.patch import (
    APPLY_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
)
from kubesim.core.scheme import ResourceType, Scheme
from kubesim.core.store import CONTINUE_TOO_OLD, TooOld, dumps
from kubesim.core.tables import TABLE_MEDIA, table_for_list, table_row_object, wants_table
from kubesim.registry import scale
from kubesim.registry.admission import AdmissionNotes, collecting_admission_notes
from kubesim.registry.generic import DeleteOptions, GenericStore, check_dry_run

__all__ = [
    "ApiServer",
    "DropConnection",
    "RequestContext",
    "RequestInfo",
    "parse_request_info",
]

log = logging.getLogger("kubesim")

JSON: Final = "application/json"
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})
TOO_LARGE_WAIT: Final = 3.0  # the cacher's blockTimeout


class DropConnection(Exception):
    """Raised by a request hook: close the connection without any answer."""


@dataclass(slots=True)
class RequestInfo:
    """``request.RequestInfo``."""

    is_resource: bool
    verb: str
    path: str
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    deprecated_watch_path: bool = False
    method: str = "GET"

    def verb_for_path(self) -> str:
        """A non-resource request's verb is the lower-cased HTTP method (GET → get)."""
        return "get" if self.method == "HEAD" else self.method.lower()


def parse_request_info(method: str, path: str, query: Any) -> RequestInfo:
    parts = [p for p in path.strip("/").split("/") if p != ""]
    verb_for_method = {
        "GET": "get",
        "HEAD": "get",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(method, method.lower())
    info = RequestInfo(False, verb_for_method, path, method=method)
    if not parts or parts[0] not in ("api", "apis"):
        return info
    info.api_prefix = parts[0]
    rest = parts[1:]
    if info.api_prefix == "apis":
        if len(rest) < 2:
            return info
        info.group, info.version, rest = rest[0], rest[1], rest[2:]
    else:
        if len(rest) < 1:
            return info
        info.version, rest = rest[0], rest[1:]
    if not rest:
        return info
    info.is_resource = True
    if rest[0] == "watch":
        info.deprecated_watch_path = True
        rest = rest[1:]
        info.verb = "watch"
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            info.resource = "namespaces"
            info.name = rest[1]
            info.namespace = ""
            if len(rest) > 2:
                info.subresource = rest[2]
            if info.deprecated_watch_path:
                info.namespace = ""
            return _finish_verb(info, method, query)
    if rest:
        info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.is_resource = False
    return _finish_verb(info, method, query)


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true")


def _finish_verb(info: RequestInfo, method: str, query: Any) -> RequestInfo:
    if info.verb == "watch":
        return info
    if method in ("GET", "HEAD") and not info.name:
        info.verb = "watch" if _truthy(query.get("watch")) else "list"
    elif method in ("GET", "HEAD") and _truthy(query.get("watch")):
        info.verb = "watch"
    elif method == "DELETE" and not info.name:
        info.verb = "deletecollection"
    return info


@dataclass(slots=True)
class RequestContext:
    """What a hook or handler gets: the request, its parsed info, body, and log record."""

    request: web.Request
    info: RequestInfo
    body: bytes
    record: RequestRecord
    rt: ResourceType | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    user: UserInfo = ANONYMOUS
    attributes: Attributes | None = None

    @property
    def query(self) -> Any:
        return self.request.query


RequestHook = Callable[[RequestContext], Awaitable[web.StreamResponse | None]]
SubresourceHandler = Callable[[RequestContext, ResourceType], Awaitable[web.StreamResponse]]
# Impersonation: (request, authenticated user) -> the user to act as; raises StatusError (403).
Impersonator = Callable[[RequestContext, UserInfo], UserInfo]


class Anonymous:
    """No authenticator configured: every request is ``system:anonymous``."""

    def authenticate(self, request: web.Request) -> UserInfo | None:
        return None


def _field_selector_name(query: Any) -> str:
    """``RequestInfoFactory``: a list or watch of ``fieldSelector=metadata.name=x`` names x, so
    a rule with ``resourceNames: [x]`` allows it."""
    raw = query.get("fieldSelector") if query is not None else None
    if not raw:
        return ""
    for term in str(raw).split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and not key.endswith("!") and key.strip() == "metadata.name":
                value = value.strip()
                return value if value and not path_segment_name_errors(value) else ""
    return ""


def attributes_of(info: RequestInfo, user: UserInfo, query: Any = None) -> Attributes:
    """``GetAuthorizerAttributes``: the request as the authorizer sees it."""
    name = info.name
    if not name and info.is_resource and info.verb in ("list", "watch"):
        name = _field_selector_name(query)
    return Attributes(
        user=user,
        verb=info.verb if info.is_resource else info.verb_for_path(),
        is_resource=info.is_resource,
        namespace=info.namespace,
        resource=info.resource,
        subresource=info.subresource,
        name=name,
        api_group=info.group,
        api_version=info.version,
        path=info.path,
    )


def json_response(body: Any, status: int = 200, *, content_type: str = JSON) -> web.Response:
    data = body if isinstance(body, bytes) else dumps(body)
    return web.Response(body=data, status=status, headers={"Content-Type": content_type})


def status_response(err: StatusError) -> web.Response:
    resp = json_response(err.to_dict(), err.code)
    for k, v in err.response_headers().items():
        resp.headers[k] = v
    return resp


def _summary(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    return text if len(text) <= 30 else text[:30] + " ..."


def decode_body(ctx: RequestContext, rt: ResourceType) -> Any:
    """A create/update body as a dict: JSON or YAML, errors as kube's 400/415."""
    ctype = (ctx.request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
    body = ctx.body
    if ctype == PROTOBUF:
        try:
            return protobuf.decode_object(body)
        except (protobuf.ProtobufError, UnicodeDecodeError, KeyError) as exc:
            raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF]) from exc
    if ctype not in (JSON, "application/yaml", "text/yaml", "*/*", ""):
        raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF])
    duplicates: dict[int, Any] = {}
    try:
        if ctype in ("application/yaml", "text/yaml"):
            data = yaml.safe_load(body.decode("utf-8"))
        else:
            data, duplicates = decode_json(body)
    except yaml.YAMLError as exc:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): error converting"
            f" YAML to JSON: yaml: {exc} ({_summary(body)})"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        detail = "unexpected end of JSON input" if not body.strip() else str(exc)
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get"
            f" version/kind; json parse error: {detail} ({_summary(body)})"
        ) from None
    if not isinstance(data, dict):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get"
            f" version/kind; json parse error: json: cannot unmarshal"
            f" {type(data).__name__} into Go value of type struct ({_summary(body)})"
        )
    options = "CreateOptions" if ctx.request.method == "POST" else "UpdateOptions"
    fieldvalidation.check_body(ctx.request, rt, data, duplicates=duplicates, options_kind=options)
    return data


def _record_body(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        try:
            return yaml.safe_load(body.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            return body.decode("utf-8", errors="replace")


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    start = f"{key[0]}/{key[1]}" if key[0] else key[1]
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode()


def _decode_continue(token: str, namespaced: bool) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        rv = int(data["rv"])
        start = str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise bad_request(f"invalid continue token: continue key is not valid: {exc}") from None
    if rv <= 0:
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded"
            " start resourceVersion (version meta.k8s.io/v1)"
        )
    if "/" in start:
        ns, _, name = start.partition("/")
        return rv, (ns, name)
    return rv, ("", start)


def _parse_int(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


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
        self.bookmark_interval = bookmark_interval
        self.server_address = "127.0.0.1:0"
        self.request_hooks: list[RequestHook] = []
        self.authenticator: Authenticator = Anonymous()
        self.authorizer: Authorizer = AlwaysAllow()
        self.impersonator: Impersonator | None = None
        # create-only kinds answered without storing: (group, plural) -> handler
        self.virtual: dict[tuple[str, str], SubresourceHandler] = {}
        self.subresources: dict[tuple[str, str, str], SubresourceHandler] = {}
        # /_kubesim/<name> control endpoints: name -> handler(request) -> response
        self.control: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {}
        # /metrics: the simulator's own registry (the scheduler loop's metrics), not the global.
        self.metrics = CollectorRegistry(auto_describe=False)
        for rt in scheme.types:
            if rt.subresource("status") is not None:
                self.subresources[(rt.group, rt.plural, "status")] = self._status_subresource
            if rt.subresource("scale") is not None:
                self.subresources[(rt.group, rt.plural, "scale")] = self._scale_subresource
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self._handle)
        self.app.on_response_prepare.append(fieldvalidation.add_warning_headers)

    # --- the chain --------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
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
            body=_record_body(body),
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
        fieldvalidation.add_warnings(request, notes.warnings)
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
        info = ctx.info
        if not info.is_resource:
            return self._non_resource(ctx)
        rt = ctx.rt
        if rt is None:
            raise not_found_path()
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
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return await virtual(ctx, rt)
        if verb == "get":
            return self._get(ctx, rt)
        if verb == "list":
            return self._list(ctx, rt)
        if verb == "watch":
            return await self._watch(ctx, rt)
        if verb == "create":
            if info.name or (rt.namespaced and not info.namespace):
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return self._create(ctx, rt)
        if not info.name and verb in ("update", "patch"):
            raise StatusError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if verb == "update":
            return self._update(ctx, rt, "")
        if verb == "patch":
            return self._patch(ctx, rt, "")
        if verb == "delete":
            return self._delete(ctx, rt)
        if verb == "deletecollection":
            return self._delete_collection(ctx, rt)
        raise StatusError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    # --- non-resource paths -----------------------------------------------------------------

    def _non_resource(self, ctx: RequestContext) -> web.StreamResponse:
        path = ctx.info.path.rstrip("/") or "/"
        accept = ctx.request.headers.get("Accept", "")
        if ctx.request.method not in ("GET", "HEAD"):
            raise StatusError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if path == "/version":
            return json_response(discovery.version_info(self.version_minor))
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/metrics":
            return web.Response(
                body=generate_latest(self.metrics), headers={"Content-Type": CONTENT_TYPE_LATEST}
            )
        if path == "/api":
            agg = discovery.wants_aggregated(accept)
            if agg:
                return json_response(
                    discovery.aggregated(self.scheme, legacy=True, media_type=agg),
                    content_type=agg,
                )
            return json_response(discovery.api_versions(self.server_address))
        if path == "/apis":
            agg = discovery.wants_aggregated(accept)
            if agg:
                return json_response(
                    discovery.aggregated(self.scheme, legacy=False, media_type=agg),
                    content_type=agg,
                )
            return json_response(discovery.api_group_list(self.scheme))
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            doc = discovery.api_resource_list(self.scheme, "", parts[1])
            if doc is not None:
                return json_response(doc)
        if parts[0] == "apis" and len(parts) == 2:
            group_doc = discovery.api_group(self.scheme, parts[1])
            if group_doc is not None:
                return json_response(group_doc)
        if parts[0] == "apis" and len(parts) == 3:
            doc = discovery.api_resource_list(self.scheme, parts[1], parts[2])
            if doc is not None:
                return json_response(doc)
        if path == "/openapi/v2":
            if "protobuf" not in accept:
                raise not_found_path()
            return web.Response(
                body=openapi.openapi_v2_protobuf(),
                headers={"Content-Type": "application/octet-stream"},
            )
        if path == "/openapi/v3":
            return json_response(openapi.openapi_v3_discovery(self.scheme))
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/") :].split("/")
            if rest[0] == "api" and len(rest) == 2 and rest[1] == "v1":
                return json_response(openapi.openapi_v3_group_version(self.scheme, "", "v1"))
            if (
                rest[0] == "apis"
                and len(rest) == 3
                and self.scheme.in_group_version(rest[1], rest[2])
            ):
                return json_response(
                    openapi.openapi_v3_group_version(self.scheme, rest[1], rest[2])
                )
        if path == "/":
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            paths.append("/metrics")
            for g, vs in self.scheme.groups():
                paths.append(f"/apis/{g}")
                paths.extend(f"/apis/{g}/{v}" for v in vs)
            return json_response({"paths": sorted(paths)})
        raise not_found_path()

    # --- reads ------------------------------------------------------------------------------

    def _get(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        info = ctx.info
        obj = self.registry.get(rt, info.namespace, info.name)
        wire = self.registry.to_wire(rt, obj)
        accept = ctx.request.headers.get("Accept", "")
        if wants_table(accept):
            table = table_for_list(
                rt, [wire], resource_version="", include_object=ctx.query.get("includeObject")
            )
            return json_response(table, content_type=TABLE_MEDIA)
        if rt.group != "events.k8s.io":
            return json_response(self.registry.store.raw(rt.storage_name, _key(rt, info)))
        return json_response(wire)

    def _selectors(
        self, ctx: RequestContext, rt: ResourceType
    ) -> tuple[LabelSelector | None, tuple[FieldRequirement, ...]]:
        q = ctx.query
        labels = None
        if q.get("labelSelector"):
            try:
                labels = parse_label_selector(q["labelSelector"])
            except SelectorError as exc:
                raise bad_request(str(exc)) from None
        fields: tuple[FieldRequirement, ...] = ()
        if q.get("fieldSelector"):
            try:
                fields = parse_field_selector(q["fieldSelector"])
            except SelectorError as exc:
                raise bad_request(str(exc)) from None
            self.registry.check_field_selector(rt, fields)
        return labels, fields

    def _list(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        q = ctx.query
        labels, fields = self._selectors(ctx, rt)
        limit = _parse_int(q, "limit") or 0
        token = q.get("continue") or ""
        rv_param = q.get("resourceVersion") or ""
        rv_match = q.get("resourceVersionMatch") or ""
        store = self.registry.store
        namespace = ctx.info.namespace if rt.namespaced and ctx.info.namespace else None
        after: tuple[str, str] | None = None
        if rv_match and rv_match not in ("Exact", "NotOlderThan"):
            raise bad_request(f"invalid resourceVersionMatch: {rv_match}")
        if token:
            if rv_param:
                raise bad_request("specifying resource version is not allowed when using continue")
            list_rv, after = _decode_continue(token, rt.namespaced)
        elif rv_param and rv_param != "0":
            if not rv_param.isdigit():
                raise bad_request(f"invalid resource version: {rv_param}")
            want = int(rv_param)
            if want > store.resource_version:
                raise too_large_resource_version(want, store.resource_version)
            list_rv = want if rv_match == "Exact" else store.resource_version
        else:
            if rv_match == "Exact":
                raise bad_request(
                    'resourceVersionMatch "Exact" is forbidden for resourceVersion "0"'
                )
            list_rv = store.resource_version
        try:
            if list_rv == store.resource_version:
                keys = store.keys(rt.storage_name, namespace)
                start = bisect.bisect_right(keys, after) if after is not None else 0
                objects = store.objects(rt.storage_name)
                entries: Iterable[tuple[tuple[str, str], dict[str, Any] | None]] = (
                    (k, objects.get(k)) for k in itertools.islice(keys, start, None)
                )
                total_after = len(keys) - start
            else:
                snap = store.snapshot(rt.storage_name, list_rv, namespace)
                if after is not None:
                    snap = [(k, o) for k, o in snap if k > after]
                entries = snap
                total_after = len(snap)
        except TooOld as exc:
            if token:
                raise expired(CONTINUE_TOO_OLD) from None
            raise expired(str(exc)) from None
        direct = list_rv == store.resource_version and rt.group != "events.k8s.io"
        selected: list[tuple[tuple[str, str], dict[str, Any]]] = []
        scanned = 0
        next_token = ""
        for key, obj in entries:
            if limit and len(selected) >= limit:
                # etcd had more keys: the list continues (kube does not check they match).
                next_token = _encode_continue(list_rv, selected[-1][0])
                break
            scanned += 1
            if obj is None or not self.registry.matches(rt, obj, labels, fields):
                continue
            selected.append((key, obj))
        remaining = total_after - scanned
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if next_token:
            meta["continue"] = next_token
            if labels is None and not fields:
                meta["remainingItemCount"] = remaining
        accept = ctx.request.headers.get("Accept", "")
        if wants_table(accept):
            wires = [self.registry.to_wire(rt, o) for _, o in selected]
            table = table_for_list(
                rt,
                wires,
                resource_version=str(list_rv),
                include_object=q.get("includeObject"),
                meta=meta,
            )
            return json_response(table, content_type=TABLE_MEDIA)
        head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        if direct:
            items = b",".join(store.raw(rt.storage_name, k) for k, _ in selected)
        else:
            items = b",".join(dumps(self.registry.to_wire(rt, o)) for _, o in selected)
        return json_response(head[:-1] + b',"items":[' + items + b"]}")

    async def _watch(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        q = ctx.query
        labels, fields = self._selectors(ctx, rt)
        rv_param = q.get("resourceVersion")
        store = self.registry.store
        if rv_param not in (None, "", "0"):
            if not rv_param.isdigit():
                raise bad_request(f"invalid resource version: {rv_param}")
            want = int(rv_param)
            if want > store.resource_version and not await store.wait_for_rv(want, TOO_LARGE_WAIT):
                raise too_large_resource_version(want, store.resource_version)
        timeout = _parse_int(q, "timeoutSeconds")
        send_initial = _truthy(q.get("sendInitialEvents"))
        if send_initial and q.get("resourceVersionMatch") != "NotOlderThan":
            raise StatusError(
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden:'
                " sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                group="meta.k8s.io",
                kind="ListOptions",
            )
        accept = ctx.request.headers.get("Accept", "")
        table = wants_table(accept)
        include_object = q.get("includeObject")
        encode = None
        if table:

            def encode(event_type: str, obj: dict[str, Any]) -> bytes:
                if event_type in ("BOOKMARK", "ERROR"):
                    return dumps(obj)
                return dumps(table_row_object(rt, obj, include_object=include_object))

        req = WatchRequest(
            rt=rt,
            namespace=ctx.info.namespace if rt.namespaced and ctx.info.namespace else None,
            name=ctx.info.name or None,
            labels=labels,
            fields=fields,
            resource_version=rv_param,
            timeout=float(timeout) if timeout and timeout > 0 else DEFAULT_TIMEOUT,
            allow_bookmarks=_truthy(q.get("allowWatchBookmarks")),
            send_initial_events=send_initial,
            bookmark_interval=self.bookmark_interval,
            encode=encode,
        )
        stream = watch_stream(self.registry, req)
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = TABLE_MEDIA if table else JSON
        resp.headers["Transfer-Encoding"] = "chunked"
        await resp.prepare(ctx.request)
        ctx.record.code = 200
        self.log.append(ctx.record)
        try:
            async for line in stream:
                await resp.write(line)
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            await stream.aclose()
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await resp.write_eof()
        return resp

    # --- writes -----------------------------------------------------------------------------

    def _dry_run(self, ctx: RequestContext, kind: str) -> bool:
        return check_dry_run(ctx.query.getall("dryRun", []), kind=kind)

    def _create(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        dry = self._dry_run(ctx, "CreateOptions")
        body = decode_body(ctx, rt)
        obj = self.registry.create(rt, ctx.info.namespace, body, dry_run=dry)
        return json_response(obj, 201)

    def _update(self, ctx: RequestContext, rt: ResourceType, sub: str) -> web.StreamResponse:
        dry = self._dry_run(ctx, "UpdateOptions")
        body = decode_body(ctx, rt)
        obj, created = self.registry.update(
            rt, ctx.info.namespace, ctx.info.name, body, subresource=sub, dry_run=dry
        )
        return json_response(obj, 201 if created else 200)

    def _patch(self, ctx: RequestContext, rt: ResourceType, sub: str) -> web.StreamResponse:
        dry = self._dry_run(ctx, "PatchOptions")
        ctype = (ctx.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in PATCH_TYPES:
            raise unsupported_media_type(ctype, [*PATCH_TYPES, APPLY_PATCH][:3])
        if ctype in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            with contextlib.suppress(ValueError, UnicodeDecodeError):  # registry.patch reports it
                patch, dups = decode_json(ctx.body)
                fieldvalidation.check_body(
                    ctx.request, rt, patch, duplicates=dups, options_kind="PatchOptions", patch=True
                )
        obj = self.registry.patch(
            rt, ctx.info.namespace, ctx.info.name, ctx.body, ctype, subresource=sub, dry_run=dry
        )
        return json_response(obj)

    def _delete_options(self, ctx: RequestContext) -> DeleteOptions:
        """A body's DeleteOptions (JSON, YAML or protobuf) win; else the query's."""
        if not ctx.body:
            return DeleteOptions.from_body_and_query(
                None, ctx.query, ctx.query.getall("dryRun", [])
            )
        ctype = (ctx.request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
        parsed: Any
        if ctype == PROTOBUF:
            try:
                parsed = protobuf.decode_object(ctx.body)
            except (protobuf.ProtobufError, UnicodeDecodeError) as exc:
                raise bad_request(
                    f"the object provided is unrecognized (must be of type DeleteOptions): {exc}"
                ) from None
            if parsed.get("kind") != "DeleteOptions":
                # a plain Go error in the handler: ErrorToAPIStatus makes it a reasonless 500
                raise StatusError(
                    500,
                    "",
                    "decoded object cannot be converted to DeleteOptions",
                    has_details=False,
                )
        elif ctype not in (JSON, "application/yaml", "text/yaml", "*/*", ""):
            raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF])
        else:
            try:
                if ctype in ("application/yaml", "text/yaml"):
                    parsed = yaml.safe_load(ctx.body.decode("utf-8"))
                else:
                    parsed = json.loads(ctx.body)
            except (ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:
                raise bad_request(
                    "the object provided is unrecognized (must be of type DeleteOptions):"
                    f" couldn't get version/kind; json parse error: {exc}"
                    f" ({_summary(ctx.body)})"
                ) from None
            if not isinstance(parsed, dict):
                raise bad_request(
                    "the object provided is unrecognized (must be of type DeleteOptions)"
                )
        return DeleteOptions.from_body_and_query(parsed, ctx.query)

    def _delete(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        opts = self._delete_options(ctx)
        result = self.registry.delete(rt, ctx.info.namespace, ctx.info.name, opts)
        return json_response(result)

    def _delete_collection(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        if "deletecollection" not in rt.verbs:
            raise StatusError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        opts = self._delete_options(ctx)
        labels, fields = self._selectors(ctx, rt)
        namespace = ctx.info.namespace if rt.namespaced and ctx.info.namespace else None
        victims = self.registry.list_matching(rt, namespace, labels=labels, fields=fields)
        deleted = []
        for obj in victims:
            meta = obj.get("metadata") or {}
            try:
                self.registry.delete(rt, meta.get("namespace", ""), meta.get("name", ""), opts)
            except StatusError as err:
                if err.code != 404:
                    raise
            deleted.append(self.registry.to_wire(rt, obj))
        return json_response(
            {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.registry.store.resource_version)},
                "items": deleted,
            }
        )

    async def _status_subresource(
        self, ctx: RequestContext, rt: ResourceType
    ) -> web.StreamResponse:
        verb = ctx.info.verb
        if verb == "get":
            obj = self.registry.get(rt, ctx.info.namespace, ctx.info.name)
            return json_response(self.registry.to_wire(rt, obj))
        if verb == "update":
            return self._update(ctx, rt, "status")
        if verb == "patch":
            return self._patch(ctx, rt, "status")
        raise StatusError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    async def _scale_subresource(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        """``/scale`` (``kubesim.registry.scale``): GET, PUT and PATCH of a Scale."""
        info = ctx.info
        verb = info.verb
        if verb not in ("get", "update", "patch"):
            raise StatusError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        current = self.registry.get(rt, info.namespace, info.name)
        if verb == "get":
            return json_response(scale.to_scale(rt, current))
        dry = self._dry_run(ctx, "UpdateOptions" if verb == "update" else "PatchOptions")
        if verb == "update":
            body = decode_body(ctx, rt)
        else:
            ctype = (ctx.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype not in PATCH_TYPES:
                raise unsupported_media_type(ctype, [*PATCH_TYPES, APPLY_PATCH][:3])
            body = apply_patch(scale.to_scale(rt, current), ctx.body, ctype, kind="Scale")
        wire = scale.apply_scale(rt, self.registry.to_wire(rt, current), body, name=info.name)
        updated, _ = self.registry.update(rt, info.namespace, info.name, wire, dry_run=dry)
        return json_response(scale.to_scale(rt, updated))

    # --- /_kubesim/ -------------------------------------------------------------------------

    async def _control(self, request: web.Request) -> web.StreamResponse:
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


def _key(rt: ResourceType, info: RequestInfo) -> tuple[str, str]:
    return (info.namespace if rt.namespaced else "", info.name)

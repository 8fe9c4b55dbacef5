"""What a request is: its ``RequestInfo``, its context through the filters, its attributes.

``parse_request_info`` derives the request's info from the path exactly as kube's
``RequestInfoFactory`` does, so the authorizer and the request log see the verb and resource
kube-apiserver would. ``RequestContext`` carries the request through the filter chain
(``kubesim.endpoints.server``) to its handler; ``attributes_of`` is
``GetAuthorizerAttributes``: the request as the authorizer sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from kubesim.core.attributes import ANONYMOUS, Attributes, UserInfo
from kubesim.core.names import path_segment_name_errors
from kubesim.core.scheme import ResourceType
from kubesim.endpoints.requestlog import RequestRecord

__all__ = ["RequestContext", "RequestInfo", "attributes_of", "parse_request_info", "truthy"]

NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})


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
    """``RequestInfoFactory.NewRequestInfo``: ``/api/v1/namespaces/{ns}/{resource}/{name}/
    {subresource}``, ``/apis/{group}/{version}/...``, the deprecated ``/watch/`` prefix,
    ``?watch=1``, ``namespaces/{name}/status``; the verb is one of get, list, watch, create,
    update, patch, delete, deletecollection."""
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


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true")


def _finish_verb(info: RequestInfo, method: str, query: Any) -> RequestInfo:
    if info.verb == "watch":
        return info
    if method in ("GET", "HEAD") and not info.name:
        info.verb = "watch" if truthy(query.get("watch")) else "list"
    elif method in ("GET", "HEAD") and truthy(query.get("watch")):
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

"""Paths that name no resource: discovery, OpenAPI, version, health and metrics.

``/api``, ``/apis`` and ``/apis/{group}`` (legacy and aggregated discovery,
``kubesim.endpoints.discovery``), ``/api/v1`` and ``/apis/{group}/{version}`` resource lists,
``/openapi/v2`` (protobuf only, as kubectl asks) and ``/openapi/v3`` (``openapi``),
``/version``, ``/healthz``/``/livez``/``/readyz`` and ``/metrics`` (the server's own Prometheus
registry, where the scheduler loop's metrics are), and ``/`` listing them; only GET and HEAD.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kubesim.core.errors import method_not_allowed, not_found_path
from kubesim.core.scheme import Scheme
from kubesim.endpoints import discovery, openapi
from kubesim.endpoints.codec import json_response
from kubesim.endpoints.request import RequestContext

__all__ = ["NonResourcePaths"]


class NonResourcePaths:
    """The non-resource paths of one server; ``server_address`` is where it listens."""

    def __init__(self, scheme: Scheme, *, version_minor: str) -> None:
        self.scheme = scheme
        self.version_minor = version_minor
        self.server_address = "127.0.0.1:0"
        # /metrics: the server's own registry (the scheduler loop's metrics), not the global.
        self.metrics = CollectorRegistry(auto_describe=False)

    def serve(self, ctx: RequestContext) -> web.StreamResponse:
        path = ctx.info.path.rstrip("/") or "/"
        accept = ctx.request.headers.get("Accept", "")
        if ctx.request.method not in ("GET", "HEAD"):
            raise method_not_allowed()
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

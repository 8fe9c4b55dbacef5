"""API discovery documents: ``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}/{v}``, ``/version``.

Two forms exist and kubectl asks for the newer first: aggregated discovery (``aggregated``)
and legacy discovery (``api_versions``, ``api_group_list``, ``api_resource_list``).
"""

from __future__ import annotations

from typing import Any, Final

from kubesim.core.scheme import ResourceType, Scheme

__all__ = [
    "AGGREGATED_V2",
    "AGGREGATED_V2BETA1",
    "aggregated",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "version_info",
    "wants_aggregated",
]

AGGREGATED_V2: Final = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1: Final = (
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)


def version_info(minor: str = "32") -> dict[str, str]:
    return {
        "major": "1",
        "minor": minor,
        "gitVersion": f"v1.{minor}.0-kubesim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(scheme: Scheme) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, vs) for g, vs in scheme.groups()],
    }


def api_group(scheme: Scheme, group: str) -> dict[str, Any] | None:
    for g, vs in scheme.groups():
        if g == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(g, vs)}
    return None


def _resource_entry(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    return entry


def api_resource_list(scheme: Scheme, group: str, version: str) -> dict[str, Any] | None:
    """Legacy discovery's ``APIResourceList`` of one group/version (None: none served).

    As ``APIVersions`` at ``/api`` and ``APIGroupList`` at ``/apis``: subresources appear as
    ``pods/status`` entries (``pods/eviction`` in group ``policy`` version ``v1``, which is how
    kubectl drain and ``evict`` detect eviction support).
    """
    types = scheme.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rt in sorted(types, key=lambda t: t.plural):
        resources.append(_resource_entry(rt))
        for sub in rt.subresources:
            entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub.name}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": sub.kind,
                "verbs": list(sub.verbs),
            }
            if sub.group:
                entry["group"] = sub.group
                entry["version"] = sub.version
            resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def wants_aggregated(accept: str) -> str | None:
    """The aggregated media type the client accepts first, or None for legacy discovery."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=APIGroupDiscoveryList" in p and "g=apidiscovery.k8s.io" in p:
            if "v=v2beta1" in p:
                return AGGREGATED_V2BETA1
            if "v=v2" in p:
                return AGGREGATED_V2
        if p.startswith("application/json") and "as=" not in p:
            return None
    return None


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    res: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        res["shortNames"] = list(rt.short_names)
    if rt.categories:
        res["categories"] = list(rt.categories)
    if rt.subresources:
        res["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": {
                    "group": sub.group or rt.group,
                    "version": sub.version or rt.version,
                    "kind": sub.kind,
                },
                "verbs": list(sub.verbs),
            }
            for sub in rt.subresources
        ]
    return res


def aggregated(scheme: Scheme, *, legacy: bool, media_type: str) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (legacy=True) or ``/apis``.

    Aggregated discovery (``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=
    APIGroupDiscoveryList``, ``v2beta1`` for kubectl 1.26–1.29): one ``APIGroupDiscoveryList`` per
    root listing every group, version, resource (scope, verbs, short names, categories, response
    kind) and subresource; the response's Content-Type names the form served.
    """
    version = "v2beta1" if "v=v2beta1" in media_type else "v2"
    groups: list[tuple[str, list[str]]] = [("", ["v1"])] if legacy else scheme.groups()
    items = []
    for group, versions in groups:
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": v,
                        "resources": [
                            _aggregated_resource(rt)
                            for rt in sorted(
                                scheme.in_group_version(group, v), key=lambda t: t.plural
                            )
                        ],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }

"""kubesim's endpoints layer: the HTTP side of the API server, on aiohttp.

As kube-apiserver's ``k8s.io/apiserver/pkg/endpoints``: ``server`` is the filter chain
(authentication, impersonation, authorization, the request hooks) and the dispatch, the other
modules what a request is, its bodies, the REST verbs and watches, discovery and the
create-only storage behind HTTP (ARCHITECTURE.md lists them). Everything below it (the
plugins, the registry, the core) knows no HTTP.
"""

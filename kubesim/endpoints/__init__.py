"""kubesim's endpoints layer: the HTTP side of the API server, on aiohttp.

As kube-apiserver's ``k8s.io/apiserver/pkg/endpoints``: ``server`` is the filter chain
(authentication, impersonation, authorization, the request hooks) and the dispatch;
``request`` what a request is (``RequestInfo``, its context, its authorizer attributes);
``codec`` decoding bodies and writing responses (``protobuf``, ``fieldvalidation``);
``handlers`` the REST verbs of stored kinds, ``watch`` their streams; ``nonresource``
discovery (``discovery``, ``openapi``), version, health and metrics; ``subresources`` the
create-only storage of the plugins behind HTTP; ``impersonation`` the ``kubectl --as``
filter; ``requestlog`` what every request got. Everything below it — the plugins, the
registry, the core — knows no HTTP.
"""

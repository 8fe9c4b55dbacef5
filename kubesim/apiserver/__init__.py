"""The API server: HTTP serving, discovery, watch, codecs and the subresource handlers.

Laid out as kube-apiserver keeps these parts: ``server`` (routing, request context, request
log), ``watch`` (the cacher's streams), ``discovery``/``openapi``, ``protobuf`` (codecs),
``eviction``/``binding`` (the pod subresources). The store, the scheme, the patch formats and
tables are ``kubesim.core``'s; the generic store and the kinds' validation
``kubesim.registry``'s.
"""

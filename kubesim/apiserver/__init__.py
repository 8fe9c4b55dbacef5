"""The API server: HTTP serving, REST verbs, the store and its watch, discovery, validation,
admission, codecs (JSON, YAML, protobuf, tables) and the eviction subresource.

Laid out as kube-apiserver keeps these parts: ``server`` (routing, request context, request
log), ``rest`` (the generic registry: create/get/list/update/patch/delete), ``store``/``watch``
(etcd and the watch cache), ``discovery``/``openapi``, ``validation``/``admission``,
``patch``/``protobuf``/``tables`` (codecs), ``eviction`` (``EvictionREST``).
"""

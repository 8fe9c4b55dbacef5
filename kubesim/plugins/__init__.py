"""kubesim's plugins layer: what kube-apiserver plugs around its storage, without HTTP.

Authentication (``authentication``: the credentials of a request become a user), authorization
(``authorization``: the authorizer interface, RBAC, the access reviews), admission
(``admission``: the plugins, installed in kube's order) and the pod subresources that are
storage rather than stored objects (``eviction``, ``binding``: kube's
``pkg/registry/core/pod/storage``). Everything here answers decoded bodies and raises
``metav1.Status`` errors; the endpoints above decode requests and write responses.
"""

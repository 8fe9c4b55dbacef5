"""The bootstrap RBAC policy kube-apiserver's ``rbac/bootstrap-roles`` post-start hook writes.

Transcribed as data from upstream ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``
(``policy.go`` and its ``testdata/cluster-roles.yaml`` / ``cluster-role-bindings.yaml``): the
roles a client relies on, with their ClusterRoleBindings, labels (``kubernetes.io/bootstrapping:
rbac-defaults``) and the ``autoupdate`` annotation. The rules name resources kubesim does not
serve (ingresses, cronjobs...): they are kube's words, kept.
"""

from __future__ import annotations

from typing import Any, Final

import yaml

from kubesim.plugins.authorization.aggregation import aggregate_all
from kubesim.registry.generic import GenericStore

__all__ = ["BOOTSTRAP_CLUSTER_ROLES", "BOOTSTRAP_CLUSTER_ROLE_BINDINGS", "seed"]

_META: Final = """
    annotations: {rbac.authorization.kubernetes.io/autoupdate: "true"}
    labels: {kubernetes.io/bootstrapping: rbac-defaults%s}
"""
_TO_ADMIN: Final = ', rbac.authorization.k8s.io/aggregate-to-admin: "true"'
_TO_EDIT: Final = ', rbac.authorization.k8s.io/aggregate-to-edit: "true"'
_TO_VIEW: Final = ', rbac.authorization.k8s.io/aggregate-to-view: "true"'
_RW: Final = "[create, delete, deletecollection, patch, update]"
_RO: Final = "[get, list, watch]"

_ROLES: Final = f"""
- metadata:
    name: admin{_META % ""}
  aggregationRule:
    clusterRoleSelectors:
    - matchLabels: {{rbac.authorization.k8s.io/aggregate-to-admin: "true"}}
- metadata:
    name: cluster-admin{_META % ""}
  rules:
  - {{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}}
  - {{nonResourceURLs: ["*"], verbs: ["*"]}}
- metadata:
    name: edit{_META % _TO_ADMIN}
  aggregationRule:
    clusterRoleSelectors:
    - matchLabels: {{rbac.authorization.k8s.io/aggregate-to-edit: "true"}}
- metadata:
    name: system:aggregate-to-admin{_META % _TO_ADMIN}
  rules:
  - {{apiGroups: [authorization.k8s.io], resources: [localsubjectaccessreviews], verbs: [create]}}
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings, roles]
    verbs: [create, delete, deletecollection, get, list, patch, update, watch]
- metadata:
    name: system:aggregate-to-edit{_META % _TO_EDIT}
  rules:
  - apiGroups: [""]
    resources: [pods/attach, pods/exec, pods/portforward, pods/proxy, secrets, services/proxy]
    verbs: {_RO}
  - {{apiGroups: [""], resources: [serviceaccounts], verbs: [impersonate]}}
  - apiGroups: [""]
    resources: [pods, pods/attach, pods/exec, pods/portforward, pods/proxy]
    verbs: {_RW}
  - {{apiGroups: [""], resources: [pods/eviction], verbs: [create]}}
  - apiGroups: [""]
    resources: [configmaps, events, persistentvolumeclaims, replicationcontrollers,
      replicationcontrollers/scale, secrets, serviceaccounts, services, services/proxy]
    verbs: {_RW}
  - {{apiGroups: [""], resources: [serviceaccounts/token], verbs: [create]}}
  - apiGroups: [apps]
    resources: [daemonsets, deployments, deployments/rollback, deployments/scale, replicasets,
      replicasets/scale, statefulsets, statefulsets/scale]
    verbs: {_RW}
  - {{apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: {_RW}}}
  - {{apiGroups: [batch], resources: [cronjobs, jobs], verbs: {_RW}}}
  - apiGroups: [extensions]
    resources: [daemonsets, deployments, deployments/rollback, deployments/scale, ingresses,
      networkpolicies, replicasets, replicasets/scale, replicationcontrollers/scale]
    verbs: {_RW}
  - {{apiGroups: [policy], resources: [poddisruptionbudgets], verbs: {_RW}}}
  - {{apiGroups: [networking.k8s.io], resources: [ingresses, networkpolicies], verbs: {_RW}}}
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create, delete, deletecollection, get, list, patch, update, watch]
- metadata:
    name: system:aggregate-to-view{_META % _TO_VIEW}
  rules:
  - apiGroups: [""]
    resources: [configmaps, endpoints, persistentvolumeclaims, persistentvolumeclaims/status,
      pods, replicationcontrollers, replicationcontrollers/scale, serviceaccounts, services,
      services/status]
    verbs: {_RO}
  - apiGroups: [""]
    resources: [bindings, events, limitranges, namespaces/status, pods/log, pods/status,
      replicationcontrollers/status, resourcequotas, resourcequotas/status]
    verbs: {_RO}
  - {{apiGroups: [""], resources: [namespaces], verbs: {_RO}}}
  - {{apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: {_RO}}}
  - apiGroups: [apps]
    resources: [controllerrevisions, daemonsets, daemonsets/status, deployments,
      deployments/scale, deployments/status, replicasets, replicasets/scale, replicasets/status,
      statefulsets, statefulsets/scale, statefulsets/status]
    verbs: {_RO}
  - apiGroups: [autoscaling]
    resources: [horizontalpodautoscalers, horizontalpodautoscalers/status]
    verbs: {_RO}
  - {{apiGroups: [batch], resources: [cronjobs, cronjobs/status, jobs, jobs/status], verbs: {_RO}}}
  - apiGroups: [extensions]
    resources: [daemonsets, daemonsets/status, deployments, deployments/scale,
      deployments/status, ingresses, ingresses/status, networkpolicies, replicasets,
      replicasets/scale, replicasets/status, replicationcontrollers/scale]
    verbs: {_RO}
  - apiGroups: [policy]
    resources: [poddisruptionbudgets, poddisruptionbudgets/status]
    verbs: {_RO}
  - apiGroups: [networking.k8s.io]
    resources: [ingresses, ingresses/status, networkpolicies]
    verbs: {_RO}
- metadata:
    name: system:basic-user{_META % ""}
  rules:
  - apiGroups: [authorization.k8s.io]
    resources: [selfsubjectaccessreviews, selfsubjectrulesreviews]
    verbs: [create]
  - {{apiGroups: [authentication.k8s.io], resources: [selfsubjectreviews], verbs: [create]}}
- metadata:
    name: system:discovery{_META % ""}
  rules:
  - nonResourceURLs: [/api, /api/*, /apis, /apis/*, /healthz, /livez, /openapi, /openapi/*,
      /readyz, /version, /version/]
    verbs: [get]
- metadata:
    name: system:public-info-viewer{_META % ""}
  rules:
  - {{nonResourceURLs: [/healthz, /livez, /readyz, /version, /version/], verbs: [get]}}
- metadata:
    name: view{_META % _TO_EDIT}
  aggregationRule:
    clusterRoleSelectors:
    - matchLabels: {{rbac.authorization.k8s.io/aggregate-to-view: "true"}}
"""

_BINDINGS: Final = f"""
- metadata:
    name: cluster-admin{_META % ""}
  roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
  subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:masters"}}
- metadata:
    name: system:basic-user{_META % ""}
  roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:basic-user"}}
  subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}}
- metadata:
    name: system:discovery{_META % ""}
  roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:discovery"}}
  subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}}
- metadata:
    name: system:public-info-viewer{_META % ""}
  roleRef:
    apiGroup: rbac.authorization.k8s.io
    kind: ClusterRole
    name: "system:public-info-viewer"
  subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}}
  - {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:unauthenticated"}}
"""


def _documents(text: str, kind: str) -> list[dict[str, Any]]:
    docs = yaml.safe_load(text)
    assert isinstance(docs, list)
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, **d} for d in docs]


BOOTSTRAP_CLUSTER_ROLES: Final = _documents(_ROLES, "ClusterRole")
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: Final = _documents(_BINDINGS, "ClusterRoleBinding")


def seed(registry: GenericStore) -> None:
    """Store the bootstrap roles and bindings (missing ones only), then aggregate.

    The roles: ``cluster-admin``, the user-facing ``admin`` / ``edit`` / ``view`` (empty, filled by
    aggregation from ``system:aggregate-to-*``; ``edit`` is aggregated into ``admin`` and ``view``
    into ``edit``), ``system:basic-user`` (self reviews), ``system:discovery`` and
    ``system:public-info-viewer``. They are seeded in every authorization mode, as on any cluster,
    so ``kubectl get clusterroles`` looks the same whichever mode runs; only ``--authorization
    rbac`` enforces them. Anonymous ``/readyz`` (kubesim's own readiness probe) stays allowed
    through ``system:public-info-viewer`` bound to ``system:unauthenticated``.
    """
    for kind, plural, objects in (
        ("ClusterRole", "clusterroles", BOOTSTRAP_CLUSTER_ROLES),
        ("ClusterRoleBinding", "clusterrolebindings", BOOTSTRAP_CLUSTER_ROLE_BINDINGS),
    ):
        rt = registry.scheme.lookup("rbac.authorization.k8s.io", "v1", plural)
        assert rt is not None and rt.kind == kind
        for obj in objects:
            if registry.find(rt, "", obj["metadata"]["name"]) is None:
                registry.seed(rt, obj)
    aggregate_all(registry)

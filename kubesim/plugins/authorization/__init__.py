"""Authorization: may this user do that? kube-apiserver's authorizer interface and its modes.

The endpoints' filter chain (``kubesim.endpoints.server``) asks an ``Authorizer`` about the
request's ``Attributes`` once the request is authenticated and impersonation applied; a denial
is a 403 whose message is ``forbidden_error``'s, kube's word for word. As
``k8s.io/apiserver/pkg/authorization/authorizer`` this package holds the interface and what
decides (``AlwaysAllow``, the RBAC authorizer of ``rbac``), not which one a server uses: the
mode is chosen where the server is assembled (``kubesim.sim``, as
``pkg/kubeapiserver/authorizer`` wires kube-apiserver's). Around it: the access reviews
(``reviews``), RBAC's escalation check (``escalation``) and the bootstrap policy
(``bootstrap``).
"""

from __future__ import annotations

import enum
from typing import Protocol

from kube.apierrors import StatusError
from kubesim.core.attributes import Attributes

__all__ = ["AlwaysAllow", "Authorizer", "Decision", "forbidden_error"]


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


class Authorizer(Protocol):
    """``authorizer.Authorizer``: a decision and a reason (shown after the 403 message)."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]: ...


class AlwaysAllow:
    """``--authorization-mode=AlwaysAllow``: kubesim's default."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""


def _forbidden_detail(attrs: Attributes) -> str:
    user = attrs.user.name
    if not attrs.is_resource:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group'
        f' "{attrs.api_group}" {where}'
    )


def forbidden_error(attrs: Attributes, reason: str = "") -> StatusError:
    """The authorization filter's 403 (``responsewriters.Forbidden``), kube's words exactly.

    ``pods "x" is forbidden: User "u" cannot delete resource "pods" in API group "" in the
    namespace "default"``; ``: <reason>`` follows when the authorizer gave one.
    """
    detail = _forbidden_detail(attrs)
    if reason:
        detail = f"{detail}: {reason}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if not attrs.is_resource:
        return StatusError(403, "Forbidden", f"forbidden: {detail}", name="", group="", kind="")
    head = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    return StatusError(
        403,
        "Forbidden",
        f"{head} is forbidden: {detail}",
        name=attrs.name,
        group=attrs.api_group,
        kind=attrs.resource,
    )

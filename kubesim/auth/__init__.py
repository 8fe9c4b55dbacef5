"""Who is asking, and may they: kube-apiserver's authentication and authorization filters.

kube-apiserver handles every request in this order, and kubesim does the same
(``kubesim.apiserver.server``):

1. **authentication** (``Authenticator``): the request's credentials — a bearer token or a TLS
   client certificate — become a ``UserInfo``; a request without any is ``system:anonymous``
   in the group ``system:unauthenticated``; credentials that are presented but not valid are a
   401 ``Unauthorized`` Status, whatever the authorization mode;
2. **impersonation**: ``Impersonate-User`` / ``Impersonate-Group`` / ``Impersonate-Extra-*``
   headers (``kubectl --as``) replace the user when the real user may ``impersonate`` them;
3. **authorization** (``Authorizer``): the request's ``Attributes`` (user, verb, resource,
   subresource, namespace, name, API group, or path for non-resource requests) are allowed or
   not; a denial is a 403 whose message is ``forbidden_error``'s, kube's word for word;
4. the handler, whose admission plugins see the same ``Attributes`` through
   ``current_attributes()`` (validating admission policies read ``request.userInfo``).

The default stays what kubesim always was: ``AlwaysAllow``. Members of ``system:masters`` are
allowed everything before any other authorizer is asked, as kube-apiserver's privileged-group
authorizer does; kubesim's own machinery (controllers, the kubelets, the scheduler loop, state
loading) calls the registry in process as the loopback user and is never checked.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, Protocol

from aiohttp import web

from kube.apierrors import StatusError
from kubesim.core.attributes import Attributes, UserInfo

__all__ = [
    "ALWAYS_ALLOW",
    "AUTHORIZATION_MODES",
    "RBAC",
    "AlwaysAllow",
    "Authenticator",
    "Authorizer",
    "Decision",
    "forbidden_error",
    "install_access_control",
    "unauthorized",
]


class Authenticator(Protocol):
    """``authenticator.Request``: the request's user, None when it carries no credentials
    (anonymous); raises ``unauthorized()`` for credentials that do not authenticate."""

    def authenticate(self, request: web.Request) -> UserInfo | None: ...


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


ALWAYS_ALLOW: Final = "always-allow"
RBAC: Final = "rbac"


def _rbac_mode(sim: Any) -> Authorizer:
    from kubesim.auth.rbac import RBACAuthorizer

    return RBACAuthorizer(sim.rbac_resolver)


# ``kubesim serve --authorization MODE``: mode -> factory(simulator) -> Authorizer. The factory
# also installs what the mode needs besides; what every mode has (the reviews, impersonation,
# escalation checks) is ``install_access_control``'s, the bootstrap policy ``Simulator``'s.
AUTHORIZATION_MODES: dict[str, Callable[[Any], Authorizer]] = {
    ALWAYS_ALLOW: lambda sim: AlwaysAllow(),
    RBAC: _rbac_mode,
}


def install_access_control(sim: Any) -> None:
    """What kube-apiserver has whatever its authorization mode: RBAC objects validated and
    guarded against escalation, the access reviews, impersonation; ``sim.rbac_resolver`` is
    the rule resolver over the simulator's store (the ``rbac`` mode authorizes with it)."""
    from kubesim.auth import escalation, reviews
    from kubesim.auth.impersonation import Impersonation
    from kubesim.auth.rbac import RuleResolver

    sim.rbac_resolver = RuleResolver(sim.store)
    escalation.install(sim.registry, sim.rbac_resolver, sim.server.authorize)
    reviews.install(sim)
    sim.server.impersonator = Impersonation(sim.server.authorize)


def unauthorized() -> StatusError:
    """The 401 kube-apiserver answers for credentials it cannot authenticate."""
    return StatusError(401, "Unauthorized", "Unauthorized", has_details=False)


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

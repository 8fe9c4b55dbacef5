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

import contextlib
import contextvars
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from aiohttp import web

from kube.apierrors import StatusError

__all__ = [
    "ALL_AUTHENTICATED",
    "ALWAYS_ALLOW",
    "ANONYMOUS",
    "AUTHORIZATION_MODES",
    "LOOPBACK",
    "MASTERS",
    "RBAC",
    "UNAUTHENTICATED",
    "AlwaysAllow",
    "Attributes",
    "Authenticator",
    "Authorizer",
    "Decision",
    "UserInfo",
    "current_attributes",
    "forbidden_error",
    "in_process",
    "install_access_control",
    "unauthorized",
    "with_attributes",
]

MASTERS: Final = "system:masters"
ALL_AUTHENTICATED: Final = "system:authenticated"
UNAUTHENTICATED: Final = "system:unauthenticated"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """``user.Info``: name, uid, groups and extra (each extra key holds a list of strings)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """``authentication.k8s.io/v1`` ``UserInfo`` as the API shows it (empty fields left out)."""
        out: dict[str, object] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ANONYMOUS: Final = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))
LOOPBACK: Final = UserInfo("system:apiserver", groups=(MASTERS, ALL_AUTHENTICATED))


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.Attributes`` of one request (or of a SubjectAccessReview)."""

    user: UserInfo
    verb: str
    is_resource: bool = True
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    api_group: str = ""
    api_version: str = ""
    path: str = ""


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
    escalation.install(sim.rest, sim.rbac_resolver, sim.server.authorize)
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


_CURRENT: contextvars.ContextVar[Attributes | None] = contextvars.ContextVar(
    "kubesim_request_attributes", default=None
)


def current_attributes() -> Attributes | None:
    """The attributes of the API request being served; None for kubesim's own in-process calls."""
    return _CURRENT.get()


@contextlib.contextmanager
def with_attributes(attrs: Attributes | None) -> Iterator[None]:
    """Serve the body as the request ``attrs`` (None: as kubesim itself)."""
    token = _CURRENT.set(attrs)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def in_process() -> contextlib.AbstractContextManager[None]:
    """Calls kube-apiserver makes to its own storage (the delete inside an eviction) are not
    admitted again: they run as kubesim itself."""
    return with_attributes(None)

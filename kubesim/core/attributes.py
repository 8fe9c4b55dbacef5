"""Who asks for what: the user and the attributes of a request, and the request being served.

Every layer above needs these facts and none of the machinery that finds them, so they live at
the bottom. Authentication (``kubesim.plugins.authentication``) makes a ``UserInfo`` out of
credentials; authorization (``kubesim.plugins.authorization``) decides on ``Attributes``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "ALL_AUTHENTICATED",
    "ANONYMOUS",
    "MASTERS",
    "UNAUTHENTICATED",
    "Attributes",
    "UserInfo",
    "acting_as",
    "current_attributes",
    "current_field_manager",
    "in_process",
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


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.Attributes`` of one request (or of a SubjectAccessReview): the user,
    verb, resource, subresource, namespace, name, API group, or the path of a non-resource
    request.
    """

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


_CURRENT: contextvars.ContextVar[Attributes | None] = contextvars.ContextVar(
    "kubesim_request_attributes", default=None
)


def current_attributes() -> Attributes | None:
    """The attributes of the API request being served; None for kubesim's own in-process calls.

    As kube-apiserver carries them in the request's context (``genericapirequest.UserFrom``): the
    endpoints set them (``with_attributes``), the registry's validating admission reads them
    (policies see ``request.userInfo``).
    """
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
    admitted again: they run as kubesim itself.

    So do kubesim's own machinery (controllers, kubelets, the scheduler loop, state loading), as
    the loopback client kube-apiserver uses for its own storage is never admitted again.
    """
    return with_attributes(None)


# The field manager of kubesim's own writes: each actor writes under the name its kube
# component has (kube-controller-manager, kubelet, kube-scheduler), anything else as kubesim.
_MANAGER: contextvars.ContextVar[str] = contextvars.ContextVar(
    "kubesim_field_manager", default="kubesim"
)


def current_field_manager() -> str:
    """The manager an in-process write is recorded under (``metadata.managedFields``)."""
    return _MANAGER.get()


@contextlib.contextmanager
def acting_as(manager: str) -> Iterator[None]:
    """Write as ``manager`` in the body (and in the tasks it starts)."""
    token = _MANAGER.set(manager)
    try:
        yield
    finally:
        _MANAGER.reset(token)

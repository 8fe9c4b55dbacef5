"""Impersonation (``kubectl --as``), as kube-apiserver's ``WithImpersonation`` filter does it
(``staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go``).

The headers ``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` (repeatable; the key lower-cased and percent-decoded) ask to act as
someone else.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kubesim.core.attributes import ALL_AUTHENTICATED, UNAUTHENTICATED, Attributes, UserInfo
from kubesim.core.errors import StatusError
from kubesim.endpoints.request import RequestContext
from kubesim.plugins.authorization import Decision, forbidden_error

__all__ = ["Impersonation", "impersonation_requests"]

USER_HEADER: Final = "impersonate-user"
GROUP_HEADER: Final = "impersonate-group"
UID_HEADER: Final = "impersonate-uid"
EXTRA_PREFIX: Final = "impersonate-extra-"
SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
AUTHN_GROUP: Final = "authentication.k8s.io"

Authorize = Callable[[Attributes], tuple[Decision, str]]


@dataclass(frozen=True, slots=True)
class Request:
    """One impersonated attribute (upstream builds an ``ObjectReference`` per attribute)."""

    kind: str  # User, ServiceAccount, Group, UserExtra, UID
    name: str
    namespace: str = ""
    extra_key: str = ""


def split_service_account(username: str) -> tuple[str, str] | None:
    """``serviceaccount.SplitUsername``: (namespace, name) of ``system:serviceaccount:NS:N``."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def impersonation_requests(headers: list[tuple[str, str]]) -> list[Request]:
    """``buildImpersonationRequests`` from (name, value) header pairs, in upstream's order."""
    lowered = [(k.lower(), v) for k, v in headers]
    out: list[Request] = []
    user = next((v for k, v in lowered if k == USER_HEADER), "")
    if user:
        sa = split_service_account(user)
        if sa is not None:
            out.append(Request("ServiceAccount", sa[1], namespace=sa[0]))
        else:
            out.append(Request("User", user))
    groups = [Request("Group", v) for k, v in lowered if k == GROUP_HEADER]
    out.extend(groups)
    extras = [
        Request("UserExtra", v, extra_key=urllib.parse.unquote(k[len(EXTRA_PREFIX) :]))
        for k, v in lowered
        if k.startswith(EXTRA_PREFIX)
    ]
    out.extend(extras)
    uid = next((v for k, v in lowered if k == UID_HEADER), "")
    if uid:
        out.append(Request("UID", uid))
    if (groups or extras or uid) and not user:
        described = " ".join(f"{{{r.kind} {r.namespace} {r.name}}}" for r in out)
        raise StatusError(
            500,
            "InternalError",
            f"Internal error occurred: requested [{described}] without impersonating a user",
        )
    return out


class Impersonation:
    """``ApiServer.impersonator``: the user to act as, or the authenticated user unchanged.

    Each attribute asked for is authorized for the *real* user with verb ``impersonate``
    (``users``, ``groups`` or, for a ``system:serviceaccount:NS:NAME`` user, ``serviceaccounts``
    in NS, in the core group; ``uids`` and ``userextras/<key>`` in ``authentication.k8s.io``),
    named by the value; the first one refused is a 403 with the authorization filter's message for
    those attributes. A ServiceAccount impersonated without groups gets its own
    (``system:serviceaccounts``, ``system:serviceaccounts:NS``); any impersonated user other than
    ``system:anonymous`` also gets ``system:authenticated`` unless ``system:authenticated`` or
    ``system:unauthenticated`` was asked for (anonymous gets ``system:unauthenticated``). Groups,
    uid or extra without a user is an error (500, upstream's ``requested ... without impersonating
    a user``).
    """

    def __init__(self, authorize: Authorize) -> None:
        self.authorize = authorize

    def __call__(self, ctx: RequestContext, user: UserInfo) -> UserInfo:
        for key in ctx.request.headers:  # most requests impersonate nobody: look before copying
            if key[:12].lower() == "impersonate-":
                break
        else:
            return user
        requests = impersonation_requests(list(ctx.request.headers.items()))
        if not requests:
            return user
        return self.act_as(user, requests)

    def act_as(self, user: UserInfo, requests: list[Request]) -> UserInfo:
        username = ""
        uid = ""
        groups: list[str] = []
        extra: dict[str, list[str]] = {}
        groups_specified = any(r.kind == "Group" for r in requests)
        for req in requests:
            group, resource, subresource, namespace = "", "", "", ""
            if req.kind == "ServiceAccount":
                resource, namespace = "serviceaccounts", req.namespace
                username = f"{SERVICE_ACCOUNT_PREFIX}{req.namespace}:{req.name}"
                if not groups_specified:
                    groups.extend(("system:serviceaccounts", f"system:serviceaccounts:{namespace}"))
            elif req.kind == "User":
                resource, username = "users", req.name
            elif req.kind == "Group":
                resource = "groups"
                groups.append(req.name)
            elif req.kind == "UserExtra":
                group, resource, subresource = AUTHN_GROUP, "userextras", req.extra_key
                extra.setdefault(req.extra_key, []).append(req.name)
            else:
                group, resource, uid = AUTHN_GROUP, "uids", req.name
            attrs = Attributes(
                user=user,
                verb="impersonate",
                namespace=namespace,
                resource=resource,
                subresource=subresource,
                name=req.name,
                api_group=group,
                api_version="v1",
            )
            decision, reason = self.authorize(attrs)
            if decision is not Decision.ALLOW:
                raise forbidden_error(attrs, reason)
        if username != "system:anonymous":
            if not any(g in (ALL_AUTHENTICATED, UNAUTHENTICATED) for g in groups):
                groups.append(ALL_AUTHENTICATED)
        elif UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
        return UserInfo(
            username, uid=uid, groups=tuple(groups), extra={k: tuple(v) for k, v in extra.items()}
        )

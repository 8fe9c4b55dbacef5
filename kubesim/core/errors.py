"""``metav1.Status`` errors, shaped exactly as kube-apiserver writes them
(``k8s.io/apimachinery/pkg/api/errors``); the constructors mirror its ``New...`` functions
word for word, because clients (kubectl, client-go) branch on the ``reason``, the ``code`` and
the ``details`` (``kube.apierrors.StatusError`` is the body).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kube.apierrors import REASON_FOR_CODE, Cause, StatusError, aggregate_message, go_quote

__all__ = [
    "REASON_FOR_CODE",
    "Cause",
    "StatusError",
    "already_exists",
    "bad_request",
    "check_body_namespace",
    "conflict",
    "expired",
    "forbidden",
    "generate_name_conflict",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "not_found",
    "not_found_path",
    "qualified_resource",
    "request_entity_too_large",
    "success_status",
    "too_large_resource_version",
    "too_many_requests",
    "unsupported_media_type",
]


def qualified_resource(resource: str, group: str) -> str:
    """``schema.GroupResource.String()``: ``pods``, ``deployments.apps``."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{qualified_resource(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def not_found_path() -> StatusError:
    """The 404 for a path no handler serves (``responsewriters.NotFound``)."""
    return StatusError(404, "NotFound", "the server could not find the requested resource")


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def generate_name_conflict(resource: str, group: str, name: str) -> StatusError:
    """``errors.NewGenerateNameConflict``: every generated name was taken (retry after 1 s)."""
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource, group)} "{name}" already exists, the server was not'
        " able to generate a unique name for the object",
        name=name,
        group=group,
        kind=resource,
        retry_after_seconds=1,
    )


def conflict(resource: str, group: str, name: str, detail: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {qualified_resource(resource, group)}"
        f' "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


MODIFIED_CONFLICT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: Iterable[Cause]) -> StatusError:
    """``errors.NewInvalid``: ``Kind.group "name" is invalid: <errors>``.

    As upstream, the name is Go-quoted (``%q``) and the message is the error list's aggregate
    (a repeated error once); the causes keep every error.
    """
    cause_list = tuple(causes)
    joined = aggregate_message(_field_error_text(c) for c in cause_list)
    qualified_kind = f"{kind}.{group}" if group else kind
    return StatusError(
        422,
        "Invalid",
        f"{qualified_kind} {go_quote(name)} is invalid: {joined}",
        name=name,
        group=group,
        kind=kind,
        causes=cause_list,
    )


def _field_error_text(cause: Cause) -> str:
    return f"{cause.field}: {cause.message}" if cause.field else cause.message


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message, has_details=False)


def check_body_namespace(body_namespace: str, namespace: str) -> None:
    """The generic handlers' rule: a namespace in the body must be the URL's (400)."""
    if body_namespace and body_namespace != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def forbidden(
    resource: str, group: str, name: str, detail: str, *, causes: Iterable[Cause] = ()
) -> StatusError:
    qualified = qualified_resource(resource, group)
    subject = f'{qualified} "{name}"' if name else qualified
    return StatusError(
        403,
        "Forbidden",
        f"{subject} is forbidden: {detail}",
        name=name,
        group=group,
        kind=resource,
        causes=tuple(causes),
    )


def method_not_allowed() -> StatusError:
    """The 405 for a verb a path does not serve (no handler for the method, as go-restful
    answers): kube-apiserver's generic ``MethodNotAllowed`` Status, without details."""
    return StatusError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )


def expired(message: str) -> StatusError:
    """``errors.NewResourceExpired``: 410 with reason Expired and no details."""
    return StatusError(410, "Expired", message, has_details=False)


def too_many_requests(message: str, retry_after_seconds: int) -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        message,
        retry_after_seconds=retry_after_seconds,
    )


def request_entity_too_large(limit: int) -> StatusError:
    """``errors.NewRequestEntityTooLargeError``: 413, no details (a write's body over the
    server's ``MaxRequestBodyBytes``)."""
    return StatusError(
        413,
        "RequestEntityTooLarge",
        f"Request entity too large: limit is {limit}",
        has_details=False,
    )


def too_large_resource_version(requested: int, current: int) -> StatusError:
    """``storage.NewTooLargeResourceVersionError`` as the cacher reports it (504, retry 1 s)."""
    return StatusError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        causes=(Cause("ResourceVersionTooLarge", "Too large resource version"),),
        retry_after_seconds=1,
    )


def internal_error(detail: str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {detail}",
        causes=(Cause("", detail),),
    )


def unsupported_media_type(content_type: str, accepted: Iterable[str]) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        has_details=False,
    )


def success_status(
    *, code: int | None = None, name: str = "", group: str = "", kind: str = "", uid: str = ""
) -> dict[str, Any]:
    """A ``status: Success`` body: a delete's (``details`` naming what went, no code) or a
    create-only subresource's (eviction, binding: ``code: 201``, no details)."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if uid:
        details["uid"] = uid
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details:
        out["details"] = details
    if code is not None:
        out["code"] = code
    return out

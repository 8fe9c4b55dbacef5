"""Kubernetes API errors: field errors and Status errors, rendered as Go renders them.

kube-apiserver's error text is part of the contract users script against (``kubectl`` prints
it, operators grep for it), so ``FieldError``, ``StatusError`` and the value rendering
(``strconv.Quote``, ``%v`` and ``json.Marshal``, because messages embed values printed by Go)
reproduce apimachinery exactly. Pure and shared: ``scheduler.priority`` validates with it,
``kubesim`` answers with it.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "OMIT",
    "REASON_FOR_CODE",
    "AdmissionError",
    "Cause",
    "ErrorType",
    "FieldError",
    "GoNamedString",
    "InvalidError",
    "StatusError",
    "aggregate_message",
    "go_bool",
    "go_quote",
    "new_forbidden",
    "new_invalid",
]


def go_bool(value: bool) -> str:
    return "true" if value else "false"


# --- Go formatting ---------------------------------------------------------------------------

_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """``strconv.Quote`` / ``%q``: how Go prints names and string values in messages."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _go_float(value: float) -> str:
    """``%v`` of a float64: shortest digits, exponent form outside [1e-4, 1e21)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    dec = Decimal(repr(value)).normalize()
    sign, digits, exponent = dec.as_tuple()
    assert isinstance(exponent, int)
    exp10 = len(digits) + exponent - 1
    if -4 <= exp10 < 21:
        return format(dec, "f")
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"


def _go_json(value: object) -> str:
    """``json.Marshal`` as Go does it: compact, with <, > and & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


class GoNamedString(str):
    """A string of a Go named type (``core.PreemptionPolicy``, ``types.UID``).

    ``ErrorBody`` prints plain Go strings with ``%q`` but anything else (a named string type,
    or a pointer to one) through ``json.Marshal``; the two differ for control characters and
    for ``<``, ``>`` and ``&``, which JSON escapes.
    """

    __slots__ = ()


def _render_value(value: object) -> str:
    """A bad value as ``field.Error.ErrorBody`` prints it."""
    if isinstance(value, GoNamedString):
        return _go_json(str(value))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return go_bool(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    try:
        return _go_json(value)
    except (TypeError, ValueError):
        return str(value)


# --- field errors (k8s.io/apimachinery/pkg/util/validation/field) ----------------------------


class ErrorType(enum.StrEnum):
    """``field.ErrorType``: the value is the machine-readable cause type sent in Status causes."""

    NotFound = "FieldValueNotFound"
    Required = "FieldValueRequired"
    Duplicate = "FieldValueDuplicate"
    Invalid = "FieldValueInvalid"
    NotSupported = "FieldValueNotSupported"
    Forbidden = "FieldValueForbidden"
    TooLong = "FieldValueTooLong"
    TooMany = "FieldValueTooMany"
    Internal = "InternalError"
    TypeInvalid = "FieldValueTypeInvalid"

    @property
    def display(self) -> str:
        """``ErrorType.String()``: the words shown in messages."""
        return _ERROR_TYPE_DISPLAY[self]


_ERROR_TYPE_DISPLAY: Final = {
    ErrorType.NotFound: "Not found",
    ErrorType.Required: "Required value",
    ErrorType.Duplicate: "Duplicate value",
    ErrorType.Invalid: "Invalid value",
    ErrorType.NotSupported: "Unsupported value",
    ErrorType.Forbidden: "Forbidden",
    ErrorType.TooLong: "Too long",
    ErrorType.TooMany: "Too many",
    ErrorType.Internal: "Internal error",
    ErrorType.TypeInvalid: "Invalid value",
}

# Types whose message never shows the bad value.
_VALUELESS: Final = frozenset(
    {ErrorType.Required, ErrorType.Forbidden, ErrorType.TooLong, ErrorType.Internal}
)


class _Omit:
    """Marker for "no bad value" (``omitValue``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()


@dataclass(frozen=True, slots=True)
class FieldError:
    """``field.Error``: ``str()`` is ``Error()``, ``error_body()`` is ``ErrorBody()``."""

    type: ErrorType
    field: str
    detail: str = ""
    value: object = OMIT

    def error_body(self) -> str:
        if self.type in _VALUELESS or self.value is OMIT:
            body = self.type.display
        else:
            body = f"{self.type.display}: {_render_value(self.value)}"
        return f"{body}: {self.detail}" if self.detail else body

    def __str__(self) -> str:
        return f"{self.field}: {self.error_body()}"

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls(ErrorType.Required, field, detail)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> FieldError:
        return cls(ErrorType.Forbidden, field, detail)

    @classmethod
    def invalid(cls, field: str, value: object, detail: str) -> FieldError:
        return cls(ErrorType.Invalid, field, detail, value)

    @classmethod
    def not_supported(cls, field: str, value: object, valid_values: Sequence[str]) -> FieldError:
        detail = ""
        if valid_values:
            detail = "supported values: " + ", ".join(go_quote(v) for v in valid_values)
        return cls(ErrorType.NotSupported, field, detail, value)


def aggregate_message(errors: Iterable[FieldError | str]) -> str:
    """``ErrorList.ToAggregate().Error()``: duplicates dropped, one error bare, more in ``[…]``.

    Returns "" for an empty list (Go's aggregate is nil then).
    """
    seen: dict[str, None] = {}
    for err in errors:
        seen.setdefault(str(err), None)
    messages = list(seen)
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]" if messages else ""


# --- API status errors (k8s.io/apimachinery/pkg/api/errors) ----------------------------------


def _split_qualified(qualified: str) -> tuple[str, str]:
    """``Kind.group`` / ``resource.group`` into (name, group)."""
    name, _, group = qualified.partition(".")
    return name, group


REASON_FOR_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True, slots=True)
class Cause:
    """``metav1.StatusCause``; its type is serialized under the key ``reason``."""

    reason: str = ""
    message: str = ""
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.field:
            out["field"] = self.field
        return out


@dataclass(slots=True)
class StatusError(Exception):
    """An API error carrying the ``Status`` body that kube-apiserver would send.

    ``apierrors.StatusError``: ``to_dict()`` gives the ``metav1.Status`` body with
    ``details.causes`` as the server sends it, and ``response_headers()`` the ``Retry-After``
    header the response writer adds.
    """

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    uid: str = ""
    causes: tuple[Cause, ...] = ()
    retry_after_seconds: int = 0
    has_details: bool = True
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """The JSON body, keys in the order the Go encoder writes them: ``v1``, empty
        ``metadata``, ``status: Failure``, ``message``, a machine-readable ``reason``, optional
        ``details`` (``name``, ``group``, ``kind``: the *resource* plural for
        NotFound/AlreadyExists/Conflict, the *Kind* for Invalid; ``uid``, ``causes``,
        ``retryAfterSeconds``) and the HTTP ``code``."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
        }
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        if self.has_details:
            details: dict[str, Any] = {}
            if self.name:
                details["name"] = self.name
            if self.group:
                details["group"] = self.group
            if self.kind:
                details["kind"] = self.kind
            if self.uid:
                details["uid"] = self.uid
            if self.causes:
                details["causes"] = [c.to_dict() for c in self.causes]
            if self.retry_after_seconds:
                details["retryAfterSeconds"] = self.retry_after_seconds
            body["details"] = details
        body["code"] = self.code
        return body

    def response_headers(self) -> dict[str, str]:
        """``Retry-After`` only when ``retryAfterSeconds > 0``
        (``responsewriters.ErrorNegotiated``), which is why a PDB-exhausted 429 carries no such
        header."""
        headers = dict(self.headers)
        if self.retry_after_seconds > 0:
            headers["Retry-After"] = str(self.retry_after_seconds)
        return headers

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatusError:
        """Rebuild an error from a Status body (fault files, ``respond:`` blocks)."""
        details = data.get("details") or {}
        code = int(data.get("code") or 500)
        return cls(
            code=code,
            reason=str(data.get("reason", REASON_FOR_CODE.get(code, ""))),
            message=str(data.get("message", "")),
            name=str(details.get("name", "")),
            group=str(details.get("group", "")),
            kind=str(details.get("kind", "")),
            uid=str(details.get("uid", "")),
            causes=tuple(
                Cause(str(c.get("reason", "")), str(c.get("message", "")), str(c.get("field", "")))
                for c in details.get("causes") or ()
            ),
            retry_after_seconds=int(details.get("retryAfterSeconds") or 0),
        )


class AdmissionError(StatusError):
    """A 403 Forbidden from admission (``admission.NewForbidden`` → ``apierrors.NewForbidden``).

    ``detail`` is the plugin's own error text; ``message`` the full text clients see, e.g.
    ``pods "web-0" is forbidden: no PriorityClass with name foo was found``.
    """

    def __init__(self, qualified_resource: str, name: str, detail: str) -> None:
        resource, group = _split_qualified(qualified_resource)
        if not qualified_resource:
            message = f"forbidden: {detail}"
        elif not name:
            message = f"{qualified_resource} is forbidden: {detail}"
        else:
            message = f"{qualified_resource} {go_quote(name)} is forbidden: {detail}"
        super().__init__(
            code=403, reason="Forbidden", message=message, group=group, kind=resource, name=name
        )
        self.detail = detail
        self.resource = resource


class InvalidError(StatusError):
    """A 422 Invalid (``apierrors.NewInvalid``) carrying the field errors."""

    def __init__(self, qualified_kind: str, name: str, errors: Sequence[FieldError]) -> None:
        kind, group = _split_qualified(qualified_kind)
        aggregate = aggregate_message(errors)
        message = f"{qualified_kind} {go_quote(name)} is invalid"
        if aggregate:
            message += f": {aggregate}"
        causes = tuple(Cause(str(err.type), err.error_body(), err.field) for err in errors)
        super().__init__(
            code=422,
            reason="Invalid",
            message=message,
            group=group,
            kind=kind,
            name=name,
            causes=causes,
        )
        self.errors: tuple[FieldError, ...] = tuple(errors)


def new_forbidden(qualified_resource: str, name: str, detail: str) -> AdmissionError:
    """``apierrors.NewForbidden``; ``qualified_resource`` as ``GroupResource.String()``."""
    return AdmissionError(qualified_resource, name, detail)


def new_invalid(qualified_kind: str, name: str, errors: Sequence[FieldError]) -> InvalidError:
    """``apierrors.NewInvalid``; ``qualified_kind`` as ``GroupKind.String()``.

    For PriorityClasses: ``new_invalid(PRIORITY_CLASS_KIND, pc.name, errors)`` gives
    ``PriorityClass.scheduling.k8s.io "<name>" is invalid: <aggregate>``.
    """
    return InvalidError(qualified_kind, name, errors)

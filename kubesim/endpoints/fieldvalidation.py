"""Server-side field validation: the ``fieldValidation`` query parameter of writes (KEP-2885,
GA in 1.27). The schema and the wording are shared with the manifest loaders (``kube.strict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aiohttp import web

from kube.strict import model_for, strict_message
from kubesim.core.errors import Cause, StatusError, bad_request
from kubesim.core.scheme import ResourceType
from kubesim.registry.validation import decode_against_schema

__all__ = ["DIRECTIVES", "add_warning_headers", "check_body", "directive"]

DIRECTIVES: Final = ("Ignore", "Strict", "Warn")
_REQUEST_KEY: Any = (
    web.RequestKey("kubesim.field_warnings", list)
    if hasattr(web, "RequestKey")  # aiohttp >= 3.13
    else "kubesim.field_warnings"
)


def directive(query: Mapping[str, str], *, options_kind: str) -> str:
    """The request's ``fieldValidation``: Warn when absent, 422 when not a known value."""
    value = query.get("fieldValidation", "")
    if value == "":
        return "Warn"
    if value in DIRECTIVES:
        return value
    supported = ", ".join(f'"{d}"' for d in DIRECTIVES)
    detail = f'Unsupported value: "{value}": supported values: {supported}'
    raise StatusError(
        422,
        "Invalid",
        f'{options_kind}.meta.k8s.io "" is invalid: fieldValidation: {detail}',
        kind=options_kind,
        group="meta.k8s.io",
        causes=(Cause("FieldValueNotSupported", detail, "fieldValidation"),),
    )


def check_body(
    request: web.Request,
    rt: ResourceType,
    data: Any,
    *,
    duplicates: Mapping[int, tuple[dict[Any, Any], list[str]]] | None = None,
    options_kind: str = "CreateOptions",
    patch: bool = False,
    decode: bool = True,
) -> bool:
    """Apply the request's ``fieldValidation`` to a decoded body (raise, or note warnings);
    True when the body was walked against its kind's schema and every value has its type.

    A value of the wrong JSON type fails the request whatever the directive, as Go's decoder
    fails it: 400 ``<Kind> in version "<v>" cannot be handled as a <Kind>: json: cannot
    unmarshal ...`` (patches are partial objects: their result is checked when decoded; an
    apply configuration, ``decode=False``, is never decoded into the Go type: Server-Side
    Apply converts it by its own rules and answers its own error).

    * ``Strict``: an unknown or duplicate field fails the request with 400 BadRequest
      ``strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`` (all
      problems, joined with ", ") — what kubectl asks for by default (``--validate=strict``);
    * ``Warn`` (the default when the parameter is absent): the request succeeds and each
      problem comes back as a ``Warning: 299 - "unknown field \"spec.foo\""`` response header,
      which kubectl prints as ``Warning: unknown field "spec.foo"``;
    * ``Ignore``: unknown fields are dropped silently.

    In every mode an accepted object is stored without its unknown fields, as decoding into
    the Go struct loses them. Patches are checked as the partial objects they are (merge and
    strategic merge patches; ``$``-directives are not fields); JSON patches are not checked.
    Kinds the schema does not cover are not checked."""
    mode = directive(request.query, options_kind=options_kind)
    model = model_for(rt.api_version, rt.kind)
    if model is None or not isinstance(data, Mapping):
        return False
    typed = decode and not patch
    found = decode_against_schema(rt, data, model, duplicates=duplicates, decode=typed)
    problems = found.strict
    if patch:
        problems = [p for p in problems if '"$' not in p and ".$" not in p]
        found.unknown = [(m, k) for m, k in found.unknown if not str(k).startswith("$")]
    if mode == "Strict" and problems:
        raise bad_request(strict_message(problems))
    # Decoding into Go structs drops what the structs do not have.
    found.drop_unknown()
    if mode == "Warn" and problems:
        request[_REQUEST_KEY] = problems
    return typed


def add_warning_headers(
    request: web.Request, response: web.StreamResponse, texts: Sequence[str] = ()
) -> None:
    """One RFC 7234 ``Warning`` header per problem, as kube sends: field validation's
    (``Warn``), then ``texts`` (validating admission's ``Warn`` action). Only a response not
    yet sent can take them (every write's answer; a watch carries none)."""
    problems = [*request.get(_REQUEST_KEY, ()), *texts]
    if not problems or response.prepared:
        return
    for problem in problems:
        text = problem.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{text}"')

"""Bodies in and out: decoding requests as kube-apiserver's codecs do, and JSON responses.

Responses are always JSON: clients that offer protobuf (``application/vnd.kubernetes.protobuf,
application/json``) decode by the response's Content-Type and fall back to JSON, as client-go
does; errors are ``Status`` bodies (``kubesim.core.errors``) with ``Retry-After`` when
``retryAfterSeconds > 0``. Request bodies may be JSON or YAML, and protobuf for the kinds
kubectl's typed client sends that way (``kubesim.endpoints.protobuf``).
"""

from __future__ import annotations

import json
from typing import Any, Final

import yaml
from aiohttp import web

from kube.strict import decode_json
from kubesim.core.errors import StatusError, bad_request, unsupported_media_type
from kubesim.core.scheme import ResourceType
from kubesim.core.store import dumps
from kubesim.endpoints import fieldvalidation, protobuf
from kubesim.endpoints.request import RequestContext
from kubesim.registry.generic import DeleteOptions

__all__ = [
    "JSON",
    "PROTOBUF",
    "decode_body",
    "decode_delete_options",
    "decode_request",
    "decode_typed_body",
    "json_response",
    "status_response",
]

JSON: Final = "application/json"
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"


def json_response(body: Any, status: int = 200, *, content_type: str = JSON) -> web.Response:
    data = body if isinstance(body, bytes) else dumps(body)
    return web.Response(body=data, status=status, headers={"Content-Type": content_type})


def status_response(err: StatusError) -> web.Response:
    resp = json_response(err.to_dict(), err.code)
    for k, v in err.response_headers().items():
        resp.headers[k] = v
    return resp


def _summary(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    return text if len(text) <= 30 else text[:30] + " ..."


def decode_body(ctx: RequestContext, rt: ResourceType) -> Any:
    """A create/update body as a dict: JSON or YAML, errors as kube's 400/415; its unknown
    and duplicate fields handled as the request's ``fieldValidation`` says
    (``kubesim.endpoints.fieldvalidation``).
    """
    return decode_typed_body(ctx, rt)[0]


def decode_typed_body(ctx: RequestContext, rt: ResourceType) -> tuple[Any, bool]:
    """``decode_body``, and whether every value of the body was checked against its kind's
    schema (JSON or YAML of a kind the schema holds: the registry need not walk it again)."""
    ctype = (ctx.request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
    body = ctx.body
    if ctype == PROTOBUF:
        try:
            return protobuf.decode_object(body), False
        except (protobuf.ProtobufError, UnicodeDecodeError, KeyError) as exc:
            raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF]) from exc
    if ctype not in (JSON, "application/yaml", "text/yaml", "*/*", ""):
        raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF])
    duplicates: dict[int, Any] = {}
    try:
        if ctype in ("application/yaml", "text/yaml"):
            data = yaml.safe_load(body.decode("utf-8"))
        else:
            data, duplicates = decode_json(body)
    except yaml.YAMLError as exc:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): error converting"
            f" YAML to JSON: yaml: {exc} ({_summary(body)})"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        detail = "unexpected end of JSON input" if not body.strip() else str(exc)
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get"
            f" version/kind; json parse error: {detail} ({_summary(body)})"
        ) from None
    if not isinstance(data, dict):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get"
            f" version/kind; json parse error: json: cannot unmarshal"
            f" {type(data).__name__} into Go value of type struct ({_summary(body)})"
        )
    options = "CreateOptions" if ctx.request.method == "POST" else "UpdateOptions"
    typed = fieldvalidation.check_body(
        ctx.request, rt, data, duplicates=duplicates, options_kind=options
    )
    return data, typed


def decode_delete_options(ctx: RequestContext) -> DeleteOptions:
    """A body's DeleteOptions (JSON, YAML or protobuf) win; else the query's, as
    ``handlers.DeleteResource`` reads them.
    """
    if not ctx.body:
        return DeleteOptions.from_body_and_query(None, ctx.query, ctx.query.getall("dryRun", []))
    ctype = (ctx.request.headers.get("Content-Type") or JSON).split(";")[0].strip().lower()
    parsed: Any
    if ctype == PROTOBUF:
        try:
            parsed = protobuf.decode_object(ctx.body)
        except (protobuf.ProtobufError, UnicodeDecodeError) as exc:
            raise bad_request(
                f"the object provided is unrecognized (must be of type DeleteOptions): {exc}"
            ) from None
        if parsed.get("kind") != "DeleteOptions":
            # a plain Go error in the handler: ErrorToAPIStatus makes it a reasonless 500
            raise StatusError(
                500,
                "",
                "decoded object cannot be converted to DeleteOptions",
                has_details=False,
            )
    elif ctype not in (JSON, "application/yaml", "text/yaml", "*/*", ""):
        raise unsupported_media_type(ctype, [JSON, "application/yaml", PROTOBUF])
    else:
        try:
            if ctype in ("application/yaml", "text/yaml"):
                parsed = yaml.safe_load(ctx.body.decode("utf-8"))
            else:
                parsed = json.loads(ctx.body)
        except (ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise bad_request(
                "the object provided is unrecognized (must be of type DeleteOptions):"
                f" couldn't get version/kind; json parse error: {exc}"
                f" ({_summary(ctx.body)})"
            ) from None
        if not isinstance(parsed, dict):
            raise bad_request("the object provided is unrecognized (must be of type DeleteOptions)")
    return DeleteOptions.from_body_and_query(parsed, ctx.query)


def decode_request(body: bytes, content_type: str) -> dict[str, Any]:
    """A review or TokenRequest body (JSON, YAML or protobuf, as kubectl sends it); an empty
    body is an empty request."""
    if not body.strip():
        return {}
    ctype = content_type.split(";", maxsplit=1)[0].strip().lower()
    if ctype == "application/vnd.kubernetes.protobuf" or body.startswith(protobuf.MAGIC):
        try:
            return protobuf.decode_object(body)
        except (protobuf.ProtobufError, UnicodeDecodeError, KeyError) as exc:
            raise bad_request(f"the object provided is unrecognized: protobuf: {exc}") from None
    try:
        if ctype in ("application/yaml", "text/yaml"):
            data = yaml.safe_load(body.decode("utf-8"))
        else:
            data = json.loads(body)
    except (ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise bad_request(
            "the object provided is unrecognized (must be of type TokenRequest): couldn't get"
            f" version/kind; json parse error: {exc}"
        ) from None
    if not isinstance(data, dict):
        raise bad_request(
            "the object provided is unrecognized (must be of type TokenRequest): couldn't get"
            " version/kind; json parse error: json: cannot unmarshal into Go value of type"
            " struct"
        )
    return data

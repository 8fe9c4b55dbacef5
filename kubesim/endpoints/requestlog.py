"""The request log: every request kubesim answered, for tests to check what a client did.

Like kube-apiserver's audit log, a record holds the verb, resource, namespace, name and
subresource (``RequestInfoFactory``'s), the response code, the user the request was
authenticated as (and who impersonated them) and the authorizer's verdict, so a test can assert
that a client ran without a single 401 or 403; kubesim adds the method, path, query and decoded
body. Readable in process (``sim.requests``) and over HTTP at ``/_kubesim/requests``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

__all__ = ["RequestLog", "RequestRecord"]


@dataclass(slots=True)
class RequestRecord:
    time: float
    verb: str
    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    namespace: str = ""
    name: str = ""
    resource: str = ""
    subresource: str = ""
    group: str = ""
    version: str = ""
    # the request's body as sent; ``body`` decodes it when first read (most never are)
    raw_body: bytes = b""
    code: int = 0
    user_agent: str = ""
    # who asked (after impersonation), as authentication saw them, and authorization's verdict:
    # "allow", "deny" ("forbidden" in the 403), or "" when the request never got that far (401)
    user: str = ""
    groups: tuple[str, ...] = ()
    impersonated_by: str = ""
    authorization: str = ""
    authorization_reason: str = ""
    # validating admission's audit annotations (a policy's Audit action, auditAnnotations)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    _body: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def body(self) -> Any:
        """The body decoded: JSON, else YAML, else the text; None when there was none."""
        if self._body is None and self.raw_body:
            self._body = _decode_body(self.raw_body)
        return self._body

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["raw_body"], out["_body"]
        out["body"] = self.body
        return out


def _decode_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        try:
            return yaml.safe_load(body.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            return body.decode("utf-8", errors="replace")


class RequestLog:
    """An append-only list of ``RequestRecord`` with small query helpers."""

    def __init__(self, *, limit: int = 100000) -> None:
        self.limit = limit
        self._records: list[RequestRecord] = []

    def append(self, record: RequestRecord) -> None:
        self._records.append(record)
        if len(self._records) > self.limit:
            del self._records[: len(self._records) - self.limit]

    def clear(self) -> None:
        self._records.clear()

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> RequestRecord:
        return self._records[index]

    def filter(self, **criteria: Any) -> list[RequestRecord]:
        """Records whose attributes equal every given value (``verb="create"``)."""
        return [r for r in self._records if all(getattr(r, k) == v for k, v in criteria.items())]

    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self._records]

"""The request log: every request kubesim answered, for tests to check what a client did.

Like kube-apiserver's audit log, a record holds the verb, resource, namespace, name and
subresource (``RequestInfoFactory``'s), the response code, the user the request was
authenticated as (and who impersonated them) and the authorizer's verdict, so a test can assert
that a client ran without a single 401 or 403; kubesim adds the method, path, query and decoded
body. Readable in process (``sim.requests``) and over HTTP at ``/_kubesim/requests``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

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
    body: Any = None
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

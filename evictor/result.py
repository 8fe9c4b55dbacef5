"""Outcomes of one eviction and how an API answer maps onto them.

``classify`` turns a status code, headers and Status body into one of a few decisions so the
retry loop stays a small table. Pure: no I/O, no clock.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MULTIPLE_PDBS_MESSAGE",
    "Decision",
    "EvictionResult",
    "Outcome",
    "Verdict",
    "classify",
    "pdb_names_from_causes",
    "retry_after_seconds",
]

MULTIPLE_PDBS_MESSAGE: Final = "more than one PodDisruptionBudget"
_BUDGET_NAME: Final = re.compile(r"The disruption budget (\S+) ")


class Outcome(enum.StrEnum):
    EVICTED = "evicted"
    ALREADY_GONE = "already_gone"
    POD_REPLACED = "pod_replaced"
    BLOCKED_BY_PDB = "blocked_by_pdb"
    ERROR = "error"


@dataclass(slots=True)
class EvictionResult:
    """What happened to one pod: final ``outcome`` and the last answer that led to it."""

    namespace: str
    name: str
    outcome: Outcome
    attempts: int = 0
    status_code: int | None = None
    # The Status ``reason`` of that answer (``TooManyRequests``, ``NotFound``, ``Forbidden``,
    # ``Conflict``, ...): what callers switch on; "" without an answer or a Status body.
    reason: str = ""
    message: str = ""
    causes: list[dict[str, Any]] = field(default_factory=list)
    retry_after: float | None = None
    pdbs: tuple[str, ...] = ()
    uid: str = ""
    method: str = "eviction"  # or "delete"
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome in (Outcome.EVICTED, Outcome.ALREADY_GONE, Outcome.POD_REPLACED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "outcome": str(self.outcome),
            "method": self.method,
            "attempts": self.attempts,
            "statusCode": self.status_code,
            "reason": self.reason,
            "message": self.message,
            "causes": list(self.causes),
            "retryAfter": self.retry_after,
            "pdbs": list(self.pdbs),
            "seconds": round(self.seconds, 3),
        }


class Decision(enum.Enum):
    SUCCESS = "success"
    GONE = "gone"
    PDB_BLOCKED = "pdb_blocked"  # wait for the budget (at least retry_after when given)
    RETRY_AFTER = "retry_after"  # wait what the server said
    TRANSIENT = "transient"  # jittered backoff
    NAMESPACE_TERMINATING = "namespace_terminating"
    CONFLICT = "conflict"  # re-read: replaced or gone?
    MULTIPLE_PDBS = "multiple_pdbs"
    FATAL = "fatal"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    status_code: int | None
    message: str
    causes: tuple[Mapping[str, Any], ...] = ()
    retry_after: float | None = None
    pdbs: tuple[str, ...] = ()
    reason: str = ""  # the Status reason: TooManyRequests, NotFound, Forbidden, ...


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The ``Retry-After`` header in seconds (client-go reads delta-seconds only)."""
    if not headers:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def pdb_names_from_causes(causes: tuple[Mapping[str, Any], ...]) -> tuple[str, ...]:
    names: list[str] = []
    for cause in causes:
        if cause.get("reason") == "DisruptionBudget":
            m = _BUDGET_NAME.search(str(cause.get("message", "")))
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return tuple(names)


def _causes(body: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(body, Mapping):
        return ()
    details = body.get("details")
    if not isinstance(details, Mapping):
        return ()
    causes = details.get("causes")
    if not isinstance(causes, list):
        return ()
    return tuple(c for c in causes if isinstance(c, Mapping))


def classify(status: int, headers: Mapping[str, str] | None, body: Any) -> Verdict:
    """One API answer to an eviction (or delete) → what the retry loop does next.

    The Eviction API answers (kube-apiserver ``pkg/registry/core/pod/storage/eviction.go``):
    201 evicted; 404 the pod is gone; 429 a PodDisruptionBudget blocks (no ``Retry-After``: the
    budget is exhausted) or the budget is "still being processed" / the server is rate limiting
    (``Retry-After`` present); 500 with "more than one PodDisruptionBudget" (never retried); 409 a
    UID/resourceVersion precondition failed; 403 with the ``NamespaceTerminating`` cause. The Status
    ``reason`` (``TooManyRequests``, ``NotFound``, ``Forbidden``, ...) is kept with the code and
    message, because callers switch on it, as on client-go's ``errors.ReasonForError``.
    """
    message = reason = ""
    if isinstance(body, Mapping):
        message = str(body.get("message") or "")
        reason = str(body.get("reason") or "")
    elif isinstance(body, str):
        message = body.strip()
    causes = _causes(body)
    retry_after = retry_after_seconds(headers)
    if 200 <= status < 300:
        return Verdict(Decision.SUCCESS, status, message, reason=reason)
    if status == 404:
        return Verdict(Decision.GONE, status, message, causes, reason=reason)
    if status == 429:
        pdbs = pdb_names_from_causes(causes)
        if pdbs or retry_after is None:
            return Verdict(
                Decision.PDB_BLOCKED, status, message, causes, retry_after, pdbs, reason=reason
            )
        return Verdict(Decision.RETRY_AFTER, status, message, causes, retry_after, reason=reason)
    if status == 403 and any(c.get("reason") == "NamespaceTerminating" for c in causes):
        return Verdict(Decision.NAMESPACE_TERMINATING, status, message, causes, reason=reason)
    if status == 409:
        return Verdict(Decision.CONFLICT, status, message, causes, reason=reason)
    if status == 500 and MULTIPLE_PDBS_MESSAGE in message:
        return Verdict(Decision.MULTIPLE_PDBS, status, message, causes, reason=reason)
    if status >= 500:
        return Verdict(Decision.TRANSIENT, status, message, causes, retry_after, reason=reason)
    return Verdict(Decision.FATAL, status, message, causes, reason=reason)

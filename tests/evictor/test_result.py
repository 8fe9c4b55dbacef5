"""``classify``: an API answer's Status ``reason`` travels with the verdict, whatever it decides."""

from __future__ import annotations

import pytest

from evictor.result import Decision, classify


@pytest.mark.parametrize(
    ("status", "reason", "headers", "decision"),
    [
        (429, "TooManyRequests", {}, Decision.PDB_BLOCKED),
        (429, "TooManyRequests", {"Retry-After": "1"}, Decision.RETRY_AFTER),
        (404, "NotFound", {}, Decision.GONE),
        (403, "Forbidden", {}, Decision.FATAL),
        (409, "Conflict", {}, Decision.CONFLICT),
        (503, "ServiceUnavailable", {}, Decision.TRANSIENT),
        (201, "", {}, Decision.SUCCESS),
    ],
)
def test_the_status_reason_is_kept(
    status: int, reason: str, headers: dict[str, str], decision: Decision
) -> None:
    body = {"kind": "Status", "status": "Failure", "reason": reason, "message": "m", "code": status}
    verdict = classify(status, headers, body)
    assert (verdict.decision, verdict.reason) == (decision, reason)


def test_an_answer_without_a_status_body_has_no_reason() -> None:
    assert classify(502, {}, "Bad Gateway").reason == ""

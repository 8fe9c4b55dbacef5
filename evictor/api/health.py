"""How the API server is answering this process, for readiness probes and metrics.

The agent's ``/readyz`` and systemd watchdog looked only at its sync loop: a token that expired
for good left it syncing over a stale pod view, evicting nothing new, with every probe green
(issue 15). What tells the truth is the API's own answers: a 401 that survived a credential
refresh (``evictor.api.connect`` already refreshed once and resent) or a 403 says the process
can no longer act, and only an answer that is neither says it can again (kube-apiserver
authenticates and authorizes before anything else, so any other status proves both passed).
``ApiHealth`` keeps since when every answer has been a refusal, the last refusal, and a count of
failed answers by status code (0: no answer at all) for a metric.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["REFUSALS", "ApiHealth"]

REFUSALS = (401, 403)


@dataclass(slots=True)
class ApiHealth:
    clock: Callable[[], float] = time.monotonic
    refused_since: float | None = None  # first refusal with no other answer since
    last_refusal: str = ""
    errors: dict[int, int] = field(default_factory=dict)  # failed answers by status (0: none)
    listeners: list[Callable[[int], None]] = field(default_factory=list)  # called per failure

    def record(self, status: int, *, what: str = "") -> None:
        """One final answer (after any refresh and resend); ``status`` 0: no answer."""
        if status in REFUSALS:
            if self.refused_since is None:
                self.refused_since = self.clock()
            self.last_refusal = f"{status} to {what}" if what else str(status)
        elif status:
            self.refused_since = None
        if status == 0 or status >= 400:
            self.errors[status] = self.errors.get(status, 0) + 1
            for listener in self.listeners:
                listener(status)

    def refused_for(self) -> float:
        """Seconds every answer has been a 401 or 403 (0: the last one was not)."""
        return 0.0 if self.refused_since is None else self.clock() - self.refused_since

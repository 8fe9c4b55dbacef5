"""How the API server is answering this process, for readiness probes and metrics.

The agent's ``/readyz`` and systemd watchdog once looked only at its sync loop, so a token that
expired for good left it syncing over a stale pod view, evicting nothing new, with every probe
green. The truth is in the API's own answers, which ``ApiHealth`` keeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["REFUSALS", "ApiHealth", "request_kind"]

REFUSALS = (401, 403)
# ``namespaces/{name}/{subresource}`` is the namespace object's own subresource (kube's
# RequestInfoFactory), not a namespaced collection
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def request_kind(what: str) -> str:
    """``PATCH /api/v1/namespaces/team-a/pods/web-1/status`` → ``PATCH pods/status``: the
    method and the resource (``resource.group``, with its subresource), no namespace, no name.
    A path outside ``/api`` and ``/apis`` keeps its first segment (``GET /version``)."""
    method, _, path = what.partition(" ")
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = (parts[1] if len(parts) > 1 else ""), parts[3:]
    else:
        return f"{method} /{parts[0]}" if parts else method
    if rest[:1] == ["namespaces"] and len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        rest = rest[2:]  # a namespaced resource
    if not rest:
        return f"{method} {'/'.join(parts[:2])}"  # discovery
    resource = rest[0] + (f".{group}" if group else "")
    if len(rest) > 2:
        resource += f"/{rest[2]}"
    return f"{method} {resource}"


@dataclass(slots=True)
class ApiHealth:
    """Since when every answer has been a refusal, the refusals since then by status code,
    the last one, and failed answers by status code (0: no answer at all) for a metric.

    A 401 that survived a credential refresh (``evictor.api.connect`` already refreshed once and
    resent) or a 403 says the process can no longer act; only an answer that is neither says it can
    again (kube-apiserver authenticates and authorizes before anything else, so any other status
    proves both passed).

    Of a refused request it keeps the kind (``PATCH pods/status``), never a namespace or a name:
    the agent's ``/readyz`` shows it to whoever can reach the port, and a tenant's pod names are not
    theirs to read.
    """

    clock: Callable[[], float] = time.monotonic
    refused_since: float | None = None  # first refusal with no other answer since
    refusals: dict[int, int] = field(default_factory=dict)  # 401s and 403s since then
    last_refusal: str = ""  # "403 to PATCH pods/status" (``request_kind``)
    errors: dict[int, int] = field(default_factory=dict)  # failed answers by status (0: none)
    listeners: list[Callable[[int], None]] = field(default_factory=list)  # called per failure

    def record(self, status: int, *, what: str = "") -> None:
        """One final answer (after any refresh and resend); ``status`` 0: no answer."""
        if status in REFUSALS:
            if self.refused_since is None:
                self.refused_since = self.clock()
                self.refusals.clear()
            self.refusals[status] = self.refusals.get(status, 0) + 1
            self.last_refusal = f"{status} to {request_kind(what)}" if what else str(status)
        elif status:
            self.refused_since = None
        if status == 0 or status >= 400:
            self.errors[status] = self.errors.get(status, 0) + 1
            for listener in self.listeners:
                listener(status)

    def refused_for(self) -> float:
        """Seconds every answer has been a 401 or 403 (0: the last one was not)."""
        return 0.0 if self.refused_since is None else self.clock() - self.refused_since

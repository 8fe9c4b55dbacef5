"""``evict drain``'s live line under kubectl's output, only when stdout is a terminal: pods
done of all, the pods each budget blocks, the next retry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evictor.cli.common import Output

if TYPE_CHECKING:
    from evictor.client import Evictor

__all__ = ["Progress"]


class Progress:
    """A rich live line under kubectl's output: done/total, blocked pods, next retry."""

    def __init__(self, reports: Callable[[], list[Any]], evictor: Evictor, io: Output) -> None:
        from rich.console import Console
        from rich.live import Live

        self.reports = reports
        self.evictor = evictor
        self.io = io
        self.live = Live(
            get_renderable=self.render, console=Console(), refresh_per_second=4, transient=True
        )

    @classmethod
    def start(cls, reports: Callable[[], list[Any]], evictor: Evictor, io: Output) -> Progress:
        p = cls(reports, evictor, io)
        p.live.start()
        io.live = p.live
        return p

    def stop(self) -> None:
        self.live.stop()
        self.io.live = None

    def render(self) -> Any:
        from rich.text import Text

        reps = self.reports()
        done = sum(
            1
            for r in reps
            if r.wait is not None
            or (r.result is not None and r.wait is None and r.result.outcome != "evicted")
        )
        blocked: dict[str, int] = {}
        next_retry: float | None = None
        now = time.time()
        for r in reps:
            if r.result is None and r.blocked_by and r.next_retry is not None:
                for pdb in r.blocked_by:
                    blocked[pdb] = blocked.get(pdb, 0) + 1
                if r.next_retry is not None:
                    next_retry = (
                        r.next_retry if next_retry is None else min(next_retry, r.next_retry)
                    )
        text = Text(f"{done}/{len(reps)} pods done")
        if blocked:
            parts = []
            for pdb, n in blocked.items():
                pod_ns = next((r.pod.namespace for r in reps if pdb in r.blocked_by), "")
                st = self.evictor.pdb_state(pod_ns, pdb)
                detail = (
                    f" {st.current_healthy}/{st.desired_healthy} healthy" if st is not None else ""
                )
                parts.append(f"{n} blocked by PDB {pdb}{detail}")
            text.append(" · " + ", ".join(parts), style="yellow")
        if next_retry is not None:
            text.append(f" · next retry in {max(next_retry - now, 0):.1f}s")
        return text

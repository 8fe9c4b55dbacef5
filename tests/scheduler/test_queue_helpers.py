"""Shared helpers for the scheduling-queue tests (no tests here): a fake clock, pod builders."""

from __future__ import annotations

from typing import Any

from kube.objects import Pod

T0 = 1_700_000_000.0  # a whole second, so backoff windows are easy to reason about


class FakeClock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def now(self) -> float:
        return self.t

    def step(self, seconds: float) -> None:
        self.t += seconds


def mkpod(name: str, priority: int | None = None, *, ns: str = "default", **kw: Any) -> Pod:
    kw.setdefault("uid", f"uid-{ns}-{name}")
    return Pod(name, namespace=ns, spec_priority=priority, **kw)

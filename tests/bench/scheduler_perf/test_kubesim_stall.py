"""The kubesim backend calls a run stalled only when nothing moves: no pod event and no answer
to the runner's own requests, so a slow setup (thousands of nodes over HTTP) is not a stall."""

from __future__ import annotations

import time

from tests.support.bench import load_bench

SP = load_bench("scheduler_perf")


def test_an_answered_request_is_movement() -> None:
    backend = SP.KubesimBackend(queueing_hints=True)
    try:
        quiet_since = time.monotonic() - 2 * SP.kubesim_backend.STALL_SECONDS
        backend._last_event = quiet_since  # as after a long wait with no pod event
        assert not backend.step(time.monotonic())
        backend.create_namespace("answered", {})
        assert backend.step(time.monotonic())
    finally:
        backend.close()

"""``Evictor`` against a frozen kubesim: what each API answer leads to, read from the request log.

These are the answers only fault injection or a pinned budget produce on demand (Retry-After,
multi-PDB 500s, transport errors, a budget held shut or stale). What a living cluster produces
by itself — budgets reopened by real replacements, StatefulSet pods recreated under the same
name, a server without the eviction subresource — is in ``test_living_cluster.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from evictor.client import Evictor, PodRef
from evictor.listener import EvictionListener
from evictor.result import EvictionResult, Outcome
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.clock import FakeClock
from tests.support.living import pin
from tests.support.manifests import node, pdb, pod, replicaset
from tests.support.wait import until

WEB = [pod(f"web-{i}", app="web") for i in range(3)]
BASE = [node("node-1"), node("node-2"), replicaset("web"), *WEB]


def state(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [*BASE, *extra]


async def _serve(objs: list[dict[str, Any]], faults: Any = None) -> AsyncIterator[Simulator]:
    # Fault injection stands in for the controllers here: a frozen cluster.
    async with kubesim.serve(
        state=objs, faults=faults, time_scale=0.01, disabled_controllers=FROZEN
    ) as sim:
        yield sim


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async for s in _serve(state(pdb("web", min_available=2))):
        yield s


@pytest.fixture
async def evictor(sim: Simulator) -> AsyncIterator[Evictor]:
    api = sim.api_client()
    ev = Evictor(api, default_retry=5.0)
    try:
        yield ev
    finally:
        await ev.close()
        await api.close()


def evictions(sim: Simulator, name: str) -> list[Any]:
    return list(sim.requests.filter(subresource="eviction", name=name))


async def test_evicts_with_the_listed_uid_as_precondition(sim: Simulator, evictor: Evictor) -> None:
    uid = WEB[0]["metadata"]["uid"]
    result = await evictor.evict("default", "web-0", expected_uid=uid, grace_period_seconds=3)
    assert result.outcome is Outcome.EVICTED
    assert result.attempts == 1 and result.status_code == 201
    assert result.reason == ""  # a Success Status has none
    (req,) = evictions(sim, "web-0")
    assert req.body["apiVersion"] == "policy/v1"
    assert req.body["deleteOptions"]["preconditions"] == {"uid": uid}
    assert req.body["deleteOptions"]["gracePeriodSeconds"] == 3


async def test_reopened_budget_releases_only_as_many_waiters_as_it_allows(sim: Simulator) -> None:
    pin(sim, "web", 0)
    clock = FakeClock()  # the 5 s retry never comes: only the budget's watch releases a waiter
    async with sim.api_client() as api, Evictor(api, clock=clock.now, sleep=clock.sleep) as ev:
        tasks = [asyncio.create_task(ev.evict("default", f"web-{i}")) for i in range(3)]
        await clock.asleep(3)  # all three refused and waiting for the budget
        assert [r.code for r in sim.requests.filter(subresource="eviction")] == [429] * 3
        pin(sim, "web", 1)
        await until(lambda: sum(t.done() for t in tasks) == 1, timeout=30.0)
        await asyncio.sleep(0.3)  # room for a thundering herd of retries to show
        # one slot: one waiter retried, the other two keep waiting (no thundering herd of 429s)
        assert [r.code for r in sim.requests.filter(subresource="eviction")][3:] == [201]
        assert clock.sleeping == 2
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_deadline_ends_a_blocked_eviction_as_blocked_by_pdb(sim: Simulator) -> None:
    pin(sim, "web", 0, healthy=2, desired=3)
    clock = FakeClock()
    async with sim.api_client() as api, Evictor(api, clock=clock.now, sleep=clock.sleep) as ev:
        task = asyncio.create_task(ev.evict("default", "web-0", deadline=clock.now() + 0.5))
        await clock.asleep()
        # the 5 s retry is cut to what is left of the deadline, and then no second attempt
        assert clock.requested == [0.5]
        clock.advance(0.5)
        result = await asyncio.wait_for(task, 30)
    assert len(evictions(sim, "web-0")) == 1
    assert result.outcome is Outcome.BLOCKED_BY_PDB and result.attempts == 1
    assert result.status_code == 429 and result.pdbs == ("web",)
    assert result.reason == "TooManyRequests"
    assert "disruption budget web needs 3 healthy pods and has 2" in result.causes[0]["message"]
    assert result.to_dict()["reason"] == "TooManyRequests"


async def test_max_attempts_bounds_the_retries(sim: Simulator, evictor: Evictor) -> None:
    pin(sim, "web", 0)
    evictor.default_retry = 0.05
    result = await evictor.evict("default", "web-0", max_attempts=3)
    assert result.outcome is Outcome.BLOCKED_BY_PDB and result.attempts == 3
    assert [r.code for r in evictions(sim, "web-0")] == [429, 429, 429]


async def test_cancellation_stops_a_waiting_eviction(sim: Simulator, evictor: Evictor) -> None:
    pin(sim, "web", 0)
    task = asyncio.create_task(evictor.evict("default", "web-0"))
    await until(lambda: len(evictions(sim, "web-0")) == 1, timeout=30.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pin(sim, "web", 1)
    await asyncio.sleep(0.3)
    assert len(evictions(sim, "web-0")) == 1


async def test_missing_pod_is_already_gone(sim: Simulator, evictor: Evictor) -> None:
    result = await evictor.evict("default", "nope", expected_uid="u-1")
    assert result.outcome is Outcome.ALREADY_GONE and result.status_code == 404
    assert result.reason == "NotFound"
    assert result.ok
    # the pod read before the first request (no UID known) finds it gone: the same answer
    result = await evictor.evict("default", "nope")
    assert (result.outcome, result.status_code, result.reason) == (
        Outcome.ALREADY_GONE,
        404,
        "NotFound",
    )


def _answer(
    code: int, reason: str, message: str, retry_after: int, name: str = "web-0", **extra: Any
) -> Any:
    """A fault: the first eviction of ``name`` gets this canned Status (``Retry-After`` header
    when ``retry_after`` > 0)."""
    match = {"verb": "create", "resource": "pods", "subresource": "eviction", "name": name,
             "calls": "1"}  # fmt: skip
    respond = {"code": code, "reason": reason, "message": message,
               "retryAfterSeconds": retry_after, **extra}  # fmt: skip
    return {"faults": [{"match": match, "respond": respond}]}


BUDGET_429 = "Cannot evict pod as it would violate the pod's disruption budget."


class _Attempts(EvictionListener):
    """When (on the fake clock) each attempt went out."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.at: list[float] = []
        self.answers: list[tuple[int | None, float | None, str]] = []

    def attempt(self, namespace: str, name: str, attempt: int) -> None:
        self.at.append(self.clock.now())

    def retry(self, result: EvictionResult, wait: float) -> None:
        cause = result.causes[0]["message"] if result.causes else ""
        self.answers.append((result.status_code, result.retry_after, cause))


async def test_retry_after_is_waited_as_the_server_said() -> None:
    faults = _answer(429, "TooManyRequests", "Too many requests, please try again later.", 1)
    async for sim in _serve(state(), faults):
        clock = FakeClock()
        attempts = _Attempts(clock)
        async with sim.api_client() as api:
            ev = Evictor(api, clock=clock.now, sleep=clock.sleep, listener=attempts)
            task = asyncio.create_task(ev.evict("default", "web-0"))
            await clock.asleep()
            assert clock.requested == [1.0]
            clock.advance(1.0)
            result = await asyncio.wait_for(task, 5)
            await ev.close()
        first, second = evictions(sim, "web-0")
        assert (first.code, second.code) == (429, 201)
        assert attempts.at[1] - attempts.at[0] == 1.0
        assert result.outcome is Outcome.EVICTED and result.attempts == 2


async def test_retry_after_is_a_floor_even_when_the_watched_budget_shows_room() -> None:
    """A budget 429 with ``Retry-After: 1`` while the PDB watch shows room: before, the watch
    released the retry after 10 µs; the server's 1 s is a floor (client-go)."""
    cause = {
        "reason": "DisruptionBudget",
        "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
    }
    faults = _answer(429, "TooManyRequests", BUDGET_429, 1, causes=[cause])
    async for sim in _serve(state(pdb("web", min_available=2)), faults):
        pin(sim, "web", 1)  # room: the watch would release a waiter at once
        clock = FakeClock()
        attempts = _Attempts(clock)
        async with sim.api_client() as api:
            ev = Evictor(api, clock=clock.now, sleep=clock.sleep, listener=attempts)
            task = asyncio.create_task(ev.evict("default", "web-0"))
            await clock.asleep()
            state_ = ev.pdb_state("default", "web")
            assert state_ is not None and state_.open  # the watch is up and shows room
            await asyncio.sleep(0.2)
            assert len(evictions(sim, "web-0")) == 1  # held by the floor, not the watch
            clock.advance(0.9)
            await asyncio.sleep(0.05)
            assert len(evictions(sim, "web-0")) == 1
            clock.advance(0.1)
            result = await asyncio.wait_for(task, 5)
            await ev.close()
        assert clock.requested == [1.0]
        assert attempts.at[1] - attempts.at[0] >= 1.0
        assert result.outcome is Outcome.EVICTED and result.attempts == 2


async def test_budget_429_without_retry_after_is_released_by_the_watch() -> None:
    """The server did not bound the wait: the PDB watch may end it early (here without the
    fake clock moving at all)."""
    async for sim in _serve(state(pdb("web", min_available=2))):
        pin(sim, "web", 0)
        clock = FakeClock()
        attempts = _Attempts(clock)
        async with sim.api_client() as api:
            ev = Evictor(api, clock=clock.now, sleep=clock.sleep, listener=attempts)
            task = asyncio.create_task(ev.evict("default", "web-0"))
            await clock.asleep()
            assert clock.requested == [5.0]  # default_retry, the fallback
            pin(sim, "web", 1)
            result = await asyncio.wait_for(task, 5)
            await ev.close()
        assert [r.code for r in evictions(sim, "web-0")] == [429, 201]
        assert attempts.at[1] == attempts.at[0]  # released by the watch, not the clock
        assert result.outcome is Outcome.EVICTED


async def test_a_long_retry_after_is_not_cut_short() -> None:
    """No upper bound shortens the server's advice; a deadline ends the wait, not early."""
    faults = _answer(503, "ServiceUnavailable", "busy", 30)
    async for sim in _serve(state(), faults):
        clock = FakeClock()
        async with sim.api_client() as api:
            ev = Evictor(api, clock=clock.now, sleep=clock.sleep)
            task = asyncio.create_task(ev.evict("default", "web-0"))
            await clock.asleep()
            assert clock.requested == [30.0]
            clock.advance(29.0)
            await asyncio.sleep(0.1)
            assert len(evictions(sim, "web-0")) == 1
            clock.advance(1.0)
            result = await asyncio.wait_for(task, 5)
            assert result.outcome is Outcome.EVICTED
            # with a deadline before the advised time: no second attempt at all
            sim.add_faults(_answer(503, "ServiceUnavailable", "busy", 30, name="web-1"))
            task = asyncio.create_task(ev.evict("default", "web-1", deadline=clock.now() + 3))
            await clock.asleep()
            assert clock.requested[-1] == 3.0
            clock.advance(3.0)
            result = await asyncio.wait_for(task, 5)
            await ev.close()
        assert len(evictions(sim, "web-1")) == 1
        assert result.outcome is Outcome.ERROR and result.status_code == 503
        assert result.message == "global timeout reached: busy"


async def test_multiple_pdbs_fail_at_once_and_are_named() -> None:
    async for sim in _serve(
        state(pdb("web", min_available=1), pdb("web-too", app="web", min_available=1))
    ):
        async with sim.api_client() as api:
            ev = Evictor(api)
            result = await ev.evict("default", "web-0")
            await ev.close()
        assert result.outcome is Outcome.ERROR and result.status_code == 500
        assert result.attempts == 1 and len(evictions(sim, "web-0")) == 1
        assert result.pdbs == ("web", "web-too")
        assert result.reason == ""  # the apiserver's multi-PDB Status names no reason
        assert "more than one PodDisruptionBudget" in result.message
        assert "web, web-too" in result.message


async def test_namespace_terminating_ends_when_the_pod_is_terminating() -> None:
    objs = state(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}},
        pod("job-0", namespace="doomed", grace=600),
    )
    async for sim in _serve(objs):
        ns_type = sim.scheme.for_kind("v1", "Namespace")
        from kubesim.registry.generic import DeleteOptions

        sim.registry.delete(ns_type, "", "doomed", DeleteOptions())
        async with sim.api_client() as api:
            ev = Evictor(api)
            result = await asyncio.wait_for(ev.evict("default", "web-0"), 5)
            assert result.outcome is Outcome.EVICTED
            result = await asyncio.wait_for(ev.evict("doomed", "job-0"), 5)
            await ev.close()
        codes = [r.code for r in evictions(sim, "job-0")]
        assert codes and set(codes) == {403}
        assert result.outcome in (Outcome.EVICTED, Outcome.ALREADY_GONE), result
        if result.outcome is Outcome.EVICTED:
            p = sim.get("Pod", "doomed", "job-0")
            assert p is None or p["metadata"].get("deletionTimestamp")


async def test_transport_errors_retry_with_backoff() -> None:
    faults = {
        "faults": [
            {
                "match": {"verb": "create", "resource": "pods", "subresource": "eviction",
                          "name": "web-0", "calls": "1-2"},
                "drop": True,
            }
        ]
    }  # fmt: skip
    async for sim in _serve(state(), faults):
        async with sim.api_client() as api:
            ev = Evictor(api)
            result = await ev.evict("default", "web-0")
            await ev.close()
        assert result.outcome is Outcome.EVICTED and result.attempts == 3


async def test_other_errors_fail_at_once() -> None:
    faults = {
        "faults": [
            {
                "match": {"verb": "create", "resource": "pods", "subresource": "eviction",
                          "name": "web-0"},
                "respond": {"code": 403, "reason": "Forbidden", "message": "nope"},
            }
        ]
    }  # fmt: skip
    async for sim in _serve(state(), faults):
        async with sim.api_client() as api:
            ev = Evictor(api)
            result = await ev.evict("default", "web-0")
            await ev.close()
        assert result.outcome is Outcome.ERROR and result.attempts == 1
        assert result.status_code == 403 and result.message == "nope"
        assert result.reason == "Forbidden"


async def test_delete_sends_uid_precondition_and_dry_run(sim: Simulator, evictor: Evictor) -> None:
    uid = WEB[0]["metadata"]["uid"]
    result = await evictor.delete("default", "web-0", expected_uid=uid, dry_run=True)
    assert result.outcome is Outcome.EVICTED and result.method == "delete"
    (req,) = sim.requests.filter(verb="delete", name="web-0")
    assert req.query.get("dryRun") == ["All"]
    assert req.body["preconditions"] == {"uid": uid}
    assert sim.get("Pod", "default", "web-0") is not None


async def test_a_delete_with_a_uid_never_reads_the_pod() -> None:
    """Its precondition answers what a read would: retried after a 503, the DELETE itself
    finds the pod gone (404) or replaced under its name (409)."""
    unavailable = {"code": 503, "reason": "ServiceUnavailable", "message": "try again"}
    faults = {
        "faults": [
            {"match": {"verb": "delete", "resource": "pods", "name": name, "calls": "1"},
             "respond": unavailable}
            for name in ("web-0", "web-1")
        ]
    }  # fmt: skip

    paused = asyncio.Event()
    resume = asyncio.Event()

    async def pause(_: float) -> None:  # the wait before the retry, until the test resumes it
        paused.set()
        await resume.wait()
        resume.clear()

    async def delete_retried(sim: Simulator, ev: Evictor, i: int, *, recreate: bool) -> Any:
        """Delete ``web-i``; while the client waits to retry the 503, the pod goes (and comes
        back under its name with another UID when ``recreate``)."""
        name = f"web-{i}"
        paused.clear()
        task = asyncio.create_task(
            ev.delete("default", name, expected_uid=WEB[i]["metadata"]["uid"])
        )
        await asyncio.wait_for(paused.wait(), 5)
        rt = sim.scheme.for_kind("v1", "Pod")
        assert rt is not None
        sim.registry.delete(rt, "default", name, _force())
        if recreate:
            sim.apply(pod(name, app="web", uid="new"))
        resume.set()
        return await asyncio.wait_for(task, 5)

    async for sim in _serve(state(), faults):
        async with sim.api_client() as api:
            ev = Evictor(api, sleep=pause)
            done = await ev.delete("default", "web-2", expected_uid=WEB[2]["metadata"]["uid"])
            gone = await delete_retried(sim, ev, 0, recreate=False)
            replaced = await delete_retried(sim, ev, 1, recreate=True)
            await ev.close()
        assert done.outcome is Outcome.EVICTED and done.attempts == 1
        assert (gone.outcome, gone.status_code, gone.attempts) == (Outcome.ALREADY_GONE, 404, 2)
        assert replaced.outcome is Outcome.POD_REPLACED and replaced.attempts == 2
        old = WEB[1]["metadata"]["uid"]
        assert replaced.message == f"pod default/web-1 was replaced (uid {old} is now new)"
        assert sim.get("Pod", "default", "web-1") is not None  # the replacement stays
        assert sim.requests.filter(verb="get", resource="pods") == []


async def test_wait_for_deletion_uses_one_watch(sim: Simulator, evictor: Evictor) -> None:
    refs = [PodRef("default", f"web-{i}", WEB[i]["metadata"]["uid"], "node-1") for i in range(2)]
    for r in refs:
        await evictor.delete(r.namespace, r.name, expected_uid=r.uid)
    deadline = time.time() + 5
    done = await evictor.wait_for_deletion(refs, deadline=deadline)
    assert {k: v.state for k, v in done.items()} == {
        ("default", "web-0"): "deleted",
        ("default", "web-1"): "deleted",
    }
    assert len(sim.requests.filter(verb="watch", resource="pods")) == 1
    assert sim.requests.filter(verb="get", resource="pods") == []


async def test_wait_for_deletion_falls_back_to_polling() -> None:
    faults = {"faults": [{"match": {"verb": "watch", "resource": "pods"}, "drop": True}]}
    async for sim in _serve(state(), faults):
        async with sim.api_client() as api:
            ev = Evictor(api, poll_interval=0.05)
            ref = PodRef("default", "web-0", WEB[0]["metadata"]["uid"], "node-1")
            await ev.delete("default", "web-0")
            done = await ev.wait_for_deletion([ref], deadline=time.time() + 5)
            await ev.close()
        assert done[("default", "web-0")].state == "deleted"
        assert sim.requests.filter(verb="get", resource="pods", name="web-0")


async def test_wait_for_deletion_counts_a_new_uid_as_gone_and_times_out(
    sim: Simulator, evictor: Evictor
) -> None:
    sim.registry.delete(sim.scheme.for_kind("v1", "Pod"), "default", "web-0", _force())
    sim.apply(pod("web-0", app="web", uid="new"))
    replaced = PodRef("default", "web-0", WEB[0]["metadata"]["uid"], "node-1")
    done = await evictor.wait_for_deletion([replaced], deadline=time.time() + 30)
    assert done[("default", "web-0")].state == "deleted"  # its name has another UID now
    still_there = PodRef("default", "web-1", WEB[1]["metadata"]["uid"], "node-1")
    done = await evictor.wait_for_deletion([still_there], deadline=time.time() + 0.3)
    assert done[("default", "web-1")].state == "timeout"


async def test_concurrency_bounds_requests_in_flight() -> None:
    objs = [node("node-1"), replicaset("web"), *[pod(f"w-{i}", app="web") for i in range(12)]]
    faults = {
        "faults": [
            {"match": {"verb": "create", "resource": "pods", "subresource": "eviction"},
             "delay": 0.2}
        ]
    }  # fmt: skip
    async for sim in _serve(objs, faults):
        async with sim.api_client() as api:
            ev = Evictor(api, concurrency=3)
            results = await asyncio.gather(
                *(ev.evict("default", f"w-{i}", expected_uid=objs[2 + i]["metadata"]["uid"])
                  for i in range(12))
            )  # fmt: skip
            await ev.close()
        assert all(r.outcome is Outcome.EVICTED for r in results)
        arrivals = sorted(r.time for r in sim.requests.filter(subresource="eviction"))
        # at most 3 in flight: the 4th request arrives only after the 1st one's 0.2 s answer
        assert all(b - a >= 0.18 for a, b in zip(arrivals, arrivals[3:], strict=False))


def _force() -> Any:
    from kubesim.registry.generic import DeleteOptions

    return DeleteOptions(grace_period_seconds=0)


async def test_wait_for_deletion_skips_pods_terminating_for_too_long() -> None:
    faults = {"pods": [{"ref": "default/web-0", "neverDelete": True}]}
    async for sim in _serve(state(), faults):
        async with sim.api_client() as api:
            ev = Evictor(api)
            ref = PodRef("default", "web-0", WEB[0]["metadata"]["uid"], "node-1")
            # deletionTimestamp = now + grace, as kube-apiserver sets it
            await ev.delete("default", "web-0", grace_period_seconds=1)
            seen: list[str] = []

            def on_done(_pod: Any, outcome: Any, seen: list[str] = seen) -> None:
                seen.append(outcome.message)

            done = await ev.wait_for_deletion(
                [ref], deadline=time.time() + 10, skip_wait_for_delete_timeout=1, on_done=on_done
            )
            await ev.close()
        assert done[("default", "web-0")].state == "skipped"
        assert seen == ['pod "web-0" has DeletionTimestamp older than 1 seconds, skipping']
        assert sim.get("Pod", "default", "web-0") is not None  # still Terminating


def test_package_exports_load_lazily() -> None:
    import evictor

    assert evictor.Evictor is Evictor
    assert evictor.Outcome.EVICTED == "evicted"
    with pytest.raises(AttributeError):
        _ = evictor.nothing_here


async def test_still_processing_429_waits_its_retry_after_whatever_the_watch_shows(
    sim: Simulator,
) -> None:
    """The apiserver's "still being processed" 429 carries ``Retry-After: 10``. Before, the PDB
    watch seeing the generation observed released the retry after 2 s; now 10 s is a floor."""
    current = sim.get("PodDisruptionBudget", "default", "web")
    assert current is not None
    generation = current["metadata"].get("generation", 1)
    stale = {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3}
    sim.pin_pdb("default", "web", {**stale, "observedGeneration": generation - 1})
    clock = FakeClock()
    attempts = _Attempts(clock)
    async with sim.api_client() as api:
        ev = Evictor(api, clock=clock.now, sleep=clock.sleep, listener=attempts)
        task = asyncio.create_task(ev.evict("default", "web-0"))
        await clock.asleep()
        (first,) = evictions(sim, "web-0")
        ((code, retry_after, cause),) = attempts.answers
        assert (first.code, code, retry_after) == (429, 429, 10.0)
        assert cause == "The disruption budget web is still being processed by the server."
        sim.pin_pdb("default", "web", {**stale, "observedGeneration": generation})
        await until(lambda: bool((s := ev.pdb_state("default", "web")) and s.open), timeout=30.0)
        await asyncio.sleep(0.2)
        assert len(evictions(sim, "web-0")) == 1  # the watch fired; the floor holds
        clock.advance(10.0)
        result = await asyncio.wait_for(task, 5)
        await ev.close()
    assert clock.requested == [10.0]
    assert attempts.at[1] - attempts.at[0] >= 10.0
    assert result.outcome is Outcome.EVICTED


async def test_policy_v1beta1_when_discovery_offers_only_that(
    sim: Simulator, evictor: Evictor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery's APIResourceList is rewritten to name policy/v1beta1 for ``pods/eviction``
    (kubesim serves policy/v1; ``eviction_subresource=False`` covers the absent case)."""
    import evictor.client as client_module
    from evictor.api.calls import Response

    real = client_module.send

    async def beta(api: Any, method: str, path: str, **kw: Any) -> Response:
        resp = await real(api, method, path, **kw)
        if path == "/api/v1/":
            for r in resp.body["resources"]:
                if r["name"] == "pods/eviction":
                    r["version"] = "v1beta1"
        return resp

    monkeypatch.setattr(client_module, "send", beta)
    assert await evictor.eviction_version() == "policy/v1beta1"
    result = await evictor.evict("default", "web-0")
    assert result.outcome is Outcome.EVICTED
    (req,) = evictions(sim, "web-0")
    assert req.body["apiVersion"] == "policy/v1beta1" and req.code == 201


async def test_deletion_wait_takes_pods_added_while_it_runs(
    sim: Simulator, evictor: Evictor
) -> None:
    """A drain adds each pod once its eviction is granted, to one running watch."""
    (marker,) = sim.apply(pod("marker", app="other", owner=None))  # on node-1 too
    refs = [PodRef("default", f"web-{i}", WEB[i]["metadata"]["uid"], "node-1") for i in range(3)]
    seen: list[str] = []
    waiter = evictor.deletion_wait(
        deadline=time.time() + 30, node="node-1", on_done=lambda p, _o: seen.append(p.name)
    )
    running = asyncio.create_task(waiter.run())
    await until(lambda: bool(sim.requests.filter(verb="watch", resource="pods")), timeout=30.0)
    # gone before it is added: the watch has seen its deletion — it has once it reports the
    # marker's, which comes after web-0's in the watch
    waiter.add(PodRef("default", "marker", marker["metadata"]["uid"], "node-1"))
    await evictor.delete("default", "web-0", grace_period_seconds=0)
    await evictor.delete("default", "marker", grace_period_seconds=0)
    await until(lambda: seen == ["marker"], timeout=30.0)
    waiter.add(refs[0])
    assert seen == ["marker", "web-0"]
    # added first, deleted afterwards
    waiter.add(refs[1])
    await evictor.delete("default", "web-1", grace_period_seconds=0)
    await until(lambda: seen == ["marker", "web-0", "web-1"], timeout=30.0)
    assert not running.done()  # not closed: more pods may come
    waiter.close()
    done = await asyncio.wait_for(running, 30)
    assert {k: v.state for k, v in done.items()} == {
        ("default", "marker"): "deleted",
        ("default", "web-0"): "deleted",
        ("default", "web-1"): "deleted",
    }
    assert len(sim.requests.filter(verb="watch", resource="pods")) == 1
    assert len(sim.requests.filter(verb="list", resource="pods")) == 1
    assert refs[2].name not in seen


async def test_deletion_watch_from_a_stale_snapshot_lists_again() -> None:
    objs = state()
    async with kubesim.serve(
        state=objs, time_scale=0.01, disabled_controllers=FROZEN, history_size=3
    ) as sim:
        async with sim.api_client() as api, Evictor(api) as ev:
            listed = sim.list_objects("Pod")
            for i in range(6):  # push the snapshot's version out of the server's history
                sim.apply(pod(f"filler-{i}", app="filler", owner=None, node_name="node-2"))
            ref = PodRef("default", "web-0", WEB[0]["metadata"]["uid"], "node-1")
            await ev.delete("default", "web-0", grace_period_seconds=0)
            waiter = ev.deletion_wait(
                deadline=time.time() + 5, node="node-1", snapshot=(listed, "1")
            )
            waiter.add(ref)
            waiter.close()
            done = await asyncio.wait_for(waiter.run(), 5)
        assert done[("default", "web-0")].state == "deleted"
        watches = sim.requests.filter(verb="watch", resource="pods")
        # the watch from the snapshot's version is refused (410 Gone), then one relist
        assert watches[0].query.get("resourceVersion") == ["1"]
        (relist,) = sim.requests.filter(verb="list", resource="pods")
        assert relist.time > watches[0].time

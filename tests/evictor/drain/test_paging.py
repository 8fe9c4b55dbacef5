"""``DrainHelper.list_pods``: pages in order at one resourceVersion, each page handed to
``on_page`` once the next page's request is under way, and no request left behind on failure."""

from __future__ import annotations

import asyncio

import pytest

from evictor.api.calls import send
from evictor.client import Evictor
from evictor.drain.helper import DrainHelper
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.manifests import node, pod, replicaset


def _state() -> list[dict[str, object]]:
    return [node("node-1"), replicaset("web"), *[pod(f"w-{i}", app="web") for i in range(7)]]


def _requests_in_flight() -> list[asyncio.Task[object]]:
    """The API calls (``evictor.api.calls.send``) started as tasks and not finished."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "cr_code", None) is send.__code__ and not t.done()
    ]


async def test_pages_arrive_in_order_while_the_next_one_is_fetched() -> None:
    sim = Simulator(state=_state(), disabled_controllers=FROZEN)
    async with sim, sim.api_client() as api, Evictor(api) as ev:
        helper = DrainHelper(ev, chunk_size=3)
        seen: list[tuple[list[str], int]] = []

        def on_page(page: list[dict[str, object]]) -> None:
            names = [p["metadata"]["name"] for p in page]
            seen.append((names, len(_requests_in_flight())))

        items = await helper.list_pods("node-1", on_page=on_page)
        pages = sim.requests.filter(verb="list", resource="pods")
    names = [p["metadata"]["name"] for p in items]
    assert sorted(names) == sorted(f"w-{i}" for i in range(7))
    assert [n for page, _ in seen for n in page] == names
    assert [len(page) for page, _ in seen] == [3, 3, 1]
    # pages 1 and 2 were handled while the following page was being fetched; the last alone
    assert [in_flight for _, in_flight in seen] == [1, 1, 0]
    assert [bool(r.query.get("continue")) for r in pages] == [False, True, True]
    assert helper.listed["node-1"][0] == items


async def test_a_failing_page_handler_leaves_no_request_in_flight() -> None:
    sim = Simulator(state=_state(), disabled_controllers=FROZEN)
    async with sim, sim.api_client() as api, Evictor(api) as ev:
        helper = DrainHelper(ev, chunk_size=3)
        started: list[asyncio.Task[object]] = []

        def on_page(page: list[dict[str, object]]) -> None:
            started.extend(_requests_in_flight())
            raise ValueError("bad page")

        with pytest.raises(ValueError, match="bad page"):
            await helper.list_pods("node-1", on_page=on_page)
        await asyncio.sleep(0)
        assert len(started) == 1  # the second page had been requested
        assert started[0].cancelled()
        assert "node-1" not in helper.listed

"""Who owns a create's body: an in-process caller keeps its dict untouched; a request's decoded
body is handed over and stored without a copy (``GenericStore.create(owned=True)``)."""

from __future__ import annotations

import copy

import kubesim
from tests.support.manifests import pending_pod


async def test_a_callers_body_is_copied_and_left_as_it_was() -> None:
    async with kubesim.serve(scheduler_loop=False) as sim:
        body = pending_pod("kept", node_name="node-a")
        before = copy.deepcopy(body)
        sim.registry.create(sim._type_for("Pod"), "default", body)
        assert body == before
        stored = sim.registry.store.get("pods", ("default", "kept"))
        assert stored is not None and stored is not body
        assert stored["metadata"]["uid"] and stored["status"]["phase"] == "Pending"


async def test_a_handed_over_body_becomes_the_stored_object() -> None:
    async with kubesim.serve(scheduler_loop=False) as sim:
        body = pending_pod("given", node_name="node-a")
        sim.registry.create(sim._type_for("Pod"), "default", body, owned=True)
        assert sim.registry.store.get("pods", ("default", "given")) is body

"""Who owns a create's body: an in-process caller keeps its dict untouched; a request's decoded
body is handed over and stored without a copy (``GenericStore.create(owned=True)``)."""

from __future__ import annotations

import copy

import kubesim
from tests.support.manifests import new_event, pending_pod


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


async def test_the_answer_is_the_wire_copy_unless_the_stored_object_is_asked_for() -> None:
    # Events are stored in the core shape: an events.k8s.io create answers in its own shape,
    # and with stored=True (the scheduler's recorder, which reads nothing back) the object the
    # store holds, without the conversion.
    async with kubesim.serve(scheduler_loop=False) as sim:
        events = sim.scheme.lookup("events.k8s.io", "v1", "events")
        assert events is not None

        wire = sim.registry.create(events, "default", new_event("a", "checked"))
        assert wire["note"] == "checked" and "message" not in wire
        stored = sim.registry.create(events, "default", new_event("b", "checked"), stored=True)
        assert stored is sim.registry.store.get("events", ("default", "b"))
        assert stored["message"] == "checked" and "note" not in stored
        dry = sim.registry.create(
            events, "default", new_event("c", "checked"), dry_run=True, stored=True
        )
        assert dry["message"] == "checked"
        assert sim.registry.store.get("events", ("default", "c")) is None

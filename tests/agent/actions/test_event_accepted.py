"""The agent's Evicted Event and DisruptionTarget condition pass kube-apiserver's validation.

kubesim validates ``events.k8s.io/v1`` creates as ``pkg/apis/core/validation/events.go`` does
(strict meta, eventTime, qualified reportingController, length limits on reportingInstance,
action, reason and note); a 422 there would leave an eviction without its Event. Checked two
ways: the validator on any pod/node/message the agent may meet, and end to end in both eviction
modes with the Event read back from the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kubesim
from agent.actions.disruption import DISRUPTION_REASON
from agent.actions.events import REPORTING_CONTROLLER, build_event
from agent.eviction import EvictionDecision
from kube.objects import Pod
from kubesim.core.events import from_events_v1
from kubesim.registry.events import validate_event_create
from kubesim.sim import Simulator
from tests.support.agent import config, start, stop
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

_LABEL = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)
_SUBDOMAIN = st.lists(_LABEL, min_size=1, max_size=5).map(".".join).filter(lambda s: len(s) <= 253)


@settings(max_examples=200, deadline=None)
@given(
    name=_SUBDOMAIN,
    namespace=_LABEL,
    node=_SUBDOMAIN,
    message=st.text(max_size=2000),
    now=st.floats(min_value=0, max_value=4e9),
)
def test_any_eviction_event_is_valid(
    name: str, namespace: str, node: str, message: str, now: float
) -> None:
    decision = EvictionDecision(
        pod=Pod(name=name, namespace=namespace, uid="0b5c-uid"),
        grace_period_override=1,
        message=message or "The node was low on resource: memory. ",
        condition=None,
        signal="memory.available",
        annotations={
            "offending_containers": "app",
            "offending_containers_usage": "300Mi",
            "starved_resource": "memory",
        },
    )
    event = build_event(decision, node_name=node, now=now)
    causes = validate_event_create(from_events_v1(event), group="events.k8s.io")
    assert causes == []
    assert len(event["note"].encode()) <= 1024


STATE = "\n---\n".join(
    [NODES, pod("a", priority=0, request="100Mi"), pod("b", priority=1000, request="100Mi")]
)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


@pytest.mark.parametrize("mode", ["delete", "eviction-api"])
async def test_evicted_event_is_stored_in_both_modes(sim: Simulator, mode: str) -> None:
    fake = FakeNode(sim, usage={"default/a": 700 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config(evictionMode=mode))
    try:
        await until(lambda: sim.get("Pod", "default", "a") is None)
        await until(lambda: len(sim.requests.filter(verb="create", resource="events")) >= 1)
    finally:
        await stop(agent, api)
    creates = sim.requests.filter(verb="create", resource="events")
    assert [(r.path.split("/")[1], r.code) for r in creates] == [("apis", 201)]
    stored = [
        e
        for e in sim.list_objects("Event", "default")
        if e.get("reportingComponent") == REPORTING_CONTROLLER
    ]
    assert len(stored) == 1
    event = stored[0]
    assert (event["reason"], event["type"], event["action"]) == ("Evicted", "Warning", "Evict")
    assert event["involvedObject"]["name"] == "a"
    assert event["message"].startswith("The node was low on resource: memory.")
    assert event["metadata"]["annotations"]["starved_resource"] == "memory"
    status_patches = sim.requests.filter(verb="patch", resource="pods", subresource="status")
    if mode == "delete":
        # our DisruptionTarget condition, accepted before the DELETE
        assert [r.code for r in status_patches] == [200]
        condition = status_patches[0].body["status"]["conditions"][0]
        assert (condition["type"], condition["reason"]) == ("DisruptionTarget", DISRUPTION_REASON)
        assert condition["message"] == event["message"]
    else:
        # the API server writes the condition itself as part of the eviction
        assert status_patches == []
        accepted = sim.requests.filter(verb="create", subresource="eviction")
        assert [(r.name, r.code) for r in accepted] == [("a", 201)]


def test_condition_reason_is_a_valid_reason() -> None:
    # metav1.Condition-style reasons: CamelCase identifiers (the kubelet's TerminationByKubelet)
    assert DISRUPTION_REASON.isidentifier() and DISRUPTION_REASON[0].isupper()
    assert not any(c in DISRUPTION_REASON for c in "_-. ")

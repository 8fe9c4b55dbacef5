"""The eviction of a decision: never a protected pod, grace semantics, and an Event
kube-apiserver would accept."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.actions.disruption import DisruptionTargetWriter
from agent.actions.events import REPORTING_CONTROLLER, EventWriter, build_event
from agent.actions.evict import ActionResult, PodEviction
from agent.eviction import EvictionDecision, kubelet_view
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from kube.objects import Pod

# apimachinery validation of events.k8s.io/v1 (ValidateEventCreate): qualified names, lengths.
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def decision(pod: Pod, *, message: str = "The node was low on resource: memory. ") -> Any:
    return EvictionDecision(
        pod=pod,
        grace_period_override=1,
        message=message,
        condition=None,
        signal="memory.available",
        annotations={"starved_resource": "memory"},
    )


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def delete(self, *args: Any, **kw: Any) -> Any:
        self.calls.append(("delete", (args, kw)))
        raise AssertionError("must not be called")

    async def evict(self, *args: Any, **kw: Any) -> Any:
        self.calls.append(("evict", (args, kw)))
        raise AssertionError("must not be called")


def eviction(evictor: Any, **options: Any) -> PodEviction:
    """The daemon's eviction path, without an API client to write to."""
    return PodEviction(
        evictor,
        events=EventWriter(None, node_name="n"),
        disruption=DisruptionTargetWriter(None),
        **options,
    )


STATIC_UID = "0123456789abcdef0123456789abcdef"  # a static pod's UID: the hash of its manifest
MIRROR = {"kubernetes.io/config.mirror": STATIC_UID}


def as_kubelet_sees(pod: Pod) -> Pod:
    """The pod as the loop hands it on: the kubelet's view on a node running the static pod."""
    [seen] = kubelet_view([pod], node_pod_uids=[STATIC_UID]).pods
    return seen


@pytest.mark.parametrize(
    "pod",
    [
        Pod(name="crit", uid="u", spec_priority=2_000_000_000),
        Pod(name="mirror", uid="u", annotations=MIRROR),
        Pod(name="never", uid="u", annotations={EVICTION_PREFERENCE_ANNOTATION: "never"}),
    ],
)
async def test_protected_pods_are_refused_at_the_action(pod: Pod) -> None:
    rec = Recorder()
    actions = eviction(rec, preference_namespaces={"default"})
    result = await actions.execute(decision(as_kubelet_sees(pod)), hard=True, deadline=1e18)
    assert result.outcome == "refused"
    assert rec.calls == []


@pytest.mark.parametrize(
    "annotations",
    [{"kubernetes.io/config.source": "file"}, {"kubernetes.io/config.mirror": "x"}],
)
async def test_a_pod_that_only_claims_to_be_critical_is_not_refused(
    annotations: dict[str, str],
) -> None:
    rec = Recorder()
    actions = eviction(rec, dry_run=True)
    pod = as_kubelet_sees(Pod(name="forged", uid="u", annotations=annotations))
    result = await actions.execute(decision(pod), hard=True, deadline=1e18)
    assert result.outcome == "dry_run"


async def test_never_is_not_refused_outside_the_allowed_namespaces() -> None:
    rec = Recorder()
    actions = eviction(rec, dry_run=True)
    pod = Pod(name="never", uid="u", annotations={EVICTION_PREFERENCE_ANNOTATION: "never"})
    result = await actions.execute(decision(pod), hard=True, deadline=1e18)
    assert result.outcome == "dry_run"


async def test_dry_run_writes_nothing_and_reports_the_grace() -> None:
    rec = Recorder()
    actions = eviction(rec, dry_run=True)
    pod = Pod(name="p", uid="u", termination_grace_period_seconds=10)
    soft = EvictionDecision(
        pod=pod, grace_period_override=0, message="m", condition=None, signal="memory.available"
    )
    result = await actions.execute(soft, hard=False, deadline=1e18)
    assert result == ActionResult("dry_run", grace_period_seconds=10)  # 0 = the pod's own grace
    negative = EvictionDecision(
        pod=pod, grace_period_override=-5, message="m", condition=None, signal="memory.available"
    )
    result = await actions.execute(negative, hard=False, deadline=1e18)
    assert result.grace_period_seconds == 1  # negative means 1 s, as in the kubelet (#118172)
    assert rec.calls == []


def check_event(ev: dict[str, Any]) -> None:
    meta = ev["metadata"]
    assert len(meta["name"]) <= 253 and _DNS_SUBDOMAIN.fullmatch(meta["name"])
    assert meta["namespace"] == ev["regarding"]["namespace"]
    assert _MICRO_TIME.fullmatch(ev["eventTime"])
    assert _QUALIFIED.fullmatch(ev["reportingController"])
    assert 0 < len(ev["reportingInstance"]) <= 128
    assert 0 < len(ev["action"]) <= 128 and 0 < len(ev["reason"]) <= 128
    assert ev["type"] in ("Normal", "Warning")
    assert len(ev["note"].encode()) <= 1024
    assert ev["regarding"]["kind"] == "Pod"


def test_event_name_stays_a_dns_subdomain_when_truncated() -> None:
    pod = Pod(name="a" * 199 + "-b" + "c" * 52, namespace="default", uid="u")
    check_event(build_event(decision(pod), node_name="n", now=0))


def test_event_shape() -> None:
    pod = Pod(name="web-0", namespace="prod", uid="u1")
    ev = build_event(decision(pod), node_name="node-1", now=1_700_000_000.5)
    check_event(ev)
    assert ev["eventTime"] == "2023-11-14T22:13:20.500000Z"
    assert ev["reason"] == "Evicted" and ev["type"] == "Warning"
    assert ev["reportingController"] == REPORTING_CONTROLLER
    assert ev["metadata"]["annotations"] == {"starved_resource": "memory"}
    assert ev["related"] == {"apiVersion": "v1", "kind": "Node", "name": "node-1"}


_NAME = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,250}[a-z0-9])?", fullmatch=True)


@given(name=_NAME, node=st.from_regex(r"[a-z0-9]{1,200}", fullmatch=True), note=st.text())
def test_events_stay_valid_for_any_pod_name_node_and_message(
    name: str, node: str, note: str
) -> None:
    pod = Pod(name=name, namespace="default", uid="u")
    check_event(build_event(decision(pod, message=note), node_name=node, now=0))

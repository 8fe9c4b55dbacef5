"""Event validation as kube-apiserver's ValidateEventCreate / ValidateEventUpdate.

Core ``v1`` writes get the legacy rules only; ``events.k8s.io/v1`` writes are strict. Both are
exercised through kubernetes-asyncio's typed clients, as the agent and the evictor write them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import Simulator
from tests.support.api import raw, status_of

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)


def core_event(name: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
        "type": "Warning",
        "source": {"component": "kubelet"},
    }
    body.update(fields)
    return body


def new_event(name: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T12:00:00.123456Z",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "reason": "Evicted",
        "note": "evicted by the agent",
        "type": "Warning",
        "action": "Evict",
        "reportingController": "example.com/agent",
        "reportingInstance": "agent-node-1",
    }
    body.update(fields)
    return body


def causes(exc: ApiException) -> list[tuple[str, str, str]]:
    details = status_of(exc)["details"]
    return [(c["reason"], c["field"], c["message"]) for c in details["causes"]]


async def test_core_event_namespace_must_match_involved_object(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = core_event(
        "web-0.1", involvedObject={"kind": "Pod", "namespace": "prod", "name": "db-0"}
    )
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_event("default", body)
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Event "web-0.1" is invalid: involvedObject.namespace: Invalid value: "prod":'
        " does not match event.namespace"
    )
    assert status["details"]["kind"] == "Event"
    assert causes(info.value) == [
        (
            "FieldValueInvalid",
            "involvedObject.namespace",
            'Invalid value: "prod": does not match event.namespace',
        )
    ]
    # The same event in its object's namespace is accepted.
    created = await v1.create_namespaced_event("prod", body)
    assert created.involved_object.namespace == "prod"


async def test_core_event_about_a_cluster_object(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    node_ref = {"kind": "Node", "name": "node-1"}
    # Without eventTime an empty involved namespace is allowed in "default" only.
    await v1.create_namespaced_event("default", core_event("n.1", involvedObject=node_ref))
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_event("prod", core_event("n.2", involvedObject=node_ref))
    assert causes(info.value) == [
        (
            "FieldValueInvalid",
            "involvedObject.namespace",
            'Invalid value: "": does not match event.namespace',
        )
    ]


async def test_core_event_with_event_time_needs_reporting_fields(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = core_event("web-0.2", eventTime="2026-01-01T12:00:00.000000Z", reason="")
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_event("default", body)
    assert info.value.status == 422
    assert causes(info.value) == [
        ("FieldValueRequired", "reportingController", "Required value"),
        (
            "FieldValueInvalid",
            "reportingController",
            'Invalid value: "": name part must be non-empty',
        ),
        ("FieldValueRequired", "reportingInstance", "Required value"),
        ("FieldValueRequired", "action", "Required value"),
        ("FieldValueRequired", "reason", "Required value"),
    ]
    message = status_of(info.value)["message"]
    assert message.startswith('Event "web-0.2" is invalid: [reportingController: Required value,')


async def test_core_event_length_limits(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = core_event(
        "web-0.3",
        eventTime="2026-01-01T12:00:00.000000Z",
        reportingComponent="kubelet",
        reportingInstance="node-1",
        action="A" * 129,
        message="m" * 1025,
    )
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_event("default", body)
    assert causes(info.value) == [
        ("FieldValueInvalid", "action", 'Invalid value: "": can have at most 128 characters'),
        ("FieldValueInvalid", "message", 'Invalid value: "": can have at most 1024 characters'),
    ]


async def test_core_event_name_must_fit_in_a_url(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/events",
        body='{"apiVersion":"v1","kind":"Event","metadata":{"name":"a%b"},'
        '"involvedObject":{"kind":"Pod","namespace":"default","name":"web-0"}}',
    )
    assert code == 422
    assert body["message"] == (
        'Event "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain \'%\''
    )


async def test_events_k8s_io_strict_create(api: client.ApiClient) -> None:
    events = client.EventsV1Api(api)
    created = await events.create_namespaced_event("default", new_event("ok.1"))
    assert created.event_time == NOW
    assert created.reporting_controller == "example.com/agent"
    body = new_event(
        "bad.1",
        type="Fatal",
        deprecatedCount=3,
        deprecatedSource={"component": "kubelet"},
        series={"count": 1},
    )
    with pytest.raises(ApiException) as info:
        await events.create_namespaced_event("default", body)
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["details"]["group"] == "events.k8s.io"
    assert status["message"].startswith('Event.events.k8s.io "bad.1" is invalid: [')
    assert causes(info.value) == [
        ("FieldValueInvalid", "series.count", 'Invalid value: "": should be at least 2'),
        ("FieldValueRequired", "series.lastObservedTime", "Required value"),
        ("FieldValueInvalid", "type", 'Invalid value: "": has invalid value: Fatal'),
        ("FieldValueInvalid", "count", 'Invalid value: "": needs to be unset'),
        ("FieldValueInvalid", "source", 'Invalid value: "": needs to be unset'),
    ]


async def test_events_k8s_io_without_event_time(sim: Simulator) -> None:
    # The upstream quirk: without eventTime the legacy branch runs, so only eventTime (and the
    # strict type rule) are reported, not the missing reporting fields.
    body = new_event("bad.2", reportingController="", action="")
    del body["eventTime"]
    del body["type"]
    code, _, status = await raw(
        sim, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", body=_json(body)
    )
    assert code == 422
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        ("eventTime", "Required value"),
        ("type", 'Invalid value: "": has invalid value: '),
    ]


async def test_events_k8s_io_event_time_must_be_micro_time(sim: Simulator) -> None:
    body = new_event("bad.3", eventTime="2026-01-01T12:00:00Z")
    code, _, status = await raw(
        sim, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", body=_json(body)
    )
    assert code == 400
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time'
        ' "2026-01-01T12:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as'
        ' ".000000"'
    )


async def test_typed_events_v1_client_round_trips_event_time(api: client.ApiClient) -> None:
    events = client.EventsV1Api(api)
    model = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="typed.1"),
        event_time=dt.datetime(
            2026, 3, 1, 14, 30, 0, 250000, tzinfo=dt.timezone(dt.timedelta(hours=2))
        ),
        regarding=client.V1ObjectReference(kind="Node", name="node-1"),
        reason="Drain",
        note="draining",
        type="Normal",
        action="Drain",
        reporting_controller="evict",
        reporting_instance="evict-1",
    )
    created = await events.create_namespaced_event("default", model)
    assert created.event_time == dt.datetime(2026, 3, 1, 12, 30, 0, 250000, tzinfo=dt.UTC)
    raw_resp = await events.read_namespaced_event("typed.1", "default", _preload_content=False)
    assert (await raw_resp.json())["eventTime"] == "2026-03-01T12:30:00.250000Z"


async def test_events_k8s_io_update_keeps_identity(api: client.ApiClient) -> None:
    events = client.EventsV1Api(api)
    created = await events.create_namespaced_event("default", new_event("upd.1"))
    created.reason = "Preempted"
    with pytest.raises(ApiException) as info:
        await events.replace_namespaced_event("upd.1", "default", created)
    assert info.value.status == 422
    assert causes(info.value) == [
        ("FieldValueInvalid", "reason", 'Invalid value: "Preempted": field is immutable')
    ]
    # A series update is allowed and validated.
    fresh = await events.read_namespaced_event("upd.1", "default")
    fresh.series = client.EventsV1EventSeries(count=2, last_observed_time=NOW)
    updated = await events.replace_namespaced_event("upd.1", "default", fresh)
    assert updated.series.count == 2


def _json(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body)

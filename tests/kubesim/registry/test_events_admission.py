"""Events in both API groups, and Priority admission / PriorityClass validation."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.api import raw, status_of


async def test_core_event_visible_in_events_k8s_io(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_event(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web-0.1"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "type": "Warning",
            "source": {"component": "kubelet", "host": "node-1"},
            "count": 1,
        },
    )
    # A core event has no eventTime, so the typed client model would refuse it (as against a
    # real cluster); read the raw body.
    resp = await client.EventsV1Api(api).read_namespaced_event(
        "web-0.1", "default", _preload_content=False
    )
    ev = await resp.json()
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["regarding"]["name"] == "web-0"
    assert ev["note"] == "The node was low on resource: memory."
    assert ev["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert ev["deprecatedCount"] == 1
    listed = await v1.list_namespaced_event(
        "default", field_selector="involvedObject.name=web-0,reason=Evicted"
    )
    assert [e.metadata.name for e in listed.items] == ["web-0.1"]


async def test_events_k8s_io_event_visible_in_core(sim: Simulator, api: client.ApiClient) -> None:
    events = client.EventsV1Api(api)
    await events.create_namespaced_event(
        "default",
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "drain.1"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Node", "name": "node-1"},
            "reason": "Drain",
            "note": "draining",
            "type": "Normal",
            "action": "Drain",
            "reportingController": "evict",
            "reportingInstance": "evict-1",
        },
    )
    core = await client.CoreV1Api(api).read_namespaced_event("drain.1", "default")
    assert core.involved_object.name == "node-1"
    assert core.message == "draining"
    assert core.reporting_component == "evict"
    stored = sim.get("Event", "default", "drain.1")
    assert stored is not None and stored["apiVersion"] == "v1"


async def test_priority_class_resolves_pod_priority(api: client.ApiClient) -> None:
    sched = client.SchedulingV1Api(api)
    await sched.create_priority_class(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "Never",
        }
    )
    v1 = client.CoreV1Api(api)
    created = await v1.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hp"},
            "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "x"}]},
        },
    )
    assert created.spec.priority == 1000
    assert created.spec.preemption_policy == "Never"
    critical = await v1.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "crit"},
            "spec": {
                "priorityClassName": "system-node-critical",
                "containers": [{"name": "c", "image": "x"}],
            },
        },
    )
    assert critical.spec.priority == 2000001000


async def test_unknown_priority_class_is_403(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "x"},
                "spec": {"priorityClassName": "nope", "containers": [{"name": "c", "image": "x"}]},
            },
        )
    assert info.value.status == 403
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" is forbidden: no PriorityClass with name nope was found',
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }


async def test_priority_class_validation(api: client.ApiClient) -> None:
    sched = client.SchedulingV1Api(api)
    with pytest.raises(ApiException) as info:
        await sched.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "too-high"},
                "value": 2000000000,
            }
        )
    assert info.value.status == 422
    st = status_of(info.value)
    assert st["message"] == (
        'PriorityClass.scheduling.k8s.io "too-high" is invalid: value: Forbidden: maximum'
        " allowed value of a user defined priority is 1000000000"
    )
    assert st["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: maximum allowed value of a user defined priority is 1000000000",
            "field": "value",
        }
    ]
    await sched.create_priority_class(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "d1"},
            "value": 5,
            "globalDefault": True,
        }
    )
    with pytest.raises(ApiException) as info:
        await sched.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "d2"},
                "value": 6,
                "globalDefault": True,
            }
        )
    assert info.value.status == 403
    assert status_of(info.value)["message"] == (
        'priorityclasses.scheduling.k8s.io "d2" is forbidden: PriorityClass d1 is already'
        " marked as default. Only one default can exist"
    )
    with pytest.raises(ApiException) as info:
        await sched.patch_priority_class("d1", {"value": 7})
    assert info.value.status == 422
    with pytest.raises(ApiException) as info:
        await sched.delete_priority_class("system-node-critical")
    assert info.value.status == 403
    # The default class now applies to pods that name none.
    created = await client.CoreV1Api(api).create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "dflt"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    assert (created.spec.priority_class_name, created.spec.priority) == ("d1", 5)


async def test_system_priority_classes_exist_at_start(api: client.ApiClient) -> None:
    classes = await client.SchedulingV1Api(api).list_priority_class()
    assert {(c.metadata.name, c.value) for c in classes.items} == {
        ("system-cluster-critical", 2000000000),
        ("system-node-critical", 2000001000),
    }


async def test_priority_admission_can_be_left_out_as_on_kubes_integration_servers() -> None:
    """``disabled_admission_plugins={"Priority"}`` (``--disable-admission-plugins Priority``):
    a pod may carry ``spec.priority`` without a class, as scheduler_perf's templates do."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "high"},
        "spec": {"priority": 10, "containers": [{"name": "c", "image": "x"}]},
    }
    async with kubesim.serve(disabled_controllers=FROZEN) as sim:
        api = sim.api_client()
        with pytest.raises(ApiException) as info:
            await client.CoreV1Api(api).create_namespaced_pod("default", pod)
        await api.close()
    assert info.value.status == 403
    assert "must not be provided in pod spec" in status_of(info.value)["message"]
    async with kubesim.serve(
        disabled_controllers=FROZEN, disabled_admission_plugins={"Priority"}
    ) as sim:
        api = sim.api_client()
        created = await client.CoreV1Api(api).create_namespaced_pod("default", pod)
        await api.close()
    assert created.spec.priority == 10
    with pytest.raises(ValueError, match="cannot be disabled"):
        Simulator(disabled_admission_plugins={"NamespaceLifecycle"})


def _priority_class(name: str, value: int, **fields: object) -> str:
    return json.dumps(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            **fields,
        }
    )


PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.mark.parametrize("disabled", [(), ("Priority",)])
async def test_priority_class_validation_is_the_registrys_not_the_plugins(
    disabled: tuple[str, ...],
) -> None:
    """PriorityClasses are validated by their registry strategy (pkg/registry/scheduling), so
    leaving the Priority plugin out (``--disable-admission-plugins Priority``) leaves the 422s
    and the system classes' protection in force; only the one-default rule is the plugin's."""
    async with kubesim.serve(
        disabled_controllers=FROZEN, disabled_admission_plugins=disabled
    ) as sim:
        code, _, body = await raw(sim, "POST", PCS, body=_priority_class("system-x", 5))
        assert (code, body["reason"]) == (422, "Invalid")
        assert body["message"] == (
            'PriorityClass.scheduling.k8s.io "system-x" is invalid: metadata.name: Forbidden:'
            " priority class names with 'system-' prefix are reserved for system use only."
            " error: system-x is not a known system priority class"
        )
        code, _, body = await raw(
            sim, "POST", PCS, body=_priority_class("p", 5, preemptionPolicy="Sometimes")
        )
        assert (code, body["details"]["causes"]) == (
            422,
            [
                {
                    "reason": "FieldValueNotSupported",
                    "message": 'Unsupported value: "Sometimes": supported values:'
                    ' "PreemptLowerPriority", "Never"',
                    "field": "preemptionPolicy",
                }
            ],
        )
        code, _, _ = await raw(sim, "POST", PCS, body=_priority_class("d1", 5, globalDefault=True))
        assert code == 201
        code, _, body = await raw(sim, "PUT", PCS + "/d1", body=_priority_class("d1", 6))
        assert (code, body["message"]) == (
            422,
            'PriorityClass.scheduling.k8s.io "d1" is invalid: value: Forbidden: may not be'
            " changed in an update.",
        )
        # The storage refuses before it looks at the preconditions (REST.Delete, then the
        # generic store's Delete), so a stale resourceVersion still gets the 403.
        code, _, body = await raw(
            sim,
            "DELETE",
            PCS + "/system-cluster-critical",
            body='{"preconditions": {"resourceVersion": "1"}}',
        )
        assert (code, body["message"]) == (
            403,
            'priorityclasses.scheduling.k8s.io "system-cluster-critical" is forbidden: this is'
            " a system priority class and cannot be deleted",
        )
        # A second default: the plugin's 403, and only after validation — an invalid second
        # default gets the registry's 422.
        code, _, body = await raw(
            sim, "POST", PCS, body=_priority_class("too-high", 2000000000, globalDefault=True)
        )
        assert (code, body["details"]["causes"][0]["field"]) == (422, "value")
        code, _, body = await raw(
            sim, "POST", PCS, body=_priority_class("d2", 6, globalDefault=True)
        )
        if disabled:
            assert code == 201
        else:
            assert (code, body["message"]) == (
                403,
                'priorityclasses.scheduling.k8s.io "d2" is forbidden: PriorityClass d1 is'
                " already marked as default. Only one default can exist",
            )


async def test_priority_class_without_a_name_is_refused_as_object_meta_says() -> None:
    async with kubesim.serve(disabled_controllers=FROZEN) as sim:
        code, _, body = await raw(sim, "POST", PCS, body=_priority_class("", 5))
    assert (code, body["message"]) == (
        422,
        'PriorityClass.scheduling.k8s.io "" is invalid: metadata.name: Required value: name or'
        " generateName is required",
    )

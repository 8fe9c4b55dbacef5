"""Field managers through the generic store: every write's ``Update`` entry, Server-Side
Apply's ownership, conflicts, force, shared fields, removal, and the upgrade from client-side
apply — the behaviour of ``k8s.io/apimachinery/pkg/util/managedfields`` and the
"Server-Side Apply" page of the Kubernetes documentation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.controllers import FROZEN
from kubesim.core.errors import StatusError
from kubesim.core.managedfields.manager import LAST_APPLIED
from kubesim.core.patch import MERGE_PATCH
from kubesim.core.scheme import ResourceType
from kubesim.registry.generic import GenericStore
from kubesim.sim import Simulator


def store() -> tuple[GenericStore, ResourceType]:
    sim = Simulator(disabled_controllers=FROZEN)
    rt = sim.scheme.for_kind("v1", "ConfigMap")
    assert rt is not None
    return sim.registry, rt


def configmap(
    name: str = "test-cm", *, data: dict[str, str] | None = None, **meta: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", **meta},
    }
    if data is not None:
        out["data"] = data
    return out


def entries(obj: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (e["manager"], e["operation"], e["fieldsV1"])
        for e in obj["metadata"].get("managedFields", [])
    ]


def test_the_documented_example_applied_then_updated_by_another_manager() -> None:
    # The "Server-Side Apply" page: a ConfigMap applied by kubectl, then data.key changed by
    # an Update of kube-controller-manager, which takes the field.
    reg, rt = store()
    cm = configmap(labels={"test-label": "test"}, data={"key": "some value"})
    obj, created = reg.apply(rt, "default", "test-cm", cm, manager="kubectl")
    assert created
    [entry] = obj["metadata"]["managedFields"]
    assert set(entry) == {"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"}
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("kubectl", "Apply", "v1")
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {
        "f:data": {"f:key": {}},
        "f:metadata": {"f:labels": {"f:test-label": {}}},
    }
    patch = json.dumps({"data": {"key": "new value"}}).encode()
    obj = reg.patch(
        rt, "default", "test-cm", patch, MERGE_PATCH, field_manager="kube-controller-manager"
    )
    assert entries(obj) == [
        ("kubectl", "Apply", {"f:metadata": {"f:labels": {"f:test-label": {}}}}),
        ("kube-controller-manager", "Update", {"f:data": {"f:key": {}}}),
    ]
    assert obj["metadata"]["managedFields"][1]["apiVersion"] == "v1"


def test_a_create_owns_what_it_set_including_new_maps() -> None:
    reg, rt = store()
    obj = reg.create(
        rt, "default", configmap(labels={"a": "1"}, data={"k": "v"}), field_manager="me"
    )
    assert entries(obj) == [
        (
            "me",
            "Update",
            {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}},
        )
    ]


def test_conflict_names_the_fields_and_their_managers() -> None:
    reg, rt = store()
    reg.apply(rt, "default", "test-cm", configmap(data={"a": "1", "b": "2"}), manager="first")
    with pytest.raises(StatusError) as err:
        reg.apply(rt, "default", "test-cm", configmap(data={"a": "x"}), manager="second")
    assert err.value.code == 409
    assert err.value.reason == "Conflict"
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "first": .data.a'
    assert [(c.reason, c.message, c.field) for c in err.value.causes] == [
        ("FieldManagerConflict", 'conflict with "first"', ".data.a")
    ]
    reg.patch(rt, "default", "test-cm", b'{"data":{"c":"3"}}', MERGE_PATCH, field_manager="ed")
    with pytest.raises(StatusError) as err:
        reg.apply(
            rt,
            "default",
            "test-cm",
            configmap(data={"a": "x", "b": "y", "c": "z"}),
            manager="second",
        )
    time = reg.get(rt, "default", "test-cm")["metadata"]["managedFields"][1]["time"]
    assert str(err.value) == (
        'Apply failed with 3 conflicts: conflicts with "ed" using v1 at ' + time + ":\n- .data.c\n"
        'conflicts with "first":\n- .data.a\n- .data.b'
    )


def test_force_moves_ownership_and_agreeing_values_are_shared() -> None:
    reg, rt = store()
    reg.apply(rt, "default", "test-cm", configmap(data={"a": "1", "b": "2"}), manager="first")
    obj, _ = reg.apply(
        rt, "default", "test-cm", configmap(data={"a": "x", "b": "2"}), manager="second", force=True
    )
    assert obj["data"] == {"a": "x", "b": "2"}
    assert entries(obj) == [
        ("first", "Apply", {"f:data": {"f:b": {}}}),
        ("second", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}),
    ]
    # first stops applying b: b stays, second still owns it
    obj, _ = reg.apply(rt, "default", "test-cm", configmap(), manager="first")
    assert obj["data"] == {"a": "x", "b": "2"}
    assert entries(obj) == [("second", "Apply", {"f:data": {"f:a": {}, "f:b": {}}})]
    # second stops applying a: nobody owns it, so it goes
    obj, _ = reg.apply(rt, "default", "test-cm", configmap(data={"b": "2"}), manager="second")
    assert obj["data"] == {"b": "2"}


def test_applying_the_same_configuration_again_writes_nothing() -> None:
    reg, rt = store()
    cm = configmap(labels={"x": "y"}, data={"a": "1"})
    first, _ = reg.apply(rt, "default", "test-cm", cm, manager="m")
    again, created = reg.apply(rt, "default", "test-cm", cm, manager="m")
    assert not created
    assert again == first


def test_an_object_without_managed_fields_belongs_to_before_first_apply() -> None:
    reg, rt = store()
    reg.seed(rt, configmap(data={"a": "1"}))
    with pytest.raises(StatusError) as err:
        reg.apply(rt, "default", "test-cm", configmap(data={"a": "2"}), manager="m")
    assert 'conflict with "before-first-apply" using v1' in str(err.value)


def csa_object(reg: GenericStore, rt: ResourceType, data: dict[str, str]) -> None:
    last = configmap(data=data)
    del last["metadata"]["namespace"]
    body = configmap(data=data, annotations={LAST_APPLIED: json.dumps(last)})
    reg.create(rt, "default", body, field_manager="kubectl-client-side-apply")


def test_kubectl_takes_over_client_side_apply_fields_without_conflict() -> None:
    reg, rt = store()
    csa_object(reg, rt, {"a": "1", "b": "2"})
    with pytest.raises(StatusError):  # any other manager conflicts
        reg.apply(rt, "default", "test-cm", configmap(data={"a": "x"}), manager="other")
    obj, _ = reg.apply(rt, "default", "test-cm", configmap(data={"a": "x"}), manager="kubectl")
    assert obj["data"] == {"a": "x", "b": "2"}
    managers = {m: f for m, _, f in entries(obj)}
    assert managers["kubectl"] == {"f:data": {"f:a": {}}}
    assert "f:a" not in managers["kubectl-client-side-apply"]["f:data"]
    # the annotation follows what kubectl applied
    last = json.loads(obj["metadata"]["annotations"][LAST_APPLIED])
    assert last["data"] == {"a": "x"}


def test_a_field_changed_since_client_side_apply_still_conflicts() -> None:
    reg, rt = store()
    csa_object(reg, rt, {"a": "1"})
    reg.patch(rt, "default", "test-cm", b'{"data":{"a":"edited"}}', MERGE_PATCH, field_manager="ed")
    with pytest.raises(StatusError) as err:
        reg.apply(rt, "default", "test-cm", configmap(data={"a": "x"}), manager="kubectl")
    assert 'conflict with "ed"' in str(err.value)


def test_status_through_the_main_resource_is_not_owned() -> None:
    sim = Simulator(disabled_controllers=FROZEN)
    rt = sim.scheme.for_kind("apps/v1", "Deployment")
    assert rt is not None
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
        "status": {"replicas": 5},
    }
    obj, _ = sim.registry.apply(rt, "default", "d", body, manager="m")
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]
    assert "f:status" not in fields
    assert obj["status"].get("replicas", 0) == 0
    # the status a controller owns through /status neither conflicts with nor moves to an
    # applier of the main resource
    status = {**obj, "status": {"replicas": 1, "readyReplicas": 1}}
    sim.registry.update(
        rt, "default", "d", status, subresource="status", field_manager="kube-controller-manager"
    )
    obj, _ = sim.registry.apply(rt, "default", "d", body, manager="m")
    assert obj["status"]["replicas"] == 1
    [ctrl] = [e for e in obj["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert ctrl["fieldsV1"] == {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}


KEYS = st.sampled_from("abcde")
VALUES = st.sampled_from(["1", "2"])
MAPS = st.dictionaries(KEYS, VALUES, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(theirs=MAPS, mine=MAPS, their_labels=MAPS, my_labels=MAPS)
def test_apply_then_an_empty_apply_removes_exactly_the_appliers_fields(
    theirs: dict[str, str],
    mine: dict[str, str],
    their_labels: dict[str, str],
    my_labels: dict[str, str],
) -> None:
    reg, rt = store()
    created = (
        configmap(data=theirs or None, labels=their_labels)
        if their_labels
        else configmap(data=theirs or None)
    )
    reg.create(rt, "default", created, field_manager="them")
    applied = configmap(data=mine, labels=my_labels)
    first, _ = reg.apply(rt, "default", "test-cm", applied, manager="me", force=True)
    again, _ = reg.apply(rt, "default", "test-cm", applied, manager="me", force=True)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    obj, _ = reg.apply(rt, "default", "test-cm", configmap(), manager="me")

    def kept(before: dict[str, str], applied: dict[str, str]) -> dict[str, str]:
        # theirs stay, unless I took them over with another value
        return {k: v for k, v in before.items() if applied.get(k, v) == v}

    if theirs:
        assert obj["data"] == kept(theirs, mine)
    else:
        assert "data" not in obj
    if their_labels:
        assert obj["metadata"]["labels"] == kept(their_labels, my_labels)
    else:
        assert "labels" not in obj["metadata"]
    assert [m for m, _, _ in entries(obj)] == (["them"] if theirs or their_labels else [])


def test_creates_of_one_shape_keep_their_own_entries_through_later_writes() -> None:
    # Creates of one shape in one second share their entries; a write to one leaves the other's.
    reg, rt = store()
    reg.create(rt, "default", configmap("a", data={"k": "1"}), field_manager="me")
    reg.create(rt, "default", configmap("b", data={"k": "2"}), field_manager="me")
    patch = json.dumps({"data": {"k": "3", "x": "y"}}).encode()
    reg.patch(rt, "default", "a", patch, MERGE_PATCH, field_manager="other")
    assert entries(reg.get(rt, "default", "b")) == [
        ("me", "Update", {"f:data": {".": {}, "f:k": {}}})
    ]
    assert entries(reg.get(rt, "default", "a")) == [
        ("me", "Update", {"f:data": {}}),  # the map itself, its key gone to the other
        ("other", "Update", {"f:data": {"f:k": {}, "f:x": {}}}),
    ]

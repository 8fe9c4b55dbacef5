"""Typed walks: the field set of an applied object, what a write changed, the merge of an
applied configuration — with the shapes kube-apiserver gives for the same objects."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.core.managedfields import fieldset as fs
from kubesim.core.managedfields import manager, typed
from kubesim.core.managedfields.schema import DEDUCED, root_type

DEPLOYMENT = root_type("apps/v1", "Deployment")
NOW = "2026-01-01T00:00:00Z"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "resources": {},
                        }
                    ],
                    "tolerations": [{"key": "a", "operator": "Exists"}],
                },
            },
        },
    }


def test_field_set_of_an_applied_deployment() -> None:
    # kube: struct fields are members only when empty, map keys and list items always,
    # the selector (an atomic struct) and tolerations (an atomic list) as one field each, and
    # a port keyed by containerPort and its defaulted protocol.
    got = typed.to_field_set(deployment(), DEPLOYMENT)
    assert got["f:spec"] == {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"web"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {
                            'k:{"containerPort":80,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                            }
                        },
                        "f:resources": {},
                    }
                },
                "f:tolerations": {},
            },
        },
    }
    assert got["f:metadata"] == {"f:labels": {"f:app": {}}, "f:name": {}}


def test_compare_reports_leaves_and_added_or_removed_items() -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    del new["metadata"]["labels"]
    c = typed.compare(old, new, DEPLOYMENT)
    assert c.modified == {"f:spec": {"f:replicas": {}}}
    assert c.added == {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"side"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            }
        }
    }
    assert c.removed == {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
    assert typed.compare(old, copy.deepcopy(old), DEPLOYMENT).empty()


def test_merge_keeps_items_by_key_and_replaces_atomic_lists() -> None:
    live = deployment()
    live["spec"]["template"]["spec"]["containers"].insert(0, {"name": "first", "image": "a"})
    config = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "web", "image": "nginx:2"},
                        {"name": "new", "image": "b"},
                    ],
                    "tolerations": [{"key": "b", "operator": "Exists"}],
                }
            }
        }
    }
    merged = typed.merge(live, config, DEPLOYMENT)
    pod = merged["spec"]["template"]["spec"]
    assert [(c["name"], c["image"]) for c in pod["containers"]] == [
        ("first", "a"),
        ("web", "nginx:2"),
        ("new", "b"),
    ]
    assert pod["containers"][1]["ports"] == [{"containerPort": 80}]  # merged, not replaced
    assert pod["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert live["spec"]["template"]["spec"]["containers"][1]["image"] == "nginx"  # untouched


def test_merge_order_follows_the_configuration_for_shared_items() -> None:
    t = root_type("v1", "Pod")
    live = {"spec": {"containers": [{"name": n} for n in "abc"]}}
    config = {"spec": {"containers": [{"name": "c"}, {"name": "d"}, {"name": "a"}]}}
    merged = typed.merge(live, config, t)
    assert [c["name"] for c in merged["spec"]["containers"]] == ["b", "c", "d", "a"]


JSONISH = st.recursive(
    st.none() | st.integers(0, 3) | st.sampled_from(["a", "b"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["x", "y", "z"]), inner, max_size=3)
    ),
    max_leaves=10,
)
POD_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {}, optional={"labels": st.dictionaries(st.sampled_from("ab"), st.just("v"))}
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["c1", "c2"])},
                        optional={"image": st.just("i"), "resources": st.just({})},
                    ),
                    max_size=2,
                ),
                "nodeName": st.just("n"),
                "tolerations": st.just([{"key": "k"}]),
            },
        ),
        "status": st.just({}),
    },
)


@given(st.dictionaries(st.sampled_from(["x", "y", "z"]), JSONISH, max_size=3), POD_LIKE)
def test_created_fields_are_what_compare_reports_added_or_modified(
    untyped: dict[str, Any], pod: dict[str, Any]
) -> None:
    cases = [
        ({}, untyped, DEDUCED),
        ({"metadata": {}, "spec": {}, "status": {}}, pod, root_type("v1", "Pod")),
    ]
    for zero, new, t in cases:
        c = typed.compare(zero, new, t)
        want = fs.sorted_fields_v1(fs.union(c.added, c.modified))
        got = typed.created_fields(zero, new, t)
        assert json.dumps(got) == json.dumps(want)


@given(POD_LIKE, POD_LIKE)
def test_compare_gives_sets_in_fields_v1_order(old: dict[str, Any], new: dict[str, Any]) -> None:
    c = typed.compare(old, new, root_type("v1", "Pod"))
    for s in (c.added, c.modified, c.removed, fs.union(c.added, c.modified)):
        assert json.dumps(s) == json.dumps(fs.sorted_fields_v1(s))


def _revalued(value: Any, scalars: st.DataObject) -> Any:
    """``value`` with every scalar under a map key replaced (lists kept whole)."""
    if isinstance(value, dict):
        return {
            k: _revalued(v, scalars)
            if isinstance(v, dict | list)
            else scalars.draw(st.none() | st.booleans() | st.integers() | st.text(max_size=3))
            for k, v in value.items()
        }
    return value


@given(st.dictionaries(st.sampled_from(["x", "y", "z"]), JSONISH, max_size=3), POD_LIKE, st.data())
def test_objects_of_one_shape_set_the_same_fields(
    untyped: dict[str, Any], pod: dict[str, Any], scalars: st.DataObject
) -> None:
    # What lets a create's fields be cached by shape: values under map keys do not matter.
    cases = [
        ({}, untyped, DEDUCED),
        ({"metadata": {}, "spec": {}, "status": {}}, pod, root_type("v1", "Pod")),
    ]
    for zero, obj, t in cases:
        other = _revalued(obj, scalars)
        assert typed.shape(other) == typed.shape(obj)
        assert json.dumps(typed.created_fields(zero, other, t)) == json.dumps(
            typed.created_fields(zero, obj, t)
        )


def test_shape_tells_apart_what_the_fields_depend_on() -> None:
    pod = {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}
    renamed = {"spec": {"containers": [{"name": "b", "ports": [{"containerPort": 80}]}]}}
    assert typed.shape(pod) != typed.shape(renamed)  # a key value is a path element
    assert typed.shape({"x": [1]}) != typed.shape({"x": [True]})  # v:1 and v:true
    # an empty spec is the empty object's, which sets nothing; a scalar there is one field
    assert typed.shape({"spec": {}}) != typed.shape({"spec": "s"})
    assert typed.shape({"x": None}) == typed.shape({"x": "s"})  # both one field


@given(JSONISH)
def test_equal_lists_have_one_shape_whoever_holds_their_values(value: Any) -> None:
    # A list is part of the shape byte for byte: equal lists must give equal bytes whether
    # their strings are interned or not and whether an object appears twice or as two copies
    # (marshal's later formats would mark both), else a shape seen before would miss.
    shared = [value, value]
    fresh = json.loads(json.dumps([value, value]))
    interned = json.loads(
        json.dumps(shared), object_pairs_hook=lambda kv: {sys.intern(k): v for k, v in kv}
    )
    assert typed.shape({"x": shared}) == typed.shape({"x": fresh}) == typed.shape({"x": interned})
    with pytest.raises(ValueError):
        typed.shape({"x": [object()]})


@given(st.lists(POD_LIKE, min_size=1, max_size=4), st.data())
def test_each_create_owns_what_it_set_whatever_was_created_before(
    pods: list[dict[str, Any]], scalars: st.DataObject
) -> None:
    # The cache by shape gives every create its own fields: a shape seen before (the same
    # pod with other values) and shapes that differ only in a list's keys.
    t = root_type("v1", "Pod")
    w = manager.Write(type=t, api_version="v1", subresource="", has_status=True, now=NOW)
    for pod in [q for p in pods for q in (p, _revalued(p, scalars))]:
        want = typed.created_fields({"metadata": {}, "spec": {}, "status": {}}, pod, t)
        got = manager.update(None, pod, manager="m", sent=None, w=w)
        assert got == (
            [
                {
                    "manager": "m",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": NOW,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": want,
                }
            ]
            if want
            else []
        )


def test_a_keyed_list_with_an_item_it_cannot_key_is_one_field() -> None:
    # structured-merge-diff cannot address such items one by one: the whole list changes
    t = root_type("v1", "Pod")
    old = {"spec": {"containers": [{"name": "a", "image": "x"}]}}
    for items in ([{"name": "a", "image": "y"}, {"image": "z"}], [{"name": "a"}, "z"]):
        c = typed.compare(old, {"spec": {"containers": items}}, t)
        assert (c.added, c.modified, c.removed) == ({}, {"f:spec": {"f:containers": {}}}, {})
    with pytest.raises(typed.SchemaError, match='omits key field "name"'):
        typed.merge(old, {"spec": {"containers": [{"image": "z"}]}}, t)
    # a port without its protocol is keyed by the default one
    ports = typed.to_field_set(
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}, t
    )
    assert (
        'k:{"containerPort":80,"protocol":"TCP"}'
        in ports["f:spec"]["f:containers"]['k:{"name":"a"}']["f:ports"]
    )

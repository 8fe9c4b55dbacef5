"""Patch semantics: RFC 7386 merge patch, RFC 6902 JSON patch, strategic merge patch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.core.errors import StatusError
from kubesim.core.patch import json_merge_patch, json_patch, patch_meta_for, strategic_merge_patch

POD = patch_meta_for("Pod")


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_rfc7386(target: Any, patch: Any, result: Any) -> None:
    assert json_merge_patch(target, patch) == result


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2, 3]}, "c": "x"}
    out = json_patch(
        doc,
        [
            {"op": "add", "path": "/a/b/1", "value": 9},
            {"op": "remove", "path": "/a/b/0"},
            {"op": "replace", "path": "/c", "value": "y"},
            {"op": "copy", "from": "/c", "path": "/d"},
            {"op": "move", "from": "/d", "path": "/e~1f"},
            {"op": "add", "path": "/a/b/-", "value": 4},
            {"op": "test", "path": "/a/b", "value": [9, 2, 3, 4]},
        ],
    )
    assert out == {"a": {"b": [9, 2, 3, 4]}, "c": "y", "e/f": "y"}
    assert doc == {"a": {"b": [1, 2, 3]}, "c": "x"}


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "test", "path": "/c", "value": "nope"}],
        [{"op": "add", "path": "/a/b/7", "value": 1}],
        [{"op": "frobnicate", "path": "/c"}],
    ],
)
def test_json_patch_failures_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(StatusError) as info:
        json_patch({"a": {"b": [1]}, "c": "x"}, ops)
    assert info.value.code == 422
    assert info.value.causes[0].reason == "UnexpectedServerResponse"


def test_json_patch_must_be_a_list() -> None:
    with pytest.raises(StatusError) as info:
        json_patch({}, {"op": "add"})
    assert info.value.code == 400


def _pod(containers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, **extra}}


def test_strategic_merges_by_key_and_keeps_order() -> None:
    orig = _pod(
        [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"},
        ]
    )
    patch = {
        "spec": {
            "containers": [
                {"name": "a", "env": [{"name": "Y", "value": "2"}]},
                {"name": "c", "image": "c:1"},
            ]
        }
    }
    out = strategic_merge_patch(orig, patch, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "b", "c"]
    assert out["spec"]["containers"][0]["env"] == [
        {"name": "X", "value": "1"},
        {"name": "Y", "value": "2"},
    ]
    assert out["spec"]["containers"][0]["image"] == "a:1"


def test_strategic_directives_from_kubectl_apply() -> None:
    orig = _pod(
        [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "a:2"}],
            "volumes": [
                {"$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/x"}, "name": "v"}
            ],
        }
    }
    out = strategic_merge_patch(orig, patch, POD)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("b", "b:1"),
        ("a", "a:2"),
    ]
    assert out["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": "/x"}}]


def test_strategic_delete_replace_and_primitive_lists() -> None:
    orig = {
        "metadata": {
            "finalizers": ["a", "b"],
            "ownerReferences": [{"uid": "1", "name": "x"}, {"uid": "2", "name": "y"}],
        },
        "spec": {
            "containers": [{"name": "a"}, {"name": "b"}],
            "tolerations": [{"key": "k1"}, {"key": "k2"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    patch = {
        "metadata": {
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "ownerReferences": [{"uid": "1", "$patch": "delete"}],
        },
        "spec": {"containers": [{"name": "b", "$patch": "delete"}], "tolerations": [{"key": "k3"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "DisruptionTarget", "status": "True"},
            ]
        },
    }
    out = strategic_merge_patch(orig, patch, POD)
    assert out["metadata"]["finalizers"] == ["b", "c"]
    assert out["metadata"]["ownerReferences"] == [{"uid": "2", "name": "y"}]
    assert out["spec"]["containers"] == [{"name": "a"}]
    assert out["spec"]["tolerations"] == [{"key": "k3"}]  # no patch strategy: replaced
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "DisruptionTarget", "status": "True"},
    ]
    replaced = strategic_merge_patch(
        orig, {"spec": {"containers": [{"$patch": "replace"}, {"name": "z"}]}}, POD
    )
    assert replaced["spec"]["containers"] == [{"name": "z"}]
    whole = strategic_merge_patch(orig, {"status": {"$patch": "replace", "phase": "X"}}, POD)
    assert whole["status"] == {"phase": "X"}


def test_strategic_missing_merge_key_is_400() -> None:
    with pytest.raises(StatusError) as info:
        strategic_merge_patch(
            _pod([{"name": "a"}]), {"spec": {"containers": [{"image": "x"}]}}, POD
        )
    assert info.value.code == 400


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


@given(json_objects, json_objects)
def test_merge_patch_is_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = json_merge_patch(target, patch)
    assert json_merge_patch(once, patch) == once


containers = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from("abcd"), "image": st.sampled_from("xyz")}),
    max_size=4,
    unique_by=lambda c: c["name"],
)


@given(containers, containers)
def test_strategic_container_merge_properties(
    orig: list[dict[str, str]], patch: list[dict[str, str]]
) -> None:
    out = strategic_merge_patch(_pod(orig), {"spec": {"containers": patch}}, POD)
    merged = out["spec"]["containers"]
    names = [c["name"] for c in merged]
    assert len(names) == len(set(names))
    assert set(names) == {c["name"] for c in orig} | {c["name"] for c in patch}
    want = {c["name"]: c["image"] for c in orig} | {c["name"]: c["image"] for c in patch}
    assert {c["name"]: c["image"] for c in merged} == want
    again = strategic_merge_patch(out, {"spec": {"containers": patch}}, POD)
    assert again == out

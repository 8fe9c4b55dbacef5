"""Field sets in their FieldsV1 shape: the set algebra structured-merge-diff's ``fieldpath``
has, and the path strings its conflict messages print."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from kubesim.core.managedfields import fieldset as fs

ELEMENTS = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', "v:1", "i:0"])
PATHS = st.lists(st.tuples(*[ELEMENTS] * 1) | st.tuples(ELEMENTS, ELEMENTS), max_size=6).map(
    lambda ps: [tuple(p) for p in ps]
) | st.lists(st.tuples(ELEMENTS, ELEMENTS, ELEMENTS), max_size=4).map(
    lambda ps: [tuple(p) for p in ps]
)


def build(paths: list[tuple[str, ...]]) -> fs.FieldSet:
    s: fs.FieldSet = {}
    for p in paths:
        fs.insert(s, p)
    return s


def paths_of(s: fs.FieldSet) -> set[tuple[str, ...]]:
    return set(fs.members(s))


@given(PATHS, PATHS)
def test_set_algebra_matches_sets_of_paths(
    a: list[tuple[str, ...]], b: list[tuple[str, ...]]
) -> None:
    sa, sb = build(a), build(b)
    assert paths_of(sa) == set(a)
    assert paths_of(fs.union(sa, sb)) == set(a) | set(b)
    assert paths_of(fs.difference(sa, sb)) == set(a) - set(b)
    assert paths_of(fs.intersection(sa, sb)) == set(a) & set(b)


@given(PATHS)
def test_a_set_rebuilt_from_its_members_is_the_same_set(a: list[tuple[str, ...]]) -> None:
    s = build(a)
    assert build(list(fs.members(s))) == s
    assert fs.sorted_fields_v1(s) == s


def test_members_and_children_in_fields_v1() -> None:
    s = build([("f:spec", "f:replicas"), ("f:spec", 'k:{"name":"web"}'), ("f:spec",)])
    assert s == {"f:spec": {".": {}, "f:replicas": {}, 'k:{"name":"web"}': {}}}
    assert list(fs.sorted_fields_v1({"v:1": {}, "f:b": {}, ".": {}, 'k:{"a":1}': {}})) == [
        ".",
        "f:b",
        'k:{"a":1}',
        "v:1",
    ]


def test_path_strings_as_conflict_messages_print_them() -> None:
    key = fs.key({"protocol": "TCP", "containerPort": 80})
    assert key == 'k:{"containerPort":80,"protocol":"TCP"}'
    path = ("f:spec", "f:template", "f:spec", "f:containers", fs.key({"name": "web"}), "f:image")
    assert fs.path_string(path) == '.spec.template.spec.containers[name="web"].image'
    assert fs.path_string(("f:spec", "f:ports", key)) == (
        '.spec.ports[containerPort=80,protocol="TCP"]'
    )
    assert fs.path_string(("f:metadata", "f:finalizers", fs.value("a"))) == (
        '.metadata.finalizers[="a"]'
    )
    assert fs.path_string(("f:items", fs.index(3))) == ".items[3]"


@given(PATHS, PATHS)
def test_operations_on_sets_in_fields_v1_order_keep_that_order(
    a: list[tuple[str, ...]], b: list[tuple[str, ...]]
) -> None:
    # kube writes fieldsV1 sorted; kubesim keeps stored sets sorted instead of re-sorting
    sa, sb = fs.sorted_fields_v1(build(a)), fs.sorted_fields_v1(build(b))
    for got in (fs.union(sa, sb), fs.difference(sa, sb), fs.intersection(sa, sb)):
        assert json.dumps(got) == json.dumps(fs.sorted_fields_v1(got))


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()


@given(st.dictionaries(st.text(), SCALARS, min_size=1, max_size=3))
def test_list_keys_are_compact_sorted_json(fields: dict[str, object]) -> None:
    want = json.dumps(fields, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    assert fs.key(fields) == "k:" + want

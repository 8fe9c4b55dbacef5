"""The store: global resourceVersions, history window, consistent snapshots."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.core.store import ADDED, DELETED, MODIFIED, Store, TooOld, dumps


def _obj(name: str, value: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "v": value}


def test_rv_is_global_and_events_carry_prev() -> None:
    s = Store()
    e1 = s.put("pods", ("default", "a"), _obj("a", 1), rv=s.next_rv())
    e2 = s.put("nodes", ("", "n"), _obj("n", 1), rv=s.next_rv())
    e3 = s.put("pods", ("default", "a"), _obj("a", 2), rv=s.next_rv())
    e4 = s.remove("pods", ("default", "a"), rv=s.next_rv())
    assert [e.rv for e in (e1, e2, e3, e4)] == [1, 2, 3, 4]
    assert (e1.type, e3.type, e4.type) == (ADDED, MODIFIED, DELETED)
    assert e3.prev == _obj("a", 1)
    assert e4.obj["metadata"]["resourceVersion"] == "4"
    assert e4.obj["v"] == 2
    assert [e.rv for e in s.events_since("pods", 1)] == [3, 4]
    assert s.events_since("nodes", 2) == []


def test_history_window_and_too_old() -> None:
    s = Store(history_size=3)
    for i in range(6):
        s.put("pods", ("default", f"p{i}"), _obj(f"p{i}", i), rv=s.next_rv())
    assert [e.rv for e in s.events_since("pods", 3)] == [4, 5, 6]
    with pytest.raises(TooOld) as info:
        s.events_since("pods", 2)
    assert str(info.value) == "too old resource version: 2 (3)"
    with pytest.raises(TooOld):
        s.snapshot("pods", 2)
    assert [k for k, _ in s.snapshot("pods", 4)] == [("default", f"p{i}") for i in range(4)]


def test_keys_sorted_like_etcd() -> None:
    s = Store()
    for ns, name in [("b", "x"), ("a", "z"), ("a", "y")]:
        s.put("pods", (ns, name), _obj(name, 0), rv=s.next_rv())
    assert s.keys("pods") == [("a", "y"), ("a", "z"), ("b", "x")]
    assert s.keys("pods", "a") == [("a", "y"), ("a", "z")]


ops = st.lists(
    st.tuples(st.sampled_from(["put", "remove"]), st.sampled_from("abcde"), st.integers(0, 9)),
    max_size=40,
)


@given(ops)
def test_snapshot_at_any_revision_equals_the_state_then(
    sequence: list[tuple[str, str, int]],
) -> None:
    s = Store()
    states: dict[int, dict[tuple[str, str], Any]] = {0: {}}
    current: dict[tuple[str, str], Any] = {}
    for op, name, value in sequence:
        key = ("default", name)
        rv = s.next_rv()
        if op == "put":
            obj = {**_obj(name, value), "rv": rv}
            s.put("pods", key, obj, rv=rv)
            current[key] = obj
        elif key in current:
            s.remove("pods", key, rv=rv)
            del current[key]
        states[rv] = dict(current)
    for rv, state in states.items():
        assert dict(s.snapshot("pods", rv)) == state
        # Replaying the history after rv onto the snapshot gives the present.
        replay = dict(s.snapshot("pods", rv))
        for ev in s.events_since("pods", rv):
            if ev.type == DELETED:
                replay.pop(ev.key)
            else:
                replay[ev.key] = ev.obj
        assert replay == current


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "remove", "raw", "encode-current", "encode-earlier"]),
        st.sampled_from(["a", "b"]),
    ),
    max_size=40,
)


@given(_STEPS)
def test_encodings_are_always_of_the_object_asked_for(steps: list[tuple[str, str]]) -> None:
    """The cached encodings (a write's answer, watch events, lists) never hand out the JSON of
    another version: after any sequence of writes, removals and encodings of current and
    replaced versions, each answer is the object's own JSON."""
    store = Store()
    versions: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for n, (op, name) in enumerate(steps):
        key = ("ns", name)
        current = store.get("pods", key)
        if op == "put":
            obj = {"metadata": {"name": name, "resourceVersion": str(n + 1)}, "n": n}
            store.put("pods", key, obj, rv=store.next_rv())
            versions[name].append(obj)
        elif op == "remove" and current is not None:
            store.remove("pods", key, rv=store.next_rv())
        elif op == "raw" and current is not None:
            assert store.raw("pods", key) == dumps(current)
        elif op == "encode-current" and current is not None:
            assert store.encoded("pods", key, current) == dumps(current)
        elif op == "encode-earlier" and versions[name]:
            old = versions[name][0]
            assert store.encoded("pods", key, old) == dumps(old)


def test_a_replaced_version_keeps_its_encoding_for_late_watchers() -> None:
    store = Store()
    first = {"metadata": {"name": "p"}, "spec": {}}
    store.put("pods", ("ns", "p"), first, rv=store.next_rv())
    answer = store.encoded("pods", ("ns", "p"), first)
    second = {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}}
    store.put("pods", ("ns", "p"), second, rv=store.next_rv())
    assert store.encoded("pods", ("ns", "p"), first) is answer  # the same bytes, not re-encoded
    assert store.raw("pods", ("ns", "p")) == dumps(second)

"""``kube.conditions``: podutil.UpdatePodCondition's semantics, for every pod-status writer."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kube.conditions import get_pod_condition, update_pod_condition


def test_a_new_condition_is_appended_with_the_time_now() -> None:
    status: dict[str, Any] = {"phase": "Pending"}
    assert update_pod_condition(status, {"type": "PodScheduled", "status": "False"}, now=60)
    assert status["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": "1970-01-01T00:01:00Z",
        }
    ]
    assert get_pod_condition(status, "PodScheduled") == (0, status["conditions"][0])
    assert get_pod_condition(status, "Ready") == (-1, None)
    assert get_pod_condition(None, "Ready") == (-1, None)


def test_the_transition_time_moves_only_with_the_status() -> None:
    status: dict[str, Any] = {}
    update_pod_condition(status, {"type": "Ready", "status": "False"}, now="2024-01-01T00:00:00Z")
    changed = update_pod_condition(
        status,
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "m"},
        now="2024-01-01T00:05:00Z",
    )
    [cond] = status["conditions"]
    assert changed
    assert cond["lastTransitionTime"] == "2024-01-01T00:00:00Z"
    assert (cond["reason"], cond["message"]) == ("ContainersNotReady", "m")
    # the same again changes nothing
    assert not update_pod_condition(
        status,
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "m"},
        now="2024-01-01T00:09:00Z",
    )
    assert status["conditions"] == [cond]
    assert update_pod_condition(
        status, {"type": "Ready", "status": "True"}, now="2024-01-01T01:00:00Z"
    )
    [cond] = status["conditions"]
    assert cond == {
        "type": "Ready",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": "2024-01-01T01:00:00Z",
    }  # reason and message went with the old condition, as Go replaces the whole struct


def test_other_types_and_keys_are_kept_in_place() -> None:
    status: dict[str, Any] = {
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "t0"},
            {"type": "Ready", "status": "False", "lastTransitionTime": "t0"},
        ]
    }
    update_pod_condition(status, {"type": "Ready", "status": "True"}, now="t1")
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Ready"]
    assert status["conditions"][0] == {
        "type": "Initialized",
        "status": "True",
        "lastTransitionTime": "t0",
    }


updates = st.lists(
    st.tuples(
        st.sampled_from(["Ready", "PodScheduled", "DisruptionTarget"]),
        st.sampled_from(["True", "False", "Unknown"]),
        st.sampled_from(["", "A", "B"]),
    ),
    max_size=20,
)


@given(updates)
def test_properties(steps: list[tuple[str, str, str]]) -> None:
    status: dict[str, Any] = {}
    for t, (type_, value, reason) in enumerate(steps):
        before = {c["type"]: dict(c) for c in status.get("conditions", [])}
        changed = update_pod_condition(
            status, {"type": type_, "status": value, "reason": reason}, now=float(t)
        )
        after = {c["type"]: c for c in status["conditions"]}
        assert len(after) == len(status["conditions"])  # one condition per type
        cond = after[type_]
        old = before.get(type_)
        if old is None or old["status"] != value:
            assert cond["lastTransitionTime"] == f"1970-01-01T00:00:{t:02d}Z"
        else:
            assert cond["lastTransitionTime"] == old["lastTransitionTime"]
        same = old is not None and old["status"] == value and old.get("reason", "") == reason
        assert changed is not same
        assert {k: v for k, v in after.items() if k != type_} == {
            k: v for k, v in before.items() if k != type_
        }

"""Time fields decoded and re-encoded as the apiserver's Go types do (metav1.Time, MicroTime)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kube.times import format_micro_time
from kubesim.core.timefields import (
    MICRO_TIME,
    TimeParseError,
    normalize_times,
    reencode,
    time_fields,
)
from kubesim.sim import Simulator, StateError
from tests.support.api import raw, status_of


def node(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {
            "taints": [
                {
                    "key": "k",
                    "effect": "NoExecute",
                    "timeAdded": "2026-01-01T10:00:00.999-05:30",
                }
            ]
        },
        "status": status,
    }


async def test_offsets_and_fractions_are_stored_as_utc_whole_seconds(sim: Simulator) -> None:
    body = node(
        "node-9",
        conditions=[
            {
                "type": "Ready",
                "status": "True",
                "lastHeartbeatTime": "2026-01-01T12:00:00.7+02:00",
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ],
    )
    code, _, created = await raw(sim, "POST", "/api/v1/nodes", body=json.dumps(body))
    assert code == 201, created
    cond = created["status"]["conditions"][0]
    assert cond["lastHeartbeatTime"] == "2026-01-01T10:00:00Z"  # cut, not rounded
    assert cond["lastTransitionTime"] == "2026-01-01T10:00:00Z"
    assert created["spec"]["taints"][0]["timeAdded"] == "2026-01-01T15:30:00Z"
    stored = sim.get("Node", None, "node-9")
    assert stored is not None
    assert stored["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-01-01T10:00:00Z"


async def test_timestamp_without_zone_is_400(sim: Simulator) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": "2026-01-01T10:00:00"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    code, _, status = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods", body=json.dumps(body)
    )
    assert code == 400
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: parsing time "2026-01-01T10:00:00" as'
        ' "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"'
    )
    assert sim.get("Pod", "default", "p") is None


async def test_merge_patch_with_a_bad_time_is_400_and_changes_nothing(sim: Simulator) -> None:
    before = sim.get("Pod", "default", "web-0")
    patch = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "yesterday"}]
        }
    }
    code, _, status = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0/status",
        body=json.dumps(patch),
        content_type="application/merge-patch+json",
    )
    assert code == 400
    assert 'parsing time "yesterday"' in status["message"]
    assert sim.get("Pod", "default", "web-0") == before


async def test_typed_client_datetimes(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    pod = await v1.read_namespaced_pod("web-1", "default")
    start = dt.datetime(2026, 2, 3, 4, 5, 6, 789000, tzinfo=dt.timezone(dt.timedelta(hours=-3)))
    pod.status.start_time = start
    pod.status.conditions = [
        client.V1PodCondition(type="Ready", status="True", last_transition_time=start)
    ]
    updated = await v1.replace_namespaced_pod_status("web-1", "default", pod)
    want = dt.datetime(2026, 2, 3, 7, 5, 6, tzinfo=dt.UTC)
    assert updated.status.start_time == want
    assert updated.status.conditions[0].last_transition_time == want
    # A naive datetime is serialized without a zone, which a real apiserver refuses.
    pod = await v1.read_namespaced_pod("web-1", "default")
    pod.status.start_time = dt.datetime(2026, 2, 3, 4, 5, 6)
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_pod_status("web-1", "default", pod)
    assert info.value.status == 400
    assert 'cannot parse "" as "Z07:00"' in status_of(info.value)["message"]


async def test_null_is_the_zero_time(sim: Simulator) -> None:
    body = node(
        "node-8", conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": None}]
    )
    code, _, created = await raw(sim, "POST", "/api/v1/nodes", body=json.dumps(body))
    assert code == 201
    assert created["status"]["conditions"][0]["lastHeartbeatTime"] is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "2026-01-01T10:00:00.123Z",
            'parsing time "2026-01-01T10:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00":'
            ' cannot parse ".123Z" as ".000000"',
        ),
        (
            "2026-01-01T10:00:00.123456789Z",
            'parsing time "2026-01-01T10:00:00.123456789Z" as'
            ' "2006-01-02T15:04:05.000000Z07:00": cannot parse "789Z" as "Z07:00"',
        ),
        (
            "2026-02-30T10:00:00.000000Z",
            'parsing time "2026-02-30T10:00:00.000000Z": day out of range',
        ),
        (
            "2026-01-01T10:00:00.000000Z+",
            'parsing time "2026-01-01T10:00:00.000000Z+": extra text: "+"',
        ),
    ],
)
def test_micro_time_errors_are_go_errors(value: str, message: str) -> None:
    with pytest.raises(TimeParseError) as info:
        reencode(value, micro=True)
    assert str(info.value) == message


def test_known_fields_only() -> None:
    lease = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00+01:00"},
        "spec": {"renewTime": "2026-01-01T00:00:00.5+01:00", "holderIdentity": "n"},
    }
    with pytest.raises(TimeParseError):
        normalize_times("Lease", lease)  # renewTime is a MicroTime: six digits or nothing
    lease["spec"]["renewTime"] = "2026-01-01T00:00:00.500000+01:00"
    normalize_times("Lease", lease)
    assert lease == {
        "metadata": {"creationTimestamp": "2025-12-31T23:00:00Z"},
        "spec": {"renewTime": "2025-12-31T23:00:00.500000Z", "holderIdentity": "n"},
    }
    other = {"spec": {"when": "not a time"}}
    normalize_times("PriorityClass", other)
    assert other == {"spec": {"when": "not a time"}}


def _object_with_every_time_field(kind: str, value: str, micro_value: str) -> dict[str, Any]:
    """An object with each of ``kind``'s time fields set, two list items and two map values
    wherever the path steps through a list or a map, beside an unrelated key."""
    obj: dict[str, Any] = {}
    for path, t in time_fields(kind):
        leaf_value = micro_value if t == MICRO_TIME else value
        steps = path.split(".")

        def put(node: Any, at: int, steps: list[str] = steps, leaf_value: str = leaf_value) -> None:
            step = steps[at]
            last = at + 1 == len(steps)
            if step == "[]":
                while len(node) < 2:
                    node.append({"other": 1})
                for item in node:
                    put(item, at + 1)
            elif step == "{}":
                for key in ("a", "b"):
                    node[key] = leaf_value
            elif last:
                node[step] = leaf_value
            else:
                child = node.setdefault(step, [] if steps[at + 1] == "[]" else {})
                put(child, at + 1)

        put(obj, 0)
    return obj


@pytest.mark.parametrize("kind", ["Pod", "Node", "Event", "Job", "PodDisruptionBudget", "Lease"])
def test_every_time_field_of_a_kind_is_rewritten_and_a_bad_one_is_named(kind: str) -> None:
    obj = _object_with_every_time_field(
        kind, "2026-01-01T10:00:00+02:00", "2026-01-01T10:00:00.250000+02:00"
    )
    normalize_times(kind, obj)
    want = _object_with_every_time_field(
        kind, "2026-01-01T08:00:00Z", "2026-01-01T08:00:00.250000Z"
    )
    assert obj == want
    for path, _ in time_fields(kind):
        # the last item or value of the path holds a time without a zone: its path is named
        bad = _object_with_every_time_field(
            kind, "2026-01-01T10:00:00Z", "2026-01-01T10:00:00.000000Z"
        )
        node: Any = bad
        named = []
        steps = path.split(".")
        for step in steps[:-1]:
            node = node[step] if step not in ("[]", "{}") else node[-1]
            named.append("[1]" if step == "[]" else f".{step}" if named else step)
        if steps[-1] == "{}":
            node["b"] = "2026-01-01T10:00:00"
            named.append(".b")
        elif steps[-1] == "[]":
            continue
        else:
            node[steps[-1]] = "2026-01-01T10:00:00"
            named.append(f".{steps[-1]}" if named else steps[-1])
        with pytest.raises(TimeParseError) as info:
            normalize_times(kind, bad)
        assert info.value.path == "".join(named), path


# --- properties -----------------------------------------------------------------------------

aware = st.datetimes(
    min_value=dt.datetime(1971, 1, 1),
    max_value=dt.datetime(9998, 12, 31),
    timezones=st.builds(
        dt.timezone,
        st.integers(min_value=-23 * 60 + 1, max_value=23 * 60 - 1).map(
            lambda m: dt.timedelta(minutes=m)
        ),
    ),
)


@given(aware)
def test_time_is_utc_whole_seconds_of_the_same_instant(when: dt.datetime) -> None:
    text = when.isoformat()
    out = reencode(text, micro=False)
    assert isinstance(out, str) and out.endswith("Z") and "." not in out
    parsed = dt.datetime.fromisoformat(out.replace("Z", "+00:00"))
    assert parsed == when.replace(microsecond=0)
    assert reencode(out, micro=False) == out


@given(aware.map(lambda d: d.replace(microsecond=d.microsecond or 1)))
def test_micro_time_keeps_microseconds(when: dt.datetime) -> None:
    text = when.isoformat(timespec="microseconds")
    out = reencode(text, micro=True)
    assert isinstance(out, str) and out.endswith("Z") and len(out.split(".")[1]) == 7
    assert dt.datetime.fromisoformat(out.replace("Z", "+00:00")) == when
    assert reencode(out, micro=True) == out


@given(st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(9998, 12, 31)))
def test_no_zone_never_parses(when: dt.datetime) -> None:
    for micro in (False, True):
        with pytest.raises(TimeParseError):
            reencode(when.isoformat(timespec="microseconds"), micro=micro)


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_format_micro_time_is_a_valid_micro_time(seconds: float) -> None:
    text = format_micro_time(seconds)
    assert reencode(text, micro=True) == text
    back = dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    assert abs(back - seconds) <= 1e-6 + abs(seconds) * 1e-15


STATE_WITH_TIMES = """
apiVersion: v1
kind: Node
metadata: {name: n1, creationTimestamp: 2026-01-01T09:00:00+01:00}
status:
  conditions:
  - {type: Ready, status: "True", lastHeartbeatTime: 2026-01-01T10:00:00.5Z}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
status: {phase: Running, startTime: "2026-01-01T10:00:00-02:00"}
"""


async def test_state_file_times_are_stored_as_the_apiserver_would() -> None:
    # PyYAML turns unquoted timestamps into datetimes; they are served as RFC 3339 strings.
    async with kubesim.serve(state=STATE_WITH_TIMES, controllers=[]) as sim:
        node_obj = sim.get("Node", None, "n1")
        assert node_obj is not None
        assert node_obj["metadata"]["creationTimestamp"] == "2026-01-01T08:00:00Z"
        cond = node_obj["status"]["conditions"][0]
        assert cond["lastHeartbeatTime"] == "2026-01-01T10:00:00Z"
        async with sim.api_client() as api:
            pod = await client.CoreV1Api(api).read_namespaced_pod("p", "default")
        assert pod.status.start_time == dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def test_state_file_with_a_zoneless_time_names_the_field() -> None:
    bad = STATE_WITH_TIMES.replace('"2026-01-01T10:00:00-02:00"', '"2026-01-01T10:00:00"')
    with pytest.raises(StateError) as info:
        Simulator(state=bad, controllers=[])
    err = info.value
    assert (err.document, err.field) == (2, "status.startTime")
    assert 'cannot parse "" as "Z07:00"' in str(err)


async def test_yaml_body_with_unquoted_timestamps(sim: Simulator) -> None:
    body = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n-yaml}\nstatus:\n  conditions:\n"
        "  - {type: Ready, status: 'True', lastTransitionTime: 2026-05-01T10:00:00+02:00}\n"
    )
    code, _, created = await raw(
        sim, "POST", "/api/v1/nodes", body=body, content_type="application/yaml"
    )
    assert code == 201, created
    assert created["status"]["conditions"][0]["lastTransitionTime"] == "2026-05-01T08:00:00Z"


@given(
    st.from_regex(
        r"[0-9]{4}-[0-3][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9]\.[0-9]{6}Z",
        fullmatch=True,
    )
)
def test_a_micro_time_in_stored_form_reads_as_any_other_spelling(text: str) -> None:
    """The stored form (``...ss.ffffffZ``) is answered without a full parse: the answer (or the
    error) is the one the same instant written with ``+00:00`` gets."""
    other = text[:-1] + "+00:00"
    try:
        expected = reencode(other, micro=True)
    except TimeParseError:
        with pytest.raises(TimeParseError):
            reencode(text, micro=True)
    else:
        assert reencode(text, micro=True) == expected

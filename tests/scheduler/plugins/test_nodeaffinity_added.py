"""NodeAffinity's ``addedAffinity`` (``NodeAffinityArgs``), as ``node_affinity_test.go``'s
cases for it: Filter ANDs it with the pod's own affinity (``node(s) didn't match
scheduler-enforced node affinity`` first), Score adds its preferred terms to the pod's."""

from __future__ import annotations

from typing import Any

import pytest

from kube.objects import Node, Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.nodeaffinity import (
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityScorer,
)
from scheduler.snapshot import Snapshot
from tests.support import objects as obj


def required_in(key: str, *values: str, field: bool = False) -> dict[str, Any]:
    kind = "matchFields" if field else "matchExpressions"
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{kind: [{"key": key, "operator": "In", "values": list(values)}]}]
        }
    }


def preferred(*terms: tuple[int, dict[str, str]]) -> dict[str, Any]:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": weight,
                "preference": {
                    "matchExpressions": [
                        {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()
                    ]
                },
            }
            for weight, labels in terms
        ]
    }


NAME2 = required_in("metadata.name", "node2", field=True)
ENFORCED = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_ENFORCED)
POD = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_POD)


@pytest.mark.parametrize(
    ("pod_affinity", "added", "want"),
    [
        (required_in("zone", "foo"), NAME2, None),  # Matches added affinity and Pod's node affinity
        (required_in("zone", "bar"), NAME2, POD),  # Matches added affinity but not Pod's
        (None, required_in("zone", "bar"), ENFORCED),  # Doesn't match added affinity
    ],
    ids=[
        "Matches added affinity and Pod's node affinity",
        "Matches added affinity but not Pod's node affinity",
        "Doesn't match added affinity",
    ],
)
def test_filter_with_added_affinity(
    pod_affinity: dict[str, Any] | None, added: dict[str, Any], want: Status | None
) -> None:
    node = obj.node("node2", {"zone": "foo"})
    snapshot = Snapshot.from_objects([node])
    plugin = NodeAffinity(added_affinity=added)
    pod = obj.pod("p", affinity=None if pod_affinity is None else {"nodeAffinity": pod_affinity})
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot) is None  # not Skip: the profile adds one
    (ni,) = snapshot.node_info_list
    assert plugin.filter(state, pod, ni) == want
    passed, rejected = plugin.filter_nodes(state, pod, [ni])
    assert (passed == [ni]) is (want is None)
    assert [s for _, s in rejected] == ([] if want is None else [want])


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, {"foo": "bar"}))


def _scores(scorer: NodeAffinityScorer, pod: Pod, nodes: list[Node]) -> list[int] | Status:
    snapshot = Snapshot.from_objects(nodes)
    state = CycleState()
    infos = snapshot.node_info_list
    pre = scorer.pre_score(state, pod, infos, snapshot)
    if pre is not None:
        return pre
    raw = scorer.score_nodes(state, pod, infos)
    scorer.normalize_score(state, pod, raw)
    return raw


def test_score_added_affinity_alone() -> None:
    """ "added affinity": a pod without preferences is scored by the profile's."""
    scorer = NodeAffinityScorer(added_affinity=AFFINITY1)
    nodes = [obj.node("node1", LABEL1), obj.node("node2", LABEL2)]
    assert _scores(scorer, obj.pod("p"), nodes) == [100, 0]


def test_score_added_affinity_and_the_pods() -> None:
    """ "added affinity and pod has default affinity": 2 + 3 on the node matching both."""
    scorer = NodeAffinityScorer(added_affinity=preferred((3, {"key": "value"})))
    nodes = [obj.node("node1", LABEL1), obj.node("node2", LABEL2), obj.node("node3", LABEL5)]
    assert _scores(scorer, obj.pod("p", affinity={"nodeAffinity": AFFINITY1}), nodes) == [
        40,
        60,
        100,
    ]


def test_score_without_any_preference_is_skipped() -> None:
    scorer = NodeAffinityScorer(added_affinity=required_in("zone", "foo"))
    result = _scores(scorer, obj.pod("p"), [obj.node("node1", LABEL1)])
    assert isinstance(result, Status) and result.code is Code.Skip

"""The node's pods as the kubelet sees them: no pod author makes a pod critical by annotation.

The kubelet overwrites ``kubernetes.io/config.source`` with ``api`` on every pod it receives
from the API server, and a pod carrying ``kubernetes.io/config.mirror: H`` is a mirror pod only
when a static pod with UID H runs on the node (its cgroup ``pod<H>``, the kubelet's hash of a
manifest) and it alone claims H. ``kubelet_view`` applies both rules; the eviction loop takes it
once per sync, so the manager, the ranking and the actions' last check judge the same pods.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.actions.evict import ActionResult
from agent.eviction import EvictionDecision, kubelet_view
from agent.eviction.pods import is_static_pod_uid, stats_uid
from agent.loop import EvictionLoop
from kube.critical import (
    CONFIG_MIRROR_ANNOTATION_KEY as MIRROR,
)
from kube.critical import (
    CONFIG_SOURCE_ANNOTATION_KEY as SOURCE,
)
from kube.critical import (
    SYSTEM_CRITICAL_PRIORITY,
    is_critical_pod,
)
from kube.objects import Pod
from tests.support.agentloop import manager
from tests.support.eviction import make_pod
from tests.support.fakenode import MI, ts

STATIC_UID = "0123456789abcdef0123456789abcdef"  # the kubelet's hash of a manifest
OTHER_STATIC_UID = OTHER = "fedcba9876543210fedcba9876543210"
API_UID = "0f8fad5b-d9cb-469f-a165-70867728950e"  # the API server's UIDs are dashed UUIDs


def view(pods: list[Pod], node_pod_uids: list[str]) -> list[Pod]:
    return kubelet_view(pods, node_pod_uids=node_pod_uids).pods


def test_config_source_is_the_api_servers_on_every_pod() -> None:
    forged = make_pod("forged", annotations={SOURCE: "file", "team": "a"})
    http = make_pod("http", annotations={SOURCE: "http"})
    plain = make_pod("plain")
    api = make_pod("api", annotations={SOURCE: "api"})
    assert is_critical_pod(forged) and is_critical_pod(http)  # kube's answer: the kubelet's copy
    seen = view([forged, http, plain, api], [STATIC_UID, "uid-forged"])
    assert [p.name for p in seen] == ["forged", "http", "plain", "api"]
    assert seen[0].annotations == {SOURCE: "api", "team": "a"}
    assert seen[1].annotations == {SOURCE: "api"}
    assert not any(is_critical_pod(p) for p in seen)
    assert seen[2] is plain and seen[3] is api  # nothing to change: the same value
    assert seen[0].uid == forged.uid and seen[0].requests == forged.requests


def test_the_one_mirror_of_a_static_pod_running_here_is_trusted() -> None:
    mirror = make_pod("etcd-node-1", annotations={MIRROR: STATIC_UID, SOURCE: "file"})
    result = kubelet_view([make_pod("web"), mirror], node_pod_uids=["uid-web", STATIC_UID])
    seen = result.pods[1]
    assert seen.annotations == {MIRROR: STATIC_UID, SOURCE: "api"}
    assert is_critical_pod(seen)
    assert stats_uid(seen) == STATIC_UID  # its stats are the static pod's
    assert result.mirrors == {STATIC_UID: seen}
    assert result.disputed == {}


@pytest.mark.parametrize(
    ("claim", "node_pod_uids"),
    [
        (OTHER_STATIC_UID, [STATIC_UID]),  # no static pod with that UID runs here
        (API_UID, [API_UID]),  # an API pod's cgroup: never a static pod's
        (STATIC_UID.upper(), [STATIC_UID.upper()]),  # not the kubelet's lowercase hex
        ("", [STATIC_UID]),  # IsMirrorPod is true for an empty value; nothing runs under it
    ],
)
def test_a_claim_of_no_static_pod_here_is_dropped(claim: str, node_pod_uids: list[str]) -> None:
    forged = make_pod("forged", annotations={MIRROR: claim, "team": "a"})
    result = kubelet_view([forged], node_pod_uids=node_pod_uids)
    [seen] = result.pods
    assert seen.annotations == {"team": "a"}
    assert not is_critical_pod(seen)
    assert stats_uid(seen) == forged.uid  # ranked by its own stats
    assert result.mirrors == {} and result.disputed == {}


def test_two_claims_of_one_static_pod_trust_neither() -> None:
    mirror = make_pod("etcd-node-1", annotations={MIRROR: STATIC_UID})
    forged = make_pod("forged", annotations={MIRROR: STATIC_UID})
    control_plane = make_pod(
        "kube-apiserver-node-1", priority=SYSTEM_CRITICAL_PRIORITY, annotations={MIRROR: OTHER}
    )
    also = make_pod("also", annotations={MIRROR: OTHER})
    result = kubelet_view([mirror, forged, control_plane, also], node_pod_uids=[STATIC_UID, OTHER])
    assert [MIRROR in p.annotations for p in result.pods] == [False] * 4
    assert [is_critical_pod(p) for p in result.pods] == [False, False, True, False]
    assert {uid: [p.name for p in by] for uid, by in result.disputed.items()} == {
        STATIC_UID: ["etcd-node-1", "forged"],
        OTHER: ["kube-apiserver-node-1", "also"],
    }
    assert result.mirrors == {}


def test_the_view_of_a_view_is_the_same() -> None:
    pods = [
        make_pod("a", annotations={MIRROR: STATIC_UID, SOURCE: "file"}),
        make_pod("b", annotations={MIRROR: OTHER, SOURCE: "http"}),
        make_pod("c", annotations={SOURCE: "file"}),
    ]
    once = view(pods, [STATIC_UID])
    twice = view(once, [STATIC_UID])
    assert all(x is y for x, y in zip(once, twice, strict=True))
    assert [dict(p.annotations) for p in once] == [
        {MIRROR: STATIC_UID, SOURCE: "api"},
        {SOURCE: "api"},
        {SOURCE: "api"},
    ]


# --- the invariant, on random pods ------------------------------------------------------------

HASHES = [STATIC_UID, OTHER_STATIC_UID, "00000000000000000000000000000000", API_UID, "x", ""]
annotations = st.fixed_dictionaries(
    {},
    optional={
        SOURCE: st.sampled_from(["file", "http", "api", "", "FILE"]),
        MIRROR: st.sampled_from(HASHES),
        "other": st.just("v"),
    },
)
priorities = st.sampled_from([None, -1, 0, 1000, 1_999_999_999, 2_000_000_000, 2_000_001_000])


@given(
    pods=st.lists(st.tuples(annotations, priorities), max_size=8),
    node_pod_uids=st.lists(st.sampled_from([*HASHES, "uid-p0", "uid-p1"]), max_size=5),
)
def test_critical_iff_critical_priority_or_the_one_mirror_of_a_static_pod_running_here(
    pods: list[tuple[dict[str, str], int | None]], node_pod_uids: list[str]
) -> None:
    api = [make_pod(f"p{i}", annotations=a, priority=p) for i, (a, p) in enumerate(pods)]
    result = kubelet_view(api, node_pod_uids=node_pod_uids)
    claims = [p.annotations.get(MIRROR) for p in api]
    assert len(result.pods) == len(api)
    for pod, seen, claim in zip(api, result.pods, claims, strict=True):
        assert (seen.name, seen.uid, seen.spec_priority) == (pod.name, pod.uid, pod.spec_priority)
        assert seen.annotations.get(SOURCE) in (None, "api")
        assert {k: v for k, v in seen.annotations.items() if k not in (SOURCE, MIRROR)} == {
            k: v for k, v in pod.annotations.items() if k not in (SOURCE, MIRROR)
        }
        trusted = (
            claim is not None
            and is_static_pod_uid(claim)
            and claim in node_pod_uids
            and claims.count(claim) == 1
        )
        by_priority = (pod.spec_priority or 0) >= SYSTEM_CRITICAL_PRIORITY
        assert is_critical_pod(seen) == (by_priority or trusted)
        assert stats_uid(seen) == (claim if trusted else pod.uid)
        assert (result.mirrors.get(claim or "") is seen) == trusted
    assert view(result.pods, node_pod_uids) == result.pods  # a view of the view: no change


# --- the loop takes the view once per sync ----------------------------------------------------


def _summary(usage: dict[str, int]) -> dict[str, Any]:
    now = time.time()
    used = sum(usage.values())
    return {
        "node": {
            "nodeName": "n",
            "memory": {
                "time": ts(now),
                "availableBytes": 1024 * MI - used,
                "workingSetBytes": used,
            },
        },
        "pods": [
            {
                "podRef": {"name": uid, "namespace": "default", "uid": uid},
                "memory": {"time": ts(now), "workingSetBytes": ws},
            }
            for uid, ws in usage.items()
        ],
    }


class Recorder:
    def __init__(self) -> None:
        self.decisions: list[EvictionDecision] = []

    async def execute(
        self, decision: EvictionDecision, *, hard: bool, deadline: float
    ) -> ActionResult:
        self.decisions.append(decision)
        return ActionResult("dry_run")


async def test_the_loop_judges_the_kubelets_view_and_warns_once_about_a_dispute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A static pod holds most memory: its one mirror is spared and the pod calling itself
    static is ranked by its own usage; once a second pod claims the static pod, neither is
    trusted, and the warning naming both is logged once, not every sync."""
    caplog.set_level(logging.WARNING, logger="agent.loop")
    mirror = Pod(name="etcd-n", namespace="kube-system", uid="m", annotations={MIRROR: STATIC_UID})
    forged = Pod(name="forged", uid="f", annotations={SOURCE: "file"})
    small = Pod(name="small", uid="s")
    pods = [mirror, forged, small]
    usage = {STATIC_UID: 500 * MI, "f": 200 * MI, "s": 10 * MI}

    async def stats() -> dict[str, Any]:
        return _summary(usage)

    actions = Recorder()
    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=stats,
        pods=lambda: list(pods),
        actions=actions,
        interval=0.01,
    )
    await loop.sync_once()
    [decision] = actions.decisions
    assert decision.pod.name == "forged"
    assert decision.pod.annotations == {SOURCE: "api"}  # what the actions' last check sees
    assert loop.manager.last_sync is not None
    assert [(p.name, why) for p, why in loop.manager.last_sync.skipped] == [
        ("etcd-n", "critical pod")
    ]

    pods.append(Pod(name="claimer", uid="c", annotations={MIRROR: STATIC_UID}))
    for _ in range(3):
        await asyncio.sleep(0)
        await loop.sync_once()
    warnings = [r for r in caplog.records if "claim the same static pod" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].__dict__["pods"] == ["default/claimer", "kube-system/etcd-n"]
    assert warnings[0].__dict__["static_pod_uid"] == STATIC_UID
    # neither is trusted: the mirror is an ordinary pod without stats of its own, which the
    # kubelet's ranking puts first
    assert actions.decisions[-1].pod.name == "etcd-n"
    assert loop.manager.last_sync.skipped == []

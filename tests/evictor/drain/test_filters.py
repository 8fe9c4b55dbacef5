"""kubectl's drain filter chain: order, wording, last-status-wins, and its invariants."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evictor.drain.filters import (
    DAEMONSET_FATAL,
    DAEMONSET_WARNING,
    LOCAL_STORAGE_FATAL,
    UNMANAGED_FATAL,
    UNMANAGED_WARNING,
    DrainOptions,
    OwnerLookupError,
    PodDeleteStatus,
    StatusType,
    get_pods_for_deletion,
)
from evictor.drain.helper import go_duration
from evictor.drain.order import order_by_priority
from kube.objects import Pod
from tests.support.manifests import pod

NOW = 1_800_000_000.0


def P(name: str, **kw: Any) -> Pod:
    return Pod.from_dict(pod(name, **kw))


def plan(pods: list[Pod], *, exists: bool = True, **opts: Any) -> Any:
    return get_pods_for_deletion(
        pods, options=DrainOptions(**opts), owner_exists=lambda _ns, _n: exists, now=NOW
    )


DS = ("apps/v1", "DaemonSet", "agent")


def test_replicated_pods_are_deleted_without_warnings() -> None:
    result = plan([P("a"), P("b")])
    assert [p.name for p in result.pods()] == ["a", "b"]
    assert result.warnings() == ""
    assert result.errors() == []


def test_daemonset_pod_is_fatal_without_ignore_daemonsets() -> None:
    result = plan([P("agent-x", namespace="kube-system", owner=DS)])
    assert result.pods() == []
    assert result.errors() == [f"cannot delete {DAEMONSET_FATAL}: kube-system/agent-x"]


def test_daemonset_pod_is_skipped_with_a_warning_when_ignored() -> None:
    result = plan([P("agent-x", namespace="kube-system", owner=DS)], ignore_daemonsets=True)
    assert result.pods() == []
    assert result.errors() == []
    assert result.warnings() == f"{DAEMONSET_WARNING}: kube-system/agent-x"


def test_daemonset_kind_from_another_group_is_an_ordinary_controller() -> None:
    # kubectl <= 1.34 matched the kind only; the group decides here (newer kubectl).
    result = plan([P("x", owner=("example.com/v1", "DaemonSet", "agent"))])
    assert [p.name for p in result.pods()] == ["x"]


def test_orphaned_daemonset_pod_needs_force_and_its_warning_is_overwritten() -> None:
    orphan = P("agent-x", owner=DS)
    blocked = plan([orphan], exists=False)
    assert blocked.errors() == ['cannot delete daemonsets.apps "agent" not found: default/agent-x']
    forced = plan([orphan], exists=False, force=True)
    assert [p.name for p in forced.pods()] == ["agent-x"]
    # kubectl quirk: the NotFound warning is replaced by the later filters' "okay".
    assert forced.warnings() == ""


def test_owner_lookup_failure_is_fatal() -> None:
    def boom(_ns: str, _name: str) -> bool:
        raise OwnerLookupError("Error from server (Forbidden): no")

    result = get_pods_for_deletion(
        [P("agent-x", owner=DS)], options=DrainOptions(force=True), owner_exists=boom, now=NOW
    )
    assert result.errors() == ["cannot delete Error from server (Forbidden): no: default/agent-x"]


def test_completed_pods_always_pass() -> None:
    pods = [
        P("done-ds", owner=DS, phase="Succeeded"),
        P("failed-bare", owner=None, phase="Failed"),
        P("done-local", empty_dir=True, owner=None, phase="Succeeded"),
    ]
    result = plan(pods, exists=False)
    assert [p.name for p in result.pods()] == ["done-ds", "failed-bare", "done-local"]
    assert result.errors() == []


def test_mirror_pods_are_skipped_silently() -> None:
    result = plan([P("static", owner=None, annotations={"kubernetes.io/config.mirror": "x"})])
    assert result.pods() == []
    assert result.errors() == []
    assert result.warnings() == ""


def test_local_storage_blocks_and_its_warning_is_overwritten_for_controlled_pods() -> None:
    assert plan([P("cache", empty_dir=True)]).errors() == [
        f"cannot delete {LOCAL_STORAGE_FATAL}: default/cache"
    ]
    allowed = plan([P("cache", empty_dir=True)], delete_emptydir_data=True)
    assert [p.name for p in allowed.pods()] == ["cache"]
    assert allowed.warnings() == ""  # kubectl never prints "deleting Pods with local storage"


def test_bare_pods_need_force() -> None:
    assert plan([P("bare", owner=None)]).errors() == [
        f"cannot delete {UNMANAGED_FATAL}: default/bare"
    ]
    forced = plan([P("bare", owner=None)], force=True)
    assert [p.name for p in forced.pods()] == ["bare"]
    assert forced.warnings() == f"{UNMANAGED_WARNING}: default/bare"


def test_errors_and_warnings_group_pods_by_message_in_order() -> None:
    pods = [
        P("a", owner=None),
        P("agent-1", namespace="kube-system", owner=DS),
        P("b", owner=None, namespace="prod"),
        P("agent-2", namespace="kube-system", owner=DS),
    ]
    result = plan(pods)
    assert result.errors() == [
        f"cannot delete {UNMANAGED_FATAL}: default/a, prod/b",
        f"cannot delete {DAEMONSET_FATAL}: kube-system/agent-1, kube-system/agent-2",
    ]
    both = plan(pods, force=True, ignore_daemonsets=True)
    assert both.warnings() == (
        f"{UNMANAGED_WARNING}: default/a, prod/b; "
        f"{DAEMONSET_WARNING}: kube-system/agent-1, kube-system/agent-2"
    )


def test_first_blocking_filter_wins() -> None:
    # A bare DaemonSet-less pod with emptyDir: local storage (4th) stops before unreplicated.
    result = plan([P("x", owner=None, empty_dir=True)])
    assert result.errors() == [f"cannot delete {LOCAL_STORAGE_FATAL}: default/x"]


def test_skip_deleted_only_past_the_timeout() -> None:
    old = Pod.from_dict(pod("old")).with_changes(deletion_timestamp=NOW - 100)
    new = Pod.from_dict(pod("new")).with_changes(deletion_timestamp=NOW - 5)
    assert [p.name for p in plan([old, new]).pods()] == ["old", "new"]
    assert [p.name for p in plan([old, new], skip_wait_for_delete_timeout=10).pods()] == ["new"]


def test_additional_filters_run_last() -> None:
    def no_prod(p: Pod) -> PodDeleteStatus:
        if p.namespace == "prod":
            return PodDeleteStatus.error("prod pods (ask first)")
        return PodDeleteStatus.okay()

    result = get_pods_for_deletion(
        [P("a"), P("b", namespace="prod")],
        options=DrainOptions(additional_filters=(no_prod,)),
        owner_exists=lambda _ns, _n: True,
        now=NOW,
    )
    assert [p.name for p in result.pods()] == ["a"]
    assert result.errors() == ["cannot delete prod pods (ask first): prod/b"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (0, "0s"),
        (60, "1m0s"),
        (90.5, "1m30.5s"),
        (0.25, "250ms"),
        (3723, "1h2m3s"),
        (0.000015, "15µs"),
        (2e-7, "200ns"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_priority_order_lowest_first_in_groups() -> None:
    pods = [
        P("hi", priority=1000),
        P("lo-1", priority=-5),
        P("mid", priority=0),
        P("lo-2", priority=-5),
    ]
    groups = order_by_priority(pods)
    names = [sorted(p.name for p in g) for g in groups]
    assert names == [["lo-1", "lo-2"], ["mid"], ["hi"]]


pod_strategy = st.builds(
    lambda i, owner, phase, empty, mirror, ns: P(
        f"p{i}",
        namespace=ns,
        owner={"rs": ("apps/v1", "ReplicaSet", "web"), "ds": DS, "none": None}[owner],
        phase=phase,
        empty_dir=empty,
        annotations={"kubernetes.io/config.mirror": "m"} if mirror else None,
    ),
    st.integers(0, 10_000),
    st.sampled_from(["rs", "ds", "none"]),
    st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["default", "prod"]),
)


@given(
    pods=st.lists(pod_strategy, max_size=12, unique_by=lambda p: p.key),
    force=st.booleans(),
    ignore=st.booleans(),
    local=st.booleans(),
    exists=st.booleans(),
)
def test_plan_invariants(
    pods: list[Pod], force: bool, ignore: bool, local: bool, exists: bool
) -> None:
    result = plan(
        pods, exists=exists, force=force, ignore_daemonsets=ignore, delete_emptydir_data=local
    )
    assert [i.pod for i in result.items] == pods  # every pod judged once, in order
    deleted = {p.key for p in result.pods()}
    for item in result.items:
        # Only "delete" statuses are deleted; errors and skips never are.
        assert (item.pod.key in deleted) == item.status.delete
        if item.status.reason in (StatusType.ERROR, StatusType.SKIP):
            assert not item.status.delete
        mirror = "kubernetes.io/config.mirror" in item.pod.annotations
        # Completed pods always pass unless they are mirror pods.
        if item.pod.phase in ("Succeeded", "Failed") and not mirror:
            assert item.status.delete
        if mirror:
            assert not item.status.delete
    blocking = [i for i in result.items if i.status.reason is StatusType.ERROR]
    assert len(result.errors()) == len({i.status.message for i in blocking})
    # With every override on and owners present, nothing blocks.
    if force and ignore and local and exists:
        assert result.errors() == []


def test_diagnosis_explains_a_budget_at_zero() -> None:
    from evictor.diagnose import WorkloadStatus, explain
    from evictor.pdbwatch import PdbState

    state = PdbState(
        "web", "default", generation=2, observed_generation=2, current_healthy=2,
        desired_healthy=2, expected_pods=3,
    )  # fmt: skip
    sick = pod("web-2", app="web", ready=False)
    got = explain(
        state,
        blocked=["web-0"],
        selected=[pod("web-0", app="web"), sick],
        workloads=[
            WorkloadStatus("ReplicaSet", "web", 3, 2),
            WorkloadStatus("ReplicaSet", "ok", 2, 2),
        ],
    )
    assert got[0] == (
        "diagnosis: PodDisruptionBudget default/web blocked 1 pod(s) (web-0): "
        "disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2, expectedPods=3"
    )
    assert "  unhealthy pods selected by it: web-2 (not Ready, Running)" in got
    assert "  replicas not Ready: ReplicaSet web 2/3" in got
    assert (
        "  it needs 2 healthy pods and has 2: 1 more must be Ready before one of them may go" in got
    )
    assert got[-1].startswith("  remedies: ")
    stale = PdbState("web", "default", generation=3, observed_generation=2)
    assert any("not processed" in line for line in explain(stale, blocked=["a"], selected=[]))

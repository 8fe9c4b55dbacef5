"""``evict drain --plan`` against what really happens: the plan first, then the real drain.

Each cluster is a living kubesim (controllers replace evicted pods, its scheduler loop binds
them, kubelets make them Ready, the disruption controller reopens budgets) whose outcome is
known by construction. The plan is asked for through the CLI (``-o json``), every request it
made is checked to be a read, then the same drain runs for real and the test holds the plan to
it: every replacement the plan predicts lands on the node kubesim's scheduler binds it to (per
owner, in creation order), the pods the plan evicts are exactly those evicted, and those it
says a budget holds for good are exactly those still there when the drain gives up.
"""

from __future__ import annotations

import json

import pytest

from tests.support.evict import Evict
from tests.support.living import living, settle
from tests.support.manifests import daemonset, pdb, pod
from tests.support.planliving import (
    TIME_SCALE,
    assert_matches,
    cpu_node,
    held_for_good,
    member,
    plan_pods,
    plan_then_drain,
    priority_class,
    workload,
)

# --- the clusters ----------------------------------------------------------------------------


async def test_a_budget_without_slack_and_no_room_elsewhere_stalls_where_the_plan_says() -> None:
    # web: 3 x 1 CPU, minAvailable 2: one pod may go. node-2 and node-3 are full, so its
    # replacement never runs and the second pod of node-1 waits for good.
    objs = [cpu_node("node-1", "2"), cpu_node("node-2", "1"), cpu_node("node-3", "1")]
    objs += workload("ReplicaSet", "web", 3, "1")
    objs += workload("ReplicaSet", "filler", 1, "1")
    objs += [pdb("web", min_available=2)]
    objs += [member("ReplicaSet", "web", f"web-{i}", "node-1", "1") for i in range(2)]
    objs += [member("ReplicaSet", "web", "web-2", "node-2", "1")]
    objs += [member("ReplicaSet", "filler", "filler-0", "node-3", "1")]
    async for o in plan_then_drain(objs, ["node-1"], timeout="2s"):
        assert o.plan_code == 3 and o.plan["verdict"] == "stuck"
        assert o.predicted == {"ReplicaSet web": [None]}
        assert held_for_good(o.plan) == {"web-1"}
        (blocker,) = o.plan["nodes"][0]["blockers"]
        assert blocker.startswith("PDB web minAvailable 2: 2 healthy, the replacement of web-0")
        assert "fits on no node: 0/3 nodes are available: 1 node(s) were unschedulable, 2" in (
            blocker
        )
        assert o.drain_code == 1
        assert_matches(o)


async def test_room_only_after_preemption() -> None:
    objs = [priority_class("high", 1000), cpu_node("node-1", "2"), cpu_node("node-2", "2")]
    objs += workload("ReplicaSet", "web", 1, "2", priority_class="high")
    objs += workload("ReplicaSet", "batch", 1, "2")
    objs += [pdb("web", max_unavailable=1)]
    objs += [member("ReplicaSet", "web", "web-0", "node-1", "2", priority_class="high")]
    objs += [member("ReplicaSet", "batch", "batch-0", "node-2", "2")]
    async for o in plan_then_drain(objs, ["node-1"]):
        assert o.plan_code == 0, o.plan["reason"]
        rep = plan_pods(o.plan)["web-0"]["replacement"]
        assert rep["node"] == "node-2" and rep["preempts"] == ["default/batch-0 on node-2"]
        # batch-0's own replacement has nowhere to go (node-1 is cordoned, node-2 taken)
        assert o.predicted == {"ReplicaSet web": ["node-2"], "ReplicaSet batch": [None]}
        assert o.drain_code == 0, o.drain_err
        assert_matches(o)


async def test_spread_constraints_force_a_zone() -> None:
    # zone a: a1 (drained), a2; zone b: b1 with two web pods, b2 empty and the most attractive.
    # With a1's pod terminating, b would hold 3 against a's 1: only a2 keeps maxSkew 1.
    objs = [cpu_node("a1", "4", zone="a"), cpu_node("a2", "4", zone="a")]
    objs += [cpu_node("b1", "4", zone="b"), cpu_node("b2", "16", zone="b")]
    objs += workload("ReplicaSet", "web", 4, "1", spread=True)
    objs += workload("ReplicaSet", "filler", 1, "2")
    objs += [pdb("web", max_unavailable=1)]
    objs += [member("ReplicaSet", "web", "web-0", "a1", "1", spread=True)]
    objs += [member("ReplicaSet", "web", "web-1", "a2", "1", spread=True)]
    objs += [member("ReplicaSet", "web", f"web-{i}", "b1", "1", spread=True) for i in (2, 3)]
    objs += [member("ReplicaSet", "filler", "filler-0", "a2", "2")]
    async for o in plan_then_drain(objs, ["a1"]):
        assert o.plan_code == 0, o.plan["reason"]
        assert o.predicted == {"ReplicaSet web": ["a2"]}
        assert_matches(o)


async def test_a_statefulset_budget_goes_one_pod_at_a_time() -> None:
    objs = [cpu_node("node-1", "4"), cpu_node("node-2", "4"), cpu_node("node-3", "8")]
    objs += workload("StatefulSet", "db", 3, "1")
    objs += [pdb("db", max_unavailable=1)]
    objs += [member("StatefulSet", "db", f"db-{i}", "node-1", "1") for i in (0, 1)]
    objs += [member("StatefulSet", "db", "db-2", "node-2", "1")]
    async for o in plan_then_drain(objs, ["node-1"]):
        assert o.plan_code == 0, o.plan["reason"]
        pods = plan_pods(o.plan)
        assert (pods["db-0"]["round"], pods["db-1"]["round"]) == (1, 2)
        assert pods["db-1"]["heldBy"] == {"pdb": "db", "fromRound": 1, "untilRound": 2}
        assert pods["db-0"]["replacement"]["name"] == "db-0"
        assert o.drain_code == 0, o.drain_err
        assert_matches(o)


async def test_a_daemonset_and_an_unmanaged_pod() -> None:
    objs = [cpu_node("node-1", "4"), cpu_node("node-2", "4"), daemonset("agent")]
    objs += workload("ReplicaSet", "web", 1, "1")
    objs += [member("ReplicaSet", "web", "web-0", "node-1", "1")]
    objs += [pod("bare", node_name="node-1", owner=None)]

    async def without_flags(evict: Evict) -> None:
        code, out, _ = await evict("drain", "node-1", "--plan", "-o", "json")
        assert code == 3
        (n,) = json.loads(out)["nodes"]
        assert n["verdict"] == "refused"
        assert {p["action"] for p in n["pods"]} == {"refuse"}
        ds = next(p for p in n["pods"] if p["name"].startswith("agent-"))
        assert ds["reason"] == "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
        # kubectl's own refusal, as the real drain prints it, and nothing evicted
        code, _, err = await evict("drain", "node-1")
        assert code == 1
        for line in n["errors"]:
            assert line in err
        assert not evict.sim.requests.filter(subresource="eviction")
        await evict("uncordon", "node-1")

    async for o in plan_then_drain(
        objs, ["node-1"], "--ignore-daemonsets", "--force", first=without_flags
    ):
        assert o.plan_code == 0, o.plan["reason"]
        pods = plan_pods(o.plan)
        assert pods["bare"]["action"] == "evict" and "replacement" not in pods["bare"]
        assert next(p for n, p in pods.items() if n.startswith("agent-"))["action"] == "skip"
        assert o.predicted == {"ReplicaSet web": ["node-2"]}
        assert_matches(o)


async def test_two_nodes_sharing_one_budget() -> None:
    objs = [cpu_node("node-1", "4"), cpu_node("node-2", "4")]
    objs += [cpu_node("node-3", "8"), cpu_node("node-4", "6")]
    objs += workload("ReplicaSet", "web", 4, "1")
    objs += [pdb("web", max_unavailable=1)]
    objs += [member("ReplicaSet", "web", f"web-{i}", f"node-{1 + i // 2}", "1") for i in range(4)]
    async for o in plan_then_drain(objs, ["node-1", "node-2"]):
        assert o.plan_code == 0, o.plan["reason"]
        assert [p["round"] for n in o.plan["nodes"] for p in n["pods"]] == [1, 2, 3, 4]
        assert o.drain_code == 0, o.drain_err
        assert_matches(o)


@pytest.mark.parametrize("flag", ["--check-plan", "--check-plan=true"])
async def test_check_plan_refuses_a_drain_that_cannot_finish(flag: str) -> None:
    objs = [cpu_node("node-1", "2"), cpu_node("node-2", "1")]
    objs += workload("ReplicaSet", "web", 2, "1")
    objs += [pdb("web", min_available=2)]
    objs += [member("ReplicaSet", "web", f"web-{i}", f"node-{1 + i}", "1") for i in range(2)]
    async with living(objs, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        before = len(sim.requests)
        code, out, err = await Evict(sim)("drain", "node-1", flag)
        assert code == 3
        assert "will not finish" in err and "nothing was cordoned" in err
        assert "PDB web minAvailable 2: 2 healthy" in out
        assert all(r.method == "GET" for r in list(sim.requests)[before:])
        node1 = sim.get("Node", None, "node-1")
        assert node1 is not None and not node1["spec"].get("unschedulable")

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

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesim.sim import Simulator
from tests.support.evict import Evict
from tests.support.living import living, settle
from tests.support.manifests import daemonset, node, pdb, pod
from tests.support.wait import until

TIME_SCALE = 0.02
GRACE = 5  # seconds x TIME_SCALE: an evicted pod is gone 0.1 s after its eviction


def cpu_node(name: str, cpu: str, *, zone: str | None = None) -> dict[str, Any]:
    n = node(name, labels={"topology.kubernetes.io/zone": zone} if zone else None)
    n["status"]["capacity"] = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return n


def _spec(cpu: str, *, priority_class: str = "", spread: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": GRACE,
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    return spec


def workload(kind: str, name: str, replicas: int, cpu: str, **kw: Any) -> list[dict[str, Any]]:
    """A ReplicaSet or StatefulSet and the template its pods are made of."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": _spec(cpu, **kw)},
        },
    }
    if kind == "StatefulSet":
        obj["spec"]["serviceName"] = name
    return [obj]


def member(kind: str, owner: str, name: str, node_name: str, cpu: str, **kw: Any) -> dict[str, Any]:
    """A pod of ``owner`` bound to ``node_name``, made of the owner's template."""
    p = pod(name, node_name=node_name, app=owner, owner=("apps/v1", kind, owner))
    p["spec"] = {"nodeName": node_name, **_spec(cpu, **kw)}
    return p


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


# --- what happened ---------------------------------------------------------------------------


@dataclass
class Placements:
    """The pods created after ``start`` in creation order, their owner and the node they were
    bound to (None: never), from the store's watch."""

    sim: Simulator
    known: set[str]
    created: list[tuple[str, str]] = field(default_factory=list)  # (uid, owner title)
    bound: dict[str, str] = field(default_factory=dict)

    async def run(self) -> None:
        sub = self.sim.store.subscribe("pods")
        try:
            while True:
                ev = await sub.queue.get()
                meta = ev.obj.get("metadata") or {}
                uid = meta.get("uid", "")
                if uid in self.known:
                    continue
                if uid not in {u for u, _ in self.created}:
                    ref = next(iter(meta.get("ownerReferences") or []), {})
                    self.created.append((uid, f"{ref.get('kind')} {ref.get('name')}"))
                node_name = (ev.obj.get("spec") or {}).get("nodeName")
                if node_name and uid not in self.bound:
                    self.bound[uid] = node_name
        finally:
            self.sim.store.unsubscribe(sub)

    def by_owner(self) -> dict[str, list[str | None]]:
        out: dict[str, list[str | None]] = {}
        for uid, owner in self.created:
            out.setdefault(owner, []).append(self.bound.get(uid))
        return out


def predicted(plan: dict[str, Any]) -> dict[str, list[str | None]]:
    """The plan's replacements per owner, in the order it creates them, and where they go."""
    bound = {e["pod"]: e["node"] for e in plan["events"] if e["what"] == "bind"}
    out: dict[str, list[str | None]] = {}
    for e in plan["events"]:
        if e["what"] == "create":
            out.setdefault(e["detail"], []).append(bound.get(e["pod"]))
    return out


def quiet(sim: Simulator) -> bool:
    """Nothing is terminating, every ReplicaSet and StatefulSet has made all its replacements,
    and the scheduler has tried every unbound pod.

    The replacement count matters: the drain returns once its last pod is deleted, and until
    the controller has seen that deletion there is neither a terminating pod nor a new one."""
    owned: dict[tuple[str, str], int] = {}
    for p in sim.list_objects("Pod"):
        for ref in p["metadata"].get("ownerReferences") or []:
            key = (ref.get("kind", ""), ref.get("name", ""))
            owned[key] = owned.get(key, 0) + 1
    for kind in ("ReplicaSet", "StatefulSet"):
        for w in sim.list_objects(kind):
            want = (w.get("spec") or {}).get("replicas", 1)
            if owned.get((kind, w["metadata"]["name"]), 0) < want:
                return False
    for p in sim.list_objects("Pod"):
        if p["metadata"].get("deletionTimestamp"):
            return False
        if not p["spec"].get("nodeName"):
            conds = (p.get("status") or {}).get("conditions") or []
            tried = [c for c in conds if c.get("type") == "PodScheduled"]
            if not any(c.get("status") == "False" for c in tried):
                return False
    return True


async def settled_quiet(sim: Simulator) -> None:
    await until(lambda: quiet(sim), timeout=15)
    await asyncio.sleep(0.2)  # a nominated preemptor binds once its victims are gone
    await until(lambda: quiet(sim), timeout=15)


@dataclass
class Outcome:
    plan: dict[str, Any]
    plan_code: int
    drain_code: int
    drain_err: str
    predicted: dict[str, list[str | None]]
    actual: dict[str, list[str | None]]
    evicted: set[str]
    left: set[str]  # drained pods (not skipped) still there, not terminating


async def plan_then_drain(
    objs: list[dict[str, Any]],
    nodes: list[str],
    *flags: str,
    timeout: str = "30s",
    first: Callable[[Evict], Awaitable[None]] | None = None,
) -> AsyncIterator[Outcome]:
    """The plan, then the drain, of ``nodes`` with ``flags``; ``first`` runs before them."""
    async with living(objs, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        evict = Evict(sim)
        if first is not None:
            await first(evict)
        before = len(sim.requests)
        code, out, err = await evict("drain", *nodes, "--plan", "-o", "json", *flags)
        assert code in (0, 3), err
        writes = [(r.method, r.path) for r in list(sim.requests)[before:] if r.method != "GET"]
        assert writes == [], f"--plan wrote to the cluster: {writes}"
        plan = json.loads(out)
        watcher = Placements(sim, {p["metadata"]["uid"] for p in sim.list_objects("Pod")})
        task = asyncio.create_task(watcher.run())
        await asyncio.sleep(0)
        drained, _, derr = await evict("drain", *nodes, *flags, f"--timeout={timeout}")
        await settled_quiet(sim)
        task.cancel()
        planned = {p["name"] for n in plan["nodes"] for p in n["pods"] if p["action"] != "skip"}
        granted = {r.name for r in sim.requests.filter(subresource="eviction") if r.code == 201}
        present = {
            p["metadata"]["name"]
            for p in sim.list_objects("Pod")
            if p["spec"].get("nodeName") in nodes and not p["metadata"].get("deletionTimestamp")
        }
        yield Outcome(
            plan=plan,
            plan_code=code,
            drain_code=drained,
            drain_err=derr,
            predicted=predicted(plan),
            actual=watcher.by_owner(),
            evicted=granted & planned,
            left=planned & present,
        )


def plan_pods(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for n in plan["nodes"] for p in n["pods"]}


def held_for_good(plan: dict[str, Any]) -> set[str]:
    return {
        name
        for name, p in plan_pods(plan).items()
        if p.get("heldBy") and p["heldBy"]["untilRound"] is None
    }


def evicted_in_plan(plan: dict[str, Any]) -> set[str]:
    return {name for name, p in plan_pods(plan).items() if p["round"] is not None}


def assert_matches(o: Outcome) -> None:
    assert o.predicted == o.actual, f"plan {o.predicted} != kubesim {o.actual}"
    assert evicted_in_plan(o.plan) == o.evicted
    assert held_for_good(o.plan) == o.left


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

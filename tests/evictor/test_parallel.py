"""``evict drain --parallel N`` on living kubesim clusters: never more disruption than a budget
allows, a budget shared across nodes being one budget, and faster than node by node.

The budget check follows the cluster step by step: every write to a pod is replayed from the
store's watch onto a copy of the pods, and after each one every budget must still have at
least ``desiredHealthy`` healthy pods (Ready, not terminating) — the disrupted count never
exceeds the allowance — whatever order the drains' evictions reached the server in.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.labels import LabelSelector
from kubesim.sim import Simulator

from .conftest import Evict, living, node, pdb, pod, replicaset, settle

TIME_SCALE = 0.02


def _ready(p: dict[str, Any]) -> bool:
    conds = (p.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class BudgetWatch:
    """Replays every pod event and checks every budget's floor after each one."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.pods = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p for p in sim.list_objects("Pod")
        }
        self.floors: dict[str, tuple[LabelSelector, int]] = {}
        for b in sim.list_objects("PodDisruptionBudget"):
            status = b.get("status") or {}
            selector = LabelSelector.from_dict(b["spec"]["selector"])
            self.floors[b["metadata"]["name"]] = (selector, int(status["desiredHealthy"]))
        self.steps = 0
        self.start = {name: self.healthy(sel) for name, (sel, _) in self.floors.items()}
        self.lowest: dict[str, int] = {}
        self.violations: list[str] = []

    def healthy(self, selector: LabelSelector) -> int:
        return sum(
            1
            for p in self.pods.values()
            if selector.matches(p["metadata"].get("labels") or {})
            and _ready(p)
            and not p["metadata"].get("deletionTimestamp")
        )

    def check(self) -> None:
        for name, (selector, desired) in self.floors.items():
            healthy = self.healthy(selector)
            self.lowest[name] = min(self.lowest.get(name, healthy), healthy)
            if healthy < desired:
                self.violations.append(f"step {self.steps}: PDB {name} {healthy} < {desired}")

    async def run(self) -> None:
        sub = self.sim.store.subscribe("pods")
        try:
            while True:
                ev = await sub.queue.get()
                key = (ev.key[0], ev.key[1])
                if ev.type == "DELETED":
                    self.pods.pop(key, None)
                else:
                    self.pods[key] = ev.obj
                self.steps += 1
                self.check()
        finally:
            self.sim.store.unsubscribe(sub)


def grace_pod(name: str, node_name: str, app: str, grace: int) -> dict[str, Any]:
    return pod(
        name, node_name=node_name, app=app, owner=("apps/v1", "ReplicaSet", app), grace=grace
    )


def pool(apps: dict[str, list[str]], budgets: dict[str, int], spare: int) -> list[dict[str, Any]]:
    """Nodes ``pool-*`` holding ``apps`` (app -> the node of each pod) and ``spare`` empty ones;
    each app a ReplicaSet, with a maxUnavailable budget where ``budgets`` says."""
    names = sorted({n for nodes in apps.values() for n in nodes})
    objs = [node(n) for n in names] + [node(f"spare-{i}") for i in range(spare)]
    for app, nodes in apps.items():
        rs = replicaset(app, replicas=len(nodes))
        rs["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 10
        objs.append(rs)
        objs += [grace_pod(f"{app}-{i}", n, app, 10) for i, n in enumerate(nodes)]
        if app in budgets:
            objs.append(pdb(app, max_unavailable=budgets[app]))
    return objs


async def _drain_watched(
    objs: list[dict[str, Any]], nodes: list[str], parallel: int
) -> BudgetWatch:
    async with living(objs, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        watch = BudgetWatch(sim)
        watch.check()
        task = asyncio.create_task(watch.run())
        await asyncio.sleep(0)
        code, _, err = await Evict(sim)("drain", *nodes, f"--parallel={parallel}", "--timeout=20s")
        await settle(sim)
        task.cancel()
        assert code == 0, err
        return watch


@st.composite
def pools(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], int]:
    n_pool = draw(st.integers(2, 3))
    pool_nodes = [f"pool-{i}" for i in range(n_pool)]
    apps: dict[str, list[str]] = {}
    budgets: dict[str, int] = {}
    for a in range(draw(st.integers(1, 3))):
        app = f"app{a}"
        apps[app] = draw(st.lists(st.sampled_from(pool_nodes), min_size=2, max_size=4))
        if draw(st.booleans()) or a == 0:
            budgets[app] = draw(st.integers(1, 2))
    used = sorted({n for nodes in apps.values() for n in nodes})
    return pool(apps, budgets, spare=2), used, draw(st.integers(2, 3))


@settings(max_examples=3)
@given(pools())
def test_parallel_drains_never_exceed_a_budget(
    case: tuple[list[dict[str, Any]], list[str], int],
) -> None:
    objs, nodes, parallel = case
    watch = asyncio.run(_drain_watched(objs, nodes, parallel))
    assert watch.violations == []
    # Every budget was spent (its pods were all drained), down to its floor and not below.
    for name, (_, desired) in watch.floors.items():
        assert desired <= watch.lowest[name] < watch.start[name]


async def _drain_seconds(objs: list[dict[str, Any]], nodes: list[str], *flags: str) -> float:
    async with living(objs, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        code, out, err = await Evict(sim)("drain", *nodes, "-o", "json", *flags)
        assert code == 0, err
        report = json.loads(out)
        assert [n["name"] for n in report["nodes"]] == nodes
        return float(report["seconds"])


async def test_a_pool_of_three_nodes_drains_faster_in_parallel() -> None:
    # Each pod takes 50 s (x 0.02 = 1 s) to stop: node by node waits for them three times.
    apps = {f"app{i}": [f"pool-{i}", f"pool-{i}"] for i in range(3)}
    objs = pool(apps, {}, spare=2)
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["terminationGracePeriodSeconds"] = 50
    nodes = ["pool-0", "pool-1", "pool-2"]
    one_by_one = await _drain_seconds(objs, nodes)
    together = await _drain_seconds(objs, nodes, "--parallel=3")
    grace = 50 * TIME_SCALE
    assert one_by_one >= 3 * grace
    # Together, the grace period is waited for once instead of three times: at least half of
    # the 2 grace periods saved must show, however slow the machine makes everything else.
    assert one_by_one - together >= grace, (together, one_by_one)

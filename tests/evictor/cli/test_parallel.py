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
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.labels import LabelSelector
from kubesim.core.store import Event
from kubesim.sim import Simulator
from tests.support.evict import Evict
from tests.support.living import living, settle
from tests.support.manifests import node, pdb, pod, replicaset

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


def terminations(events: list[Event]) -> dict[str, tuple[int, int]]:
    """Per node, from the first of its pods to start terminating (an eviction sets the pod's
    deletionTimestamp) to the last of them gone: resourceVersions, in the store's write order."""
    node_of: dict[tuple[str, str], str] = {}
    spans: dict[str, tuple[int, int]] = {}
    for ev in events:
        node_name = ev.obj["spec"].get("nodeName", "")
        if not node_name.startswith("pool-"):
            continue
        if ev.type == "DELETED":
            first, _ = spans[node_of[ev.key]]
            spans[node_of[ev.key]] = (first, ev.rv)
        elif ev.obj["metadata"].get("deletionTimestamp") and ev.key not in node_of:
            node_of[ev.key] = node_name
            spans.setdefault(node_name, (ev.rv, ev.rv))
    return spans


async def _drain(
    objs: list[dict[str, Any]], nodes: list[str], *flags: str
) -> tuple[float, dict[str, tuple[int, int]]]:
    async with living(objs, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        rv = sim.store.resource_version
        code, out, err = await Evict(sim)("drain", *nodes, "-o", "json", *flags)
        assert code == 0, err
        report = json.loads(out)
        assert [n["name"] for n in report["nodes"]] == nodes
        return float(report["seconds"]), terminations(sim.store.events_since("pods", rv))


async def test_a_pool_of_three_nodes_drains_faster_in_parallel() -> None:
    # Each pod takes 50 s (x 0.02 = 1 s) to stop: node by node waits for them three times.
    apps = {f"app{i}": [f"pool-{i}", f"pool-{i}"] for i in range(3)}
    objs = pool(apps, {}, spare=2)
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["terminationGracePeriodSeconds"] = 50
    nodes = ["pool-0", "pool-1", "pool-2"]
    grace = 50 * TIME_SCALE
    one_by_one, spans = await _drain(objs, nodes)
    assert one_by_one >= 3 * grace
    # node by node: a node's pods start terminating only once the previous node's are gone
    assert sorted(spans) == nodes
    assert all(spans[a][1] < spans[b][0] for a, b in pairwise(nodes)), spans
    together, spans = await _drain(objs, nodes, "--parallel=3")
    assert together >= grace
    # together: every node's pods are terminating at once, so the grace period is waited for
    # once instead of three times, however slow the machine makes the rest
    assert sorted(spans) == nodes
    assert max(start for start, _ in spans.values()) < min(end for _, end in spans.values()), spans

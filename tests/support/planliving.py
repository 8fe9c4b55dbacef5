"""Living-cluster helpers for ``evict drain --plan`` tests: the workloads the clusters are made
of, what happened (``Placements``), and the plan then the real drain (``plan_then_drain``) whose
outcome a test holds the plan to."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubesim.sim import Simulator
from tests.support.evict import Evict
from tests.support.living import living, settle
from tests.support.manifests import node, pod
from tests.support.wait import until

TIME_SCALE = 0.02
GRACE = 5  # seconds x TIME_SCALE: an evicted pod is gone 0.1 s after its eviction


def cpu_node(name: str, cpu: str, *, zone: str | None = None) -> dict[str, Any]:
    labels = {"topology.kubernetes.io/zone": zone} if zone else None
    return node(name, labels=labels, cpu=cpu, memory="16Gi", pods="110")


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

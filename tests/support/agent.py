"""The agent end to end against a kubesim in process: the cluster, a config, the agent started
and stopped, and what it sent.

``STATE`` is one node under a 500Mi hard threshold with pods of every priority (``USAGE`` is
what each uses); ``TAINTED_STATE`` is a node that already carries an operator's taint, for the
tests of the agent's own taint beside it.
"""

from __future__ import annotations

from typing import Any

from agent.config import load_config
from agent.daemon import Agent
from kubesim.sim import Simulator
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

STATE = "\n---\n".join(
    [
        NODES,
        pod("a", priority=0, request="100Mi"),
        pod("b", priority=1000, request="100Mi"),
        pod("c", priority=0, request="400Mi"),
        pod("crit", namespace="kube-system", priority=2000000000),
        pod("other", node="node-2"),
    ]
)

USAGE = {
    "default/a": 300 * MI,
    "default/b": 300 * MI,
    "default/c": 200 * MI,
    "kube-system/crit": 50 * MI,
    "default/other": 900 * MI,
}


def config(**fields: Any) -> Any:
    base: dict[str, Any] = {
        "evictionHard": {"memory.available": "500Mi"},
        "housekeepingInterval": "50ms",
        "nodeName": "node-1",
    }
    base.update(fields)
    return load_config(base)


async def more_syncs(agent: Agent, n: int) -> None:
    """Let the agent sync ``n`` more times (an observation window counted in syncs, not
    seconds: what must not happen has had ``n`` chances to)."""
    target = agent.loop.stats.syncs + n
    await until(lambda: agent.loop.stats.syncs >= target, timeout=30)


def pod_deletes(sim: Simulator) -> list[str]:
    return [r.name for r in sim.requests.filter(verb="delete", resource="pods")]


async def start(sim: Simulator, fake: FakeNode, cfg: Any, **kw: Any) -> tuple[Agent, Any]:
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        serve_http=False,
        use_psi=False,
        cleanup_timeout=5.0,
        **kw,
    )
    await agent.start()
    return agent, api


async def stop(agent: Agent, api: Any) -> None:
    await agent.stop()
    await api.close()


MEMORY_TAINT = {"key": "node-pressure-evictor.io/memory-pressure", "effect": "NoSchedule"}

OPERATOR_TAINT = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}

TAINTED_STATE = "\n---\n".join(
    [
        """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
spec:
  taints: [{key: dedicated, value: db, effect: NoSchedule}]
status:
  capacity: {cpu: "4", memory: 1Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
""",
        pod("a", priority=0, request="100Mi"),
        pod("crit", namespace="kube-system", priority=2000000000),
    ]
)


def taints(sim: Simulator) -> list[dict[str, Any]]:
    node = sim.get("Node", "", "node-1") or {}
    return list((node.get("spec") or {}).get("taints") or [])

"""Benchmark: ``evict drain`` against ``kubectl drain`` on identical fresh living kubesim clusters.

Three scenarios (``SCENARIOS``): (a) 110 pods of 5 Deployments, no PDB — target ≤ 1.0×
kubectl's wall time; (b) the same behind a ``maxUnavailable: 1`` budget per Deployment —
≤ 0.3×; (c) 1000 pods of 10 Deployments, 20 ms added to every request — within 1.2× of an ideal
client and no slower than kubectl. One JSON line per scenario (``bench`` says what is in it).

Run: ``.venv/bin/python bench/drain_vs_kubectl.py [--rounds N] [--quick] [--scenario a,b,c]``.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubesim.sim import Simulator, tune_collector_for_server

EVICT = str(Path(sys.executable).with_name("evict"))
IDEAL_CLIENT = Path(__file__).resolve().parent / "support" / "ideal_drain_client.py"
KUBECTL = "/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else shutil.which("kubectl")
TIME_SCALE = 0.01  # the pods' 30 s grace period → 0.3 s
READY_AFTER_ANNOTATION = "kubesim.io/ready-after"


def make_state(
    pods: int, *, deployments: int, pdb: bool, ready_after: float | None
) -> list[dict[str, Any]]:
    """Two nodes (node-2 cordoned until the pods are placed), Deployments and their PDBs."""
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n},
            # a /20 each: room for the 1000 pod IPs of (c) (the default /24 holds 254)
            "spec": {"podCIDR": cidr, **({"unschedulable": True} if n == "node-2" else {})},
            "status": {
                "capacity": {"cpu": "512", "memory": "2Ti", "pods": "5000"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for n, cidr in (("node-1", "10.244.0.0/20"), ("node-2", "10.244.16.0/20"))
    ]
    per = -(-pods // deployments)
    for d in range(deployments):
        app = f"app-{d}"
        replicas = min(per, pods - d * per)
        if replicas <= 0:
            break
        template_meta: dict[str, Any] = {"labels": {"app": app}}
        if ready_after is not None:
            # seconds × time scale: Ready ``ready_after`` wall seconds after the pod starts
            template_meta["annotations"] = {READY_AFTER_ANNOTATION: f"{ready_after / TIME_SCALE:g}"}
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app, "namespace": "default"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": template_meta,
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            }
        )
        if pdb:
            objs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": "default"},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                }
            )
    return objs


def _settled(sim: Simulator, pods: int) -> bool:
    for dep in sim.list_objects("Deployment"):
        status = dep.get("status") or {}
        if status.get("readyReplicas", 0) != dep["spec"]["replicas"]:
            return False
    for pdb in sim.list_objects("PodDisruptionBudget"):
        status = pdb.get("status") or {}
        if status.get("observedGeneration") != pdb["metadata"].get("generation", 1):
            return False
        if status.get("disruptionsAllowed", 0) < 1:
            return False
    placed = [p for p in sim.list_objects("Pod") if p["spec"].get("nodeName") == "node-1"]
    return len(placed) == pods


async def build(
    state: list[dict[str, Any]], faults: dict[str, Any], pods: int, time_scale: float = TIME_SCALE
) -> Simulator:
    """A started living cluster with every pod Ready on node-1 and node-2 open for them."""
    sim = Simulator(state=state, faults=faults or None, time_scale=time_scale)
    await sim.start()
    try:
        end = time.monotonic() + 120
        while not _settled(sim, pods):
            if time.monotonic() > end:
                raise SystemExit("the cluster did not settle in 120 s")
            await asyncio.sleep(0.05)
        sim.update("Node", None, "node-2", lambda node: node["spec"].update(unschedulable=False))
        sim.requests.clear()
        # Every measured run starts from the same collector state: building the cluster left
        # the generations' counters anywhere, so a pause of the younger generations (~0.3 s
        # for this heap) fell inside one run's window and not another's, at random.
        gc.collect()
    except BaseException:
        await sim.stop()
        raise
    return sim


async def run_tool(
    tool: str,
    state: list[dict[str, Any]],
    faults: dict[str, Any],
    pods: int,
    tmp: Path,
    *,
    time_scale: float = TIME_SCALE,
) -> dict[str, float]:
    """One real command line (``evict`` from this virtualenv, ``/usr/bin/kubectl``) as a
    subprocess on a fresh cluster, until the node is empty. Besides the wall time, what it
    spends per phase, from kubesim's request log: ``startup`` (process start to its first
    request: interpreter, imports, kubeconfig), ``setup`` (first request to first eviction:
    discovery, node, cordon, pod list), ``evictions`` (first to last eviction) and ``tail``
    (last eviction to exit: the last pods' deletion)."""
    sim = await build(state, faults, pods, time_scale)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(sim.kubeconfig_path)
        env["HOME"] = str(tmp)
        binary = EVICT if tool == "evict" else str(KUBECTL)
        args = [binary]
        if tool == "kubectl":
            args.append(f"--cache-dir={tmp / 'cache'}")
        args += ["drain", "node-1", "--ignore-daemonsets", "--timeout=600s"]
        t0 = time.time()
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        _, err = await proc.communicate()
        end = time.time()
        if proc.returncode != 0:
            raise SystemExit(f"{tool} drain failed ({proc.returncode}): {err.decode()[-2000:]}")
        left = [p for p in sim.list_objects("Pod") if p["spec"].get("nodeName") == "node-1"]
        if left:
            raise SystemExit(f"{tool} drain left {len(left)} pods on node-1")
        reqs = [r for r in sim.requests if r.user_agent != "kubesim"]
        evictions = [r.time for r in reqs if r.subresource == "eviction"]
        first = min((r.time for r in reqs), default=end)
        return {
            "wall": end - t0,
            "startup": first - t0,
            "setup": (min(evictions) - first) if evictions else 0.0,
            "evictions": (max(evictions) - min(evictions)) if evictions else 0.0,
            "tail": (end - max(evictions)) if evictions else 0.0,
        }
    finally:
        await sim.stop()


async def single_seconds(
    state: list[dict[str, Any]], faults: dict[str, Any], pods: int, time_scale: float = TIME_SCALE
) -> float:
    """One eviction round trip plus the deletion time of one pod on an idle cluster: the
    ideal's formula taken literally (in real time, one sample is 30 s)."""
    from evictor.client import Evictor, refs

    sim = await build(state, faults, pods, time_scale)
    try:
        async with sim.api_client() as api, Evictor(api) as ev:
            await ev.eviction_version()  # discovery is not part of one eviction
            (ref,) = refs([p for p in sim.list_objects("Pod") if p["spec"].get("nodeName")][:1])
            t0 = time.perf_counter()
            await ev.evict(ref.namespace, ref.name, expected_uid=ref.uid, max_attempts=1)
            await ev.wait_for_deletion([ref], deadline=time.time() + 60)
            return time.perf_counter() - t0
    finally:
        await sim.stop()


async def ideal_seconds(
    state: list[dict[str, Any]], faults: dict[str, Any], pods: int, time_scale: float = TIME_SCALE
) -> dict[str, float]:
    """The ideal client (``bench/support/ideal_drain_client.py``) on a fresh identical cluster:
    its own process like the real tools, the node cordoned and its pods known in advance, every
    eviction sent at once, until the last pod is gone.

    That is (c)'s "one eviction round trip plus the deletion time" for a client with no
    start-up cost and unbounded concurrency, measured so that the round trip and the deletions
    are those of 1000 evictions arriving together. The formula taken literally, one pod
    evicted on an idle cluster, is ``single_seconds``."""
    sim = await build(state, faults, pods, time_scale)
    try:
        # cordoned, as the tools do before evicting
        sim.update("Node", None, "node-1", lambda node: node["spec"].update(unschedulable=True))
        victims = [
            {"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
             "uid": p["metadata"]["uid"]}
            for p in sim.list_objects("Pod") if p["spec"].get("nodeName") == "node-1"
        ]  # fmt: skip
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(victims, fh)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(IDEAL_CLIENT), sim.url, "node-1", fh.name,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await proc.communicate()
        finally:
            os.unlink(fh.name)
        if proc.returncode != 0:
            raise SystemExit(f"the ideal client failed: {err.decode()[-2000:]}")
        left = [p for p in sim.list_objects("Pod") if p["spec"].get("nodeName") == "node-1"]
        if left:
            raise SystemExit(f"the ideal client left {len(left)} pods on node-1")
        return {k: float(v) for k, v in json.loads(out).items()}
    finally:
        await sim.stop()


# (b): replacements are Ready 1 s after they start (``kubesim.io/ready-after``); kubectl waits a
# fixed 5 s after every budget 429, ``evict`` retries when the budget reopens.
# Time: (a) and (b) run 100x faster than the clock (``TIME_SCALE``): the pods' 30 s grace
# period and the kubelet's and controllers' durations shrink, the network and the tools do
# not. (c) runs in real time: its target is relative to "one eviction round trip plus the
# deletion time", and compressing only the deletion time (30 s -> 0.3 s) would turn that ideal
# into a measure of kubesim's own CPU — its one event loop also deletes the pods and creates,
# schedules and starts 1000 replacements (~3 s of work), and a fixed cost that is nothing
# beside a 30 s grace period (a client's start-up, the 20 round trips ``--concurrency 50``
# needs for 1000 pods) becomes a fifth of the run. The compressed comparison is reported too,
# under ``compressed``.
SCENARIOS: dict[str, dict[str, Any]] = {
    "a": {"pods": 110, "deployments": 5, "pdb": False, "ready_after": None, "latency": 0.0,
          "time_scale": TIME_SCALE, "target": "<= 1.0", "name": "a_110_pods_no_pdb"},
    "b": {"pods": 110, "deployments": 5, "pdb": True, "ready_after": 1.0, "latency": 0.0,
          "time_scale": TIME_SCALE, "target": "<= 0.3",
          "name": "b_110_pods_pdb_max_unavailable_1"},
    "c": {"pods": 1000, "deployments": 10, "pdb": False, "ready_after": None, "latency": 0.02,
          "time_scale": 1.0, "target": "<= 1.2 x ideal and <= 1.0 x kubectl",
          "name": "c_1000_pods_20ms_latency"},
}  # fmt: skip


def _median(runs: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def _phases(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: _median(runs, k) for k in ("startup", "setup", "evictions", "tail")}


async def bench(key: str, rounds: int, quick: bool) -> dict[str, Any]:
    """One scenario's line: ``{"bench", "value" (evict's median s), "unit", "anchor"
    (kubectl's median s), "ratio", "target", "time_scale", ...}``, with each tool's phases.

    Each round builds a fresh kubesim per tool from the same state, with every controller
    running: the Deployments' ReplicaSets create the pods, the scheduler loop binds them
    (node-2 starts cordoned, so they all land on node-1; it is uncordoned once the cluster has
    settled), the kubelet makes them Ready. Which tool goes first alternates between rounds.
    During the drain the cluster lives: each evicted pod is replaced by its ReplicaSet on
    node-2, and a budget reopens when the replacement is Ready. (c) adds ``ideal_s`` (median
    of as many runs as rounds), ``ratio_to_ideal``, ``one_pod_s``, ``ratio_to_one_pod`` and
    ``compressed`` (``evict_s``, ``ideal_s`` and ``ratio_to_ideal`` at ``TIME_SCALE``)."""
    sc = SCENARIOS[key]
    pods = sc["pods"] if not quick else max(10, sc["pods"] // 10)
    scale = sc["time_scale"]
    state = make_state(
        pods, deployments=sc["deployments"], pdb=sc["pdb"], ready_after=sc["ready_after"]
    )
    faults = {"latency": sc["latency"]} if sc["latency"] else {}
    runs: dict[str, list[dict[str, float]]] = {"evict": [], "kubectl": []}
    ideals: list[dict[str, float]] = []
    compressed: dict[str, list[dict[str, float]]] = {"evict": [], "ideal": []}
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for r in range(rounds):
            order = ("evict", "kubectl") if r % 2 == 0 else ("kubectl", "evict")
            for tool in order:
                runs[tool].append(await run_tool(tool, state, faults, pods, tmp, time_scale=scale))
            if key == "c":  # the ideal in every round, under the same conditions as the tools
                ideals.append(await ideal_seconds(state, faults, pods, scale))
                # and both again with the deletion time compressed like (a) and (b)'s
                compressed["evict"].append(await run_tool("evict", state, faults, pods, tmp))
                compressed["ideal"].append(await ideal_seconds(state, faults, pods))
    ev = _median(runs["evict"], "wall")
    kc = _median(runs["kubectl"], "wall")
    line: dict[str, Any] = {
        "bench": f"drain_vs_kubectl.{sc['name']}",
        "value": ev,
        "unit": "s",
        "anchor": kc,
        "ratio": round(ev / kc, 3),
        "target": sc["target"],
        "pods": pods,
        "rounds": rounds,
        "time_scale": scale,
        "evict_s": [round(t["wall"], 3) for t in runs["evict"]],
        "kubectl_s": [round(t["wall"], 3) for t in runs["kubectl"]],
    }
    for tool in ("evict", "kubectl"):
        line[f"{tool}_phases_s"] = _phases(runs[tool])
    if key == "c":
        ideal = _median(ideals, "seconds")
        line["ideal_s"] = ideal
        line["ideal_runs_s"] = [round(t["seconds"], 3) for t in ideals]
        line["ideal_evictions_s"] = _median(ideals, "evictions_s")
        line["ratio_to_ideal"] = round(ev / ideal, 3)
        single = await single_seconds(state, faults, pods, scale)
        line["one_pod_s"] = round(single, 3)
        line["ratio_to_one_pod"] = round(ev / single, 3)
        cev = _median(compressed["evict"], "wall")
        cid = _median(compressed["ideal"], "seconds")
        line["compressed"] = {
            "time_scale": TIME_SCALE,
            "evict_s": cev,
            "ideal_s": cid,
            "ratio_to_ideal": round(cev / cid, 3),
            "evict_runs_s": [round(t["wall"], 3) for t in compressed["evict"]],
            "ideal_runs_s": [round(t["seconds"], 3) for t in compressed["ideal"]],
            "evict_phases_s": _phases(compressed["evict"]),
        }
    return line


def prepare() -> None:
    """Run as an installed ``evict`` runs: its bytecode compiled (pip compiles at install; an
    editable install with PYTHONDONTWRITEBYTECODE set would recompile every module on every
    start)."""
    root = Path(__file__).resolve().parents[1]
    for package in ("evictor", "scheduler"):
        compileall.compile_dir(str(root / package), quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per scenario (default 3)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the pods, one round")
    parser.add_argument("--scenario", default="a,b,c", help="comma-separated: a, b, c")
    args = parser.parse_args()
    tune_collector_for_server()  # this process is the clusters' server, as `kubesim serve` is
    if KUBECTL is None:
        raise SystemExit("no kubectl binary: this benchmark compares against kubectl drain")
    rounds = 1 if args.quick else args.rounds
    prepare()
    for key in args.scenario.split(","):
        line = asyncio.run(bench(key.strip(), rounds, args.quick))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()

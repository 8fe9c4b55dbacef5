"""``make demo``: node-pressure eviction, live, on an embedded cluster with one real node.

kubesim runs in process as a living cluster from ``examples/demo-cluster.yaml``, node-1's pods
as real processes in a kubepods memory cgroup hierarchy (``kubesim.node.runtime``), and the
agent runs against node-1 as the daemon it is (``Demo``); ``main`` is the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # `python examples/demo.py` from a fresh clone, before install

from agent.eviction import EvictionManager  # noqa: E402
from agent.rank import explain  # noqa: E402
from agent.sources import Roots, SourceConfig, SummaryCollector  # noqa: E402
from kube.cliutil import (  # noqa: E402
    CONTEXT_SETTINGS,
    EXIT_CODES,
    BadInput,
    Failure,
    common_options,
    run,
)
from kube.objects import Pod  # noqa: E402
from kube.qos import QOS_GUARANTEED, get_pod_qos  # noqa: E402
from kube.quantity import QuantityError, quantity_value  # noqa: E402
from kube.times import parse_rfc3339  # noqa: E402
from kubesim.faults.file import FaultError  # noqa: E402
from kubesim.node.runtime import ProcessRuntime, RuntimeMode  # noqa: E402
from kubesim.sim import Simulator, StateError  # noqa: E402

MIB = 1 << 20
PRESSURE_CONDITION = "NodePressureAgentMemoryPressure"
PRESSURE_TAINT = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
SAMPLE_INTERVAL = 0.1
# The agent evicted before the demo's 50 ms sampler saw memory.available cross the threshold
# (the kernel announces the crossing to the agent itself): too fast for the sampler to time.
UNSEEN_CROSSING = "< 0.05s (before the sampler saw the crossing)"


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / MIB:.0f}Mi"


@dataclass
class Eviction:
    pod: str
    uid: str
    node: str
    priority: int
    at: float  # seconds since the demo started
    resource: str
    message: str
    reaction_seconds: float | None
    working_set: str
    request: str
    owner_uid: str = ""
    replacement: str | None = None
    replacement_node: str | None = None
    replacement_pending: str | None = None


@dataclass
class Report:
    mode: str
    mode_reason: str
    node: str
    memory_capacity: int
    threshold: str
    duration_seconds: float = 0.0
    ended_by: str = ""
    evictions: list[Eviction] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    cgroup: str | None = None
    leftover_processes: list[int] = field(default_factory=list)
    cgroup_removed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Mirror:
    """Per-process figures (psutil) written as a cgroup v1 memory tree the agent can read.

    Without a writable memory cgroup (not root, read-only cgroupfs, ``--no-cgroups``) the
    runtime measures each pod's processes with psutil, and the demo publishes those figures
    here, in a temporary directory that the unchanged agent reads (``--cgroup-root``)."""

    def __init__(self, runtime: ProcessRuntime, base: Path) -> None:
        self.runtime = runtime
        self.root = base
        self.node = base / "memory" / "node"
        self.node.mkdir(parents=True)

    @staticmethod
    def _write(directory: Path, usage: int, procs: list[int] | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "memory.usage_in_bytes": f"{usage}\n",
            "memory.stat": f"total_inactive_file 0\ntotal_rss {usage}\n",
            "memory.limit_in_bytes": f"{1 << 62}\n",
            "cgroup.procs": "".join(f"{p}\n" for p in procs or []),
        }
        for name, text in files.items():
            tmp = directory / f".{name}.tmp"
            tmp.write_text(text)
            tmp.replace(directory / name)

    def update(self, pods: Mapping[str, dict[str, Any]]) -> None:
        kubepods = self.node / "kubepods"
        live: set[Path] = set()
        total = 0
        for uid, pod in pods.items():
            usage = self.runtime.usage(uid)
            statuses = self.runtime.status(uid)
            if usage is None or statuses is None:
                continue
            qos = get_pod_qos(pod)
            parent = kubepods if qos == QOS_GUARANTEED else kubepods / qos.lower()
            pod_dir = parent / f"pod{uid}"
            live.add(pod_dir)
            self._write(pod_dir, usage.working_set_bytes)
            for s in statuses:
                cid = s.container_id.split("://", 1)[-1]
                ws = usage.containers.get(s.name, 0)
                self._write(pod_dir / cid, ws, [s.pid] if s.pid and s.state == "running" else [])
            total += usage.working_set_bytes
        for qos_dir in (kubepods, kubepods / "burstable", kubepods / "besteffort"):
            for d in qos_dir.glob("pod*") if qos_dir.exists() else []:
                if d not in live:
                    for f in sorted(d.rglob("*"), reverse=True):
                        (f.rmdir if f.is_dir() else f.unlink)()
                    d.rmdir()
        self._write(kubepods, total)
        self._write(self.node, total)


class Demo:
    """One run of the demo: kubesim in process with controllers, scheduler loop and kubelets;
    the agent in a subprocess (``python -m agent run``, reading node-1's cgroups through
    ``--node-cgroup``) with a hard ``memory.available`` threshold.

    While the pods' working sets climb, the terminal shows the node's memory, the agent's
    ranking (``agent.rank.explain``, the comparator chain the agent sorts with, over the same
    cgroup readings) and every eviction: the pod, the resource, the agent's message, and the
    reaction time — from the moment an independent 0.1 s sampler saw the threshold crossed to
    the agent's ``Evicted`` event. The ReplicaSets create replacements, the scheduler places
    them on the other nodes (node-1 is tainted ``node.kubernetes.io/memory-pressure:NoSchedule``
    while the agent reports pressure, as the node lifecycle controller taints a kubelet's
    MemoryPressure) or leaves them Pending with its reason. Whatever ends it, the agent is
    stopped and kubesim's runtime kills every process and removes every cgroup it made.
    """

    def __init__(
        self,
        *,
        manifest: Path,
        node: str,
        capacity: int,
        threshold: str,
        threshold_bytes: int,
        duration: float,
        cgroup_root: str,
        use_cgroups: bool,
        rich_ui: bool,
        debug: bool,
        agent_args: tuple[str, ...] = (),
        faults: Path | None = None,
        plot: Path | None = None,
        timeline_dir: Path | None = None,
    ) -> None:
        self.manifest = manifest
        self.node = node
        self.capacity = capacity
        self.threshold = threshold
        self.threshold_bytes = threshold_bytes
        self.duration = duration
        self.cgroup_root = cgroup_root
        self.use_cgroups = use_cgroups
        self.rich_ui = rich_ui
        self.debug = debug
        self.agent_args = agent_args
        self.faults = faults
        self.plot = plot
        self.timeline_dir = timeline_dir
        self.started = time.monotonic()
        self.log: list[str] = []
        self.report: Report | None = None
        self.crossings: list[float] = []
        self.below = False
        self.awaiting_gone: set[str] = set()
        self.seen_evicted: set[str] = set()
        self.seen_pods: dict[str, dict[str, Any]] = {}
        self.available: int | None = None
        self.working_set: int | None = None
        self.ranking: list[dict[str, Any]] = []
        self.agent: subprocess.Popen[bytes] | None = None
        self.tmp = Path(tempfile.mkdtemp(prefix="eviction-demo-"))
        if self.plot is not None and self.timeline_dir is None:
            self.timeline_dir = self.tmp / "timeline"
        if self.timeline_dir is not None:
            self.timeline_dir.mkdir(parents=True, exist_ok=True)

    # --- output ---------------------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def say(self, text: str) -> None:
        line = f"[{self.elapsed():5.1f}s] {text}"
        self.log.append(line)
        if not self.rich_ui:
            click.echo(line)

    def status_line(self) -> str:
        ranked = ", ".join(
            f"{r['rank']}. {r['pod']['namespace']}/{r['pod']['name']} "
            f"(prio {r['priority']}, {_mi(r.get('usage', '?'))} vs request "
            f"{_mi(r.get('request', '?'))})"
            for r in self.ranking
        )
        return (
            f"{self.node}: working set {mib(self.working_set)} of {mib(self.capacity)}, "
            f"available {mib(self.available)} (evict below {self.threshold}); "
            f"ranking: {ranked or '-'}"
        )

    def render(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        used = self.working_set or 0
        head = Text.assemble(
            (f"{self.node} ", "bold"),
            f"working set {mib(used)} / {mib(self.capacity)}   available {mib(self.available)}   ",
            (f"hard eviction below {self.threshold}", "yellow"),
            f"   t={self.elapsed():.0f}s/{self.duration:.0f}s",
        )
        bar = ProgressBar(total=self.capacity, completed=min(used, self.capacity), width=60)
        table = Table(title="agent ranking for memory.available (most evictable first)")
        for col in ("#", "pod", "priority", "working set", "request", "why here"):
            table.add_column(col)
        for r in self.ranking:
            over = r.get("exceedsRequest")
            table.add_row(
                str(r["rank"]),
                f"{r['pod']['namespace']}/{r['pod']['name']}",
                str(r["priority"]),
                Text(_mi(r.get("usage", "?")), style="red" if over else "green"),
                _mi(r.get("request", "?")),
                str(r["reason"]),
            )
        return Group(head, bar, table, Text("\n".join(self.log[-12:])))

    # --- cluster helpers ------------------------------------------------------------------

    def pods_on_node(self, sim: Simulator) -> list[dict[str, Any]]:
        return [
            p
            for p in sim.list_objects("Pod")
            if (p.get("spec") or {}).get("nodeName") == self.node
            and not (p["metadata"].get("deletionTimestamp"))
            and (p.get("status") or {}).get("phase") in ("Pending", "Running")
        ]

    # --- the run --------------------------------------------------------------------------

    async def run(self) -> Report:
        try:
            sim = Simulator(
                state=[self.manifest],
                process_nodes={self.node},
                cgroup_root=self.cgroup_root,
                memory_capacity=self.capacity,
                use_cgroups=self.use_cgroups,
                kubeconfig_path=self.tmp / "kubeconfig",
                faults=self.faults,
            )
        except StateError as exc:
            raise BadInput(f"{self.manifest}: {exc}") from None
        except FaultError as exc:
            raise BadInput(f"--faults {self.faults}: {exc}") from None
        if self.node not in {n["metadata"]["name"] for n in sim.list_objects("Node")}:
            raise BadInput(f"--node {self.node}: no such node in {self.manifest}")
        runtime = sim.runtimes[self.node]
        try:
            await sim.start()
            report = Report(
                mode=str(runtime.mode),
                mode_reason=runtime.mode_reason,
                node=self.node,
                memory_capacity=runtime.memory_capacity,
                threshold=self.threshold,
                cgroup=str(runtime.sub_root) if runtime.sub_root else None,
            )
            self.report = report
            await self._run(sim, runtime, report)
            if self.plot is not None:
                await self._stop_agent()  # its incident closes: the file is complete
                self._plot(self.plot)
        finally:
            await self._stop_agent()
            await sim.stop()
            self._check_cleanup(runtime)
            with contextlib.suppress(OSError):
                import shutil

                shutil.rmtree(self.tmp)
        return report

    def _plot(self, png: Path) -> None:
        """Draw the agent's incident of this run (the one with most evictions, if several)."""
        from agent.timeline import TimelineError, read_timeline, timeline_files
        from examples.plot_timeline import plot

        assert self.timeline_dir is not None
        started = time.time() - self.elapsed()
        found = []
        for path in timeline_files(self.timeline_dir):
            if path.stat().st_mtime < started:
                continue  # an earlier run's, in a directory given with --timeline-dir
            try:
                found.append((path, read_timeline(path)))
            except TimelineError as exc:
                raise Failure(f"the agent's timeline: {exc}") from None
        if not found:  # no threshold was met before the run ended: nothing happened to draw
            self.say(f"nothing to plot: the agent saw no pressure incident ({png} not written)")
            return
        path, timeline = max(found, key=lambda f: len(f[1].evictions))
        plot(timeline, png)
        self.say(
            f"plotted {png}: {len(timeline.evictions)} eviction(s) from the agent's timeline "
            f"{path.name}" + (f" (one of {len(found)} incidents)" if len(found) > 1 else "")
        )

    def _check_cleanup(self, runtime: ProcessRuntime) -> None:
        import psutil  # type: ignore[import-untyped, unused-ignore]

        report = self.report
        if report is None:
            return
        left = []
        for pid in report.pids:
            with contextlib.suppress(psutil.Error):
                if "kubesim.node.memory_grower" in " ".join(psutil.Process(pid).cmdline()):
                    left.append(pid)
        report.leftover_processes = left
        if runtime.sub_root is not None:
            report.cgroup_removed = not runtime.sub_root.exists()

    async def _run(self, sim: Simulator, runtime: ProcessRuntime, report: Report) -> None:
        mirror: Mirror | None = None
        if runtime.mode is RuntimeMode.PROCESS:
            mirror = Mirror(runtime, self.tmp / "cgroup")
            cgroup_root, node_cgroup = str(mirror.root), "node"
        else:
            assert runtime.sub_root is not None
            cgroup_root, node_cgroup = self.cgroup_root, runtime.sub_root.name
        others = ", ".join(
            n["metadata"]["name"]
            for n in sim.list_objects("Node")
            if n["metadata"]["name"] != self.node
        )
        click.echo(
            f"demo: {self.node} ({mib(self.capacity)}) runs its pods for real, the agent evicts "
            f"below {self.threshold}; {others or 'no other node'} simulated"
        )
        self.say(
            f"kubesim: serving {sim.url}; {self.node} runs pods for real ({runtime.mode}: "
            f"{runtime.mode_reason}), memory capacity {mib(runtime.memory_capacity)}"
            + (f", node cgroup {runtime.sub_root}" if runtime.sub_root else "")
        )
        collector = SummaryCollector(
            SourceConfig(
                roots=Roots.from_strings(cgroup_root=cgroup_root),
                node_name=self.node,
                kubepods_parent=node_cgroup,
                node_cgroup=node_cgroup,
                memory_capacity=runtime.memory_capacity,
            )
        )
        manager = EvictionManager(self._agent_config().manager_config(), _Clock())

        # 1. the workload comes up on node-1 (the other nodes are cordoned)
        deadline = time.monotonic() + 30
        want = len(sim.list_objects("Deployment"))
        while True:
            running = [p for p in self.pods_on_node(sim) if p["status"].get("phase") == "Running"]
            # Running as the API says, and with a live process as the runtime says (the
            # status write and the runtime's own record are not one atomic step).
            if len(running) >= want and all(
                any(
                    c.get("state", {}).get("running")
                    for c in p["status"].get("containerStatuses") or []
                )
                and any(
                    s.pid and s.state == "running"
                    for s in runtime.status(p["metadata"]["uid"]) or []
                )
                for p in running
            ):
                break
            if time.monotonic() > deadline:
                raise Failure(f"the workload did not start on {self.node} within 30 s")
            await asyncio.sleep(0.1)
        for p in running:
            self.seen_pods[p["metadata"]["uid"]] = p
            pids = [s.pid for s in runtime.status(p["metadata"]["uid"]) or [] if s.pid]
            report.pids += pids
            self.say(
                f"{p['metadata']['namespace']}/{p['metadata']['name']} running on {self.node} "
                f"(priority {p['spec'].get('priority', 0)}, {get_pod_qos(p)}, "
                f"pid {', '.join(map(str, pids))})"
            )
        for n in sim.list_objects("Node"):
            name = n["metadata"]["name"]
            if name != self.node and (n.get("spec") or {}).get("unschedulable"):
                sim.update("Node", None, name, lambda obj: obj["spec"].update(unschedulable=False))
                self.say(f"{name}: uncordoned, ready for replacements")

        # 2. the agent, as the daemon it is
        self._start_agent(sim, cgroup_root, node_cgroup, runtime.memory_capacity)
        self.say(f"eviction-agent started on {self.node} (--eviction-hard {self.threshold})")

        # 3. watch until done
        live_ctx: Any = contextlib.nullcontext()
        if self.rich_ui:
            from rich.live import Live

            live_ctx = Live(self.render(), refresh_per_second=4, transient=False)
        sampler = asyncio.create_task(self._sampler(collector, mirror, sim))
        try:
            await self._watch_loop(
                sim=sim,
                runtime=runtime,
                report=report,
                collector=collector,
                manager=manager,
                live_ctx=live_ctx,
            )
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        report.duration_seconds = round(self.elapsed(), 1)

    async def _sampler(
        self, collector: SummaryCollector, mirror: Mirror | None, sim: Simulator
    ) -> None:
        """Node memory every 50 ms, independently of the agent: when was the threshold crossed."""
        while True:
            if mirror is not None:
                mirror.update({p["metadata"]["uid"]: p for p in self.pods_on_node(sim)})
            mem = collector.collect(only={"memory"}).node.memory
            self.available = mem.available_bytes if mem is not None else None
            self.working_set = mem.working_set_bytes if mem is not None else None
            self._sample_pressure()
            await asyncio.sleep(SAMPLE_INTERVAL / 2)

    async def _watch_loop(
        self,
        *,
        sim: Simulator,
        runtime: ProcessRuntime,
        report: Report,
        collector: SummaryCollector,
        manager: EvictionManager,
        live_ctx: Any,
    ) -> None:
        last_plain = 0.0
        settled_since: float | None = None
        with live_ctx as live:
            while True:
                await asyncio.sleep(SAMPLE_INTERVAL)
                if self.agent is not None and self.agent.poll() is not None:
                    # the log goes with the demo's temporary directory: say its last line
                    lines = (self.tmp / "agent.log").read_text(errors="replace").splitlines()
                    raise Failure(
                        f"the agent exited with status {self.agent.returncode}: "
                        f"{lines[-1] if lines else 'no output'}"
                    )
                pods = {p["metadata"]["uid"]: p for p in self.pods_on_node(sim)}
                self._watch(sim, report, runtime)
                summary = collector.collect()
                self._taint(sim)
                typed = []
                for p in pods.values():
                    with contextlib.suppress(Exception):
                        typed.append(Pod.from_dict(p))
                # a reading taken between a pod's exit and its removal may not rank
                with contextlib.suppress(Exception):
                    self.ranking = explain(manager, summary, typed, "memory.available")["pods"]
                if live is not None:
                    live.update(self.render())
                elif time.monotonic() - last_plain >= 3:
                    last_plain = time.monotonic()
                    self.say(self.status_line())
                if self.elapsed() >= self.duration:
                    report.ended_by = f"--duration {self.duration:g}s"
                    break
                if self._settled():
                    settled_since = settled_since or time.monotonic()
                    if time.monotonic() - settled_since > 2:
                        report.ended_by = (
                            f"no pod on {self.node} above its memory request; "
                            "every replacement placed or Pending"
                        )
                        break
                else:
                    settled_since = None

    def _agent_config(self) -> Any:
        from agent.config import load_config

        return load_config(
            None, {"evictionHard": {"memory.available": self.threshold.split("<", 1)[1]}}
        )

    def _start_agent(
        self, sim: Simulator, cgroup_root: str, node_cgroup: str, capacity: int
    ) -> None:
        assert sim.kubeconfig_path is not None
        argv = [
            sys.executable,
            "-m",
            "agent",
            "run",
            "--kubeconfig",
            str(sim.kubeconfig_path),
            "--node-name",
            self.node,
            "--cgroup-root",
            cgroup_root,
            "--node-cgroup",
            node_cgroup,
            "--memory-capacity",
            str(capacity),
            "--eviction-hard",
            self.threshold,
            "--enforce-node-allocatable",
            "none",
            "--node-conditions",
            "--listen",
            "127.0.0.1:0",
            *(["--timeline-dir", str(self.timeline_dir)] if self.timeline_dir else []),
            *self.agent_args,
        ]
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        with open(self.tmp / "agent.log", "wb") as out:
            # its own session: a terminal's Ctrl-C reaches the demo, which stops the agent
            self.agent = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    async def _stop_agent(self) -> None:
        agent, self.agent = self.agent, None
        if agent is None or agent.poll() is not None:
            return
        agent.send_signal(signal.SIGTERM)
        for _ in range(100):
            if agent.poll() is not None:
                return
            await asyncio.sleep(0.05)
        agent.kill()
        agent.wait()

    def _sample_pressure(self) -> None:
        """Record each crossing below the threshold (the sampler's own clock, not the agent's)."""
        if self.available is None:
            return
        below = self.available < self.threshold_bytes
        if below and not self.below:
            self.crossings.append(time.time())
            self.say(
                f"{self.node}: memory.available {mib(self.available)} crossed below "
                f"{self.threshold.split('<', 1)[1]}"
            )
        self.below = below

    def _reaction(self, decided: float) -> float | None:
        """Seconds from the crossing this eviction answered to the agent's decision.

        Each crossing answers one eviction; one still unanswered after a pod is gone re-arms at
        that moment (the agent evicts one pod per sync and waits for it to go). A crossing the
        sampler saw up to 0.3 s after the agent decided counts as 0 (the agent samples as well).
        """
        candidates = [c for c in self.crossings if c <= decided + 0.3]
        if not candidates:
            return None
        crossing = candidates[-1]
        self.crossings = [c for c in self.crossings if c > crossing]
        return max(0.0, decided - crossing)

    def _watch(self, sim: Simulator, report: Report, runtime: ProcessRuntime) -> None:
        for ev in sim.list_objects("Event"):
            if ev.get("reason") != "Evicted":
                continue
            obj = ev.get("involvedObject") or ev.get("regarding") or {}
            uid = str(obj.get("uid", ""))
            if not uid or uid in self.seen_evicted or uid not in self.seen_pods:
                continue
            self.seen_evicted.add(uid)
            pod = self.seen_pods[uid]
            row = next((r for r in self.ranking if r["pod"]["uid"] == uid), {})
            decided = _parse_time(ev.get("eventTime")) or time.time()
            reaction = self._reaction(decided)
            owner: dict[str, Any] = next(
                (o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")),
                {},
            )
            ann = ev["metadata"].get("annotations") or {}
            e = Eviction(
                pod=f"{pod['metadata']['namespace']}/{pod['metadata']['name']}",
                uid=uid,
                node=self.node,
                priority=int(pod["spec"].get("priority", 0)),
                at=round(self.elapsed(), 1),
                resource=str(ann.get("starved_resource") or "memory"),
                message=str(ev.get("message") or ev.get("note") or ""),
                reaction_seconds=None if reaction is None else round(reaction, 2),
                working_set=_mi(row.get("usage", "?")),
                request=_mi(row.get("request", "?")),
                owner_uid=str(owner.get("uid", "")),
            )
            report.evictions.append(e)
            self.awaiting_gone.add(uid)
            rt = UNSEEN_CROSSING if reaction is None else f"{reaction:.2f}s"
            self.say(
                f"EVICTED {e.pod} (priority {e.priority}, {e.working_set} vs request "
                f"{e.request}) — reaction {rt}: {e.message}"
            )
        current = {p["metadata"]["uid"]: p for p in sim.list_objects("Pod")}
        for uid in list(self.awaiting_gone):
            if uid not in current:
                self.awaiting_gone.discard(uid)
                if self.below:  # still under pressure: the agent may act again from now
                    self.crossings.append(time.time())
                self.say(
                    f"{self.seen_pods[uid]['metadata']['name']}: processes killed, "
                    f"{'cgroups removed, ' if runtime.sub_root else ''}pod deleted"
                )
        for p in current.values():
            uid = p["metadata"]["uid"]
            if uid not in self.seen_pods and (p["spec"].get("nodeName") == self.node):
                self.seen_pods[uid] = p
                report.pids += [s.pid for s in runtime.status(uid) or [] if s.pid]
            elif uid not in self.seen_pods:
                self.seen_pods[uid] = p
        for e in report.evictions:
            self._follow_replacement(e, current)

    def _follow_replacement(self, e: Eviction, current: Mapping[str, dict[str, Any]]) -> None:
        for p in current.values():
            meta = p["metadata"]
            owners = [o.get("uid") for o in meta.get("ownerReferences") or []]
            if p["metadata"]["uid"] == e.uid or e.owner_uid not in owners:
                continue
            if meta.get("deletionTimestamp"):
                continue
            name = f"{meta['namespace']}/{meta['name']}"
            node = p["spec"].get("nodeName")
            if e.replacement is None:
                e.replacement = name
                self.say(f"ReplicaSet created {name} to replace {e.pod}")
            if node and e.replacement_node is None:
                e.replacement_node, e.replacement_pending = node, None
                self.say(f"scheduler placed {name} on {node}")
            elif not node:
                cond = next(
                    (
                        c
                        for c in p.get("status", {}).get("conditions") or []
                        if c.get("type") == "PodScheduled" and c.get("status") == "False"
                    ),
                    None,
                )
                if cond is not None and e.replacement_pending != cond.get("message"):
                    e.replacement_pending = str(cond.get("message"))
                    self.say(f"{name} Pending: {e.replacement_pending}")
            return

    def _taint(self, sim: Simulator) -> None:
        node = sim.get("Node", None, self.node)
        if node is None:
            return
        pressure = any(
            c.get("type") == PRESSURE_CONDITION and c.get("status") == "True"
            for c in node.get("status", {}).get("conditions") or []
        )
        taints = node.get("spec", {}).get("taints") or []
        tainted = any(t.get("key") == PRESSURE_TAINT["key"] for t in taints)
        if pressure and not tainted:
            sim.update(
                "Node",
                None,
                self.node,
                lambda obj: (
                    obj.setdefault("spec", {}).setdefault("taints", []).append(dict(PRESSURE_TAINT))
                ),
            )
            self.say(
                f"{self.node}: agent reports memory pressure → tainted "
                f"{PRESSURE_TAINT['key']}:NoSchedule"
            )

    def _settled(self) -> bool:
        report = self.report
        if report is None or not report.evictions or self.awaiting_gone:
            return False
        if any(r.get("exceedsRequest") for r in self.ranking):
            return False
        return all(e.replacement_node or e.replacement_pending for e in report.evictions)


def _parse_time(text: object) -> float | None:
    """An RFC 3339 (micro)time as epoch seconds; None when there is none."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def _mi(text: object) -> str:
    """A quantity from the ranking (``57476Ki``) in MiB, for people."""
    try:
        return mib(quantity_value(str(text)))
    except (QuantityError, ValueError):
        return str(text)


class _Clock:
    def now(self) -> float:
        return time.time()


def print_summary(report: Report) -> None:
    click.echo("")
    click.echo(f"Summary ({report.duration_seconds:g}s, ended: {report.ended_by})")
    click.echo(
        f"  node {report.node}: {report.mode} ({report.mode_reason}), capacity "
        f"{mib(report.memory_capacity)}, hard threshold {report.threshold}"
    )
    if not report.evictions:
        click.echo("  no eviction")
    for i, e in enumerate(report.evictions, 1):
        where = (
            f"on {e.replacement_node}"
            if e.replacement_node
            else f"Pending: {e.replacement_pending}"
            if e.replacement_pending
            else "not created yet"
        )
        reaction = UNSEEN_CROSSING if e.reaction_seconds is None else f"{e.reaction_seconds:.2f}s"
        click.echo(
            f"  {i}. t={e.at:g}s {e.pod} priority {e.priority}, working set "
            f"{e.working_set} vs request {e.request}; reaction {reaction}"
        )
        click.echo(f"     why: {e.message}")
        click.echo(f"     replacement: {e.replacement or '-'} {where}")
    reactions = [e.reaction_seconds for e in report.evictions if e.reaction_seconds is not None]
    if reactions:
        click.echo(
            f"  reaction time: max {max(reactions):.2f}s, mean "
            f"{sum(reactions) / len(reactions):.2f}s (the kubelet's loop is 10s)"
        )
    removed = {True: "removed", False: "STILL PRESENT", None: "n/a (psutil mode)"}[
        report.cgroup_removed
    ]
    click.echo(
        f"  cleanup: {len(report.leftover_processes)} process(es) left, "
        f"cgroup {report.cgroup or '-'} {removed}"
    )


async def _until_signalled(demo: Demo) -> Report:
    """Run the demo; SIGINT or SIGTERM cancels it, so its cleanup runs, then exits 130."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    signalled: list[int] = []

    def stop(signum: int) -> None:
        signalled.append(signum)
        task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await demo.run()
    except asyncio.CancelledError:
        if signalled:
            raise KeyboardInterrupt from None
        raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def _quantity(text: str, option: str) -> int:
    try:
        value = quantity_value(text)
    except (QuantityError, ValueError) as exc:
        raise BadInput(f"{option} {text}: not a quantity: {exc}") from None
    if value <= 0:
        raise BadInput(f"{option} {text}: must be positive")
    return value


@click.command(context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@common_options("demo")
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=HERE / "demo-cluster.yaml",
    show_default="examples/demo-cluster.yaml",
    help="The cluster: nodes, PriorityClasses, Deployments whose commands allocate memory.",
)
@click.option("--node", default="node-1", show_default=True, help="The node that runs for real.")
@click.option(
    "--memory-capacity",
    default="640Mi",
    show_default=True,
    help="The node's memory (the limit of its kubepods cgroup).",
)
@click.option(
    "--eviction-hard",
    default="memory.available<200Mi",
    show_default=True,
    help="The agent's hard threshold (memory.available<QUANTITY).",
)
@click.option(
    "--duration",
    type=click.FloatRange(5, 600),
    default=55.0,
    show_default=True,
    help="Stop after this many seconds (earlier once the node is settled).",
)
@click.option(
    "--cgroup-root", default="/sys/fs/cgroup", show_default=True, help="The cgroup mount."
)
@click.option(
    "--no-cgroups",
    is_flag=True,
    help="Measure processes with psutil even where memory cgroups are writable.",
)
@click.option(
    "--ui",
    type=click.Choice(["auto", "rich", "plain"]),
    default="auto",
    show_default=True,
    help="rich: a live table (default on a terminal); plain: one line per event.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PNG",
    help="Draw the incident as a PNG (matplotlib): the agent's timeline file of node-1's "
    "memory, thresholds, evictions and pods' working sets (examples/plot_timeline.py).",
)
@click.option(
    "--timeline-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Keep the agent's incident timeline files here (eviction-agent --timeline-dir; "
    "default with --plot: a temporary directory).",
)
@click.option(
    "--faults",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="kubesim's fault injection file (see examples/kubesim-faults.yaml): the API server "
    "answers the agent as it says.",
)
@click.option(
    "--agent-arg",
    "agent_args",
    multiple=True,
    metavar="ARG",
    help="One more argument for `eviction-agent run`, after the demo's own (repeat it; a later "
    "flag overrides the demo's), e.g. --agent-arg=--eviction-mode=eviction-api.",
)
@click.option(
    "--summary-json",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the summary as JSON here.",
)
def main(  # noqa: PLR0917 - click passes options positionally
    manifest: Path,
    node: str,
    memory_capacity: str,
    eviction_hard: str,
    duration: float,
    cgroup_root: str,
    no_cgroups: bool,
    ui: str,
    plot: Path | None,
    timeline_dir: Path | None,
    faults: Path | None,
    agent_args: tuple[str, ...],
    summary_json: Path | None,
) -> int:
    """Run the node-pressure eviction demo (kubesim + a real node + the agent).

    Shows the node's memory, the agent's ranking and every eviction with its reaction time.
    Ends by itself (--duration, or once no pod on node-1 is above its request and every
    replacement is placed or Pending) with a summary, exit 0; Ctrl-C stops it (exit 130)."""
    capacity = _quantity(memory_capacity, "--memory-capacity")
    signal_name, sep, value = eviction_hard.partition("<")
    if signal_name != "memory.available" or not sep:
        raise BadInput(f"--eviction-hard {eviction_hard}: must be memory.available<QUANTITY")
    threshold_bytes = _quantity(value, "--eviction-hard")
    if threshold_bytes >= capacity:
        raise BadInput(f"--eviction-hard {eviction_hard}: must be below --memory-capacity")
    rich_ui = ui == "rich" or (ui == "auto" and sys.stdout.isatty())
    demo = Demo(
        manifest=manifest,
        node=node,
        capacity=capacity,
        threshold=eviction_hard,
        threshold_bytes=threshold_bytes,
        duration=duration,
        cgroup_root=cgroup_root,
        use_cgroups=not no_cgroups,
        rich_ui=rich_ui,
        debug="--debug" in sys.argv,
        agent_args=agent_args,
        faults=faults,
        plot=plot,
        timeline_dir=timeline_dir,
    )
    report = asyncio.run(_until_signalled(demo))
    if summary_json is not None:
        summary_json.write_text(json.dumps(report.to_json(), indent=2))
    print_summary(report)
    if report.leftover_processes or report.cgroup_removed is False:
        raise Failure("cleanup incomplete (see the summary)")
    return 0


if __name__ == "__main__":
    sys.exit(run(main, None, prog_name="examples/demo.py"))

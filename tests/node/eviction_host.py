"""The eviction suite's cluster on this machine: kubesim and the agent as processes of the host.

``kubesim serve`` runs with one process node per scenario (``ProcessNode`` documents: its
memory, a tmpfs disk, its kubelet settings and its cgroup root), so scenarios never share a
node and each node's pressure is its own; the agent runs as ``python -m agent run`` with the
scenario's flags, as a kubelet restarts with a scenario's configuration. Requests go to the
API server over its loopback port; a wait polls (every 0.2 s) until its expression holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.node.eviction_run import ApiError, NodeInfo
from tests.node.eviction_scenarios import (
    MIB,
    Scale,
    Scenario,
    node_object,
    process_node_document,
)

JSONDict = dict[str, Any]
POLL = 0.2


def cgroup_version() -> str | None:
    """ "v1" or "v2" when this process may make memory cgroups, else None."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return "v2" if os.access(root, os.W_OK) else None
    memory = root / "memory"
    return (
        "v1" if os.access(memory, os.W_OK) and (memory / "memory.limit_in_bytes").exists() else None
    )


def why_not_runnable() -> str | None:
    """Why the host cannot run the suite (None: it can)."""
    if os.geteuid() != 0:
        return "the host scenarios need root: tmpfs node disks and memory cgroups"
    if cgroup_version() is None:
        return "no writable memory cgroup on this host"
    return None


class HostCluster:
    """kubesim serving the scenarios' nodes, and their agents (``ClusterAccess``)."""

    def __init__(self, workdir: Path, scenarios: list[Scenario], scale: Scale) -> None:
        self.workdir = workdir
        self.scenarios = scenarios
        self.scale = scale
        self.kubeconfig = str(workdir / "kubeconfig")
        self.server = ""
        self.nodes: dict[str, NodeInfo] = {}
        self.kubelet_ports: dict[str, int] = {}
        self._kubesim: subprocess.Popen[bytes] | None = None
        self._agents: dict[str, subprocess.Popen[bytes]] = {}

    # --- life cycle ---------------------------------------------------------------------------

    def start(self, *, timeout: float = 120.0) -> HostCluster:
        docs: list[JSONDict] = []
        tag = f"nodee2e-{os.getpid()}"
        for sc in self.scenarios:
            disk = self.workdir / "disks" / sc.node
            doc = process_node_document(sc, self.scale, disk_path=str(disk))
            doc.setdefault("kubelet", {})["cgroupRoot"] = f"/{tag}-{sc.node}"
            docs += [node_object(sc.node), doc]
            self.nodes[sc.node] = NodeInfo(
                name=sc.node,
                cgroup=f"{tag}-{sc.node}",
                disk=str(disk),
                memory_capacity=self.scale.node_memory_mib * MIB,
            )
        state = self.workdir / "state.yaml"
        state.write_text(yaml.safe_dump_all(docs))
        log = open(self.workdir / "kubesim.log", "wb")  # noqa: SIM115 - the child holds it
        self._kubesim = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim",
                "serve",
                "--port=0",
                f"--state={state}",
                f"--kubeconfig-out={self.kubeconfig}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not Path(self.kubeconfig).exists():
            if self._kubesim.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kubesim did not start:\n{self.log_tail('kubesim')}")
            time.sleep(POLL)
        config = yaml.safe_load(Path(self.kubeconfig).read_text())
        self.server = config["clusters"][0]["cluster"]["server"]
        for name in self.nodes:
            node = self.wait(
                f"/api/v1/nodes/{name}",
                "o['status']['daemonEndpoints']['kubeletEndpoint']['Port'] != 10250",
                timeout=timeout,
            )
            self.kubelet_ports[name] = int(
                node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
            )
        return self

    def stop(self) -> None:
        for name in list(self._agents):
            self.stop_agent(name)
        if self._kubesim is not None and self._kubesim.poll() is None:
            self._kubesim.send_signal(signal.SIGTERM)
            try:
                self._kubesim.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._kubesim.kill()
                self._kubesim.wait()

    def log_tail(self, name: str, lines: int = 60) -> str:
        path = self.workdir / f"{name}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # --- ClusterAccess ------------------------------------------------------------------------

    def _request(self, url: str, method: str = "GET", body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as err:
            raise ApiError(err.code, json.loads(err.read() or b"null")) from None

    def api(self, method: str, path: str, body: Any = None) -> Any:
        return self._request(self.server + path, method, body)

    def wait(self, path: str, until: str, *, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                o = self.api("GET", path)
            except ApiError as exc:
                if exc.code != 404:
                    raise
                o = None
            with contextlib.suppress(KeyError, TypeError, IndexError):
                if eval(until, {"o": o}):
                    return o
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:.0f} s waiting for {until} on {path}; last"
                    f" answer: {json.dumps(o)[:3000]}"
                )
            time.sleep(POLL)

    def fetch(self, url: str) -> Any:
        return self._request(url)

    def start_agent(self, name: str, args: list[str]) -> None:
        log = open(self.workdir / f"agent-{name}.log", "wb")  # noqa: SIM115 - the child holds it
        self._agents[name] = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def stop_agent(self, name: str) -> str:
        agent = self._agents.pop(name, None)
        if agent is not None and agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
        return self.log_tail(f"agent-{name}")

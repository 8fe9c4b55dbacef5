"""The eviction suite's cluster in the guest (cgroup v2): kubesim and the agents inside the VM.

The pods must be processes in the guest's cgroups and the agent must read the guest's kernel,
so both run in the guest: ``kubesim serve`` once for the whole suite (one ``ProcessNode`` per
scenario, as on the host), as the transient unit ``harness-eviction-kubesim.service``, and the
agents forked one per scenario from ``agent_zygote.py`` (``harness-eviction-agents.service``),
which imported the agent's modules once — a minute or more under TCG, paid once instead of per
scenario. Both start together at the beginning, so their imports overlap.

Requests and waits go through ``guest_kapi.py`` in the guest (stdlib, ``python -I -S``): a
wait is one channel call that polls inside the guest. Agents are started and stopped by a line
written to the zygote's FIFO.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from tests.node import image
from tests.node.eviction_run import ApiError, NodeInfo
from tests.node.eviction_scenarios import (
    MIB,
    Scale,
    Scenario,
    node_object,
    process_node_document,
)
from tests.node.vm import Guest, GuestResult

HERE = Path(__file__).resolve().parent
KAPI = str(HERE / "guest_kapi.py")
ZYGOTE = str(HERE / "agent_zygote.py")
GUEST_PYTHON = f"{image.GUEST_PYTHON_PREFIX}/bin/python3"
WORK = "/run/harness/eviction"
KUBESIM_UNIT = "harness-eviction-kubesim.service"
ZYGOTE_UNIT = "harness-eviction-agents.service"
PORT = 6444


class GuestEvictionCluster:
    """kubesim with the scenarios' nodes in ``guest``, and their agents (``ClusterAccess``)."""

    def __init__(self, guest: Guest, scenarios: list[Scenario], scale: Scale) -> None:
        self.guest = guest
        self.scenarios = scenarios
        self.scale = scale
        self.server = f"http://127.0.0.1:{PORT}"
        self.kubeconfig = f"{WORK}/kubeconfig"
        self.nodes: dict[str, NodeInfo] = {}
        self.kubelet_ports: dict[str, int] = {}
        self.started_in = 0.0

    # --- life cycle ---------------------------------------------------------------------------

    def start(self, *, timeout: float = 600.0) -> GuestEvictionCluster:
        docs: list[dict[str, Any]] = []
        for sc in self.scenarios:
            disk = f"{WORK}/disks/{sc.node}"
            doc = process_node_document(sc, self.scale, disk_path=disk)
            doc.setdefault("kubelet", {})["cgroupRoot"] = f"/e2e-{sc.node}"
            docs += [node_object(sc.node), doc]
            self.nodes[sc.node] = NodeInfo(
                name=sc.node,
                cgroup=f"e2e-{sc.node}",
                disk=disk,
                memory_capacity=self.scale.node_memory_mib * MIB,
            )
        state = {"apiVersion": "v1", "kind": "List", "items": docs}
        self.guest.put(f"{WORK}/state.json", json.dumps(state))
        venv = image.GUEST_VENV
        for unit, argv in (
            (
                KUBESIM_UNIT,
                [
                    f"{venv}/bin/kubesim",
                    "serve",
                    f"--port={PORT}",
                    f"--state={WORK}/state.json",
                    f"--kubeconfig-out={self.kubeconfig}",
                ],
            ),
            (ZYGOTE_UNIT, [f"{venv}/bin/python", ZYGOTE, WORK]),
        ):
            self.guest.run(
                [
                    "systemd-run",
                    f"--unit={unit}",
                    "--setenv=PYTHONUNBUFFERED=1",
                    "--property=KillMode=mixed",
                    *argv,
                ],
                check=True,
            )
        ready = self.guest.run(
            f"until [ -s {self.kubeconfig} ] && [ -s {WORK}/zygote.ready ]; do"
            f" systemctl is-active -q {KUBESIM_UNIT} {ZYGOTE_UNIT} || exit 1; sleep 0.5; done",
            timeout=timeout,
        )
        self.started_in = ready.seconds
        if not ready.ok:
            raise AssertionError(
                f"kubesim or the agents' zygote did not start in the guest ({ready.describe()}):\n"
                + self.guest.journal(KUBESIM_UNIT, ZYGOTE_UNIT, lines=80)
            )
        for name in self.nodes:
            node = self.wait(
                f"/api/v1/nodes/{name}",
                "o['status']['daemonEndpoints']['kubeletEndpoint']['Port'] != 10250",
                timeout=120,
            )
            self.kubelet_ports[name] = int(
                node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
            )
        return self

    def stop(self) -> None:
        if self.guest.alive:
            self.guest.run(["systemctl", "stop", ZYGOTE_UNIT, KUBESIM_UNIT], timeout=120)

    # --- ClusterAccess ------------------------------------------------------------------------

    def _kapi(
        self,
        server: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        until: str | None = None,
        timeout: float = 60.0,
    ) -> GuestResult:
        argv = [GUEST_PYTHON, "-I", "-S", KAPI, server, method, path]
        if until is not None:
            argv += ["--until", until, "--timeout", str(timeout)]
        return self.guest.run(
            argv,
            input=json.dumps(body) if body is not None else None,
            timeout=timeout + 60,
        )

    @staticmethod
    def _answer(result: GuestResult) -> Any:
        return json.loads(result.stdout) if result.stdout.strip() else None

    def api(self, method: str, path: str, body: Any = None) -> Any:
        result = self._kapi(self.server, method, path, body)
        answer = self._answer(result)
        if result.returncode == 1 and isinstance(answer, dict):
            raise ApiError(int(answer.get("code", 0)), answer)
        if not result.ok:
            raise AssertionError(f"{method} {path}: {result.describe()}")
        return answer

    def wait(self, path: str, until: str, *, timeout: float) -> Any:
        result = self._kapi(self.server, "GET", path, until=until, timeout=timeout)
        if result.returncode == 3:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {until} on {path}; last answer:"
                f" {result.stdout[:3000]}"
            )
        if not result.ok:
            raise AssertionError(f"waiting on {path}: {result.describe()}")
        return self._answer(result)

    def fetch(self, url: str) -> Any:
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        result = self._kapi(f"{scheme}://{host}", "GET", f"/{path}")
        if not result.ok:
            raise AssertionError(f"GET {url}: {result.describe()}")
        return self._answer(result)

    def _command(self, command: dict[str, Any]) -> None:
        line = shlex.quote(json.dumps(command))
        self.guest.run(f"printf '%s\\n' {line} > {WORK}/zygote.fifo", timeout=60, check=True)

    def start_agent(self, name: str, args: list[str]) -> None:
        self._command({"op": "start", "name": name, "args": args})
        self.guest.run(
            f"until [ -s {WORK}/agent-{name}.pid ]; do sleep 0.2; done", timeout=60, check=True
        )

    def stop_agent(self, name: str) -> str:
        self._command({"op": "stop", "name": name})
        self.guest.run(f"until [ -s {WORK}/agent-{name}.exit ]; do sleep 0.2; done", timeout=90)
        return self.guest.run(f"tail -n 60 {WORK}/agent-{name}.log").stdout

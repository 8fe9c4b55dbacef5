"""kubesim in the guest: one API server and process node for the whole session.

The agent in the guest needs an API server, and the pods it evicts must be processes in the
guest's cgroups, so kubesim runs inside the guest (`harness-kubesim.service`, a transient unit,
started once: its imports take a minute under TCG) with one process node whose pods run for
real. The guest has only its loopback, which the initramfs brought up.

Tests talk to it from the host through `GuestCluster.api`, which runs guest_kapi.py (stdlib,
about a second per call) in the guest; `until=` repeats a GET in the guest until a Python
expression over the answer `o` holds, so waiting costs one call, not one per poll.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from tests.node import image
from tests.node.vm import Guest, GuestResult

KUBESIM_UNIT = "harness-kubesim.service"
HARNESS_RUN = "/run/harness"
KUBECONFIG = f"{HARNESS_RUN}/kubeconfig"
STATE = f"{HARNESS_RUN}/kubesim-state.json"
KAPI = f"{image.GUEST_OPT}/kapi.py"
GUEST_PYTHON = f"{image.GUEST_PYTHON_PREFIX}/bin/python3"


class ClusterError(AssertionError):
    """kubesim in the guest did not start or answer as asked; the message has its journal."""


def node_object(name: str, memory: str, pods: int = 110) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "status": {"capacity": {"cpu": "4", "memory": memory, "pods": str(pods)}},
    }


def pod_object(
    name: str,
    command: list[str],
    *,
    node: str,
    memory: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod bound to `node` (no scheduling); `memory` as request and limit (Guaranteed with
    the cpu request) or none (BestEffort). On a process node `command` runs; `python` there is
    the guest venv's interpreter."""
    container: dict[str, Any] = {
        "name": "main",
        "image": "harness.invalid/none",
        "command": command,
    }
    if memory:
        container["resources"] = {
            "requests": {"memory": memory, "cpu": "100m"},
            "limits": {"memory": memory, "cpu": "100m"},
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 5,
            "containers": [container],
        },
    }


class GuestCluster:
    """kubesim serving in `guest` with `node` as its process node (`memory` its capacity) and
    `simulated` nodes whose pods only exist in the API (their cgroups, if any, made by hand)."""

    def __init__(
        self,
        guest: Guest,
        *,
        node: str = "node-1",
        memory: str = "1Gi",
        simulated: tuple[str, ...] = ("node-2",),
        port: int = 6443,
    ) -> None:
        self.guest = guest
        self.node = node
        self.simulated = simulated
        self.memory = memory
        self.port = port
        self.server = f"http://127.0.0.1:{port}"
        self.node_cgroup = ""

    def start(self, *, timeout: float = 600.0) -> GuestCluster:
        nodes = [node_object(self.node, self.memory)]
        nodes += [node_object(name, self.memory) for name in self.simulated]
        state = {"apiVersion": "v1", "kind": "List", "items": nodes}
        self.guest.put(STATE, json.dumps(state))
        self.guest.run(
            [
                "systemd-run",
                f"--unit={KUBESIM_UNIT}",
                "--setenv=PYTHONUNBUFFERED=1",
                "--property=KillMode=mixed",
                f"{image.GUEST_VENV}/bin/kubesim",
                "serve",
                f"--port={self.port}",
                f"--kubeconfig-out={KUBECONFIG}",
                f"--state={STATE}",
                f"--process-node={self.node}",
                f"--memory-capacity={self.memory}",
            ],
            check=True,
        )
        waited = self.guest.run(
            f"until [ -s {KUBECONFIG} ]; do"
            f" systemctl is-active -q {KUBESIM_UNIT} || exit 1; sleep 0.5; done",
            timeout=timeout,
        )
        if not waited.ok:
            raise ClusterError(
                f"kubesim did not start in the guest ({waited.describe()}):\n"
                + self.guest.journal(KUBESIM_UNIT, lines=80)
            )
        # The process runtime's node cgroup: <prefix>-<pid>-<instance> under the root.
        found = self.guest.run("ls -d /sys/fs/cgroup/kubesim-*/kubepods", check=True).stdout
        self.node_cgroup = found.split()[0].split("/")[4]
        return self

    def stop(self) -> None:
        self.guest.run(["systemctl", "stop", KUBESIM_UNIT], timeout=120)

    def api(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        until: str | None = None,
        timeout: float = 120.0,
        content_type: str = "application/json",
        check: bool = True,
    ) -> Any:
        """One API request in the guest; with `until`, GET until `until` holds of the answer `o`."""
        argv = [GUEST_PYTHON, "-I", "-S", KAPI, self.server, method, path]
        argv += ["--content-type", content_type]
        if until is not None:
            argv += ["--until", until, "--timeout", str(timeout)]
        result: GuestResult = self.guest.run(
            argv,
            input=json.dumps(body) if body is not None else None,
            timeout=timeout + 30,
        )
        if check and not result.ok:
            raise ClusterError(f"{method} {path}: {result.describe()}")
        return json.loads(result.stdout) if result.stdout.strip() else None

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"].get("namespace", "default")
        kind = obj["kind"].lower() + "s"
        path = f"/api/v1/namespaces/{namespace}/{kind}" if kind == "pods" else f"/api/v1/{kind}"
        created: dict[str, Any] = self.api("POST", path, obj)
        return created

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.api("GET", f"/api/v1/namespaces/{namespace}/pods")[
            "items"
        ]
        return items

    def kubectl_line(self, *args: str) -> str:
        """A sh line running the host's kubectl in the guest against this kubesim."""
        return shlex.join(["kubectl", f"--kubeconfig={KUBECONFIG}", *args])

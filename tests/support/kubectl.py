"""Real kubectl against a kubesim: the kubectl versions a suite runs (``BINARIES``), run with
``KUBECONFIG`` pointing at the kubesim and its discovery cache in a temporary directory; and
the small cluster the kubectl suites start (``STATE``).

``make test`` runs the default kubectl and the oldest and newest versioned binaries (the ends
of the range, where request shapes differ most); ``make test-kubectl`` (CI, ``KUBECTL_MATRIX=all``)
runs every installed minor."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kubesim.sim import Simulator

GCLOUD_BIN = Path("/lib/google-cloud-sdk/bin")


def _kubectl_binaries() -> list[str]:
    found: list[str] = []
    default = shutil.which("kubectl")
    if default:
        found.append(default)
    for minor in range(27, 34):
        candidate = GCLOUD_BIN / f"kubectl.1.{minor}"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found.append(str(candidate))
    return found


ALL_BINARIES = _kubectl_binaries()
# the default kubectl first, then the oldest and the newest versioned ones
ENDS = list(dict.fromkeys([*ALL_BINARIES[:1], *ALL_BINARIES[1:2], *ALL_BINARIES[-1:]]))
BINARIES = ALL_BINARIES if os.environ.get("KUBECTL_MATRIX") == "all" else ENDS

STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.32.0}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status:
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, labels: {app: web}}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 10
  containers: [{name: c, image: nginx}]
status:
  phase: Running
  podIP: 10.244.0.5
---
apiVersion: v1
kind: Namespace
metadata: {name: prod}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: prod}
spec:
  nodeName: node-2
  containers: [{name: c, image: postgres}]
"""


@dataclass
class Kubectl:
    binary: str
    sim: Simulator
    cache: Path

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        """kubectl running, its output piped: for a test that acts on what it prints."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(self.sim.kubeconfig_path)
        env["HOME"] = str(self.cache)
        return await asyncio.create_subprocess_exec(
            self.binary,
            f"--cache-dir={self.cache / 'cache'}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )

    async def __call__(self, *args: str, check: bool = True) -> tuple[int, str, str]:
        proc = await self.start(*args)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        code = proc.returncode or 0
        if check and code != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {code}\nstdout: {out.decode()}\n"
                f"stderr: {err.decode()}"
            )
        return code, out.decode(), err.decode()

"""Real kubectl against ``kubesim`` with TLS: ``create token`` (bound to a pod), requests made
with that token logged under the ServiceAccount, ``auth whoami`` for the admin certificate, a
ServiceAccount token and a certificate from ``kubesim certificate``, and kube's errors.

Skipped only when no kubectl binary exists."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import kubesim
from kubesim.cli import main
from kubesim.controllers import FROZEN
from kubesim.kubeconfig import write_kubeconfig
from kubesim.sim import Simulator

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

SA = "system:serviceaccount:kube-system:eviction-agent"
STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: eviction-agent, namespace: kube-system}
---
apiVersion: v1
kind: Pod
metadata: {name: agent-1, namespace: kube-system}
spec:
  nodeName: node-1
  serviceAccountName: eviction-agent
  containers: [{name: agent, image: agent}]
status:
  phase: Running
"""


@dataclass
class Kubectl:
    sim: Simulator
    home: Path

    async def __call__(
        self, *args: str, kubeconfig: Path | None = None, check: bool = True
    ) -> tuple[int, str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(kubeconfig or self.sim.kubeconfig_path)
        env["HOME"] = str(self.home)
        proc = await asyncio.create_subprocess_exec(
            "kubectl",
            f"--cache-dir={self.home / 'cache'}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        code = proc.returncode or 0
        if check and code != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {code}: {err.decode()}")
        return code, out.decode(), err.decode()

    def token_kubeconfig(self, token: str) -> Path:
        """A kubeconfig with the cluster's CA and only a bearer token (no certificate)."""
        return write_kubeconfig(
            self.home / f"token-{len(list(self.home.iterdir()))}",
            self.sim.url,
            user={"token": token},
            certificate_authority=self.sim.certificate_authority_pem(),
        )


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(
        state=STATE, time_scale=0.01, disabled_controllers=FROZEN, tls=True
    ) as sim:
        yield Kubectl(sim, tmp_path)


def whoami_table(text: str) -> dict[str, str]:
    rows = [re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.strip().splitlines()[1:]]
    return {key: value.strip() for key, value in rows}


async def test_whoami_as_the_admin_certificate(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("auth", "whoami")
    assert out.splitlines()[0].split() == ["ATTRIBUTE", "VALUE"]
    table = whoami_table(out)
    assert table["Username"] == "kubernetes-admin"
    assert table["Groups"] == "[system:masters system:authenticated]"


async def test_create_token_bound_to_a_pod_then_use_it(kubectl: Kubectl) -> None:
    sim = kubectl.sim
    _, token, _ = await kubectl(
        "create",
        "token",
        "eviction-agent",
        "-n",
        "kube-system",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "agent-1",
    )
    as_agent = kubectl.token_kubeconfig(token.strip())
    _, out, _ = await kubectl("get", "pods", "-n", "kube-system", kubeconfig=as_agent)
    assert "agent-1" in out
    [record] = sim.requests.filter(path="/api/v1/namespaces/kube-system/pods", verb="list")
    assert record.user == SA
    assert record.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "system:authenticated",
    )
    _, out, _ = await kubectl("auth", "whoami", kubeconfig=as_agent)
    table = whoami_table(out)
    assert table["Username"] == SA
    assert table["Extra: authentication.kubernetes.io/pod-name"] == "[agent-1]"
    assert table["Extra: authentication.kubernetes.io/node-name"] == "[node-1]"
    pod = sim.get("Pod", "kube-system", "agent-1")
    assert pod is not None
    assert table["Extra: authentication.kubernetes.io/pod-uid"] == f"[{pod['metadata']['uid']}]"
    # the bound pod goes: the token stops working, kubectl says so as against a real cluster
    await kubectl("delete", "pod", "agent-1", "-n", "kube-system", "--grace-period=0", "--force")
    code, _, err = await kubectl("get", "pods", kubeconfig=as_agent, check=False)
    assert code == 1
    assert "error: You must be logged in to the server (Unauthorized)" in err


async def test_create_token_for_the_default_service_account(kubectl: Kubectl) -> None:
    _, token, _ = await kubectl("create", "token", "default", "--duration", "20m")
    _, out, _ = await kubectl("auth", "whoami", kubeconfig=kubectl.token_kubeconfig(token.strip()))
    assert whoami_table(out)["Username"] == "system:serviceaccount:default:default"


async def test_create_token_errors_are_the_servers(kubectl: Kubectl) -> None:
    code, _, err = await kubectl("create", "token", "nobody", check=False)
    assert code == 1
    assert 'serviceaccounts "nobody" not found' in err
    code, _, err = await kubectl(
        "create",
        "token",
        "eviction-agent",
        "-n",
        "kube-system",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "ghost",
        check=False,
    )
    assert code == 1
    assert 'pods "ghost" not found' in err


async def test_whoami_with_a_certificate_from_kubesim_certificate(kubectl: Kubectl) -> None:
    target = kubectl.home / "alice.conf"
    code = await asyncio.to_thread(
        main,
        [
            "certificate",
            "alice",
            "--group",
            "devs",
            "--group",
            "ops",
            "--kubeconfig",
            str(kubectl.sim.kubeconfig_path),
            "-o",
            str(target),
        ],
    )
    assert code == 0
    _, out, _ = await kubectl("auth", "whoami", kubeconfig=target)
    table = whoami_table(out)
    assert table["Username"] == "alice"
    assert table["Groups"] == "[devs ops system:authenticated]"

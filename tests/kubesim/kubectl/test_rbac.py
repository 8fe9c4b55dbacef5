"""Real kubectl against ``kubesim --authorization rbac``: a forbidden request prints kube's
message, ``kubectl auth can-i`` (with ``--subresource``, ``--list``, ``--as``) answers as on a
cluster, and the admin's credentials stay all-powerful.

client-go sends bearer tokens only over TLS (kubernetes/kubectl#744: clientcmd reads a
kubeconfig's credentials for https servers only), so the server runs with ``tls=True`` and the
kubeconfigs carry its ``certificate-authority-data`` and a token. Impersonation headers
(``--as``) are sent either way.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import kubesim
from kubesim.core.attributes import UserInfo
from tests.support.kubectl import STATE

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

SA = "system:serviceaccount:kube-system:eviction-agent"


@dataclass
class Kubectl:
    """kubectl with a kubeconfig per token (``admin`` or ``sa``) for the TLS listener."""

    kubeconfigs: dict[str, Path]
    home: Path

    async def __call__(
        self, *args: str, who: str = "admin", check: bool = True
    ) -> tuple[int, str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(self.kubeconfigs[who])
        env["HOME"] = str(self.home)
        proc = await asyncio.create_subprocess_exec(
            shutil.which("kubectl") or "kubectl",
            f"--cache-dir={self.home / 'cache'}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        code = proc.returncode or 0
        if check and code != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {code}\n{out.decode()}{err.decode()}"
            )
        return code, out.decode(), err.decode()


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=STATE, time_scale=0.01, authorization="rbac", tls=True) as sim:
        sim.tokens.add(
            "sa-token",
            UserInfo(SA, groups=("system:serviceaccounts", "system:serviceaccounts:kube-system")),
        )
        ca = base64.b64encode(sim.certificate_authority_pem()).decode()
        configs = {}
        for who, token in (("admin", sim.admin_token), ("sa", "sa-token")):
            path = tmp_path / f"{who}.kubeconfig"
            path.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Config",
                        "clusters": [
                            {
                                "name": "kubesim",
                                "cluster": {"server": sim.url, "certificate-authority-data": ca},
                            }
                        ],
                        "users": [{"name": who, "user": {"token": token}}],
                        "contexts": [
                            {
                                "name": "kubesim",
                                "context": {
                                    "cluster": "kubesim",
                                    "user": who,
                                    "namespace": "default",
                                },
                            }
                        ],
                        "current-context": "kubesim",
                    }
                )
            )
            configs[who] = path
        yield Kubectl(configs, tmp_path)


async def test_forbidden_get_prints_kubes_message(kubectl: Kubectl) -> None:
    code, out, err = await kubectl("get", "secrets", who="sa", check=False)
    assert code == 1
    assert out == ""
    assert err.strip() == (
        'Error from server (Forbidden): secrets is forbidden: User "system:serviceaccount:'
        'kube-system:eviction-agent" cannot list resource "secrets" in API group "" in the'
        ' namespace "default"'
    )


async def test_admin_kubeconfig_is_all_powerful(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("get", "secrets", "-A")
    assert "No resources found" in out or out == ""
    _, out, _ = await kubectl("auth", "can-i", "*", "*")
    assert out.strip() == "yes"
    _, out, _ = await kubectl("get", "clusterroles", "view", "-o", "jsonpath={.aggregationRule}")
    assert "aggregate-to-view" in out


async def test_can_i_yes_no_and_subresources(kubectl: Kubectl) -> None:
    code, out, _ = await kubectl(
        "auth", "can-i", "create", "pods", "--subresource=eviction", who="sa", check=False
    )
    assert (code, out.strip()) == (1, "no")
    await kubectl("create", "clusterrole", "evictor", "--verb=create", "--resource=pods/eviction")
    await kubectl(
        "create",
        "clusterrolebinding",
        "evictor",
        "--clusterrole=evictor",
        "--serviceaccount=kube-system:eviction-agent",
    )
    code, out, _ = await kubectl(
        "auth", "can-i", "create", "pods", "--subresource=eviction", who="sa"
    )
    assert (code, out.strip()) == (0, "yes")
    code, out, _ = await kubectl("auth", "can-i", "delete", "pods", who="sa", check=False)
    assert (code, out.strip()) == (1, "no")


async def test_can_i_as_a_service_account(kubectl: Kubectl) -> None:
    code, out, _ = await kubectl("auth", "can-i", "list", "nodes", f"--as={SA}", check=False)
    assert (code, out.strip()) == (1, "no")
    await kubectl("create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes")
    await kubectl(
        "create",
        "clusterrolebinding",
        "node-reader",
        "--clusterrole=node-reader",
        "--group=system:serviceaccounts:kube-system",
    )
    code, out, _ = await kubectl("auth", "can-i", "list", "nodes", f"--as={SA}")
    assert (code, out.strip()) == (0, "yes")
    _, out, _ = await kubectl("get", "nodes", f"--as={SA}", "-o", "name")
    assert out.split() == ["node/node-1", "node/node-2"]
    code, _, err = await kubectl(
        "get", "nodes", "--as=bob", "--as-group=devs", who="sa", check=False
    )
    assert code == 1
    assert err.strip() == (
        'Error from server (Forbidden): users "bob" is forbidden: User "system:serviceaccount:'
        'kube-system:eviction-agent" cannot impersonate resource "users" in API group "" at the'
        " cluster scope"
    )


async def test_can_i_in_a_namespace(kubectl: Kubectl) -> None:
    await kubectl("create", "role", "pod-reader", "-n", "prod", "--verb=get", "--resource=pods")
    await kubectl(
        "create",
        "rolebinding",
        "pod-reader",
        "-n",
        "prod",
        "--role=pod-reader",
        "--serviceaccount=kube-system:eviction-agent",
    )
    code, out, _ = await kubectl("auth", "can-i", "get", "pods", "-n", "prod", who="sa")
    assert (code, out.strip()) == (0, "yes")
    code, out, _ = await kubectl("auth", "can-i", "get", "pods", who="sa", check=False)
    assert (code, out.strip()) == (1, "no")
    _, out, _ = await kubectl("get", "pod", "db-0", "-n", "prod", "-o", "name", who="sa")
    assert out.strip() == "pod/db-0"


async def test_can_i_list(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl("auth", "can-i", "--list", who="sa")
    rows = [line.split() for line in out.strip().splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    by_resource = {r[0]: r[-1] for r in rows[1:] if not r[0].startswith("[")}
    assert by_resource["selfsubjectaccessreviews.authorization.k8s.io"] == "[create]"
    assert by_resource["selfsubjectreviews.authentication.k8s.io"] == "[create]"
    assert ["[/healthz]", "[]", "[get]"] in [r[-3:] for r in rows]
    assert "pods" not in by_resource

"""``kubectl evict``: the package installs ``kubectl-evict``, and the real kubectl runs it as a
plugin found on ``PATH`` (krew's convention), with kubectl's global flags after the plugin's
name and the plugin's exit status as its own."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from kubesim.core.attributes import UserInfo
from tests.support.living import living, settle
from tests.support.manifests import node, pdb, pod, replicaset

KUBECTL = shutil.which("kubectl")
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


async def kubectl(
    *args: str, kubeconfig: str = "", home: Path | None = None
) -> tuple[int, str, str]:
    assert KUBECTL is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    if home is not None:
        env["HOME"] = str(home)  # no ~/.kube/config
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def test_the_plugin_is_installed_beside_evict() -> None:
    assert (BIN / "kubectl-evict").is_file()
    assert os.access(BIN / "kubectl-evict", os.X_OK)


async def test_kubectl_finds_and_runs_the_plugin_with_its_global_flags() -> None:
    code, out, _ = await kubectl("plugin", "list")
    assert str(BIN / "kubectl-evict") in out
    # a budget without slack: the plan says the drain will not finish (exit 3, via kubectl)
    objs = [
        node("node-1"),
        node("node-2"),
        replicaset("web", replicas=2),
        pdb("web", min_available=2),
    ]
    objs += [pod(f"web-{i}", node_name=f"node-{i + 1}", app="web") for i in range(2)]
    async with living(objs) as sim:
        await settle(sim)
        config = str(sim.kubeconfig_path)
        code, out, err = await kubectl(
            "evict", "drain", "node-1", "--plan", "-o", "json",
            f"--kubeconfig={config}", "--request-timeout=10s", "-v=6",
        )  # fmt: skip
        assert code == 3, err
        plan = json.loads(out)
        assert plan["verdict"] == "stuck" and plan["order"] == ["node-1"]
        assert "GET http" in err and "/api/v1/pods" in err  # -v=6: each request, as kubectl's
        # the global flags before the subcommand too, and the context by name
        context = json.loads((await kubectl("config", "view", "-o", "json", kubeconfig=config))[1])
        name = context["current-context"]
        code, out, err = await kubectl(
            "evict", "--kubeconfig", config, "--context", name, "drain", "node-2", "--plan"
        )
        assert code == 3, err
        assert out.splitlines()[0] == "plan: drain node-2; nothing is changed in the cluster"
        # usage errors name the command as typed
        code, _, err = await kubectl("evict", "drain", "--parallel=0", "node-1")
        assert code == 2
        assert "(see 'kubectl evict drain --help')" in err


async def test_kubectls_flags_over_the_kubeconfig_reach_the_plugin(tmp_path: Path) -> None:
    objs = [node("node-1"), node("node-2"), replicaset("web", replicas=1)]
    objs += [pod("web-0", node_name="node-1", app="web")]
    async with living(objs, authorization="rbac", tls=True) as sim:
        await settle(sim)
        token = sim.tokens.add("admin-token", UserInfo("ops", groups=("system:masters",)))
        home = tmp_path / "home"
        home.mkdir()
        ca = tmp_path / "ca.crt"
        ca.write_bytes(sim.certificate_authority_pem() or b"")
        server = (f"--server={sim.url}", f"--certificate-authority={ca}")
        # No kubeconfig anywhere: --server and --token are all there is, as with kubectl.
        code, out, err = await kubectl(
            "evict", "drain", "node-1", "--plan", *server, "--token", token, home=home
        )
        assert code == 0, err
        assert "the drain finishes" in out
        assert {r.user for r in sim.requests if r.path == "/api/v1/pods"} == {"ops"}
        # --as and --as-group (one header line each) too: the API server sees whom ops acts as
        code, out, err = await kubectl(
            "evict", "drain", "node-1", "--plan", *server, "--token", token,
            "--as=auditor", "--as-group=system:masters", "--as-group=auditors", home=home,
        )  # fmt: skip
        assert code == 0, err
        acting = {(r.user, r.impersonated_by, r.groups) for r in sim.requests if r.impersonated_by}
        groups = ("system:masters", "auditors", "system:authenticated")
        assert acting == {("auditor", "ops", groups)}
        # A kubeconfig whose current user is refused; --user picks the one that is not.
        config = tmp_path / "config"
        config.write_text(
            json.dumps(
                {
                    "clusters": [
                        {
                            "name": "c",
                            "cluster": {"server": sim.url, "certificate-authority": str(ca)},
                        }
                    ],
                    "users": [
                        {"name": "nobody", "user": {"token": "wrong"}},
                        {"name": "ops", "user": {"token": token}},
                    ],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "nobody"}}],
                    "current-context": "x",
                }
            )
        )
        code, _, err = await kubectl("evict", "drain", "node-1", "--plan", kubeconfig=str(config))
        assert code == 1 and "Unauthorized" in err
        code, out, err = await kubectl(
            "evict", "drain", "node-1", "--plan", "--user=ops", kubeconfig=str(config)
        )
        assert code == 0, err
        code, _, err = await kubectl(
            "evict", "drain", "node-1", "--plan", "--user=nobody-else", kubeconfig=str(config)
        )
        assert code == 2 and 'auth info "nobody-else" does not exist' in err

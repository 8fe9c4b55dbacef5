"""The install renders and is accepted by a strict API server.

``kubectl kustomize deploy/`` must render the whole install from ``deploy/kustomization.yaml``,
which lists every top-level manifest (present and coming: the admission policy another change
adds). The DaemonSet and ServiceAccount are created through kubesim with ``fieldValidation=Strict``
(an unknown or misspelt field is a 400, as in kube-apiserver), and real ``kubectl apply
--dry-run=server`` is run against kubesim the way ``tests/kubesim/kubectl/test_basics.py``
runs kubectl.
Tests that need kubectl are marked ``kubectl`` and skipped only when no kubectl is installed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

import kubesim
from kubesim.sim import Simulator

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUBECTL = shutil.which("kubectl")


def _kustomization() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    return doc


def _manifest_files() -> set[str]:
    kustomize = {"kustomization.yaml", *_kustomization()["configurations"]}
    return {p.name for p in DEPLOY.glob("*.yaml") if p.name not in kustomize}


def test_kustomization_lists_every_top_level_manifest() -> None:
    listed = _kustomization()["resources"]
    assert len(listed) == len(set(listed))
    # every manifest in deploy/ is part of the install, and nothing else
    assert set(listed) == _manifest_files()
    assert not any("/" in r for r in listed)  # optional/ stays opt-in


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="no kubectl binary installed")
def test_kubectl_kustomize_renders_the_whole_install(tmp_path: Path) -> None:
    assert KUBECTL is not None
    res = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    rendered = [d for d in yaml.safe_load_all(res.stdout) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in rendered}
    assert {
        ("ServiceAccount", "eviction-agent"),
        ("ClusterRole", "eviction-agent"),
        ("ClusterRoleBinding", "eviction-agent"),
        ("DaemonSet", "eviction-agent"),
        ("ValidatingAdmissionPolicy", "eviction-agent-own-node"),
        ("ValidatingAdmissionPolicyBinding", "eviction-agent-own-node"),
    } <= kinds
    expected = sum(
        1
        for name in _manifest_files()
        for d in yaml.safe_load_all((DEPLOY / name).read_text())
        if d
    )
    assert len(rendered) == expected


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


async def _create_strict(sim: Simulator, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    group_version = obj["apiVersion"]
    plural = {"DaemonSet": "daemonsets", "ServiceAccount": "serviceaccounts"}[obj["kind"]]
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    ns = obj["metadata"]["namespace"]
    url = f"{sim.url}{prefix}/namespaces/{ns}/{plural}?fieldValidation=Strict"
    async with aiohttp.ClientSession() as session, session.post(url, json=obj) as resp:
        return resp.status, await resp.json()


async def test_daemonset_and_service_account_pass_strict_validation() -> None:
    async with kubesim.serve(time_scale=0.01) as sim:
        for name in ("serviceaccount.yaml", "daemonset.yaml"):
            for obj in _docs(name):
                status, body = await _create_strict(sim, obj)
                assert status == 201, body
        ds = sim.get("DaemonSet", "kube-system", "eviction-agent")
        assert ds is not None
        [c] = ds["spec"]["template"]["spec"]["containers"]
        assert all(m["recursiveReadOnly"] == "IfPossible" for m in c["volumeMounts"])

        # the check has teeth: a misspelt field is refused
        [bad] = _docs("daemonset.yaml")
        bad["metadata"]["name"] = "misspelt"
        bad["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnlyy"] = True
        status, body = await _create_strict(sim, bad)
        assert status == 400, body
        assert "readOnlyy" in body["message"]


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="no kubectl binary installed")
async def test_kubectl_apply_dry_run_server(tmp_path: Path) -> None:
    assert KUBECTL is not None
    async with kubesim.serve(time_scale=0.01) as sim:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(sim.kubeconfig_path)
        env["HOME"] = str(tmp_path)
        for name in ("serviceaccount.yaml", "daemonset.yaml"):
            proc = await asyncio.create_subprocess_exec(
                KUBECTL,
                f"--cache-dir={tmp_path / 'cache'}",
                "apply",
                "--dry-run=server",
                "--validate=strict",
                "-f",
                str(DEPLOY / name),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err.decode()
            assert "(server dry run)" in out.decode()
        # a dry run stores nothing
        assert sim.get("DaemonSet", "kube-system", "eviction-agent") is None
        creates = sim.requests.filter(verb="create", resource="daemonsets")
        assert creates and all(r.code == 201 for r in creates)

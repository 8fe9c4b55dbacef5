"""``fieldValidation`` on writes: Strict → 400, Warn (the default) → Warning headers, Ignore."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kubesim.sim import Simulator


async def request(
    sim: Simulator,
    method: str,
    path: str,
    body: str,
    *,
    content_type: str = "application/json",
) -> tuple[int, list[str], Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, sim.url + path, data=body.encode(), headers={"Content-Type": content_type}
        ) as resp,
    ):
        return resp.status, resp.headers.getall("Warning", []), json.loads(await resp.text())


def pod(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }
    return json.dumps(body)


PODS = "/api/v1/namespaces/default/pods"


async def test_strict_rejects_unknown_fields_joined_as_kube_does(sim: Simulator) -> None:
    code, _, status = await request(
        sim, "POST", PODS + "?fieldValidation=Strict", pod("a", foo=1, bar={"x": 1})
    )
    assert code == 400
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'strict decoding error: unknown field "spec.foo", unknown field "spec.bar"'
    )
    assert sim.get("Pod", "default", "a") is None


async def test_strict_rejects_duplicate_fields(sim: Simulator) -> None:
    body = pod("dup").replace('"name": "dup"', '"name": "dup", "name": "dup2"')
    code, _, status = await request(sim, "POST", PODS + "?fieldValidation=Strict", body)
    assert code == 400
    assert status["message"] == 'strict decoding error: duplicate field "metadata.name"'


async def test_warn_is_the_default_and_sends_one_warning_header_per_problem(
    sim: Simulator,
) -> None:
    body = pod("w", foo=1).replace('"image": "nginx"', '"image": "nginx", "imag": "x"')
    code, warnings, created = await request(sim, "POST", PODS, body)
    assert code == 201
    assert warnings == [
        '299 - "unknown field \\"spec.containers[0].imag\\""',
        '299 - "unknown field \\"spec.foo\\""',
    ]
    # Dropped, as decoding into the Go struct drops them.
    assert "foo" not in created["spec"]
    assert "imag" not in created["spec"]["containers"][0]
    code, warnings, _ = await request(sim, "POST", PODS + "?fieldValidation=Warn", pod("w2", x=1))
    assert (code, warnings) == (201, ['299 - "unknown field \\"spec.x\\""'])


async def test_ignore_and_clean_bodies_send_no_warning(sim: Simulator) -> None:
    code, warnings, created = await request(
        sim, "POST", PODS + "?fieldValidation=Ignore", pod("i", x=1)
    )
    assert (code, warnings) == (201, [])
    assert "x" not in created["spec"]
    code, warnings, _ = await request(sim, "POST", PODS + "?fieldValidation=Strict", pod("ok"))
    assert (code, warnings) == (201, [])


async def test_an_unknown_directive_is_invalid(sim: Simulator) -> None:
    code, _, status = await request(sim, "POST", PODS + "?fieldValidation=Loose", pod("l"))
    assert code == 422
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose":'
        ' supported values: "Ignore", "Strict", "Warn"'
    )


async def test_update_and_patch_are_checked(sim: Simulator) -> None:
    await request(sim, "POST", PODS, pod("u"))
    current = sim.get("Pod", "default", "u")
    assert current is not None
    current["spec"]["priorityClasName"] = "x"
    code, _, status = await request(
        sim, "PUT", PODS + "/u?fieldValidation=Strict", json.dumps(current)
    )
    assert code == 400
    assert status["message"] == 'strict decoding error: unknown field "spec.priorityClasName"'
    for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        code, _, status = await request(
            sim,
            "PATCH",
            PODS + "/u?fieldValidation=Strict",
            '{"metadata": {"lables": {"a": "b"}}}',
            content_type=ctype,
        )
        assert code == 400, ctype
        assert status["message"] == 'strict decoding error: unknown field "metadata.lables"'
    # Strategic merge patch directives are not fields.
    code, warnings, _ = await request(
        sim,
        "PATCH",
        PODS + "/u?fieldValidation=Strict",
        '{"metadata": {"labels": {"a": "b"}, "$setElementOrder/finalizers": []}}',
        content_type="application/strategic-merge-patch+json",
    )
    assert (code, warnings) == (200, [])


@pytest.mark.kubectl
async def test_kubectl_reports_strict_errors_and_warnings(sim: Simulator, tmp_path: Any) -> None:
    import asyncio
    import os
    import shutil

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    manifest = tmp_path / "p.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: k}\nspec:\n  containers:\n"
        "  - name: c\n    image: nginx\n    resources: {requets: {cpu: 1}}\n"
    )
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}

    async def run(*args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            kubectl, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, err = await proc.communicate()
        assert proc.returncode is not None
        return proc.returncode, err.decode()

    code, err = await run("create", "-f", str(manifest))
    assert code == 1
    assert 'strict decoding error: unknown field "spec.containers[0].resources.requets"' in err
    code, err = await run("create", "--validate=warn", "-f", str(manifest))
    assert code == 0
    assert 'Warning: unknown field "spec.containers[0].resources.requets"' in err

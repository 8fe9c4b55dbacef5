"""The agent's API layer keeps kubernetes-asyncio's models out of memory until someone asks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evictor.api.deferred import defer_client_models


def run_fresh(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_agent_path_loads_no_models(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        textwrap.dedent(
            """
            apiVersion: v1
            kind: Config
            clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
            users: [{name: u, user: {token: secret}}]
            contexts: [{name: x, context: {cluster: c, user: u}}]
            current-context: x
            """
        )
    )
    out = run_fresh(
        f"""
        import asyncio, sys
        from evictor.api.deferred import defer_client_models
        assert defer_client_models()
        import agent.daemon, agent.informer, agent.actions.evict, evictor.client
        from kubernetes_asyncio import client, config

        async def main():
            cfg = client.Configuration()
            await config.load_kube_config(config_file={str(kubeconfig)!r}, client_configuration=cfg)
            api = client.ApiClient(configuration=cfg)
            evictor.client.Evictor(api)
            headers = {{}}
            await api.update_params_for_auth(headers, [], ["BearerToken"])
            await api.close()
            return cfg.host, headers.get("authorization")

        host, auth = asyncio.run(main())
        models = [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models.")]
        apis = [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.api.")]
        print(host, auth, len(models), len(apis))
        print(client.V1Pod.__name__, client.CoreV1Api.__name__, client.__version__ != "")
        """
    )
    first, second = out.splitlines()
    assert first == "http://127.0.0.1:1 Bearer secret 0 0"
    # anyone who wants the full client still gets it, on first use
    assert second == "V1Pod CoreV1Api True"


def test_models_resolve_through_api_client_deserialize() -> None:
    out = run_fresh(
        """
        from evictor.api.deferred import defer_client_models
        assert defer_client_models()
        import asyncio
        from kubernetes_asyncio.client.api_client import ApiClient
        import kubernetes_asyncio.client.models as models

        async def main():
            async with ApiClient() as api:
                return api._ApiClient__deserialize({"metadata": {"name": "p"}}, "V1Pod")

        pod = asyncio.run(main())
        print(type(pod).__name__, pod.metadata.name, models.V1Pod is type(pod))
        """
    )
    assert out == "V1Pod p True"


def test_no_op_once_imported() -> None:
    pytest.importorskip("kubernetes_asyncio")
    import kubernetes_asyncio  # noqa: F401

    assert defer_client_models() is False

"""``resolve_proxy_once``: kubectl's proxy rule, chosen once instead of per request by aiohttp."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from evictor.api.calls import send
from evictor.api.connect import resolve_proxy_once
from kubesim.sim import Simulator

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
async def api() -> AsyncIterator[ApiClient]:
    cfg = Configuration(host="https://api.example.com:6443")
    client = ApiClient(configuration=cfg)
    try:
        yield client
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("host", "env", "expected"),
    [
        ("https://api.example.com:6443", {"HTTPS_PROXY": "http://proxy:3128"}, "http://proxy:3128"),
        ("https://api.example.com:6443", {"https_proxy": "http://p2:3128"}, "http://p2:3128"),
        # the scheme picks the variable, as Go's ProxyFromEnvironment does
        ("https://api.example.com:6443", {"HTTP_PROXY": "http://proxy:3128"}, None),
        ("http://api.example.com:8080", {"HTTP_PROXY": "http://proxy:3128"}, "http://proxy:3128"),
        # NO_PROXY: the name and its subdomains
        ("https://api.example.com:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"},
         None),
        ("https://api.example.com:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.org"},
         "http://p:1"),
        # never for localhost or a loopback address
        ("https://127.0.0.1:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None),
        ("https://localhost:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None),
        ("https://[::1]:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None),
        ("https://api.example.com:6443", {}, None),
    ],
)  # fmt: skip
async def test_kubectl_proxy_rule(
    clean_env: pytest.MonkeyPatch,
    api: ApiClient,
    host: str,
    env: dict[str, str],
    expected: str | None,
) -> None:
    for var, value in env.items():
        clean_env.setenv(var, value)
    api.configuration.host = host
    assert resolve_proxy_once(api) == expected
    assert api.rest_client.proxy == expected
    assert api.rest_client.pool_manager.trust_env is False  # no per-request lookup, no .netrc


async def test_kubeconfig_proxy_url_wins(clean_env: pytest.MonkeyPatch, api: ApiClient) -> None:
    clean_env.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    api.rest_client.proxy = "http://kubeconfig-proxy:8080"
    assert resolve_proxy_once(api) == "http://kubeconfig-proxy:8080"


@pytest.mark.parametrize("resolved", [True, False])
async def test_requests_skip_the_per_request_environment_lookup(
    clean_env: pytest.MonkeyPatch, resolved: bool
) -> None:
    """Once resolved, a request makes no proxy lookup of its own, and still reaches the server
    (without ``resolve_proxy_once`` aiohttp looks up every request: the spy sees it)."""
    import aiohttp.client

    looked_up: list[object] = []
    original = aiohttp.client.get_env_proxy_for_url

    def spy(url: object) -> object:
        looked_up.append(url)
        return original(url)

    clean_env.setattr(aiohttp.client, "get_env_proxy_for_url", spy)
    async with Simulator() as sim:
        client = ApiClient(configuration=Configuration(host=sim.url))
        try:
            if resolved:
                resolve_proxy_once(client)
            resp = await send(client, "GET", "/api/v1/nodes")
        finally:
            await client.close()
    assert resp.status == 200
    assert (looked_up == []) is resolved

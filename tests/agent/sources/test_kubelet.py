"""The kubelet /stats/summary client against a local aiohttp server serving a fixture summary."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import ssl
import subprocess
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent.eviction.summary import (
    ContainerStats,
    FsStats,
    MemoryStats,
    PodReference,
    PodStats,
    VolumeStats,
)
from agent.sources.collector import SourceConfig, SummaryCollector
from agent.sources.kubelet import (
    MAX_SUMMARY_BYTES,
    KubeletSummaryConfig,
    KubeletSummaryError,
    fetch_summary,
    kubelet_pod_stats,
    merge_kubelet_pod_storage,
)
from agent.sources.roots import Roots
from kube.boundedjson import Cursor
from kube.times import parse_rfc3339

TOKEN = "sa-token-abc"
UID = "dddddddd-4444-4a2b-9c3d-000000000004"
T = "2026-01-01T00:00:00Z"

FIXTURE: dict[str, Any] = {
    "node": {
        "nodeName": "node-1",
        "startTime": T,
        "fs": {"time": T, "availableBytes": 10, "capacityBytes": 100},
        "runtime": {"imageFs": {"time": T, "availableBytes": 5, "capacityBytes": 50}},
    },
    "pods": [
        {
            "podRef": {"name": "web", "namespace": "shop", "uid": UID},
            "startTime": T,
            "containers": [
                {
                    "name": "app",
                    "startTime": T,
                    "rootfs": {"time": T, "usedBytes": 4096, "inodesUsed": 3},
                    "logs": {"time": T, "usedBytes": 1024, "inodesUsed": 1},
                }
            ],
            "volume": [{"time": T, "name": "scratch", "usedBytes": 2048}],
            "ephemeral-storage": {"time": T, "usedBytes": 7168, "inodesUsed": 5},
        },
        {"podRef": "garbage"},
        {"podRef": {"name": "x", "namespace": "y"}},
    ],
}

# FIXTURE as the agent keeps it: of a pod entry what the merge takes, volumes read once
KEPT: dict[str, Any] = {
    "node": FIXTURE["node"],
    "pods": [
        {
            **{k: v for k, v in FIXTURE["pods"][0].items() if k != "volume"},
            "volume": (VolumeStats("scratch", FsStats(used_bytes=2048)),),
        },
        *FIXTURE["pods"][1:],
    ],
}

SEEN = web.AppKey("seen", list[dict[str, str]])

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _summary(request: web.Request) -> web.StreamResponse:
    request.app[SEEN].append(dict(request.headers))
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return web.Response(status=401, text="Unauthorized")
    return web.json_response(FIXTURE)


async def _server(
    handler: Handler, ssl_ctx: ssl.SSLContext | None = None, **routes: Handler
) -> TestServer:
    app = web.Application()
    app[SEEN] = []
    app.router.add_get("/stats/summary", handler)
    for name, other in routes.items():
        app.router.add_get(f"/{name}", other)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=ssl_ctx)
    return server


def _mint(cert: Path, key: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl binary absent: cannot mint a serving certificate for the TLS test")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "kubelet.crt", d / "kubelet.key"
    _mint(cert, key)
    return cert, key


def _tls(cert_key: tuple[Path, Path]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*cert_key)
    return ctx


@pytest.fixture
async def server(self_signed: tuple[Path, Path]) -> AsyncIterator[TestServer]:
    srv = await _server(_summary, _tls(self_signed))
    yield srv
    await srv.close()


@pytest.fixture
def ca(self_signed: tuple[Path, Path]) -> Path:
    return self_signed[0]


@pytest.fixture
def token(tmp_path: Path) -> Path:
    p = tmp_path / "token"
    p.write_text(TOKEN + "\n")
    return p


def _url(srv: TestServer, scheme: str = "https") -> str:
    return f"{scheme}://127.0.0.1:{srv.port}/stats/summary"


async def test_fetch_sends_bearer_token(server: TestServer, token: Path, ca: Path) -> None:
    data = await fetch_summary(KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=ca))
    assert data == KEPT
    assert server.app[SEEN][0]["Authorization"] == f"Bearer {TOKEN}"


async def test_token_is_reread_on_every_request(server: TestServer, token: Path, ca: Path) -> None:
    cfg = KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=ca)
    await fetch_summary(cfg)
    token.write_text("rotated")
    with pytest.raises(KubeletSummaryError, match="HTTP 401: Unauthorized"):
        await fetch_summary(cfg)
    assert server.app[SEEN][1]["Authorization"] == "Bearer rotated"


async def test_errors_name_the_url_and_cause(server: TestServer, tmp_path: Path) -> None:
    with pytest.raises(KubeletSummaryError, match="cannot read service-account token"):
        await fetch_summary(KubeletSummaryConfig(url=_url(server), token_path=tmp_path / "missing"))
    refused = KubeletSummaryConfig(
        url="http://127.0.0.1:1/stats/summary", token_path=None, timeout_seconds=2
    )
    with pytest.raises(KubeletSummaryError, match=r"GET http://127\.0\.0\.1:1/stats/summary"):
        await fetch_summary(refused)


async def test_non_summary_body_is_rejected(token: Path, self_signed: tuple[Path, Path]) -> None:
    async def not_summary(_r: web.Request) -> web.StreamResponse:
        return web.json_response(["nope"])

    async def not_json(_r: web.Request) -> web.StreamResponse:
        return web.Response(text="<html>")

    for handler, msg in [(not_summary, "not a stats Summary"), (not_json, "JSONDecodeError")]:
        srv = await _server(handler, _tls(self_signed))
        try:
            with pytest.raises(KubeletSummaryError, match=msg):
                await fetch_summary(
                    KubeletSummaryConfig(url=_url(srv), token_path=token, ca_path=self_signed[0])
                )
        finally:
            await srv.close()


async def test_slow_kubelet_times_out(token: Path, self_signed: tuple[Path, Path]) -> None:
    async def slow(_r: web.Request) -> web.StreamResponse:
        await asyncio.Event().wait()  # never answers; the client gives up
        return web.json_response(FIXTURE)

    srv = await _server(slow, _tls(self_signed))
    try:
        cfg = KubeletSummaryConfig(
            url=_url(srv), token_path=token, ca_path=self_signed[0], timeout_seconds=0.2
        )
        with pytest.raises(KubeletSummaryError, match="Timeout"):
            await fetch_summary(cfg)
    finally:
        await srv.close()


def test_for_node_builds_the_10250_url() -> None:
    assert KubeletSummaryConfig.for_node("10.0.0.5").url == "https://10.0.0.5:10250/stats/summary"
    assert KubeletSummaryConfig.for_node("fd00::5").url == "https://[fd00::5]:10250/stats/summary"


async def test_tls_verifies_against_the_ca_or_is_explicitly_insecure(
    self_signed: tuple[Path, Path], token: Path, tmp_path: Path
) -> None:
    cert, _ = self_signed
    srv = await _server(_summary, _tls(self_signed))
    try:
        url = _url(srv, "https")
        ok = await fetch_summary(KubeletSummaryConfig(url=url, token_path=token, ca_path=cert))
        assert ok["node"]["nodeName"] == "node-1"
        other_ca = tmp_path / "other-ca.crt"
        _mint(other_ca, tmp_path / "other.key")
        with pytest.raises(KubeletSummaryError, match=r"(?i)certificate"):
            await fetch_summary(KubeletSummaryConfig(url=url, token_path=token, ca_path=other_ca))
        insecure = KubeletSummaryConfig(url=url, token_path=token, ca_path=None, insecure=True)
        assert (await fetch_summary(insecure))["pods"][0]["podRef"]["uid"] == UID
        assert len(srv.app[SEEN]) == 2  # the refused certificate got no request
    finally:
        await srv.close()


async def test_a_missing_or_unreadable_ca_file_is_refused_not_replaced_by_the_system_cas(
    server: TestServer, token: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "ca.crt"
    with pytest.raises(KubeletSummaryError, match=rf"kubelet CA file {missing}: no such file"):
        await fetch_summary(
            KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=missing)
        )
    empty = tmp_path / "empty.crt"
    empty.write_text("")
    with pytest.raises(KubeletSummaryError, match=rf"kubelet CA file {empty}: "):
        await fetch_summary(KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=empty))
    assert server.app[SEEN] == []  # nothing was sent, the token least of all


def test_merge_takes_disk_figures_and_names_by_uid(caplog: pytest.LogCaptureFixture) -> None:
    mem = MemoryStats(working_set_bytes=9)
    ours = [
        PodStats(
            pod_ref=PodReference(name="", namespace="", uid=UID),
            containers=(ContainerStats(name="app", memory=mem),),
            memory=mem,
        )
    ]
    with caplog.at_level("WARNING"):
        kubelet = kubelet_pod_stats(FIXTURE)
    # the malformed entries are logged and dropped, never merged
    assert [p.pod_ref.uid for p in kubelet] == [UID]
    assert caplog.text.count("kubelet summary: pod entry skipped") == 2
    [pod] = merge_kubelet_pod_storage(ours, kubelet)
    assert pod.pod_ref == PodReference(name="web", namespace="shop", uid=UID)
    assert pod.ephemeral_storage is not None and pod.ephemeral_storage.used_bytes == 7168
    assert [v.name for v in pod.volume_stats] == ["scratch"]
    assert pod.memory is mem  # our fresh reading is kept
    [app] = pod.containers
    assert app.memory is mem
    assert app.rootfs is not None and app.rootfs.used_bytes == 4096
    assert app.logs is not None and app.logs.used_bytes == 1024


def test_merge_adds_pods_only_the_kubelet_knows() -> None:
    merged = merge_kubelet_pod_storage([], kubelet_pod_stats(FIXTURE))
    assert [p.pod_ref.uid for p in merged] == [UID]
    rootfs = merged[0].containers[0].rootfs
    assert rootfs is not None and rootfs.used_bytes == 4096
    assert merged[0].memory is None


async def test_collector_merges_kubelet_storage_in_background(
    server: TestServer, token: Path, ca: Path, tmp_path: Path
) -> None:
    cfg = SourceConfig(
        roots=Roots(proc_root=tmp_path, cgroup_root=tmp_path / "nocg", kubelet_root=tmp_path),
        kubelet_summary=KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=ca),
        kubelet_summary_interval=60,
    )
    col = SummaryCollector(cfg)
    try:
        first = await col.get_summary()
        # The first call starts the fetch and never waits for it: fresh local stats first.
        assert first.pods == ()
        assert col._kubelet_task is not None
        await col._kubelet_task
        second = await col.get_summary()
        assert second.pods[0].ephemeral_storage == FsStats(
            time=parse_rfc3339(T), used_bytes=7168, inodes_used=5
        )
        # Within the interval no new request is made.
        assert len(server.app[SEEN]) == 1
    finally:
        await col.aclose()


async def test_the_token_never_travels_over_plain_http(token: Path) -> None:
    async def record(request: web.Request) -> web.StreamResponse:
        request.app[SEEN].append(dict(request.headers))
        return web.json_response(FIXTURE)

    srv = await _server(record)
    try:
        url = f"http://127.0.0.1:{srv.port}/stats/summary"
        with pytest.raises(KubeletSummaryError, match="refusing to send the service-account token"):
            await fetch_summary(KubeletSummaryConfig(url=url, token_path=token))
        assert srv.app[SEEN] == []  # not even a connection carrying something else
        # no credential configured: plain http is then only a read of public figures
        data = await fetch_summary(KubeletSummaryConfig(url=url, token_path=None))
        assert data == KEPT and "Authorization" not in srv.app[SEEN][0]
    finally:
        await srv.close()


async def test_cached_kubelet_figures_expire_and_their_age_is_known(
    server: TestServer, token: Path, ca: Path, tmp_path: Path
) -> None:
    now = [1000.0]
    cfg = SourceConfig(
        roots=Roots(proc_root=tmp_path, cgroup_root=tmp_path / "nocg", kubelet_root=tmp_path),
        kubelet_summary=KubeletSummaryConfig(url=_url(server), token_path=token, ca_path=ca),
        kubelet_summary_interval=10,
    )
    col = SummaryCollector(cfg, monotonic=lambda: now[0])
    try:
        assert col.kubelet_summary_age() is None
        await col.get_summary()
        assert col._kubelet_task is not None
        await col._kubelet_task
        now[0] += 30  # three intervals: still in force (the fetches between failed)
        token.write_text("revoked")  # every later fetch is refused (401)
        [pod] = (await col.get_summary()).pods
        assert pod.ephemeral_storage is not None and pod.ephemeral_storage.used_bytes == 7168
        await col._kubelet_task
        assert col.kubelet_summary_age() == 30
        now[0] += 1
        assert (await col.get_summary()).pods == ()  # expired: no stale disk figures
        assert col.kubelet_summary_age() == 31
    finally:
        await col.aclose()


async def test_kubelet_pod_entries_with_absurd_figures_are_dropped(
    token: Path, self_signed: tuple[Path, Path]
) -> None:
    bad = copy.deepcopy(FIXTURE)
    bad["pods"].append(
        {
            "podRef": {"name": "liar", "namespace": "shop", "uid": "u-liar"},
            "ephemeral-storage": {"usedBytes": 10**400},
        }
    )

    async def handler(_r: web.Request) -> web.StreamResponse:
        return web.json_response(bad)

    srv = await _server(handler, _tls(self_signed))
    cfg = SourceConfig(
        kubelet_summary=KubeletSummaryConfig(
            url=_url(srv), token_path=token, ca_path=self_signed[0]
        )
    )
    col = SummaryCollector(cfg)
    try:
        pods = await col.refresh_kubelet()
        assert pods is not None
        assert [p.pod_ref.uid for p in pods] == [UID]
    finally:
        await col.aclose()
        await srv.close()


async def _plain(handler: Handler) -> tuple[TestServer, KubeletSummaryConfig]:
    srv = await _server(handler)
    return srv, KubeletSummaryConfig(url=_url(srv, "http"), token_path=None)


async def test_a_summary_over_16_mib_is_refused_announced_or_streamed() -> None:
    big = b'{"node": {"nodeName": "n"}, "pods": []' + b" " * MAX_SUMMARY_BYTES + b"}"

    async def announced(request: web.Request) -> web.StreamResponse:
        request.app[SEEN].append({})
        return web.Response(body=big, content_type="application/json")

    async def streamed(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()  # chunked: no Content-Length to go by
        await resp.prepare(request)
        for i in range(0, len(big), 1 << 20):
            await resp.write(big[i : i + (1 << 20)])
        return resp

    for handler in (announced, streamed):
        srv, cfg = await _plain(handler)
        try:
            with pytest.raises(KubeletSummaryError, match=f"larger than {MAX_SUMMARY_BYTES} bytes"):
                await fetch_summary(cfg)
        finally:
            await srv.close()
    fits = big[: MAX_SUMMARY_BYTES - 1] + b"}"  # at the bound exactly: read

    async def within(_r: web.Request) -> web.StreamResponse:
        return web.Response(body=fits, content_type="application/json")

    srv, cfg = await _plain(within)
    try:
        assert await fetch_summary(cfg) == {"node": {"nodeName": "n"}, "pods": []}
    finally:
        await srv.close()


async def test_redirects_are_not_followed(token: Path, self_signed: tuple[Path, Path]) -> None:
    async def moved(request: web.Request) -> web.StreamResponse:
        request.app[SEEN].append(dict(request.headers))
        raise web.HTTPFound("/elsewhere")

    async def elsewhere(request: web.Request) -> web.StreamResponse:
        request.app[SEEN].append({"elsewhere": request.headers.get("Authorization", "")})
        return web.json_response(FIXTURE)

    srv = await _server(moved, _tls(self_signed), elsewhere=elsewhere)
    try:
        cfg = KubeletSummaryConfig(url=_url(srv), token_path=token, ca_path=self_signed[0])
        with pytest.raises(KubeletSummaryError, match=r"HTTP 302 \(redirects are not followed\)"):
            await fetch_summary(cfg)
        assert len(srv.app[SEEN]) == 1 and "elsewhere" not in srv.app[SEEN][0]
    finally:
        await srv.close()


async def test_a_summary_nested_too_deeply_is_a_failed_read() -> None:
    deep = b'{"node": {}, "pods": [' + b"[" * 5000 + b"]" * 5000 + b"]}"

    async def handler(_r: web.Request) -> web.StreamResponse:
        return web.Response(body=deep, content_type="application/json")

    srv, cfg = await _plain(handler)
    try:
        with pytest.raises(KubeletSummaryError, match="JSONTooDeep: JSON nested deeper than 100"):
            await fetch_summary(cfg)
    finally:
        await srv.close()


def _many_volumes(n: int) -> dict[str, Any]:
    summary = copy.deepcopy(FIXTURE)
    summary["pods"][0]["volume"] = [
        {
            "time": T,
            "availableBytes": 10**9,
            "capacityBytes": 2 * 10**9,
            "usedBytes": 4096,
            "inodesFree": 1000,
            "inodes": 2000,
            "inodesUsed": 1,
            "name": f"v{i}",
        }
        for i in range(n)
    ] + [{"time": T, "name": "full", "usedBytes": 9 << 20, "inodesUsed": 7}]
    return summary


async def test_a_refused_summary_is_logged_and_its_figures_become_unknown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers = [web.json_response(FIXTURE)]

    async def handler(_r: web.Request) -> web.StreamResponse:
        return answers[0]

    srv, kubelet = await _plain(handler)
    now = [1000.0]
    cfg = SourceConfig(
        roots=Roots(proc_root=tmp_path, cgroup_root=tmp_path / "nocg", kubelet_root=tmp_path),
        kubelet_summary=kubelet,
        kubelet_summary_interval=10,
    )
    col = SummaryCollector(cfg, monotonic=lambda: now[0])
    try:
        assert await col.refresh_kubelet() is not None
        assert [p.pod_ref.uid for p in (await col.get_summary()).pods] == [UID]
        body = b'{"node": {}, "pods": []' + b" " * MAX_SUMMARY_BYTES + b"}"
        answers[0] = web.Response(body=body, content_type="application/json")
        with caplog.at_level("WARNING"):
            assert await col.refresh_kubelet() is None
        assert f"kubelet summary unavailable: GET {kubelet.url}: response larger than" in (
            caplog.text
        )
        now[0] += 31  # the last good figures expire as after any failed read
        col._kubelet_fetched_at = now[0]  # no new fetch started by get_summary
        assert (await col.get_summary()).pods == ()
    finally:
        await col.aclose()
        await srv.close()


async def test_40000_volumes_are_read_once_and_kept_small() -> None:
    """A pod with 40,000 emptyDirs: its entry keeps one small ``VolumeStats`` per volume,
    equal figures shared, and the per-sync Summary takes them as they are."""
    from agent.sources.kubelet import read_summary

    text = json.dumps(_many_volumes(40_000))
    tracemalloc.start()
    try:
        kept = read_summary(Cursor(text))
        held = tracemalloc.get_traced_memory()[0]
        parsed = json.loads(text)
        parsed_size = tracemalloc.get_traced_memory()[0] - held
        del parsed
    finally:
        tracemalloc.stop()
    volumes = kept["pods"][0]["volume"]
    assert len(volumes) == 40_001
    assert volumes[0] == VolumeStats("v0", FsStats(used_bytes=4096, inodes_used=1))
    assert volumes[-1] == VolumeStats("full", FsStats(used_bytes=9 << 20, inodes_used=7))
    assert len({id(v.fs) for v in volumes}) == 2  # 40,000 equal figures, one object
    assert held < parsed_size / 3, (held, parsed_size)
    pods = kubelet_pod_stats(kept)
    assert pods[0].volume_stats is volumes  # read once per fetch
    merged = merge_kubelet_pod_storage([], pods)
    assert merged[0].volume_stats is volumes  # and not again on every sync
    # the next fetch keeps the volumes that did not change, and only those
    changed = _many_volumes(40_000)
    changed["pods"][0]["volume"][7]["usedBytes"] = 8192
    again = read_summary(Cursor(json.dumps(changed)), previous=pods)["pods"][0]["volume"]
    v7 = VolumeStats("v7", FsStats(used_bytes=8192, inodes_used=1))
    assert again == (*volumes[:7], v7, *volumes[8:])
    assert all(a is b for a, b in zip(again, volumes, strict=True) if a == b)
    assert again[7] is not volumes[7]


async def test_a_pod_entry_with_a_malformed_volume_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from agent.sources.kubelet import read_summary

    bad = _many_volumes(3)
    bad["pods"][0]["volume"][1]["usedBytes"] = -1
    with caplog.at_level("WARNING"):
        kept = read_summary(Cursor(json.dumps(bad)))
    assert [p["podRef"] for p in kept["pods"]] == [p["podRef"] for p in FIXTURE["pods"][1:]]
    assert "pod entry skipped: stats summary: pods[0].volume[1].usedBytes" in caplog.text

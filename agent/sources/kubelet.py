"""Client for the kubelet's `/stats/summary`, used for what cgroupfs cannot tell: disk.

Per-pod ephemeral-storage usage (writable layers, logs, emptyDir volumes) and per-volume usage are
only known to the kubelet and the runtime, so the agent asks the kubelet on port 10250 directly
(authorised as `nodes/stats get`; the API-server proxy path would need `nodes/proxy`, which grants
exec on every node — see ecosystem.md §2.1). The request carries the pod's service-account token,
re-read on every call because bound tokens rotate. TLS verifies against a CA bundle (the
ServiceAccount's CA, or the operator's `kubeletCAFile`; the system CAs when neither file exists);
`insecure` exists for tests only and is not reachable from the configuration.

That token can delete pods, so it never travels in clear: the configuration refuses an http URL
unless no token is configured (`kubeletTokenFile: ""`), and `fetch_summary` itself refuses to
attach one to a non-https URL — two locks, so a caller building its own config cannot leak it.

These figures are cAdvisor-housekeeping old (10 s or more), so they are merged into the agent's
own fresh cgroup readings rather than replacing them: the memory hot path never waits on this.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

JSONDict = dict[str, Any]

DEFAULT_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"
DEFAULT_CA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
KUBELET_PORT = 10250


class KubeletSummaryError(Exception):
    """The summary could not be fetched or was not a Summary object."""


@dataclass(frozen=True)
class KubeletSummaryConfig:
    url: str
    token_path: Path | None = Path(DEFAULT_TOKEN_PATH)
    ca_path: Path | None = Path(DEFAULT_CA_PATH)
    insecure: bool = False
    timeout_seconds: float = 5.0

    @classmethod
    def for_node(cls, host: str, **kwargs: Any) -> KubeletSummaryConfig:
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return cls(url=f"https://{host}:{KUBELET_PORT}/stats/summary", **kwargs)


def _ssl_context(cfg: KubeletSummaryConfig) -> ssl.SSLContext | bool:
    if not cfg.url.startswith("https://"):
        return False
    if cfg.insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    cafile = str(cfg.ca_path) if cfg.ca_path is not None and cfg.ca_path.exists() else None
    return ssl.create_default_context(cafile=cafile)


def _headers(cfg: KubeletSummaryConfig) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if cfg.token_path is not None and not cfg.url.startswith("https://"):
        raise KubeletSummaryError(
            f"GET {cfg.url}: refusing to send the service-account token over plain http"
        )
    if cfg.token_path is not None:
        try:
            token = cfg.token_path.read_text().strip()
        except OSError as exc:
            raise KubeletSummaryError(
                f"cannot read service-account token {cfg.token_path}: {exc}"
            ) from exc
        if token:
            headers["Authorization"] = f"Bearer {token}"
    return headers


async def fetch_summary(
    cfg: KubeletSummaryConfig, *, session: aiohttp.ClientSession | None = None
) -> JSONDict:
    """GET the summary; KubeletSummaryError with the URL and the cause on any failure."""
    own = session is None
    sess = session or aiohttp.ClientSession()
    try:
        async with sess.get(
            cfg.url,
            headers=_headers(cfg),
            ssl=_ssl_context(cfg),
            timeout=aiohttp.ClientTimeout(total=cfg.timeout_seconds),
        ) as resp:
            if resp.status != 200:
                body = (await resp.text())[:200]
                raise KubeletSummaryError(f"GET {cfg.url}: HTTP {resp.status}: {body.strip()}")
            data = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise KubeletSummaryError(f"GET {cfg.url}: {type(exc).__name__}: {exc}") from exc
    finally:
        if own:
            await sess.close()
    if not isinstance(data, dict) or not isinstance(data.get("node"), dict):
        raise KubeletSummaryError(f"GET {cfg.url}: response is not a stats Summary object")
    return data


def merge_kubelet_pod_storage(pods: list[JSONDict], kubelet: JSONDict) -> list[JSONDict]:
    """Fold the kubelet's disk figures into our pod stats, matched by pod UID.

    Taken from the kubelet: `ephemeral-storage`, `volume`, containers' `rootfs`/`logs`, and the
    pod's name/namespace when our lookup had none. Pods only the kubelet reports (no cgroup read)
    are added with those fields alone. Malformed entries are skipped.
    """
    by_uid: dict[str, JSONDict] = {}
    for pod in pods:
        by_uid[pod["podRef"]["uid"]] = pod
    out = list(pods)
    for kp in kubelet.get("pods") or []:
        if not isinstance(kp, dict) or not isinstance(kp.get("podRef"), dict):
            continue
        ref = kp["podRef"]
        uid = ref.get("uid")
        if not isinstance(uid, str) or not uid:
            continue
        ours = by_uid.get(uid)
        if ours is None:
            ours = {
                "podRef": {
                    "name": ref.get("name", ""),
                    "namespace": ref.get("namespace", ""),
                    "uid": uid,
                },
                "startTime": kp.get("startTime", ""),
                "containers": [],
            }
            by_uid[uid] = ours
            out.append(ours)
        for key in ("name", "namespace"):
            if not ours["podRef"].get(key) and isinstance(ref.get(key), str):
                ours["podRef"][key] = ref[key]
        for key in ("ephemeral-storage", "volume"):
            if key in kp:
                ours[key] = kp[key]
        _merge_containers(ours, kp.get("containers") or [])
    return out


def _merge_containers(ours: JSONDict, theirs: list[Any]) -> None:
    mine = {c["name"]: c for c in ours["containers"]}
    for kc in theirs:
        if not isinstance(kc, dict) or not isinstance(kc.get("name"), str):
            continue
        target = mine.get(kc["name"])
        if target is None:
            target = {"name": kc["name"], "startTime": kc.get("startTime", "")}
            ours["containers"].append(target)
            mine[kc["name"]] = target
        for key in ("rootfs", "logs"):
            if key in kc:
                target[key] = kc[key]

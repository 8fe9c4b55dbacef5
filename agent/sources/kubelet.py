"""Client for the kubelet's ``/stats/summary``, for what cgroupfs cannot tell: disk — the pods'
writable layers, logs and emptyDir volumes. Its figures are cAdvisor-housekeeping old (10 s or
more), so they are merged into the agent's own fresh readings rather than replacing them: the memory
path never waits on this.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import aiohttp

from agent.eviction.summary import (
    ContainerStats,
    FsStats,
    PodReference,
    PodStats,
    SummaryError,
    VolumeStats,
)
from evictor.api.calls import BodyTooLarge, read_bounded
from kube.boundedjson import Cursor

log = logging.getLogger(__name__)

JSONDict = dict[str, Any]

DEFAULT_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"
DEFAULT_CA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
KUBELET_PORT = 10250
MAX_SUMMARY_BYTES: Final = 16 << 20
# what merge_kubelet_pod_storage takes of a kubelet pod entry and of its containers
_POD_KEYS: Final = frozenset({"podRef", "startTime", "ephemeral-storage"})
_CONTAINER_KEYS: Final = ("name", "startTime", "rootfs", "logs")


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
    if cfg.ca_path is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=str(cfg.ca_path))
    except FileNotFoundError:
        raise KubeletSummaryError(
            f"kubelet CA file {cfg.ca_path}: no such file (the kubelet's certificate is not "
            "checked against the system CAs instead)"
        ) from None
    except (OSError, ssl.SSLError) as exc:
        raise KubeletSummaryError(f"kubelet CA file {cfg.ca_path}: {exc}") from None


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
    cfg: KubeletSummaryConfig,
    *,
    session: aiohttp.ClientSession | None = None,
    previous: Sequence[PodStats] | None = None,
) -> JSONDict:
    """GET the summary, as ``read_summary`` keeps it (``previous``: the last one's pod entries,
    whose unchanged volumes are kept rather than made again); KubeletSummaryError with the URL and
    the cause on any failure.

    The agent asks the kubelet on port 10250 directly (authorised as ``nodes/stats get``; the API
    server's proxy path would need ``nodes/proxy``, which grants exec on every node), with the pod's
    service-account token, re-read on every call because bound tokens rotate. TLS verifies against a
    CA bundle (the ServiceAccount's CA, or the operator's ``kubeletCAFile``): a CA file that is
    missing or unreadable fails the fetch, naming the file — it never falls back to the system CAs,
    which would accept any publicly issued certificate for the kubelet's address. ``insecure``
    exists for tests only and is not reachable from the configuration. Redirects are not followed: a
    redirect would take the token to another address.

    That token can delete pods, so it never travels in clear: the configuration refuses an http URL
    unless no token is configured (``kubeletTokenFile: ""``), and this function refuses to attach
    one to a non-https URL — two locks, so a caller building its own config cannot leak it.

    Bounded, whatever the node's pods hold: the response is read up to ``MAX_SUMMARY_BYTES`` (16
    MiB; a node of 110 pods answers well under 1 MiB) and refused beyond it, and a body nested
    deeper than ``kube.boundedjson.MAX_DEPTH`` is refused unparsed — a failed fetch, logged, whose
    figures are unknown once the last good ones expire.
    """
    headers = _headers(cfg)
    context = _ssl_context(cfg)
    own = session is None
    sess = session or aiohttp.ClientSession()
    try:
        async with sess.get(
            cfg.url,
            headers=headers,
            ssl=context,
            timeout=aiohttp.ClientTimeout(total=cfg.timeout_seconds),
            allow_redirects=False,
        ) as resp:
            if resp.status != 200:
                body = (await resp.content.read(200)).decode(errors="replace")
                moved = " (redirects are not followed)" if 300 <= resp.status < 400 else ""
                raise KubeletSummaryError(
                    f"GET {cfg.url}: HTTP {resp.status}{moved}: {body.strip()}"
                )
            try:
                raw = await read_bounded(resp, MAX_SUMMARY_BYTES)
            except BodyTooLarge:
                raise KubeletSummaryError(
                    f"GET {cfg.url}: response larger than {MAX_SUMMARY_BYTES} bytes: refused"
                ) from None
        # read piece by piece, raw emptied as it goes
        data = read_summary(Cursor.of(raw), previous=previous)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise KubeletSummaryError(f"GET {cfg.url}: {type(exc).__name__}: {exc}") from exc
    finally:
        if own:
            await sess.close()
    if not isinstance(data.get("node"), dict):
        raise KubeletSummaryError(f"GET {cfg.url}: response is not a stats Summary object")
    return data


def read_summary(cursor: Cursor, *, previous: Sequence[PodStats] | None = None) -> JSONDict:
    """The parts of a ``/stats/summary`` text the agent reads, parsed one pod entry and one volume
    at a time: ``node`` whole, and of each pod entry its podRef, start time, containers' writable
    layers and logs, ephemeral storage and volumes; each volume a ``VolumeStats`` with only its used
    bytes and inodes (all the decisions read of it), equal figures shared, and a volume equal to the
    one at its place in ``previous`` is that one. A pod with 40,000 emptyDirs makes a 7 MB summary,
    which is never held parsed as 40,000 dictionaries, and a fetch does not make its volumes again.

    Raises ValueError for a text that is not JSON ({} for JSON that is not an object); a pod entry
    with a malformed volume is logged and left out, another malformed entry is kept for the caller
    to refuse (``kubelet_pod_stats``).
    """
    if cursor.peek() != "{":
        cursor.value()
        cursor.end()
        return {}
    data: JSONDict = {}
    shared: dict[FsStats, FsStats] = {}
    before = {p.pod_ref.uid: p.volume_stats for p in previous or ()}
    for key in cursor.members():
        if key == "pods" and cursor.peek() == "[":
            pods = (_read_pod(cursor, shared, before, i) for i, _ in enumerate(cursor.elements()))
            data["pods"] = [p for p in pods if p is not None]
        elif key in ("node", "pods"):
            data[key] = cursor.value()
        else:
            cursor.value()
    cursor.end()
    return data


def _read_pod(
    cursor: Cursor,
    shared: dict[FsStats, FsStats],
    before: dict[str, tuple[VolumeStats, ...]],
    index: int,
) -> Any:
    if cursor.peek() != "{":
        return cursor.value()
    pod: JSONDict = {}
    bad: SummaryError | None = None
    for key in cursor.members():
        if key == "volume" and cursor.peek() == "[":
            ref = pod.get("podRef")  # the kubelet writes it first
            uid = str(ref.get("uid", "")) if isinstance(ref, dict) else ""
            volumes = _read_volumes(cursor, shared, f"pods[{index}].volume", before.get(uid, ()))
            if isinstance(volumes, SummaryError):
                bad = volumes
            else:
                pod[key] = volumes
        elif key == "containers":
            containers = cursor.value()
            pod[key] = (
                [
                    {k: c[k] for k in _CONTAINER_KEYS if k in c} if isinstance(c, dict) else c
                    for c in containers
                ]
                if isinstance(containers, list)
                else containers
            )
        elif key in _POD_KEYS or key == "volume":
            pod[key] = cursor.value()
        else:
            cursor.value()
    if bad is not None:
        log.warning("kubelet summary: pod entry skipped: %s", bad)
        return None
    return pod


def _read_volumes(
    cursor: Cursor,
    shared: dict[FsStats, FsStats],
    path: str,
    before: tuple[VolumeStats, ...],
) -> tuple[VolumeStats, ...] | SummaryError:
    """A pod entry's volumes as ``VolumeStats``, or what is wrong with the first malformed
    one."""
    volumes: list[VolumeStats] = []
    bad: SummaryError | None = None
    for i, _ in enumerate(cursor.elements()):
        raw = cursor.value()
        if bad is not None:
            continue  # the rest is still read: the text goes on after it
        try:
            volume = VolumeStats.usage_from_dict(raw, f"{path}[{i}]")
        except SummaryError as exc:
            bad = exc
            continue
        kept = VolumeStats(volume.name, shared.setdefault(volume.fs, volume.fs), volume.pvc_ref)
        volumes.append(before[i] if i < len(before) and before[i] == kept else kept)
    return bad if bad is not None else tuple(volumes)


def kubelet_pod_stats(data: JSONDict) -> tuple[PodStats, ...]:
    """The pod entries of a summary ``read_summary`` kept, as ``PodStats``, read once per
    fetch; malformed or absurd ones (negative, beyond int64, more available than capacity) are
    logged and dropped, never merged."""
    pods = data.get("pods")
    out: list[PodStats] = []
    for i, entry in enumerate(pods if isinstance(pods, list) else []):
        try:
            out.append(PodStats.from_dict(entry, f"pods[{i}]"))
        except SummaryError as exc:
            log.warning("kubelet summary: pod entry skipped: %s", exc)
    return tuple(out)


def merge_kubelet_pod_storage(
    pods: Sequence[PodStats], kubelet: Sequence[PodStats]
) -> list[PodStats]:
    """Fold the kubelet's disk figures into our pod stats, matched by pod UID.

    Taken from the kubelet: ``ephemeral_storage``, ``volume_stats``, containers' ``rootfs`` and
    ``logs``, and the pod's name and namespace where our lookup had none. Pods only the kubelet
    reports (no cgroup read) are added with those figures alone.
    """
    out = list(pods)
    at = {p.pod_ref.uid: i for i, p in enumerate(out)}
    for kp in kubelet:
        ref = kp.pod_ref
        containers = tuple(c for c in kp.containers if c.name)
        i = at.get(ref.uid)
        if i is None:
            at[ref.uid] = len(out)
            out.append(
                PodStats(
                    pod_ref=ref,
                    start_time=kp.start_time,
                    containers=containers,
                    volume_stats=kp.volume_stats,
                    ephemeral_storage=kp.ephemeral_storage,
                )
            )
            continue
        ours = out[i]
        out[i] = replace(
            ours,
            pod_ref=PodReference(
                name=ours.pod_ref.name or ref.name,
                namespace=ours.pod_ref.namespace or ref.namespace,
                uid=ref.uid,
            ),
            ephemeral_storage=kp.ephemeral_storage or ours.ephemeral_storage,
            volume_stats=kp.volume_stats or ours.volume_stats,
            containers=_merge_containers(ours.containers, containers),
        )
    return out


def _merge_containers(
    ours: tuple[ContainerStats, ...], theirs: tuple[ContainerStats, ...]
) -> tuple[ContainerStats, ...]:
    merged = {c.name: c for c in ours}
    for kc in theirs:
        mine = merged.get(kc.name)
        merged[kc.name] = (
            ContainerStats(name=kc.name, start_time=kc.start_time, rootfs=kc.rootfs, logs=kc.logs)
            if mine is None
            else replace(mine, rootfs=kc.rootfs or mine.rootfs, logs=kc.logs or mine.logs)
        )
    return tuple(merged.values())

"""The same ops against ``kubesim serve``, a process of its own, over HTTP.

Pods, nodes and deletions go out as API requests, kubelets off as on upstream's integration
cluster; kubesim's scheduler loop binds the pods, run as kube-scheduler runs (the workload's
SchedulerQueueingHints gate, DefaultPreemption's sampled search), and the figure is sampled
from the scheduler's ``Scheduled`` events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import psutil  # type: ignore[import-untyped, unused-ignore]

from kube.times import parse_rfc3339
from scheduler.features import FEATURE_GATES, SCHEDULER_QUEUEING_HINTS

from .backend import BoundListener
from .errors import Unmodelled, WorkloadFailed
from .objects import API_PATHS, NewPod, labels_match

__all__ = ["KubesimBackend"]

# The kubesim controllers an integration cluster has: the scheduler and the namespace
# controller (no kubelets, no workload controllers).
KUBESIM_ON: Final = frozenset({"scheduler", "namespace"})
CONCURRENT_REQUESTS: Final = 32
# No pod event and no answered request for this long while waiting: nothing moves. Answers
# count, so a slow setup (15000 nodes created over HTTP) is not taken for a stall.
STALL_SECONDS: Final = 30.0


def _api_path(kind: str, namespace: str, name: str = "") -> str:
    template, namespaced = API_PATHS[kind]
    path = template.format(ns=f"namespaces/{namespace}/" if namespaced else "")
    return f"{path}/{name}" if name else path


@dataclass(slots=True)
class _PodView:
    namespace: str
    labels: Mapping[str, str]
    node: str
    attempted: bool


class _LoopThread:
    """An event loop running in a thread of its own, with an HTTP session on it."""

    def __init__(self, aiohttp: Any, url: str, *, limit: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def open_session() -> Any:
            return aiohttp.ClientSession(
                url,
                connector=aiohttp.TCPConnector(limit=limit),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            )

        self.session: Any = self.call(open_session())

    def submit(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Any) -> Any:
        return self.submit(coro).result()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call(self.session.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class KubesimBackend:
    """The same ops against ``kubesim serve`` (a process of its own) over HTTP.

    Requests go out from an event loop in a thread of this process, as many at once as
    ``CONCURRENT_REQUESTS`` (upstream's client allows 5000 QPS); a watch on every pod plays
    the informer (the pods' latest node and PodScheduled condition). Each bind's time is the
    ``eventTime`` of the scheduler's ``Scheduled`` event (microseconds, the server's clock,
    which is this machine's), watched beside the pods and delivered to the listeners from
    ``step`` (so in the executor's thread): a busy server may stream its watches late, but
    every bind still counts in the second it happened. The watches have an event loop of
    their own, so thousands of requests in flight do not hold them up.
    """

    name = "kubesim"

    def __init__(
        self,
        *,
        url: str | None = None,
        scheduler_config: Path | None = None,
        queueing_hints: bool = FEATURE_GATES[SCHEDULER_QUEUEING_HINTS],
    ) -> None:
        import aiohttp  # only this backend needs the HTTP client

        self._scheduler_config = scheduler_config
        self._queueing_hints = queueing_hints
        self.command: list[str] = []  # the ``kubesim serve`` command line, once started
        self._child: psutil.Process | None = None
        self.listeners: list[BoundListener] = []
        self._proc: subprocess.Popen[str] | None = None
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by close()
        self._api: _LoopThread | None = None
        self._watcher: _LoopThread | None = None
        self._watches: list[Any] = []
        self.pods: dict[str, _PodView] = {}
        self._last_event = time.monotonic()
        self.requests = 0
        self.refused: Counter[str] = Counter()  # creations the API server refused, by reason
        self._clock_offset = time.time() - time.monotonic()
        self._binds: deque[tuple[str, float]] = deque()  # (pod key, monotonic bind time)
        self._pending_creates: list[Any] = []
        self._watching = threading.Semaphore(0)  # released once by each watch, when open
        try:  # whatever stops the start (a signal too) stops the child
            self.url = url or self._start()
            self._api = _LoopThread(aiohttp, self.url, limit=CONCURRENT_REQUESTS)
            self._watcher = _LoopThread(aiohttp, self.url, limit=2)
            self._watch = self._watcher.submit(self._watch_pods(self._watcher.session))
            self._watches.append(self._watch)
            self._scheduled_watch = self._watcher.submit(self._watch_binds(self._watcher.session))
            self._watches.append(self._scheduled_watch)
            self._await_watches()
        except BaseException:
            self.close()
            raise

    # --- plumbing ---------------------------------------------------------------------------

    def _start(self) -> str:
        from kubesim.controllers import CONTROLLER_NAMES

        # kube's integration-test servers run without Priority admission: scheduler_perf's
        # templates set spec.priority without a PriorityClass.
        # --stop-on-stdin-eof: the child follows a pipe only this process holds, so it stops
        # even when this process cannot stop it (SIGKILL).
        cmd = [sys.executable, "-m", "kubesim", "serve", "--port", "0", "--stop-on-stdin-eof"]
        cmd += ["--disable-admission-plugins", "Priority"]
        gate = f"{SCHEDULER_QUEUEING_HINTS}={str(self._queueing_hints).lower()}"
        cmd += ["--feature-gates", gate, "--preemption-mode", "sampled"]
        if self._scheduler_config is not None:
            cmd += ["--scheduler-config", str(self._scheduler_config)]
        for name in CONTROLLER_NAMES:
            if name not in KUBESIM_ON:
                cmd += ["--disable-controller", name]
        self.command = cmd
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        with contextlib.suppress(psutil.Error):
            self._child = psutil.Process(self._proc.pid)
        assert self._proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in self._proc.stdout:
            if line.startswith("kubesim: serving on "):
                return line.split()[-1]
            if time.monotonic() > deadline:
                break
        self._stop_child()
        self._log.seek(0)
        raise WorkloadFailed(f"kubesim did not start: {self._log.read()[-500:]}")

    def _await_watches(self) -> None:
        """Return once both watches stream: the first ops then find them open, and nothing
        the watches' own setup answers counts as movement after this point."""
        deadline = time.monotonic() + 60
        for _ in self._watches:
            while not self._watching.acquire(timeout=0.05):
                for watch in [w for w in self._watches if w.done()]:
                    watch.result()  # raises what stopped it
                    raise WorkloadFailed("a watch on kubesim ended before it opened")
                if time.monotonic() > deadline:
                    raise WorkloadFailed("kubesim's watches did not open within 60 s")

    def _call(self, coro: Any) -> Any:
        assert self._api is not None
        return self._api.call(coro)

    async def _request(
        self, method: str, path: str, body: object = None, *, session: Any = None
    ) -> tuple[int, Any]:
        self.requests += 1
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        assert self._api is not None
        client = session if session is not None else self._api.session
        async with client.request(method, path, json=body, headers=headers) as resp:
            data = await resp.json(content_type=None)
            self._last_event = time.monotonic()
            return resp.status, data

    async def _create_all(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        async def one(path: str, body: Mapping[str, Any]) -> None:
            status, data = await self._request("POST", path, body)
            if status >= 300:
                reason = data.get("message", status) if isinstance(data, dict) else status
                self.refused[str(reason)] += 1

        await asyncio.gather(*(one(path, body) for path, body in items))

    async def _watch_pods(self, session: Any) -> None:
        status, listed = await self._request("GET", "/api/v1/pods", session=session)
        rv = listed["metadata"]["resourceVersion"] if status == 200 else "0"
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "86400"}
        async with session.get("/api/v1/pods", params=params) as resp:
            self._watching.release()
            async for line in resp.content:
                if line.strip():
                    self._on_pod_event(json.loads(line))

    async def _watch_binds(self, session: Any) -> None:
        path = "/apis/events.k8s.io/v1/events"
        status, listed = await self._request("GET", path, session=session)
        rv = listed["metadata"]["resourceVersion"] if status == 200 else "0"
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "86400"}
        async with session.get(path, params=params) as resp:
            self._watching.release()
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                regarding = obj.get("regarding") or {}
                if (
                    event.get("type") == "ADDED"
                    and obj.get("reason") == "Scheduled"
                    and regarding.get("kind") == "Pod"
                    and obj.get("eventTime")
                ):
                    at = parse_rfc3339(obj["eventTime"]) - self._clock_offset
                    self._binds.append(
                        (f"{regarding.get('namespace')}/{regarding.get('name')}", at)
                    )

    def _on_pod_event(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        self._last_event = time.monotonic()
        if event.get("type") == "DELETED":
            self.pods.pop(key, None)
            return
        node = (obj.get("spec") or {}).get("nodeName") or ""
        conditions = (obj.get("status") or {}).get("conditions") or []
        attempted = any(
            c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions
        )
        self.pods[key] = _PodView(
            str(meta.get("namespace")), meta.get("labels") or {}, node, attempted
        )

    # --- Backend ----------------------------------------------------------------------------

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        if labels:
            body["metadata"] = {"name": name, "labels": dict(labels)}
        self._call(self._request("POST", "/api/v1/namespaces", body))

    def create_nodes(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        self._call(self._create_all([("/api/v1/nodes", m) for m in manifests]))

    def label_nodes(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        async def patch_all() -> None:
            await asyncio.gather(
                *(
                    self._request("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": extra}})
                    for name, extra in labels.items()
                )
            )

        self._call(patch_all())

    def node_names(self) -> list[str]:
        status, data = self._call(self._request("GET", "/api/v1/nodes"))
        return [item["metadata"]["name"] for item in data.get("items", [])] if status == 200 else []

    def prepare_pods(self, pods: Sequence[NewPod]) -> object:
        return [
            (
                _api_path("Pod", p.namespace),
                {**p.manifest(), "metadata": {**p.manifest()["metadata"]}},
            )
            for p in pods
        ]

    def submit_pods(self, prepared: object) -> None:
        """Start creating the pods and return: the executor samples and waits meanwhile, as
        upstream's collector runs beside ``createPodsRapidly``."""
        assert isinstance(prepared, list)
        assert self._api is not None
        self._pending_creates.append(self._api.submit(self._create_all(prepared)))

    def create_object(self, manifest: Mapping[str, Any]) -> None:
        kind = str(manifest.get("kind"))
        if kind not in API_PATHS:
            raise Unmodelled(f"createAny of kind {kind}")
        namespace = str((manifest.get("metadata") or {}).get("namespace") or "")
        self._call(self._create_all([(_api_path(kind, namespace), manifest)]))

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if kind not in API_PATHS:
            raise Unmodelled(f"deleting objects of kind {kind}")
        self._call(self._request("DELETE", _api_path(kind, namespace, name)))

    def pod_names(self, namespace: str, selector: Mapping[str, str]) -> list[str]:
        return [
            key.split("/", 1)[1]
            for key, p in list(self.pods.items())
            if p.namespace == namespace and labels_match(p.labels, selector)
        ]

    def count(self, namespace: str, selector: Mapping[str, str], *, attempted: bool) -> int:
        self._deliver()  # listeners hear of every bind counted here
        return sum(
            1
            for p in list(self.pods.values())
            if p.namespace == namespace
            and (not selector or labels_match(p.labels, selector))
            and (p.node or (attempted and p.attempted))
        )

    def step(self, until: float) -> bool:
        """Deliver the binds the watch saw; wait a little. False once nothing moved (no pod
        event, no answer) for ``STALL_SECONDS``."""
        self._deliver()
        for done in [f for f in self._pending_creates if f.done()]:
            self._pending_creates.remove(done)
            done.result()  # raises what failed the requests
        for watch in (self._watch, self._scheduled_watch):
            if watch.done():
                watch.result()  # raises what ended the watch
                raise WorkloadFailed("a watch on kubesim ended")
        time.sleep(max(0.0, min(0.01, until - time.monotonic())))
        return time.monotonic() - self._last_event < STALL_SECONDS

    def _deliver(self) -> None:
        while self._binds:
            key, at = self._binds.popleft()
            view = self.pods.get(key)
            labels: Mapping[str, str] = view.labels if view is not None else {}
            for listener in self.listeners:
                listener(key.split("/", 1)[0], labels, at)

    def pending_summary(self) -> str:
        pending = sum(1 for p in list(self.pods.values()) if not p.node)
        refused = "; ".join(f"{n} refused: {r}" for r, n in self.refused.most_common(2))
        return f"{pending} pods pending in kubesim" + (f"; {refused}" if refused else "")

    def cpu_time(self) -> float:
        """The ``kubesim serve`` child's CPU seconds (the scheduler and the API server run
        there), or this process's when the server is not ours."""
        if self._child is None:
            return time.process_time()
        try:
            times = self._child.cpu_times()
        except psutil.Error:
            return 0.0
        return float(times.user + times.system)

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"requests": self.requests}
        if self.refused:
            out["refused"] = dict(self.refused)
        return out

    def close(self) -> None:
        """Stop the watches, the loops and the ``kubesim serve`` child (SIGTERM, then SIGKILL
        after 20 s); safe to call twice and on a half-started backend. The child goes first
        if anything else fails."""
        try:
            for watch in self._watches:
                watch.cancel()
            if self._watcher is not None:
                self._watcher.close()
            if self._api is not None:
                self._api.close()
        finally:
            self._stop_child()
            self._log.close()

    def _stop_child(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

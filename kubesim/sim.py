"""The simulator: store + registry + API server + controllers, started and stopped together.

``kubesim.serve(...)`` is the in-process entry point (an async context manager) and
``kubesim serve`` the command-line one; both build a ``Simulator``. Like a fresh
kube-apiserver, it bootstraps the ``default``, ``kube-system``, ``kube-public`` and
``kube-node-lease`` namespaces (and, through admission, the system PriorityClasses), then
loads the state manifests as they are — statuses included, so a test can start from pods that
are already Running or Pending on given nodes.

It serves ``pods/eviction`` (``kubesim.apiserver.eviction``) and ``<workload>/scale``, runs the
controllers of ``kubesim.controllers`` (namespace, disruption — ``pin_pdb`` freezes a budget's
status —, ReplicaSet, ReplicationController, Deployment, StatefulSet, DaemonSet, Job, garbage
collector; each can be switched off with ``disabled_controllers``) and the node kubelet, with
the timing of ``ControllerSettings`` (``ready_after``, ``reaction_delay``, ``job_duration``,
or a ``ClusterSettings`` document in the state), and applies the fault file through
``kubesim.faults.injection`` (faults given here start with the server, ``add_faults`` and
``POST /_kubesim/faults`` add more while it runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kubesim.apiserver import admission, eviction, scale
from kubesim.apiserver.requestlog import RequestLog
from kubesim.apiserver.resources import Registry, ResourceType, default_registry
from kubesim.apiserver.rest import Rest
from kubesim.apiserver.server import ApiServer, json_response
from kubesim.apiserver.status import StatusError
from kubesim.apiserver.store import Store, clone
from kubesim.controllers import (
    Controller,
    ControllerSettings,
    check_controller_names,
    default_controllers,
)
from kubesim.controllers.disruption import find_controller
from kubesim.controllers.settings import SETTINGS_TYPE, parse_settings, with_settings
from kubesim.faults.file import FaultSet, load_faults, parse_faults
from kubesim.faults.injection import FaultInjector
from kubesim.kubeconfig import write_kubeconfig
from kubesim.node.kubelet import Kubelet

__all__ = ["BOOTSTRAP_NAMESPACES", "Simulator", "StateError", "load_state", "serve"]

BOOTSTRAP_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

StateSource = str | Path | Mapping[str, Any]


class StateError(ValueError):
    """A state manifest kubesim cannot load; names the file, document and field."""

    def __init__(self, source: str, document: int, field: str, detail: str) -> None:
        self.source = source
        self.document = document
        self.field = field
        self.detail = detail
        where = f"{source}: document {document}"
        super().__init__(f"{where}: {field}: {detail}" if field else f"{where}: {detail}")


def _docs(source: StateSource) -> tuple[str, list[tuple[int, Any]]]:
    if isinstance(source, Mapping):
        return "<object>", [(1, dict(source))]
    if isinstance(source, Path) or ("\n" not in str(source) and Path(str(source)).exists()):
        name = str(source)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise StateError(name, 0, "", f"cannot read: {exc.strerror}") from None
    else:
        name, text = "<text>", str(source)
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        doc_no = 0
        if mark is not None:
            doc_no = text[: mark.index].count("\n---") + 1
        raise StateError(name, doc_no, "", f"invalid YAML: {exc}") from None
    return name, [(i, d) for i, d in enumerate(docs, 1) if d is not None]


def load_state(
    sources: Iterable[StateSource], registry: Registry
) -> list[tuple[str, int, ResourceType, dict[str, Any]]]:
    """Manifests with their origin; ``kind: List`` flattened; unknown kinds rejected."""
    out: list[tuple[str, int, ResourceType, dict[str, Any]]] = []

    def add(name: str, n: int, doc: Any, where: str) -> None:
        if not isinstance(doc, Mapping):
            raise StateError(name, n, where, "a manifest must be a mapping")
        kind = doc.get("kind")
        api_version = doc.get("apiVersion")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise StateError(name, n, f"{where}items", "must be a list")
            for i, item in enumerate(items):
                add(name, n, item, f"{where}items[{i}].")
            return
        if not isinstance(kind, str) or not kind:
            raise StateError(name, n, f"{where}kind", "Required value")
        if not isinstance(api_version, str) or not api_version:
            raise StateError(name, n, f"{where}apiVersion", "Required value")
        rt = registry.for_kind(api_version, kind)
        if rt is None:
            raise StateError(
                name,
                n,
                f"{where}kind",
                f'no matches for kind "{kind}" in version "{api_version}"',
            )
        out.append((name, n, rt, dict(doc)))

    for source in sources:
        name, docs = _docs(source)
        for n, doc in docs:
            add(name, n, doc, "")
    return out


class Simulator:
    """One running kubesim: ``url``, ``kubeconfig_path``, ``requests`` and helpers."""

    def __init__(
        self,
        *,
        state: Iterable[StateSource] | StateSource | None = None,
        faults: FaultSet | Mapping[str, Any] | str | Path | None = None,
        time_scale: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        kubeconfig_path: str | Path | None = None,
        history_size: int = 10000,
        bookmark_interval: float = 60.0,
        controllers: Iterable[Controller] | None = None,
        version_minor: str = "32",
        disabled_controllers: Iterable[str] = (),
        settings: ControllerSettings | None = None,
        reaction_delay: float | None = None,
        ready_after: float | None = None,
        job_duration: float | None = None,
    ) -> None:
        if state is None:
            self._state: list[StateSource] = []
        elif isinstance(state, str | Path | Mapping):
            self._state = [state]
        else:
            self._state = list(state)
        self.faults = FaultSet()
        self.time_scale = time_scale
        self.host = host
        self.port = port
        self.registry = default_registry()
        self.store = Store(history_size=history_size)
        self.rest = Rest(self.store, self.registry)
        self.priority = admission.install(self.rest)
        self.requests = RequestLog()
        self.server = ApiServer(
            self.rest,
            self.registry,
            request_log=self.requests,
            version_minor=version_minor,
            bookmark_interval=bookmark_interval,
        )
        # Living-cluster timing (``ControllerSettings``); the keywords override ``settings``.
        # Keywords win over a ClusterSettings document in the state, which wins over defaults.
        explicit = {
            k: v
            for k, v in (
                ("reaction_delay", reaction_delay),
                ("ready_after", ready_after),
                ("job_duration", job_duration),
            )
            if v is not None
        }
        self.settings = dataclasses.replace(settings or ControllerSettings(), **explicit)
        off = check_controller_names(disabled_controllers)
        self.controllers: list[Controller] = [
            c
            for c in (list(controllers) if controllers is not None else default_controllers())
            if c.name not in off
        ]
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self._tmpdir: str | None = None
        self.kubeconfig_path: Path | None = None
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.server.control["faults"] = self._control_faults
        self.injector = FaultInjector(self)
        self.server.request_hooks.insert(0, self.injector.hook)
        self.eviction = eviction.install(self)
        self.scale = scale.install(self)
        if faults is not None:
            self.add_faults(faults)
        self._bootstrap()
        for name, n, rt, manifest in load_state(self._state, with_settings(self.registry)):
            if rt is SETTINGS_TYPE:
                try:
                    parsed, state_off = parse_settings(manifest, self.settings)
                except ValueError as exc:
                    raise StateError(name, n, "", str(exc)) from None
                self.settings = dataclasses.replace(parsed, **explicit)
                self.controllers = [c for c in self.controllers if c.name not in state_off]
                continue
            try:
                self._apply_one(rt, manifest)
            except StatusError as err:
                raise StateError(name, n, _field_of(err), err.message) from None

    # --- setup ------------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        ns = self.registry.for_kind("v1", "Namespace")
        assert ns is not None
        for name in BOOTSTRAP_NAMESPACES:
            self.rest.seed(
                ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        admission.bootstrap_priority_classes(self.rest)

    @property
    def kubelet(self) -> Kubelet | None:
        for c in self.controllers:
            if isinstance(c, Kubelet):
                return c
        return None

    def add_controller(self, controller: Controller) -> None:
        self.controllers.append(controller)
        if self._runner is not None:
            self._tasks.append(asyncio.create_task(self._run_controller(controller)))

    async def _run_controller(self, controller: Controller) -> None:
        try:
            await controller.run(self)
        except asyncio.CancelledError:
            raise
        except Exception:  # a controller crash must not take the server down
            import logging

            logging.getLogger("kubesim").exception("controller %s failed", controller.name)

    async def start(self) -> Simulator:
        runner = web.AppRunner(
            self.server.app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        addresses = runner.addresses
        port = int(addresses[0][1]) if addresses else self.port
        host = self.host if ":" not in self.host else f"[{self.host}]"
        self.port = port
        self.url = f"http://{host}:{port}"
        self.server.server_address = f"{host}:{port}"
        if self._kubeconfig_arg is not None:
            self.kubeconfig_path = write_kubeconfig(self._kubeconfig_arg, self.url)
        else:
            self._tmpdir = tempfile.mkdtemp(prefix="kubesim-")
            self.kubeconfig_path = write_kubeconfig(Path(self._tmpdir) / "kubeconfig", self.url)
        for controller in self.controllers:
            self._tasks.append(asyncio.create_task(self._run_controller(controller)))
        self._tasks.append(asyncio.create_task(self.injector.run()))
        await asyncio.sleep(0)
        return self

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    async def __aenter__(self) -> Simulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- in-process API ---------------------------------------------------------------------

    def _type_for(self, kind: str) -> ResourceType:
        for rt in self.registry.types:
            names = (rt.kind, rt.plural, rt.singular, *rt.short_names)
            if kind in names and rt.group != "events.k8s.io":
                return rt
        for rt in self.registry.types:
            if kind in (f"{rt.plural}.{rt.group}", f"{rt.kind}.{rt.group}"):
                return rt
        raise KeyError(f"kubesim serves no kind {kind!r}")

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A copy of the stored object (``kind`` may be Kind, plural or short name)."""
        rt = self._type_for(kind)
        obj = self.rest.find(rt, namespace or "", name)
        return None if obj is None else clone(self.rest.to_wire(rt, obj))

    def list_objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the stored objects of a kind, in etcd order."""
        rt = self._type_for(kind)
        return [
            clone(self.rest.to_wire(rt, o))
            for o in self.store.items(rt.storage_name, namespace if rt.namespaced else None)
        ]

    def apply(self, objects: Iterable[StateSource] | StateSource) -> list[dict[str, Any]]:
        """Create or replace objects as given (status included), like loading state."""
        sources = [objects] if isinstance(objects, str | Path | Mapping) else list(objects)
        out = []
        for name, n, rt, manifest in load_state(sources, self.registry):
            try:
                out.append(clone(self._apply_one(rt, manifest)))
            except StatusError as err:
                raise StateError(name, n, _field_of(err), err.message) from None
        return out

    def _apply_one(self, rt: ResourceType, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if rt.namespaced else ""
        existing = self.rest.find(rt, ns, meta.get("name", "")) if isinstance(meta, dict) else None
        if existing is not None:
            manifest = clone(manifest)
            m = manifest.setdefault("metadata", {})
            old = existing.get("metadata") or {}
            for k in ("uid", "creationTimestamp"):
                if k in old:
                    m.setdefault(k, old[k])
        return self.rest.seed(rt, manifest)

    def add_faults(self, faults: FaultSet | Mapping[str, Any] | str | Path) -> FaultSet:
        """Store faults (a FaultSet, a mapping in the fault-file schema, or a file path)."""
        if isinstance(faults, FaultSet):
            parsed = faults
        elif isinstance(faults, Mapping):
            parsed = parse_faults(faults)
        else:
            parsed = load_faults(faults)
        self.faults.extend(parsed)
        self.injector.load(parsed)
        return parsed

    def pin_pdb(
        self, namespace: str, name: str, status: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Freeze a PDB's status: the disruption controller stops computing it.

        With ``status``, the PDB's status is first replaced by it (through the status
        subresource, so watchers see it). Evictions still decrement a pinned budget.
        """
        rt = self._type_for("PodDisruptionBudget")
        controller = find_controller(self)
        if controller is not None:
            controller.pin(namespace, name)
        new: dict[str, Any] = clone(self.rest.get(rt, namespace, name))
        if status is None:
            return new
        new["status"] = clone(dict(status))
        obj, _ = self.rest.update(rt, namespace, name, new, subresource="status")
        out: dict[str, Any] = clone(obj)
        return out

    def unpin_pdb(self, namespace: str, name: str) -> None:
        """Hand a pinned PDB back to the disruption controller (re-synced at once)."""
        controller = find_controller(self)
        if controller is not None:
            controller.unpin(namespace, name)

    def api_client(self) -> Any:
        """A kubernetes-asyncio ``ApiClient`` for this server; the caller closes it."""
        from kubernetes_asyncio import client

        cfg = client.Configuration(host=self.url)
        return client.ApiClient(configuration=cfg)

    async def _control_faults(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return json_response(
                {
                    "faults": len(self.faults.faults),
                    "pods": len(self.faults.pods),
                    "latency": self.faults.latency,
                }
            )
        if request.method != "POST":
            return json_response({"error": "use GET or POST"}, 405)
        text = await request.text()
        try:
            data = yaml.safe_load(text)
            parsed = self.add_faults(parse_faults(data, source="POST /_kubesim/faults"))
        except (yaml.YAMLError, ValueError) as exc:
            return json_response({"error": str(exc)}, 400)
        return json_response({"added": {"faults": len(parsed.faults), "pods": len(parsed.pods)}})


def _field_of(err: StatusError) -> str:
    for cause in err.causes:
        if cause.field:
            return cause.field
    return ""


@asynccontextmanager
async def serve(
    *,
    state: Iterable[StateSource] | StateSource | None = None,
    faults: FaultSet | Mapping[str, Any] | str | Path | None = None,
    time_scale: float = 1.0,
    host: str = "127.0.0.1",
    port: int = 0,
    kubeconfig_path: str | Path | None = None,
    **options: Any,
) -> AsyncIterator[Simulator]:
    """Run a kubesim for the duration of the ``async with`` block."""
    sim = Simulator(
        state=state,
        faults=faults,
        time_scale=time_scale,
        host=host,
        port=port,
        kubeconfig_path=kubeconfig_path,
        **options,
    )
    await sim.start()
    try:
        yield sim
    finally:
        await sim.stop()

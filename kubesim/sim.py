"""The simulator: kubesim's layers assembled, started and stopped together.

``Simulator`` is where the layers meet (ARCHITECTURE.md, "kubesim's layers"): the store and the
scheme, the generic store, the plugins, the API server and the actors, each actor given the
simulator as its ``kubesim.cluster.Cluster`` and nothing more. ``kubesim.serve(...)`` (in
process) and ``kubesim serve`` (the command line) both build one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import gc
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from kube.cgroups import CgroupDriver
from kube.net import is_loopback
from kube.strict import (
    Document,
    ManifestError,
    Validation,
    describe,
    drop_nulls,
    load_documents,
    model_for,
    read_text,
    validate_document,
)
from kubesim.cluster import ControllerSettings
from kubesim.controllers import Controller, check_controller_names
from kubesim.controllers.clusterroleaggregation import ClusterRoleAggregationController
from kubesim.controllers.daemonset import DaemonSetController
from kubesim.controllers.deployment import DeploymentController
from kubesim.controllers.disruption import DisruptionController
from kubesim.controllers.garbagecollector import GarbageCollector
from kubesim.controllers.job import JobController
from kubesim.controllers.namespace import NamespaceController
from kubesim.controllers.replicaset import ReplicaSetController, ReplicationControllerController
from kubesim.controllers.serviceaccount import ServiceAccountController
from kubesim.controllers.settings import SETTINGS_TYPE, parse_settings, with_settings
from kubesim.controllers.statefulset import StatefulSetController
from kubesim.core.attributes import MASTERS, UserInfo, acting_as
from kubesim.core.errors import StatusError
from kubesim.core.scheme import ResourceType, Scheme, default_scheme
from kubesim.core.store import Store, clone
from kubesim.endpoints import subresources
from kubesim.endpoints.codec import json_response, status_response
from kubesim.endpoints.impersonation import Impersonation
from kubesim.endpoints.requestlog import RequestLog
from kubesim.endpoints.server import ApiServer
from kubesim.faults.file import FaultSet, load_faults, parse_faults
from kubesim.faults.injection import FaultInjector
from kubesim.kubeconfig import remove_kubeconfig, wait_answering, write_kubeconfig
from kubesim.node.config import PROCESS_NODE_TYPE, NodeConfig, parse_process_node
from kubesim.node.kubelet import Kubelet
from kubesim.node.runtime import MINIMUM_GRACE_PERIOD_SECONDS, ProcessRuntime
from kubesim.plugins import admission
from kubesim.plugins.authentication.tokens import Chain, StaticTokens, TokenAuthenticator, new_token
from kubesim.plugins.authorization import AlwaysAllow, Authorizer
from kubesim.plugins.authorization import bootstrap as rbac_bootstrap
from kubesim.plugins.authorization.rbac import RBACAuthorizer, RuleResolver
from kubesim.plugins.authorization.reviews import GROUP as AUTHORIZATION_GROUP
from kubesim.plugins.authorization.reviews import Reviews
from kubesim.plugins.binding import BindingStorage
from kubesim.plugins.eviction import EvictionStorage
from kubesim.registry import scheduling
from kubesim.registry.generic import GenericStore
from kubesim.scheduling import SchedulerLoop

if TYPE_CHECKING:
    from kubesim.plugins.authentication.pki import CertificateAuthority, Credentials
    from kubesim.plugins.authentication.reviews import IdentityReviews
    from scheduler.config import KubeSchedulerConfiguration

__all__ = [
    "ALWAYS_ALLOW",
    "AUTHORIZATION_MODES",
    "BOOTSTRAP_NAMESPACES",
    "RBAC",
    "InsecureServing",
    "Simulator",
    "StateError",
    "check_clear_text",
    "load_state",
    "serve",
    "tune_collector_for_server",
]

BOOTSTRAP_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

StateSource = str | Path | Mapping[str, Any]
C = TypeVar("C")


class StateError(ManifestError):
    """A state manifest kubesim cannot load; names the file, document, object and field."""

    def __init__(
        self, source: str, document: int, field: str, detail: str, *, obj: str = "", item: str = ""
    ) -> None:
        super().__init__(
            f"{field}: {detail}" if field else detail,
            source=source,
            document=document,
            item=item,
            obj=obj,
        )
        self.field = field
        self.detail = detail

    @classmethod
    def from_manifest_error(cls, exc: ManifestError) -> StateError:
        return cls(exc.source, exc.document, "", exc.detail, obj=exc.obj, item=exc.item)


def _documents(source: StateSource) -> list[Document]:
    try:
        if isinstance(source, Mapping):
            return [Document(clone(dict(source)), "", 1)]  # never touch the caller's
        if isinstance(source, Path) or ("\n" not in str(source) and Path(str(source)).exists()):
            return load_documents(read_text(source), source=str(source))
        return load_documents(str(source), source="<text>")
    except ManifestError as exc:
        raise StateError.from_manifest_error(exc) from None


def load_state(
    sources: Iterable[StateSource],
    scheme: Scheme,
    *,
    validation: Validation = "strict",
    warnings: list[str] | None = None,
) -> list[tuple[str, int, ResourceType, dict[str, Any]]]:
    """Manifests with their origin; ``kind: List`` flattened; unknown kinds rejected.

    Each manifest is decoded as kube-apiserver decodes a create with ``fieldValidation`` set to
    ``validation`` (``kube.strict``; kubectl asks for ``strict``): unknown or duplicate fields
    fail under ``strict`` and are appended to ``warnings`` under ``warn``; wrong types always
    fail. A misspelled field would otherwise be stored and ignored, and a test would run
    against another cluster than its file says. Errors name the file, document, object and
    field; ``null`` fields count as unset, as in Go.
    """
    out: list[tuple[str, int, ResourceType, dict[str, Any]]] = []
    for source in sources:
        for doc in _documents(source):
            manifest = doc.manifest

            def fail(field: str, detail: str, doc: Document = doc) -> StateError:
                return StateError(
                    doc.source, doc.document, field, detail, obj=doc.obj, item=doc.item
                )

            kind = manifest.get("kind")
            api_version = manifest.get("apiVersion")
            if not isinstance(kind, str) or not kind:
                raise fail("kind", "Required value")
            if not isinstance(api_version, str) or not api_version:
                raise fail("apiVersion", "Required value")
            rt = scheme.for_kind(api_version, kind)
            if rt is None:
                raise fail("kind", f'no matches for kind "{kind}" in version "{api_version}"')
            if model_for(api_version, kind) is not None:
                try:
                    found = validate_document(doc, validation=validation, drop_unknown=True)
                except ManifestError as exc:
                    raise StateError.from_manifest_error(exc) from None
                if warnings is not None:
                    warnings.extend(found)
            out.append((doc.source, doc.document, rt, drop_nulls(manifest)))
    return out


ALWAYS_ALLOW: Final = "always-allow"
RBAC: Final = "rbac"

# ``kubesim serve --authorization MODE``: the authorizer each mode puts behind the privileged
# group (``system:masters`` is allowed first in every mode), as ``pkg/kubeapiserver/authorizer``
# wires kube-apiserver's modes. What every mode has — impersonation, the reviews, RBAC's
# escalation check, the bootstrap policy — ``Simulator`` installs whatever the mode.
AUTHORIZATION_MODES: dict[str, Callable[[Simulator], Authorizer]] = {
    ALWAYS_ALLOW: lambda sim: AlwaysAllow(),
    RBAC: lambda sim: RBACAuthorizer(sim.rbac_resolver),
}


# The field manager each actor writes as: its kube component's name.
_FIELD_MANAGERS: Final = {"kubelet": "kubelet", "scheduler": "kube-scheduler"}


def default_controllers(disabled: Iterable[str] = ()) -> list[Controller]:
    """The built-in controllers, in ``CONTROLLER_NAMES`` order, but those ``disabled``."""
    off = check_controller_names(disabled)
    every: list[Controller] = [
        NamespaceController(),
        Kubelet(),
        DisruptionController(),
        ReplicaSetController(),
        ReplicationControllerController(),
        DeploymentController(),
        StatefulSetController(),
        DaemonSetController(),
        JobController(),
        GarbageCollector(),
        ServiceAccountController(),
        ClusterRoleAggregationController(),
        SchedulerLoop(),
    ]
    return [c for c in every if c.name not in off]


class InsecureServing(ValueError):
    """Serving credentials in clear text beyond loopback: refused (``Simulator.__init__``)."""


def check_clear_text(host: str, *, tls: bool, authorization: str) -> None:
    """Secrets never travel in clear: once requests are authorized, bearer tokens and the
    admin's credentials are worth stealing, so a server reachable beyond loopback must serve
    TLS. Loopback HTTP stays allowed (nothing leaves the machine), and so does any address
    under ``always-allow``, where a token grants nothing an anonymous request does not — so
    kubesim's old ``--host 0.0.0.0`` use keeps working."""
    if tls or authorization == ALWAYS_ALLOW or is_loopback(host):
        return
    raise InsecureServing(
        f"--host {host} without --tls: with --authorization {authorization} tokens and client"
        " credentials would cross the network in clear text; add --tls or listen on"
        " 127.0.0.1"
    )


class Simulator:
    """One running kubesim: ``url``, ``kubeconfig_path``, ``requests`` and helpers.

    Like a fresh kube-apiserver it bootstraps the ``default``, ``kube-system``, ``kube-public``
    and ``kube-node-lease`` namespaces, the system PriorityClasses and the bootstrap RBAC
    policy (kube-apiserver's post-start hooks), then loads the ``state`` manifests as they are
    (``load_state``) — statuses included, so a test can start from pods already Running or
    Pending on given nodes.

    It serves ``pods/eviction`` (``kubesim.plugins.eviction``; a 404 without
    ``eviction_subresource``), ``pods/binding`` (``kubesim.plugins.binding``) and
    ``<workload>/scale``, and runs the controllers of ``kubesim.controllers`` (namespace,
    disruption — ``pin_pdb`` freezes a budget's status —, ReplicaSet, ReplicationController,
    Deployment, StatefulSet, DaemonSet, Job, garbage collector), the node kubelet and the
    default scheduler (``kubesim.scheduling``). Any of them can be switched off with
    ``disabled_controllers``; ``scheduler_loop=False`` is short for disabling ``scheduler``
    (unbound pods stay Pending, as in a cluster without a scheduler); ``scheduler_config``
    (a ``scheduler.config.KubeSchedulerConfiguration``) makes the scheduler run its profiles,
    as kube-scheduler's ``--config``; ``queueing_hints`` is its SchedulerQueueingHints gate
    and ``preemption_mode`` its preemption search (``SchedulerLoop``'s, kube's by default).
    Their timing is
    ``ControllerSettings`` (``ready_after``, ``reaction_delay``, ``job_duration``, or a
    ``ClusterSettings`` document in the state). ``faults`` start with the server
    (``kubesim.faults.injection``); ``add_faults`` and ``POST /_kubesim/faults`` add more while
    it runs.

    ``process_nodes`` names the nodes whose kubelet runs pods for real
    (``kubesim.node.runtime``): each gets a ``ProcessRuntime`` (``runtimes[name]``) under
    ``cgroup_root``, its kubepods cgroup limited to ``memory_capacity`` and its pod cgroups
    named as the kubelet's ``cgroup_driver`` names them (``kubepods_at_root``: kubepods directly
    under the root, for one process node on a machine of its own, such as the guest VM of
    tests/node); the other nodes keep the simulated kubelet. A ``ProcessNode`` document in the
    state (``kubesim.node.config``; ``node_configs`` in process) makes its node a process node
    with its own memory, disk and kubelet settings. The runtimes open with the server and are
    closed — every process killed, every cgroup and disk removed — when it stops.

    Authentication is kube-apiserver's (``kubesim.plugins.authentication``): static ``tokens``
    (the admin's ``admin_token``), ServiceAccount tokens from the TokenRequest API
    (``service_account_tokens``; its ``clock`` is the one token time, replaceable in tests),
    ``TokenReview``/``SelfSubjectReview`` and, with ``tls=True``, HTTPS and client certificates
    from a CA generated at start (``certificate_authority``). ``authorization`` picks the mode
    (``AUTHORIZATION_MODES``); a server that would carry credentials in clear beyond loopback
    is refused (``check_clear_text``, ``InsecureServing``; ``kubesim serve`` exits 2).

    The kubeconfig is written once the port accepts connections and removed by ``stop`` (if it
    still names this server), so it is a readiness signal for scripts.
    """

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
        scheduler_loop: bool = True,
        eviction_subresource: bool = True,
        validation: Validation = "strict",
        disabled_controllers: Iterable[str] = (),
        settings: ControllerSettings | None = None,
        reaction_delay: float | None = None,
        ready_after: float | None = None,
        job_duration: float | None = None,
        process_nodes: Iterable[str] = (),
        scheduler_config: KubeSchedulerConfiguration | None = None,
        cgroup_root: str | Path = "/sys/fs/cgroup",
        memory_capacity: int | None = None,
        node_configs: Mapping[str, NodeConfig] | None = None,
        use_cgroups: bool = True,
        cgroup_driver: CgroupDriver | str = CgroupDriver.CGROUPFS,
        kubepods_at_root: bool = False,
        authorization: str = ALWAYS_ALLOW,
        tls: bool = False,
        disabled_admission_plugins: Iterable[str] = (),
        queueing_hints: bool | None = None,
        preemption_mode: Literal["exhaustive", "sampled"] | None = None,
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
        self.scheme = default_scheme(eviction_subresource=eviction_subresource)
        self.store = Store(history_size=history_size)
        self.registry = GenericStore(self.store, self.scheme)
        self.requests = RequestLog()
        # Fixed tokens (``--token-auth-file``); ``kubesim.plugins.authentication.tokens``.
        self.tokens = StaticTokens()
        self.server = ApiServer(
            self.registry,
            self.scheme,
            request_log=self.requests,
            version_minor=version_minor,
            bookmark_interval=bookmark_interval,
        )
        # RBAC's rules over the store: the rbac mode authorizes with them, and in every mode
        # the escalation check and the rules review read them.
        self.rbac_resolver: RuleResolver = RuleResolver(self.store)
        disabled_plugins = frozenset(disabled_admission_plugins)
        self.admission = admission.install(
            self.registry, self.rbac_resolver, self.server.authorize, disabled=disabled_plugins
        )
        self.priority = self.admission.priority
        self.priority_admission = "Priority" not in disabled_plugins
        self.policies = self.admission.policies  # ValidatingAdmissionPolicies, in every mode
        # ServiceAccount tokens (TokenRequest), tried after the static tokens.
        from kubesim.plugins.authentication.reviews import IdentityReviews
        from kubesim.plugins.authentication.serviceaccounts import ServiceAccountTokens

        self.service_account_tokens = ServiceAccountTokens(self.registry)
        self._serve_access_reviews(
            IdentityReviews(
                self.registry.clock, self.token_authenticators, self.service_account_tokens
            )
        )
        # TLS: a CA generated now; client certificates it signed authenticate their CN.
        self.tls = tls
        self.certificate_authority: CertificateAuthority | None = None
        certificates = None
        if tls:
            from kubesim.plugins.authentication.pki import CertificateAuthority, ClientCertificates

            self.certificate_authority = CertificateAuthority()
            certificates = ClientCertificates()
        self.server.authenticator = Chain(
            [self.tokens, self.service_account_tokens], certificates=certificates
        )
        # kubeadm's admin: system:masters, allowed everything before any authorizer is asked.
        self.admin_user = UserInfo("kubernetes-admin", groups=(MASTERS,))
        self.admin_token = self.tokens.add(new_token(), self.admin_user)
        self._admin_credentials: Credentials | None = None
        self._key_dir: str | None = None
        self.server.control["certificates"] = self._control_certificates
        if authorization not in AUTHORIZATION_MODES:
            known = ", ".join(sorted(AUTHORIZATION_MODES))
            raise ValueError(f"authorization {authorization!r}: must be one of {known}")
        check_clear_text(host, tls=tls, authorization=authorization)
        self.authorization = authorization
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
        off = check_controller_names(disabled_controllers) | (
            frozenset() if scheduler_loop else frozenset({"scheduler"})
        )
        self.controllers: list[Controller] = [
            c
            for c in (list(controllers) if controllers is not None else default_controllers())
            if c.name not in off
        ]
        if scheduler_config is not None or queueing_hints is not None or preemption_mode:
            self.controllers = [
                SchedulerLoop(
                    config=scheduler_config,
                    queueing_hints=c.queueing_hints if queueing_hints is None else queueing_hints,
                    preemption_mode=preemption_mode or c.preemption_mode,
                )
                if isinstance(c, SchedulerLoop)
                else c
                for c in self.controllers
            ]
        # Process nodes: named here, or by a ProcessNode document of the state (``_load``).
        self.node_configs: dict[str, NodeConfig] = dict(node_configs or {})
        self.node_configs.update(
            {n: NodeConfig() for n in process_nodes if n not in self.node_configs}
        )
        self.runtimes: dict[str, ProcessRuntime] = {}
        self._nodes_configured = False
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self._tmpdir: str | None = None
        self._wrote_kubeconfig = False
        self.kubeconfig_path: Path | None = None
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.server.control["faults"] = self._control_faults
        self.injector = FaultInjector(
            self, faults=self.faults, request_log=self.requests, kubelet=lambda: self.kubelet
        )
        self.server.request_hooks.insert(0, self.injector.hook)
        # Without the subresource the eviction endpoint is a 404, as on a server lacking it.
        self.eviction = EvictionStorage(self.registry) if eviction_subresource else None
        if self.eviction is not None:
            self.server.subresources[("", "pods", "eviction")] = subresources.named_create(
                self.eviction
            )
        self.binding = BindingStorage(self.registry)
        self.server.subresources[("", "pods", "binding")] = subresources.named_create(self.binding)
        self.server.impersonator = Impersonation(self.server.authorize)
        if faults is not None:
            self.add_faults(faults)
        self.validation: Validation = validation
        self.state_warnings: list[str] = []
        self._bootstrap()
        self.server.authorizer = AUTHORIZATION_MODES[authorization](self)
        self._explicit_settings = explicit
        self._load(self._state)
        if kubepods_at_root and len(self.node_configs) > 1:
            raise ValueError("kubepods at the cgroup root: one process node at most")
        self.runtimes = {
            name: ProcessRuntime(
                cgroup_root=cgroup_root,
                memory_capacity=config.memory_capacity or memory_capacity,
                node=config,
                use_cgroups=use_cgroups,
                cgroup_driver=cgroup_driver,
                kubepods_at_root=kubepods_at_root,
                # the kubelet's 2 s floor, on the simulated clock like every other delay
                minimum_grace_seconds=MINIMUM_GRACE_PERIOD_SECONDS * time_scale,
            )
            for name, config in sorted(self.node_configs.items())
        }
        self._nodes_configured = True

    # --- setup ------------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        ns = self.scheme.for_kind("v1", "Namespace")
        assert ns is not None
        for name in BOOTSTRAP_NAMESPACES:
            self.registry.seed(
                ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        # The scheduling storage's post-start hook: the system PriorityClasses.
        pc = self.scheme.for_kind(scheduling.API_VERSION, scheduling.KIND)
        assert pc is not None
        for manifest in scheduling.system_priority_class_manifests():
            if self.registry.find(pc, "", manifest["metadata"]["name"]) is None:
                self.registry.seed(pc, manifest)
        rbac_bootstrap.seed(self.registry)

    def _serve_access_reviews(self, identity: IdentityReviews) -> None:
        """The review kinds, answered in every mode: who am I, is this token valid, may this
        user do that (the rules review reads RBAC's rules only in the rbac mode; under
        AlwaysAllow everything is allowed, as upstream's AlwaysAllow rule resolver says)."""
        server = self.server
        server.subresources[("", "serviceaccounts", "token")] = subresources.token_request(
            self.service_account_tokens
        )
        authn = "authentication.k8s.io"
        server.virtual[(authn, "selfsubjectreviews")] = subresources.review(
            identity.self_subject_review, lenient=True
        )
        server.virtual[(authn, "tokenreviews")] = subresources.review(
            identity.token_review, lenient=True
        )
        reviews = Reviews(
            server.authorize,
            lambda: self.rbac_resolver if self.authorization == RBAC else None,
        )
        for plural, answer in (
            ("subjectaccessreviews", reviews.subject_access_review),
            ("localsubjectaccessreviews", reviews.local_subject_access_review),
            ("selfsubjectaccessreviews", reviews.self_subject_access_review),
            ("selfsubjectrulesreviews", reviews.self_subject_rules_review),
        ):
            server.virtual[(AUTHORIZATION_GROUP, plural)] = subresources.review(answer)

    def find_controller(self, kind: type[C]) -> C | None:
        """The controller of this type that runs here (the scheduler loop, the disruption
        controller...); None when it was switched off."""
        for c in self.controllers:
            if isinstance(c, kind):
                return c
        return None

    @property
    def kubelet(self) -> Kubelet | None:
        return self.find_controller(Kubelet)

    @property
    def metrics(self) -> CollectorRegistry:
        """The registry ``/metrics`` serves (``Cluster.metrics``)."""
        return self.server.metrics

    @property
    def version_minor(self) -> str:
        """The minor version the server reports (``Cluster.version_minor``)."""
        return self.server.version_minor

    def add_controller(self, controller: Controller) -> None:
        self.controllers.append(controller)
        if self._runner is not None:
            self._tasks.append(asyncio.create_task(self._run_controller(controller)))

    async def _run_controller(self, controller: Controller) -> None:
        manager = _FIELD_MANAGERS.get(controller.name, "kube-controller-manager")
        try:
            with acting_as(manager):
                await controller.run(self)
        except asyncio.CancelledError:
            raise
        except Exception:  # a controller crash must not take the server down
            import logging

            logging.getLogger("kubesim").exception("controller %s failed", controller.name)

    async def start(self) -> Simulator:
        for rt in self.runtimes.values():
            rt.open()
        runner = web.AppRunner(
            self.server.app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self._server_tls())
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        port = int(addresses[0][1]) if addresses else self.port
        host = self.host if ":" not in self.host else f"[{self.host}]"
        self.port = port
        self.url = f"{'https' if self.tls else 'http'}://{host}:{port}"
        self.server.server_address = f"{host}:{port}"
        # A kubeconfig on disk promises an answering server: write it only once we answer.
        await wait_answering(self.host, port)
        user = self.admin_kubeconfig_user()
        ca = self.certificate_authority_pem()
        if self._kubeconfig_arg is not None:
            self.kubeconfig_path = write_kubeconfig(
                self._kubeconfig_arg, self.url, user=user, certificate_authority=ca
            )
            self._wrote_kubeconfig = True
        else:
            self._tmpdir = tempfile.mkdtemp(prefix="kubesim-")
            self.kubeconfig_path = write_kubeconfig(
                Path(self._tmpdir) / "kubeconfig", self.url, user=user, certificate_authority=ca
            )
        for controller in self.controllers:
            self._tasks.append(asyncio.create_task(self._run_controller(controller)))
        self._tasks.append(asyncio.create_task(self.injector.run()))
        await asyncio.sleep(0)
        return self

    def _server_tls(self) -> Any:
        """The server's ``SSLContext`` (None over HTTP): a serving certificate for loopback,
        ``localhost``, the in-cluster names and ``host``, issued by this server's CA."""
        ca = self.certificate_authority
        if ca is None:
            return None
        from kubesim.plugins.authentication.pki import server_names

        serving = ca.issue_server(server_names(self.host))
        key_dir = self._private_dir()
        return ca.server_context(serving, key_dir)

    def _private_dir(self) -> str:
        """A 0700 directory for key material ``ssl`` must read from files; removed by stop."""
        if self._key_dir is None:
            self._key_dir = tempfile.mkdtemp(prefix="kubesim-pki-")
        return self._key_dir

    def certificate_authority_pem(self) -> bytes | None:
        """The CA certificate clients must trust (None over HTTP)."""
        ca = self.certificate_authority
        return None if ca is None else ca.certificate_pem

    def admin_credentials(self) -> Credentials:
        """kubeadm's ``admin.conf`` client certificate: CN=kubernetes-admin,
        O=system:masters (TLS servers only)."""
        ca = self.certificate_authority
        if ca is None:
            raise RuntimeError("client certificates need a TLS server (Simulator(tls=True))")
        if self._admin_credentials is None:
            self._admin_credentials = ca.issue_client(self.admin_user.name, self.admin_user.groups)
        return self._admin_credentials

    def admin_kubeconfig_user(self) -> dict[str, Any]:
        """The admin kubeconfig's user entry — the one place that decides the admin's
        credentials, used by ``api_client`` and the written kubeconfig alike: over TLS
        kubeadm's client certificate (CN=kubernetes-admin, O=system:masters); over HTTP no
        credentials while every request is allowed (what kubesim always wrote), the admin's
        token once requests are authorized."""
        if self.tls:
            creds = self.admin_credentials()
            return {
                "client-certificate-data": base64.b64encode(creds.certificate).decode(),
                "client-key-data": base64.b64encode(creds.key).decode(),
            }
        if self.authorization == ALWAYS_ALLOW:
            return {}
        return {"token": self.admin_token}

    def token_authenticators(self) -> list[TokenAuthenticator]:
        """The bearer-token authenticators in the order they are asked (TokenReview)."""
        authenticator = self.server.authenticator
        return list(authenticator.tokens) if isinstance(authenticator, Chain) else []

    async def _control_certificates(self, request: web.Request) -> web.StreamResponse:
        """``POST /_kubesim/certificates`` ``{"user": U, "groups": [G...]}``: a client
        certificate from this server's CA (``kubesim certificate``). It mints credentials, so
        only ``system:masters`` may call it — whatever the authorization mode — and only over
        TLS, where the private key travels encrypted."""
        from kubesim.core.attributes import ANONYMOUS, Attributes
        from kubesim.plugins.authorization import forbidden_error

        try:
            user = self.server.authenticator.authenticate(request) or ANONYMOUS
        except StatusError as err:
            return status_response(err)
        if MASTERS not in user.groups:
            attrs = Attributes(user, "create", is_resource=False, path=request.path)
            return status_response(forbidden_error(attrs))
        if request.method != "POST":
            return json_response({"error": "use POST"}, 405)
        ca = self.certificate_authority
        if ca is None:
            return json_response(
                {"error": "this server does not serve TLS (kubesim serve --tls)"}, 400
            )
        try:
            data = json.loads(await request.text())
        except ValueError as exc:
            return json_response({"error": f"not JSON: {exc}"}, 400)
        if not isinstance(data, dict):
            return json_response({"error": "expected an object with user and groups"}, 400)
        name, groups, days = data.get("user"), data.get("groups", []), data.get("days", 365)
        if not isinstance(name, str) or not name.strip():
            return json_response({"error": "user: required, a non-empty string"}, 400)
        if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
            return json_response({"error": "groups: must be a list of non-empty strings"}, 400)
        if isinstance(days, bool) or not isinstance(days, int) or days < 1:
            return json_response({"error": "days: must be a positive integer"}, 400)
        creds = ca.issue_client(name, groups, days=days)
        return json_response(
            {
                "server": self.url,
                "certificateAuthority": ca.certificate_pem.decode(),
                "certificate": creds.certificate.decode(),
                "key": creds.key.decode(),
            }
        )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for rt in self.runtimes.values():
            with contextlib.suppress(Exception):
                await rt.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        if self._key_dir is not None:
            shutil.rmtree(self._key_dir, ignore_errors=True)
            self._key_dir = None
        if self._wrote_kubeconfig and self.kubeconfig_path is not None:
            # Left behind, it would send the next kubectl to a closed port.
            remove_kubeconfig(self.kubeconfig_path, self.url)
            self._wrote_kubeconfig = False

    async def __aenter__(self) -> Simulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- in-process API ---------------------------------------------------------------------

    def _type_for(self, kind: str) -> ResourceType:
        for rt in self.scheme.types:
            names = (rt.kind, rt.plural, rt.singular, *rt.short_names)
            if kind in names and rt.group != "events.k8s.io":
                return rt
        for rt in self.scheme.types:
            if kind in (f"{rt.plural}.{rt.group}", f"{rt.kind}.{rt.group}"):
                return rt
        raise KeyError(f"kubesim serves no kind {kind!r}")

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A copy of the stored object (``kind`` may be Kind, plural or short name)."""
        rt = self._type_for(kind)
        obj = self.registry.find(rt, namespace or "", name)
        return None if obj is None else clone(self.registry.to_wire(rt, obj))

    def update(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], bool | None],
        *,
        subresource: str = "",
    ) -> dict[str, Any] | None:
        """Change a stored object as an API update (PUT) would: new resourceVersion, priority,
        watch events. ``change`` edits a copy in place; when it answers False nothing is
        written. Answers the object as stored afterwards, None when there is none."""
        rt = self._type_for(kind)
        obj = self.get(kind, namespace, name)
        if obj is None:
            return None
        if change(obj) is False:
            return self.get(kind, namespace, name)
        stored, _ = self.registry.update(rt, namespace or "", name, obj, subresource=subresource)
        return stored

    def list_objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the stored objects of a kind, in etcd order."""
        rt = self._type_for(kind)
        return [
            clone(self.registry.to_wire(rt, o))
            for o in self.store.items(rt.storage_name, namespace if rt.namespaced else None)
        ]

    def apply(self, objects: Iterable[StateSource] | StateSource) -> list[dict[str, Any]]:
        """Create or replace objects as given (status included), like loading state."""
        sources = [objects] if isinstance(objects, str | Path | Mapping) else list(objects)
        return [clone(obj) for obj in self._load(sources)]

    def _load(self, sources: Iterable[StateSource]) -> list[dict[str, Any]]:
        out = []
        loaded = load_state(
            sources,
            Scheme([*with_settings(self.scheme).types, PROCESS_NODE_TYPE]),
            validation=self.validation,
            warnings=self.state_warnings,
        )
        for name, n, rt, manifest in loaded:
            if rt is PROCESS_NODE_TYPE:
                if self._nodes_configured:
                    raise StateError(
                        name, n, "kind", "process nodes are configured before the server starts"
                    )
                try:
                    node, config = parse_process_node(manifest)
                except ValueError as exc:
                    raise StateError(name, n, "", str(exc), obj=describe(manifest)) from None
                self.node_configs[node] = config
                continue
            if rt is SETTINGS_TYPE:
                try:
                    parsed, state_off = parse_settings(manifest, self.settings)
                except ValueError as exc:
                    raise StateError(name, n, "", str(exc), obj=describe(manifest)) from None
                self.settings = dataclasses.replace(parsed, **self._explicit_settings)
                self.controllers = [c for c in self.controllers if c.name not in state_off]
                continue
            try:
                out.append(self._apply_one(rt, manifest))
            except StatusError as err:
                raise StateError(
                    name, n, _field_of(err), err.message, obj=describe(manifest)
                ) from None
        return out

    def _apply_one(self, rt: ResourceType, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if rt.namespaced else ""
        existing = (
            self.registry.find(rt, ns, meta.get("name", "")) if isinstance(meta, dict) else None
        )
        if existing is not None:
            manifest = clone(manifest)
            m = manifest.setdefault("metadata", {})
            old = existing.get("metadata") or {}
            for k in ("uid", "creationTimestamp"):
                if k in old:
                    m.setdefault(k, old[k])
        return self.registry.seed(rt, manifest)

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
        controller = self.find_controller(DisruptionController)
        if controller is not None:
            controller.pin(namespace, name)
        new: dict[str, Any] = clone(self.registry.get(rt, namespace, name))
        if status is None:
            return new
        new["status"] = clone(dict(status))
        obj, _ = self.registry.update(rt, namespace, name, new, subresource="status")
        out: dict[str, Any] = clone(obj)
        return out

    def unpin_pdb(self, namespace: str, name: str) -> None:
        """Hand a pinned PDB back to the disruption controller (re-synced at once)."""
        controller = self.find_controller(DisruptionController)
        if controller is not None:
            controller.unpin(namespace, name)

    def api_client(self) -> Any:
        """A kubernetes-asyncio ``ApiClient`` for this server, as its admin; the caller closes
        it."""
        from kubernetes_asyncio import client

        cfg = client.Configuration(host=self.url)
        user = self.admin_kubeconfig_user()
        token = user.get("token")
        ca_pem = self.certificate_authority_pem()
        if ca_pem is not None:
            # kubernetes-asyncio reads certificates from files only (as its kubeconfig loader)
            cfg.ssl_ca_cert = self._write_private("ca.crt", ca_pem)
        if "client-certificate-data" in user:
            creds = self.admin_credentials()
            cfg.cert_file = self._write_private("admin.crt", creds.certificate)
            cfg.key_file = self._write_private("admin.key", creds.key)
        if token:
            cfg.api_key = {"BearerToken": token}
            cfg.api_key_prefix = {"BearerToken": "Bearer"}
        return client.ApiClient(configuration=cfg)

    def _write_private(self, name: str, data: bytes) -> str:
        path = os.path.join(self._private_dir(), name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path

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


# A cluster of 1000 pods is ~10^6 tracked objects (pods, replacements, events, the watch
# history); with the default thresholds (700, 10, 10) a drain of it triggered several full
# collections of 0.3-1.2 s each, landing at random in the middle of requests.
SERVER_GC_THRESHOLD = (50_000, 20, 20)


def tune_collector_for_server() -> None:
    """Collect less often, for a process whose work is being the cluster (``kubesim serve``,
    benchmarks). The objects are JSON documents, freed by reference counting when they are
    replaced or deleted; the cyclic collector only finds the rare cycles (tasks, responses), so
    running it every 50 000 allocations instead of 700 loses nothing but pauses. Processes that
    embed a Simulator among other work (tests, the demo) keep their own settings."""
    gc.set_threshold(*SERVER_GC_THRESHOLD)


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

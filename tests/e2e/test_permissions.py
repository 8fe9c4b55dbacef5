"""The shipped manifests, proven: the agent runs with exactly the permissions ``deploy/`` grants.

A kubesim that authorizes with RBAC and admits with ValidatingAdmissionPolicies gets exactly
``deploy/*.yaml`` (plus each ``deploy/optional/`` file with the flag it serves), applied by the
admin with strict field validation as ``kubectl apply`` sends them; every grant of every role is
shown to be needed. The kubelet-stats role is met by a webhook-authorizing kubelet, and the
ClusterRole documented for ``evict`` by drains of a living cluster; the admission policy by real
kubectl (tests/e2e/test_admission_policy.py).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from kubesim.core.attributes import Attributes, UserInfo
from kubesim.plugins.authorization import Decision
from kubesim.sim import Simulator
from tests.support.deploy import AGENT, DEPLOY, NODES, docs, optional
from tests.support.evict import EVICT
from tests.support.fakenode import MI, FakeNode
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.living import living, settle
from tests.support.manifests import daemonset, node, pdb, pod, replicaset
from tests.support.wait import until

KUBELET_STATS_ROLE = "eviction-agent-kubelet-stats"


def base_manifests() -> list[Path]:
    """The whole install: the files ``deploy/kustomization.yaml`` lists (``kubectl apply -k``)."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    files = [DEPLOY / name for name in kustomization["resources"]]
    listed = {p.name for p in files}
    kustomize = {"kustomization.yaml", *kustomization["configurations"]}
    assert listed == {p.name for p in DEPLOY.glob("*.yaml")} - kustomize
    return files


class Admin:
    """The admin's requests, over HTTP as kubectl sends them."""

    def __init__(self, sim: Simulator, session: aiohttp.ClientSession) -> None:
        self.sim = sim
        self.session = session
        self.headers = {"Authorization": f"Bearer {sim.admin_token}"}

    async def request(
        self, method: str, path: str, body: Any = None, *, token: str | None = None, **kw: Any
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else self.headers
        if "content_type" in kw:
            headers = {**headers, "Content-Type": kw.pop("content_type")}
        async with self.session.request(
            method, self.sim.url + path, json=body, headers=headers, **kw
        ) as resp:
            return resp.status, await resp.json(content_type=None)

    async def apply(self, manifests: Iterable[dict[str, Any]]) -> None:
        for doc in manifests:
            rt = self.sim.scheme.for_kind(doc["apiVersion"], doc["kind"])
            assert rt is not None, doc["kind"]
            prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
            ns = doc["metadata"].get("namespace", "default") if rt.namespaced else ""
            path = f"{prefix}/namespaces/{ns}/{rt.plural}" if ns else f"{prefix}/{rt.plural}"
            code, body = await self.request(
                "POST", path, doc, params={"fieldValidation": "Strict", "fieldManager": "kubectl"}
            )
            assert code == 201, body

    async def create_pod(self, name: str, *, labels: dict[str, str] | None = None) -> None:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": {
                "nodeName": "node-1",
                "containers": [
                    {"name": "c", "image": "app", "resources": {"requests": {"memory": "50Mi"}}}
                ],
            },
        }
        code, body = await self.request("POST", "/api/v1/namespaces/default/pods", pod)
        assert code == 201, body

    async def token_for_agent_pod(self, node: str) -> str:
        """``kubectl create token eviction-agent -n kube-system --bound-object-kind Pod …``"""
        await until(lambda: self.agent_pod(node) is not None)
        pod = self.agent_pod(node)
        assert pod is not None
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": None,
                "expirationSeconds": 3600,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                },
            },
        }
        code, body = await self.request(
            "POST", "/api/v1/namespaces/kube-system/serviceaccounts/eviction-agent/token", request
        )
        assert code == 201, body
        token: str = body["status"]["token"]
        return token

    def agent_pod(self, node: str) -> dict[str, Any] | None:
        for p in self.sim.list_objects("Pod", "kube-system"):
            if p["metadata"]["name"].startswith("eviction-agent-") and (
                p["spec"].get("nodeName") == node
            ):
                return p
        return None


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=NODES, time_scale=0.01, bookmark_interval=0.2, authorization="rbac", tls=True
    ) as s:
        yield s


def session_for(sim: Simulator) -> aiohttp.ClientSession:
    """An HTTP session that trusts the (TLS) kubesim's CA: tokens go over TLS only."""
    ca = sim.certificate_authority_pem()
    assert ca is not None
    context = ssl.create_default_context(cadata=ca.decode())
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))


@pytest.fixture
async def admin(sim: Simulator) -> AsyncIterator[Admin]:
    async with session_for(sim) as session:
        yield Admin(sim, session)


def agent_kubeconfig(tmp_path: Path, sim: Simulator, token: str) -> Path:
    users = {"agent": {"token": token}}
    ca = sim.certificate_authority_pem()
    path = tmp_path / "agent.kubeconfig"
    return write_kubeconfig(path, sim.url, users, current="agent", certificate_authority=ca)


async def episode(
    sim: Simulator,
    kubeconfig: Path,
    victim: str,
    *,
    during: Callable[[], Any] | None = None,
    **fields: Any,
) -> Agent:
    """Run the agent (node-1) until ``victim`` is gone; pressure comes from its working set."""
    from agent.cli import _api_client

    cfg = load_config(
        {
            "evictionHard": {"memory.available": "500Mi"},
            "housekeepingInterval": "50ms",
            "evictionPressureTransitionPeriod": "0s",
            "nodeName": "node-1",
            **fields,
        }
    )
    fake = FakeNode(sim, usage={f"default/{victim}": 700 * MI})
    api = await _api_client(str(kubeconfig))
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        serve_http=False,
        use_psi=False,
        cleanup_timeout=5.0,
    )
    await agent.start()
    try:
        if during is not None:
            await during()
        await until(lambda: sim.get("Pod", "default", victim) is None, timeout=20)
        fake.usage.clear()  # the pressure is over: conditions and taints are cleared
        await until(lambda: not agent.loop.stats.decisions or agent.ready()[0])
        await asyncio.sleep(0.3)
    finally:
        await agent.stop()
        await api.close()
    return agent


def agent_requests(sim: Simulator) -> list[Any]:
    return [r for r in sim.requests if r.user == AGENT]


def assert_no_401_or_403(sim: Simulator, *, since: int = 0) -> None:
    """None of the agent's requests (from the ``since``-th of the log on) was refused."""
    refused = [
        (r.code, r.method, r.path, r.authorization_reason)
        for r in list(sim.requests)[since:]
        if r.user == AGENT and r.code in (401, 403)
    ]
    assert refused == []


async def test_the_agent_runs_with_exactly_the_shipped_permissions(
    sim: Simulator, admin: Admin, tmp_path: Path
) -> None:
    """The DaemonSet controller starts the agent's pods; the agent then runs in process with a
    ServiceAccount token bound to its own pod on node-1 (``kubectl create token …
    --bound-object-kind Pod``, what the pod's projected token is), through a memory-pressure
    episode in the default ``--eviction-mode=delete`` with the base install alone (which never
    reads a pod), in ``eviction-api`` mode with the file that mode needs, and with
    ``--node-conditions`` / ``--node-taints``. Every decision must be carried out with no 401
    or 403 in the request log. The base install refuses the agent any Eviction; with the same
    token the policy refuses a pod on node-2 and node-2 itself, and RBAC refuses Secrets. The
    requests the agent made, authorized again without any one grant, include one it would
    deny (``assert_every_grant_is_needed``)."""
    await admin.apply(docs(*base_manifests()))
    token = await admin.token_for_agent_pod("node-1")
    kubeconfig = agent_kubeconfig(tmp_path, sim, token)

    # --eviction-mode=delete (the default): a hard threshold, DELETE with the kubelet's grace.
    # The UID precondition answers for the pod: it is never read.
    await admin.create_pod("hog-delete")
    await episode(sim, kubeconfig, "hog-delete")
    deletes = [r for r in agent_requests(sim) if r.verb == "delete" and r.resource == "pods"]
    assert [(r.name, r.code) for r in deletes] == [("hog-delete", 200)]
    assert not [r for r in agent_requests(sim) if r.verb == "get" and r.resource == "pods"]
    assert_no_401_or_403(sim)

    # Least privilege: each grant of the base role is used by the run in the default mode (the
    # kubelet-stats role is authorized by the kubelet, not the API server: proven below).
    base_roles = [
        d
        for d in docs(*base_manifests())
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] != KUBELET_STATS_ROLE
    ]
    await assert_every_grant_is_needed(sim, admin, base_roles, agent_requests(sim))

    # The base install evicts nothing: RBAC refuses the node-1 agent an Eviction, here of a
    # pod on node-2 (the admission policy could not tell, as an Eviction names no node).
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "elsewhere", "namespace": "default"},
    }
    elsewhere = "/api/v1/namespaces/default/pods/elsewhere"
    code, body = await admin.request("POST", f"{elsewhere}/eviction", eviction, token=token)
    assert code == 403, body
    assert body["message"] == (
        f'pods "elsewhere" is forbidden: User "{AGENT}" cannot create resource "pods/eviction"'
        ' in API group "" in the namespace "default"'
    )
    base_runs = len(sim.requests)

    # --eviction-mode=eviction-api, with the file it needs, under a soft threshold: a budget at
    # 0 answers 429, the PDB watch sees it reopen, the pod is read again, the retry is admitted
    eviction_api_file = optional("eviction-api-rbac.yaml")
    await admin.apply(docs(eviction_api_file))
    await admin.create_pod("hog-evict", labels={"app": "hog"})
    await admin.apply(
        [
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "hog", "namespace": "default"},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "hog"}}},
            }
        ]
    )
    closed = {
        "disruptionsAllowed": 0,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
        "observedGeneration": 1,
    }
    sim.pin_pdb("default", "hog", closed)

    async def reopen_after_a_refusal() -> None:
        await until(
            lambda: any(r.subresource == "eviction" and r.code == 429 for r in agent_requests(sim))
        )
        sim.pin_pdb("default", "hog", {**closed, "disruptionsAllowed": 1})

    await episode(
        sim,
        kubeconfig,
        "hog-evict",
        during=reopen_after_a_refusal,
        evictionMode="eviction-api",
        evictionHard={"memory.available": "1Mi"},
        evictionSoft={"memory.available": "500Mi"},
        evictionSoftGracePeriod={"memory.available": "100ms"},
    )
    evictions = [r for r in agent_requests(sim) if r.subresource == "eviction"]
    assert [r.code for r in evictions][-1] == 201
    eviction_run = [r for r in list(sim.requests)[base_runs:] if r.user == AGENT]
    assert any(r.resource == "poddisruptionbudgets" and r.verb == "watch" for r in eviction_run)
    # ... and that mode's grant is not confined to the agent's node: the same Eviction of the
    # pod on node-2 is admitted now (as a dry run here, so the pod stays)
    code, body = await admin.request(
        "POST",
        f"{elsewhere}/eviction",
        {**eviction, "deleteOptions": {"dryRun": ["All"]}},
        token=token,
    )
    assert code == 201, body
    eviction_roles = [d for d in docs(eviction_api_file) if d["kind"] == "ClusterRole"]
    await assert_every_grant_is_needed(sim, admin, eviction_roles, eviction_run)
    flag_runs = len(sim.requests)

    # --node-conditions and --node-taints, with the files they need: written under pressure,
    # cleared after
    flag_files = [optional("node-conditions-rbac.yaml"), optional("node-taints-rbac.yaml")]
    await admin.apply(docs(*flag_files))
    await admin.create_pod("hog-node")
    await episode(sim, kubeconfig, "hog-node", nodeConditions=True, nodeTaints=True)
    flag_run = [r for r in list(sim.requests)[flag_runs:] if r.user == AGENT]
    writes = {(r.resource, r.subresource) for r in agent_requests(sim) if r.verb == "patch"}
    assert {("nodes", "status"), ("nodes", "")} <= writes

    assert_no_401_or_403(sim, since=base_runs)

    # The same token, turned against another node: the policy refuses, as does RBAC for Secrets.
    code, body = await admin.request("DELETE", elsewhere, token=token)
    assert code == 403, body
    assert "may not change pod default/elsewhere on node node-2" in body["message"]
    code, body = await admin.request(
        "PATCH",
        "/api/v1/nodes/node-2",
        {"spec": {"unschedulable": True}},
        token=token,
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 403, body
    assert "may not change node node-2" in body["message"]
    code, body = await admin.request(
        "GET", "/api/v1/namespaces/default/secrets/db-password", token=token
    )
    assert code == 403
    assert body["message"] == (
        f'secrets "db-password" is forbidden: User "{AGENT}" cannot get resource "secrets"'
        ' in API group "" in the namespace "default"'
    )
    assert sim.get("Pod", "default", "elsewhere") is not None

    # ... and each grant of the flags' roles by the run with the flags.
    flag_roles = [d for d in docs(*flag_files) if d["kind"] == "ClusterRole"]
    await assert_every_grant_is_needed(sim, admin, flag_roles, flag_run)


def attributes_of_record(record: Any) -> Attributes:
    return Attributes(
        user=UserInfo(record.user, groups=tuple(record.groups)),
        verb=record.verb,
        is_resource=record.path.startswith(("/api/", "/apis/")) and bool(record.resource),
        namespace=record.namespace,
        resource=record.resource,
        subresource=record.subresource,
        name=record.name,
        api_group=record.group,
        api_version=record.version,
        path=record.path,
    )


def grants(role: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


def without(role: dict[str, Any], grant: tuple[str, str, str]) -> dict[str, Any]:
    group, resource, verb = grant
    rules = []
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                verbs = [v for v in rule["verbs"] if (g, r, v) != (group, resource, verb)]
                if verbs:
                    rules.append({"apiGroups": [g], "resources": [r], "verbs": verbs})
    return {**role, "rules": rules}


async def assert_every_grant_is_needed(
    sim: Simulator, admin: Admin, roles: list[dict[str, Any]], requests: list[Any]
) -> None:
    """Each grant, dropped alone, denies at least one request the client really made."""
    allowed = [r for r in requests if r.authorization == "allow"]
    attrs = [attributes_of_record(r) for r in allowed]
    assert all(sim.server.authorize(a)[0] is Decision.ALLOW for a in attrs)
    unneeded = []
    for role in roles:
        name = role["metadata"]["name"]
        path = f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"
        for grant in grants(role):
            code, stored = await admin.request("GET", path)
            assert code == 200, stored
            code, body = await admin.request("PUT", path, without(stored, grant))
            assert code == 200, body
            if all(sim.server.authorize(a)[0] is Decision.ALLOW for a in attrs):
                unneeded.append((name, grant))
            code, body = await admin.request("PUT", path, {**body, "rules": role["rules"]})
            assert code == 200, body
    assert unneeded == []


def group_binding(name: str, role: dict[str, Any], group: str) -> dict[str, Any]:
    """A ClusterRoleBinding of ``role`` to the users of ``group``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}],
    }


def drain_cluster() -> list[dict[str, Any]]:
    """Two node pools, a budgeted ReplicaSet on node-1 and a DaemonSet pod: what the drain
    and the plan roles are proven on."""
    return [
        node("node-1", labels={"pool": "blue"}),
        node("node-2", labels={"pool": "green"}),
        replicaset("web"),
        daemonset("agent"),
        *[pod(f"web-{i}", app="web") for i in range(3)],
        pod("agent-x", namespace="kube-system", owner=("apps/v1", "DaemonSet", "agent")),
        pdb("web", min_available=2),
    ]


async def test_evict_drains_with_exactly_the_documented_cluster_role(tmp_path: Path) -> None:
    """``deploy/evict/drain-clusterrole.yaml``, bound to a group, is all a drain needs."""
    objs = drain_cluster()
    async with living(objs, authorization="rbac", tls=True) as sim, session_for(sim) as session:
        await settle(sim)
        admin = Admin(sim, session)
        [role] = docs(DEPLOY / "evict" / "drain-clusterrole.yaml")
        await admin.apply([role, group_binding("drain-operators", role, "node-operators")])
        token = sim.tokens.add("drainer-token", UserInfo("ops", groups=("node-operators",)))
        kubeconfig = agent_kubeconfig(tmp_path, sim, token)

        async def evict(*args: str) -> str:
            proc = await asyncio.create_subprocess_exec(
                EVICT,
                "--kubeconfig",
                str(kubeconfig),
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err.decode()
            return out.decode()

        # the default drain: Eviction API, a budget that refuses until replacements are Ready,
        # a DaemonSet pod left in place
        out = await evict("drain", "node-1", "--ignore-daemonsets", "--timeout=30s")
        assert "node/node-1 drained" in out
        await settle(sim)
        # by node selector, as operators drain pools; then the delete path
        await evict("uncordon", "-l", "pool=blue")
        out = await evict(
            "drain", "node-2", "--ignore-daemonsets", "--disable-eviction", "--timeout=30s"
        )
        assert "node/node-2 drained" in out
        ops = [r for r in sim.requests if r.user == "ops"]
        assert [(r.code, r.path) for r in ops if r.code in (401, 403)] == []
        assert {r.subresource for r in ops if r.verb == "create"} == {"eviction"}
        assert any(r.verb == "delete" and r.resource == "pods" for r in ops)
        await assert_every_grant_is_needed(sim, admin, [role], ops)


async def test_evict_plans_with_exactly_the_documented_read_only_role(tmp_path: Path) -> None:
    """``deploy/evict/plan-clusterrole.yaml`` alone is all ``evict drain --plan`` needs."""
    objs = drain_cluster()
    async with living(objs, authorization="rbac", tls=True) as sim, session_for(sim) as session:
        await settle(sim)
        admin = Admin(sim, session)
        [role] = docs(DEPLOY / "evict" / "plan-clusterrole.yaml")
        await admin.apply([role, group_binding("drain-planners", role, "planners")])
        token = sim.tokens.add("planner-token", UserInfo("planner", groups=("planners",)))
        kubeconfig = agent_kubeconfig(tmp_path, sim, token)
        proc = await asyncio.create_subprocess_exec(
            EVICT,
            "drain",
            "node-1",
            "--ignore-daemonsets",
            "--plan",
            "--kubeconfig",
            str(kubeconfig),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        assert "the drain finishes" in out.decode()
        mine = [r for r in sim.requests if r.user == "planner"]
        assert [(r.code, r.path) for r in mine if r.code in (401, 403)] == []
        assert {r.method for r in mine} == {"GET"}
        await assert_every_grant_is_needed(sim, admin, [role], mine)


class WebhookKubelet:
    """A kubelet's ``/stats/summary`` behind ``--authentication-token-webhook`` and
    ``--authorization-mode=Webhook``: the bearer token goes to the API server as a TokenReview,
    the user it names as a SubjectAccessReview for ``get`` on ``nodes/stats`` of this node (the
    kubelet's mapping of ``/stats/*``), then 401, 403 or the summary — as the kubelet does."""

    def __init__(self, admin: Admin, node_name: str, summary: dict[str, Any]) -> None:
        self.admin = admin
        self.node_name = node_name
        self.summary = summary

    async def handle(self, request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ")
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        code, body = await self.admin.request(
            "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review
        )
        assert code == 201, body
        if not body["status"].get("authenticated"):
            return web.Response(status=401, text="Unauthorized")
        user = body["status"]["user"]
        access = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user["username"],
                "groups": user.get("groups", []),
                "uid": user.get("uid", ""),
                "extra": user.get("extra", {}),
                "resourceAttributes": {
                    "verb": "get",
                    "resource": "nodes",
                    "subresource": "stats",
                    "name": self.node_name,
                },
            },
        }
        code, body = await self.admin.request(
            "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", access
        )
        assert code == 201, body
        if not body["status"].get("allowed"):
            return web.Response(
                status=403,
                text=f"Forbidden (user={user['username']}, verb=get, resource=nodes,"
                " subresource=stats)",
            )
        return web.json_response(self.summary)


async def test_the_kubelets_summary_serves_the_agent_as_installed(
    sim: Simulator, admin: Admin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DaemonSet reads per-pod disk figures from the kubelet (``--kubelet-summary-url``,
    authorized by ``deploy/kubelet-stats-rbac.yaml``). The agent's fetch, with a token bound to
    its pod, is refused by a kubelet that authorizes ``/stats/summary`` through the API server
    (TokenReview and SubjectAccessReview, as ``--authorization-mode=Webhook`` does) without
    that file and served with it;
    configured by the DaemonSet's own flags, the agent then evicts a pod whose emptyDir is over
    its ``sizeLimit`` on the kubelet's figures — the local-storage limit, working as installed."""
    from agent.cli import _api_client, main
    from agent.sources.kubelet import KubeletSummaryConfig, KubeletSummaryError, fetch_summary
    from kubesim.plugins.authentication.pki import CertificateAuthority
    from tests.support.cgroupfs import FakeCgroup, build_cgroup_tree, build_proc_tree
    from tests.support.deploy import daemonset_args

    install = docs(*base_manifests())
    await admin.apply([d for d in install if d["metadata"]["name"] != KUBELET_STATS_ROLE])
    token = await admin.token_for_agent_pod("node-1")
    token_file = tmp_path / "token"
    token_file.write_text(token)
    scratch = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "scratch", "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "c", "image": "app"}],
            "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Mi"}}],
        },
    }
    code, body = await admin.request("POST", "/api/v1/namespaces/default/pods", scratch)
    assert code == 201, body
    summary = FakeNode(sim).summary()
    [entry] = [p for p in summary["pods"] if p["podRef"]["name"] == "scratch"]
    entry["volume"] = [
        {"name": "tmp", "usedBytes": 5 * MI, "time": summary["node"]["memory"]["time"]}
    ]

    ca = CertificateAuthority(common_name="node-1-kubelet-ca")
    serving = ca.issue_server(["127.0.0.1"])
    context = ca.server_context(serving, str(tmp_path))
    ca_file = tmp_path / "kubelet-ca.crt"
    ca_file.write_bytes(ca.certificate_pem)
    kubelet = WebhookKubelet(admin, "node-1", summary)
    app = web.Application()
    app.router.add_get("/stats/summary", kubelet.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    api = None
    agent = None
    try:
        port = runner.addresses[0][1]
        # the DaemonSet's flags, the downward API's values in; the test's kubelet listens on a
        # free port rather than 10250
        assert (
            main(
                [
                    "check-config",
                    "-o",
                    "json",
                    *daemonset_args({"NODE_NAME": "node-1", "NODE_IP": "127.0.0.1"}),
                ]
            )
            == 0
        )
        installed = json.loads(capsys.readouterr().out)
        installed.pop("thresholds")
        url = installed["kubeletSummaryUrl"]
        assert url == "https://127.0.0.1:10250/stats/summary"
        url = url.replace(":10250/", f":{port}/")
        cfg = KubeletSummaryConfig(url=url, token_path=token_file, ca_path=ca_file)
        with pytest.raises(KubeletSummaryError, match="HTTP 403"):
            await fetch_summary(cfg)
        await admin.apply(docs(DEPLOY / "kubelet-stats-rbac.yaml"))
        assert (await fetch_summary(cfg))["node"]["nodeName"] == "node-1"

        # the host trees the DaemonSet mounts, here as files; its token and the kubelet's CA
        cgroups = build_cgroup_tree(
            tmp_path,
            version="v2",
            driver="systemd",
            root=FakeCgroup(usage=100 * MI, anon=100 * MI),
            kubepods=FakeCgroup(usage=50 * MI),
            pods=[],
        )
        cfg_agent = load_config(
            {
                **installed,
                "kubeletSummaryUrl": url,
                "kubeletTokenFile": str(token_file),
                "kubeletCAFile": str(ca_file),
                "cgroupRoot": str(cgroups),
                "procRoot": str(build_proc_tree(tmp_path)),
                "kubeletRoot": str(tmp_path),
                "runtimeRoot": str(tmp_path),
                "memoryCapacity": "1Gi",
                "evictionHard": {"memory.available": "100Mi"},  # not this host's disk
                "housekeepingInterval": "50ms",
                "listen": "127.0.0.1:0",
            }
        )
        api = await _api_client(str(agent_kubeconfig(tmp_path, sim, token)))
        agent = Agent(cfg_agent, api_client=api, serve_http=False, use_psi=False)
        await agent.start()
        await until(lambda: sim.get("Pod", "default", "scratch") is None, timeout=20)
    finally:
        if agent is not None:
            await agent.stop()
        if api is not None:
            await api.close()
        await runner.cleanup()
    [decision] = [d for d in agent.loop.stats.decisions if d.pod.name == "scratch"]
    assert decision.message.startswith('Usage of EmptyDir volume "tmp" exceeds the limit "1Mi".')
    assert_no_401_or_403(sim)


async def test_without_one_grant_the_run_fails(
    sim: Simulator, admin: Admin, tmp_path: Path
) -> None:
    """What the replay above concludes, once for real: the base role without pods ``delete``
    leaves the agent's decision undone, refused with kube's 403."""
    from agent.cli import _api_client

    install = docs(*base_manifests())
    await admin.apply(
        [without(d, ("", "pods", "delete")) if d["kind"] == "ClusterRole" else d for d in install]
    )
    token = await admin.token_for_agent_pod("node-1")
    await admin.create_pod("hog")
    cfg = load_config(
        {
            "evictionHard": {"memory.available": "500Mi"},
            "housekeepingInterval": "50ms",
            "nodeName": "node-1",
        }
    )
    api = await _api_client(str(agent_kubeconfig(tmp_path, sim, token)))
    fake = FakeNode(sim, usage={"default/hog": 700 * MI})
    agent = Agent(cfg, api_client=api, stats=fake.get_summary, serve_http=False, use_psi=False)
    await agent.start()
    try:
        await until(lambda: any(r.verb == "delete" and r.code == 403 for r in agent_requests(sim)))
    finally:
        await agent.stop()
        await api.close()
    assert sim.get("Pod", "default", "hog") is not None
    [refused] = [r for r in agent_requests(sim) if r.verb == "delete" and r.code == 403][:1]
    assert refused.authorization == "deny" and refused.name == "hog"

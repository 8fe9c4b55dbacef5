"""The shipped admission policy, as real kubectl meets it: the agent of a node may change only
its own node's taints and conditions and its pods' DisruptionTarget condition, whatever install
moves it (``deploy/`` applied with ``kubectl apply -k`` to a kubesim serving TLS with RBAC).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesim
from kubesim.sim import Simulator
from tests.support.deploy import AGENT, DEPLOY, NODES, optional

# --- the admission policy, as real kubectl meets it ---------------------------------------------

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="no kubectl binary installed")
# node-1 carries a taint of someone else's; `local` runs there, `elsewhere` on node-2
KUBECTL_STATE = (
    NODES.replace(
        "  name: node-1\n  labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux}\n",
        "  name: node-1\n  labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux}\n"
        "spec:\n  taints: [{key: dedicated, value: infra, effect: NoSchedule}]\n",
    )
    + """---
apiVersion: v1
kind: Pod
metadata:
  name: local
  namespace: default
  labels: {app: web}
  annotations: {owner: team-a}
spec:
  nodeName: node-1
  tolerations: [{key: dedicated, operator: Exists}]
  containers: [{name: c, image: app}]
"""
)
POLICY = "eviction-agent-own-node"
KUBECTL_READS_FIRST = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubectl-reads-first}
rules: [{apiGroups: [""], resources: [pods/status, nodes/status], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kubectl-reads-first}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubectl-reads-first}
subjects:
  - {kind: ServiceAccount, name: eviction-agent, namespace: kube-system}
  - {kind: ServiceAccount, name: other-eviction-agent, namespace: other}
"""


class Cluster:
    """kubesim serving TLS with ``--authorization rbac``, ``deploy/`` applied by real kubectl
    as shipped (``apply -k``) with the optional node files; kubectl as the admin, and as the
    agent of node-1 with a token bound to its pod (what the DaemonSet's projected token is)."""

    def __init__(self, sim: Simulator, home: Path) -> None:
        assert sim.kubeconfig_path is not None
        self.home = home
        self.admin_config = sim.kubeconfig_path
        self.kubeconfigs = {"admin": self.admin_config}

    async def kubectl(
        self, *args: str, who: str = "admin", check: bool = True
    ) -> tuple[int, str, str]:
        assert KUBECTL is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(KUBECONFIG=str(self.kubeconfigs[who]), HOME=str(self.home))
        proc = await asyncio.create_subprocess_exec(
            *(KUBECTL, f"--cache-dir={self.home / 'cache'}", *args),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        code = proc.returncode or 0
        if check:
            assert code == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return code, out.decode(), err.decode()

    async def refused(self, *args: str, who: str = "agent") -> str:
        """kubectl's one line for a request the server refused (exit 1)."""
        code, out, err = await self.kubectl(*args, who=who, check=False)
        assert code == 1, (args, out, err)
        return err.strip()

    async def agent(
        self, who: str, *, account: str = "eviction-agent", namespace: str = "kube-system"
    ) -> None:
        """kubectl as ``who``: ServiceAccount ``namespace/account`` with a token bound to its
        DaemonSet's pod on node-1 (``kubectl create token … --bound-object-kind Pod``)."""
        await self.kubectl(
            "rollout", "status", f"daemonset/{account}", "-n", namespace, "--timeout=60s"
        )
        _, pod, _ = await self.kubectl(
            *("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/name=eviction-agent"),
            *("--field-selector=spec.nodeName=node-1", "-o=jsonpath={.items[0].metadata.name}"),
        )
        _, token, _ = await self.kubectl(
            *("create", "token", account, "-n", namespace),
            *("--bound-object-kind", "Pod", "--bound-object-name", pod),
        )
        config = yaml.safe_load(self.admin_config.read_text())
        config["users"] = [{"name": who, "user": {"token": token.strip()}}]
        for context in config["contexts"]:
            context["context"]["user"] = who
        path = self.home / f"{who}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        self.kubeconfigs[who] = path

    async def get(self, *args: str) -> dict[str, Any]:
        _, out, _ = await self.kubectl("get", *args, "-o", "json")
        obj: dict[str, Any] = json.loads(out)
        return obj


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with kubesim.serve(
        state=KUBECTL_STATE, time_scale=0.01, authorization="rbac", tls=True
    ) as sim:
        installed = Cluster(sim, tmp_path)
        await installed.kubectl("apply", "-k", str(DEPLOY))
        for name in ("node-conditions-rbac.yaml", "node-taints-rbac.yaml"):
            await installed.kubectl("apply", "-f", str(optional(name)))
        # `kubectl patch` reads the object before it patches it (the agent never does): a
        # read of the status subresources, which admission never sees, lets kubectl as the
        # agent reach the PATCH the policy judges
        reads = tmp_path / "kubectl-reads-first.yaml"
        reads.write_text(KUBECTL_READS_FIRST)
        await installed.kubectl("apply", "-f", str(reads))
        await installed.agent("agent")
        yield installed


def refusal(what: str, name: str, message: str, *, policy: str = POLICY) -> str:
    """kubectl's line for a request the policy denied."""
    return (
        f'Error from server (Forbidden): {what} "{name}" is forbidden: ValidatingAdmissionPolicy'
        f" '{policy}' with binding '{policy}' denied request: the eviction agent of node node-1"
        f" {message}"
    )


def pod_refusal(refused: str, *, policy: str = POLICY) -> str:
    return refusal(
        "pods",
        "local",
        f"may change only the DisruptionTarget condition of pod default/local, not {refused}",
        policy=policy,
    )


ELSEWHERE = "may not change pod default/elsewhere on node node-2"


async def the_base_install_evicts_nothing(cluster: Cluster) -> None:
    """No grant of the base install reaches a pod on another node but the pods read: no
    Eviction (which no policy can confine), no pods get; deletes, which the policy confines."""
    answers = {}
    for args in (
        ("create", "pods", "--subresource=eviction"),
        ("get", "pods"),
        ("delete", "pods"),
        ("list", "pods"),
    ):
        code, out, _ = await cluster.kubectl("auth", "can-i", *args, "-A", who="agent", check=False)
        answers[args[0]] = (code, out.strip())
    assert answers == {
        "create": (1, "no"),
        "get": (1, "no"),
        "delete": (0, "yes"),
        "list": (0, "yes"),
    }
    body = cluster.home / "eviction.json"
    body.write_text(json.dumps({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "elsewhere", "namespace": "default"},
    }))  # fmt: skip
    err = await cluster.refused(
        "create", "--raw", "/api/v1/namespaces/default/pods/elsewhere/eviction", "-f", str(body)
    )
    assert err == (
        f'Error from server (Forbidden): pods "elsewhere" is forbidden: User "{AGENT}" cannot'
        ' create resource "pods/eviction" in API group "" in the namespace "default"'
    )
    assert await cluster.refused("delete", "pod", "elsewhere", "--wait=false") == refusal(
        "pods",
        "elsewhere",
        ELSEWHERE,
    )
    assert (await cluster.get("pod", "elsewhere"))["metadata"]["name"] == "elsewhere"


async def pod_status_writes_change_only_the_disruption_target_condition(cluster: Cluster) -> None:
    """A status write can change labels, annotations, phase and every condition; the agent's
    may change the DisruptionTarget condition and nothing else."""
    status = ("patch", "pod", "local", "--subresource=status")
    for kind, patch, refused in (
        ("merge", {"metadata": {"labels": {"app": "gone"}}}, "metadata.labels"),
        ("merge", {"metadata": {"annotations": {"owner": "team-b"}}}, "metadata.annotations"),
        ("merge", {"status": {"phase": "Failed"}}, "status.phase"),
        (
            "strategic",
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            "status.conditions[Ready]",
        ),
    ):
        err = await cluster.refused(*status, f"--type={kind}", "-p", json.dumps(patch))
        assert err == pod_refusal(refused)
    target = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByNodePressureAgent",
        "message": "The node was low on resource: memory.",
    }
    patch = {"status": {"conditions": [target]}}
    await cluster.kubectl(*status, "--type=strategic", "-p", json.dumps(patch), who="agent")
    pod = await cluster.get("pod", "local")
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["metadata"]["annotations"] == {"owner": "team-a"}
    assert pod["status"]["phase"] != "Failed"
    conditions = {c["type"]: c for c in pod["status"]["conditions"]}
    assert conditions["DisruptionTarget"].items() >= target.items()
    assert conditions.get("Ready", {}).get("status") != "False"
    # one of several refused changes is named, with how many more there were
    both = {"metadata": {"labels": {"app": "gone"}}, "status": {"phase": "Failed"}}
    err = await cluster.refused(*status, "--type=merge", "-p", json.dumps(both))
    assert err.startswith(pod_refusal("")) and err.endswith(" (and 1 more)"), err
    # the status of a pod on another node is refused for the node, whatever it changes
    err = await cluster.refused(
        "patch", "pod", "elsewhere", "--subresource=status", "--type=strategic", "-p",
        json.dumps(patch),
    )  # fmt: skip
    assert err == refusal(
        "pods",
        "elsewhere",
        ELSEWHERE,
    )


async def node_writes_change_only_the_agents_taints_and_conditions(cluster: Cluster) -> None:
    """With the optional node grants, the agent may add and remove its own NoSchedule taints
    and write its own conditions on its own Node; nothing else of the Node (labels, cordon,
    others' taints, capacity, the kubelet's conditions), and nothing of another Node."""
    own_taint = "node-pressure-evictor.io/memory-pressure"
    taints = "its NoSchedule taints node-pressure-evictor.io/*"
    conditions = (
        "its conditions NodePressureAgentMemoryPressure, NodePressureAgentDiskPressure and"
        " NodePressureAgentPIDPressure"
    )
    status = ("patch", "node", "node-1", "--subresource=status")
    ready_false = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    for args, allowed, refused in (
        (("label", "node", "node-1", "node-role.kubernetes.io/control-plane="), taints,
         "metadata.labels"),
        (("patch", "node", "node-1", "-p", '{"spec": {"unschedulable": true}}'), taints,
         "spec.unschedulable"),
        (("taint", "node", "node-1", "dedicated:NoSchedule-"), taints,
         "spec.taints[dedicated:NoSchedule]"),
        (("taint", "node", "node-1", f"{own_taint}:NoExecute"), taints,
         f"spec.taints[{own_taint}:NoExecute]"),
        ((*status, "--type=merge", "-p", '{"status": {"capacity": {"memory": "1Ti"}}}'),
         conditions, "status.capacity"),
        ((*status, "--type=strategic", "-p", json.dumps(ready_false)), conditions,
         "status.conditions[Ready]"),
    ):  # fmt: skip
        assert await cluster.refused(*args) == refusal(
            "nodes",
            "node-1",
            f"may change only {allowed} of node node-1, not {refused}",
        )
    # what the agent writes itself: its taint (added, then removed) and its condition
    await cluster.kubectl("taint", "node", "node-1", f"{own_taint}:NoSchedule", who="agent")
    assert {t["key"] for t in (await cluster.get("node", "node-1"))["spec"]["taints"]} == {
        "dedicated",
        own_taint,
    }
    await cluster.kubectl("taint", "node", "node-1", f"{own_taint}:NoSchedule-", who="agent")
    mine = {"type": "NodePressureAgentMemoryPressure", "status": "False", "reason": "Test"}
    patch = {"status": {"conditions": [mine]}}
    await cluster.kubectl(*status, "--type=strategic", "-p", json.dumps(patch), who="agent")
    node = await cluster.get("node", "node-1")
    assert "node-role.kubernetes.io/control-plane" not in node["metadata"]["labels"]
    assert node["spec"]["taints"] == [
        {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    ]
    assert not node["spec"].get("unschedulable")
    assert node["status"]["capacity"]["memory"] == "1Gi"
    written = {c["type"]: c for c in node["status"]["conditions"]}
    assert written["NodePressureAgentMemoryPressure"]["reason"] == "Test"
    assert written["Ready"]["status"] == "True"
    # another Node: refused for the node, even the agent's own taint
    assert await cluster.refused("taint", "node", "node-2", f"{own_taint}:NoSchedule") == refusal(
        "nodes", "node-2", "may not change node node-2"
    )


async def an_overlay_that_moves_the_install_keeps_the_agent_confined(cluster: Cluster) -> None:
    """The policy knows the agent by its ServiceAccount (the binding's paramRef), which
    kustomize carries through an overlay's ``namespace:`` and ``namePrefix:``: installed so,
    the moved agent is confined as the shipped one is."""

    def overlay(name: str, **fields: str) -> Path:
        path = cluster.home / name
        path.mkdir()
        resources = [os.path.relpath(DEPLOY, path)]  # kustomize wants a relative path
        (path / "kustomization.yaml").write_text(yaml.safe_dump({**fields, "resources": resources}))
        return path

    async def rendered(path: Path) -> list[dict[str, Any]]:
        _, out, _ = await cluster.kubectl("kustomize", str(path))
        return [d for d in yaml.safe_load_all(out) if d]

    def param_and_account(objs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        [bind] = [d for d in objs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
        [account] = [d for d in objs if d["kind"] == "ServiceAccount"]
        [policy] = [d for d in objs if d["kind"] == "ValidatingAdmissionPolicy"]
        assert bind["spec"]["policyName"] == policy["metadata"]["name"]
        return bind["spec"]["paramRef"], account["metadata"]

    ref, account = param_and_account(await rendered(overlay("moved", namespace="other")))
    assert (ref["namespace"], ref["name"]) == (account["namespace"], account["name"])
    assert ref["namespace"] == "other"

    # moved and renamed beside the shipped install, and applied
    renamed = overlay("renamed", namespace="other", namePrefix="other-")
    ref, account = param_and_account(await rendered(renamed))
    assert (ref["namespace"], ref["name"]) == ("other", "other-eviction-agent")
    assert (account["namespace"], account["name"]) == ("other", "other-eviction-agent")
    await cluster.kubectl("create", "namespace", "other")
    await cluster.kubectl("apply", "-k", str(renamed))
    await cluster.agent("moved", account="other-eviction-agent", namespace="other")
    _, out, _ = await cluster.kubectl("auth", "whoami", who="moved")
    assert "system:serviceaccount:other:other-eviction-agent" in out
    moved = f"other-{POLICY}"
    assert await cluster.refused("delete", "pod", "elsewhere", "--wait=false", who="moved") == (
        refusal("pods", "elsewhere", ELSEWHERE, policy=moved)
    )
    err = await cluster.refused(
        "patch", "pod", "local", "--subresource=status", "--type=merge", "-p",
        '{"metadata": {"labels": {"app": "gone"}}}', who="moved",
    )  # fmt: skip
    assert err == pod_refusal("metadata.labels", policy=moved)


@pytest.mark.kubectl
@needs_kubectl
async def test_the_admission_policy_as_kubectl_meets_it(cluster: Cluster) -> None:
    """Against ``kubesim serve --tls --authorization rbac`` with ``deploy/`` applied by
    ``kubectl apply -k``: ``auth can-i`` as the agent, each write the policy refuses (a pod's
    labels, annotations, phase or another condition through ``pods/status``; a Node's labels,
    cordon, another owner's taint, capacity or the kubelet's conditions) and each it lets
    through (the agent's DisruptionTarget condition, its taint, its node conditions), and an
    overlay that moves the install to another namespace keeping the agent confined.

    One installed cluster for every check of the policy: each starts kubectl a few times,
    the cluster and its install cost more than all of them."""
    await the_base_install_evicts_nothing(cluster)
    await pod_status_writes_change_only_the_disruption_target_condition(cluster)
    await node_writes_change_only_the_agents_taints_and_conditions(cluster)
    await an_overlay_that_moves_the_install_keeps_the_agent_confined(cluster)

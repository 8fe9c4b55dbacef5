"""The DaemonSet and RBAC manifests keep the properties the agent's safety depends on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kube.quantity import parse_quantity
from tests.support.deploy import DEPLOY, base, container, daemonset_args, docs, one

MIB = 1024 * 1024
FOOTPRINT_TARGET = 60 * MIB
# bench/agent_footprint.py on realistic pods (110 x ~30 KB with managedFields, relists under
# load), after the informer keeps only what the agent reads; was 80.5 MiB before.
MEASURED_PEAK_RSS = 56.8 * MIB
MEMORY_MARGIN = 1.5


def _optional() -> list[dict[str, Any]]:
    return docs(*sorted((DEPLOY / "optional").glob("*.yaml")))


def _rule_pairs(role: dict[str, Any]) -> Iterator[tuple[tuple[str, str], str]]:
    for rule in role["rules"]:
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                for verb in rule["verbs"]:
                    yield (group, res), verb


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for key, verb in _rule_pairs(role):
        out.setdefault(key, set()).add(verb)
    return out


def test_every_manifest_parses_and_names_its_kind() -> None:
    docs = base() + _optional()
    assert {d["kind"] for d in docs} == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for d in docs:
        assert d["apiVersion"] and d["metadata"]["name"]


def _role(name: str) -> dict[str, Any]:
    [role] = [d for d in base() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return role


def test_cluster_role_is_least_privilege() -> None:
    roles = {d["metadata"]["name"] for d in base() if d["kind"] == "ClusterRole"}
    assert roles == {"eviction-agent", "eviction-agent-kubelet-stats"}
    # the kubelet's summary (per-pod disk figures) is read as installed: one read-only grant
    assert _grants(_role("eviction-agent-kubelet-stats")) == {("", "nodes/stats"): {"get"}}
    # nothing that reaches a pod on another node but the reads: the writes are confined by the
    # admission policy, and evictions (which it cannot confine) are optional
    role = _role("eviction-agent")
    assert _grants(role) == {
        ("", "pods"): {"list", "watch", "delete"},
        ("", "pods/status"): {"patch"},
        ("events.k8s.io", "events"): {"create"},
    }


def test_no_manifest_grants_nodes_proxy_or_wildcards() -> None:
    for role in [d for d in base() + _optional() if d["kind"] == "ClusterRole"]:
        for (group, res), verb in _rule_pairs(role):
            assert res != "nodes/proxy", role["metadata"]["name"]
            assert "*" not in (group, res, verb), role["metadata"]["name"]


def test_optional_roles_grant_only_what_their_flag_needs() -> None:
    roles = {d["metadata"]["name"]: _grants(d) for d in _optional() if d["kind"] == "ClusterRole"}
    assert roles == {
        "eviction-agent-eviction-api": {
            ("", "pods/eviction"): {"create"},
            ("", "pods"): {"get"},
            ("policy", "poddisruptionbudgets"): {"list", "watch"},
        },
        "eviction-agent-node-conditions": {("", "nodes/status"): {"patch"}},
        "eviction-agent-node-taints": {("", "nodes"): {"get", "patch"}},
    }


def test_the_policy_names_the_agents_own_conditions_and_taints() -> None:
    """What the admission policy lets the agent write is what the agent writes: its condition
    types and taint keys, kept in step with the code here (the policy's CEL holds literals)."""
    from agent.actions.node_conditions import NODE_CONDITION_PREFIX
    from agent.actions.node_taints import PRESSURE_TAINTS
    from agent.daemon import PRESSURE_CONDITIONS
    from kube.conditions import DISRUPTION_TARGET

    policy = one("ValidatingAdmissionPolicy")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    own = variables["ownConditions"]
    for condition in PRESSURE_CONDITIONS:
        assert f"'{NODE_CONDITION_PREFIX}{condition}'" in own
    assert own.count("'NodePressureAgent") == len(PRESSURE_CONDITIONS)
    assert f"'{DISRUPTION_TARGET}'" in own
    [prefix] = {key.split("/")[0] + "/" for key in PRESSURE_TAINTS.values()}
    for name in ("othersNew", "othersOld", "ownTaintsOtherwise"):
        assert f"startsWith('{prefix}')" in variables[name]


def test_bindings_tie_roles_to_the_service_account() -> None:
    sa = one("ServiceAccount")
    ds = one("DaemonSet")
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    roles = {d["metadata"]["name"] for d in base() + _optional() if d["kind"] == "ClusterRole"}
    bindings = [d for d in base() + _optional() if d["kind"] == "ClusterRoleBinding"]
    assert {b["roleRef"]["name"] for b in bindings} == roles
    for b in bindings:
        assert b["roleRef"]["kind"] == "ClusterRole"
        assert b["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": sa["metadata"]["name"],
                "namespace": sa["metadata"]["namespace"],
            }
        ]


@pytest.fixture
def pod_spec() -> dict[str, Any]:
    ds = one("DaemonSet")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    spec: dict[str, Any] = ds["spec"]["template"]["spec"]
    return spec


def test_daemonset_is_node_critical_and_tolerates_everything(pod_spec: dict[str, Any]) -> None:
    assert pod_spec["priorityClassName"] == "system-node-critical"
    assert {"operator": "Exists"} in pod_spec["tolerations"]
    assert pod_spec.get("hostPID", False) is False


def test_node_name_comes_from_the_downward_api(pod_spec: dict[str, Any]) -> None:
    c = container(pod_spec)
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert "--node-name=$(NODE_NAME)" in c["args"]


def test_host_trees_are_mounted_read_only_and_proc_is_not(pod_spec: dict[str, Any]) -> None:
    c = container(pod_spec)
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for host, inside, flag in [
        ("/sys/fs/cgroup", "/host/sys/fs/cgroup", "--cgroup-root"),
        ("/var/lib/kubelet", "/host/var/lib/kubelet", "--kubelet-root"),
        ("/var/lib/containerd", "/host/var/lib/containerd", "--runtime-root"),
    ]:
        m = mounts[inside]
        assert m["readOnly"] is True
        assert volumes[m["name"]]["hostPath"]["path"] == host
        assert f"{flag}={inside}" in c["args"]
    # Every host mount is read-only, submounts too where the runtime can.
    for m in c["volumeMounts"]:
        assert m.get("readOnly") is True, m
        assert m.get("recursiveReadOnly") == "IfPossible", m
    # The host's /proc (every process's command line) is not mounted: the node-wide files the
    # agent reads are the same in the container's own /proc, its default --proc-root.
    assert not any(
        (v.get("hostPath") or {}).get("path", "").startswith("/proc") for v in volumes.values()
    )
    assert not any(a.startswith("--proc-root") for a in c["args"])


def test_container_is_locked_down(pod_spec: dict[str, Any]) -> None:
    sc = container(pod_spec)["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert "add" not in sc["capabilities"]
    assert sc.get("privileged", False) is False
    assert pod_spec["securityContext"]["runAsNonRoot"] is True


def test_resources_fit_the_footprint_target(pod_spec: dict[str, Any]) -> None:
    res = container(pod_spec)["resources"]
    req = parse_quantity(res["requests"]["memory"])
    lim = parse_quantity(res["limits"]["memory"])
    # requests == limits for memory: the measured peak with its margin, and bounded above
    assert req == lim
    assert MEASURED_PEAK_RSS <= FOOTPRINT_TARGET
    assert MEASURED_PEAK_RSS * MEMORY_MARGIN <= lim <= MEASURED_PEAK_RSS * 2
    assert parse_quantity(res["requests"]["cpu"]) <= parse_quantity("50m")
    # No CPU limit: CFS throttling would delay the reaction under pressure.
    assert "cpu" not in res["limits"]


def test_metrics_port_and_probes(pod_spec: dict[str, Any]) -> None:
    c = container(pod_spec)
    [port] = c["ports"]
    assert (port["name"], port["containerPort"]) == ("metrics", 9808)
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    # dual-stack: the probes reach the pod over IPv4 or IPv6, whichever its IP is
    assert "--http-address=[::]:9808" in c["args"]


@pytest.mark.parametrize(
    ("node_ip", "url"),
    [
        ("10.0.0.7", "https://10.0.0.7:10250/stats/summary"),
        ("fd00::7", "https://[fd00::7]:10250/stats/summary"),
    ],
)
def test_the_daemonset_reads_the_kubelets_summary_on_either_address_family(
    node_ip: str, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Per-pod disk figures as installed: the DaemonSet's own flags, with the node's IPv4 or
    IPv6 address from the downward API, give an https URL to the kubelet on that address."""
    import json

    from agent.cli import main

    args = daemonset_args({"NODE_NAME": "node-1", "NODE_IP": node_ip})
    assert main(["check-config", "-o", "json", *args]) == 0
    effective = json.loads(capsys.readouterr().out)
    assert effective["kubeletSummaryUrl"] == url
    assert effective["nodeName"] == "node-1"

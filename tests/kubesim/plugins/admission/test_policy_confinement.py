"""The project's own admission pattern against kubesim: an agent confined to its node, whatever
it writes through the pod and node status subresources."""

from __future__ import annotations

from kubesim.core.attributes import UserInfo
from kubesim.sim import Simulator
from tests.support.admission import (
    NODE_NAME_EXTRA,
    PODS,
    binding,
    call,
    install,
)
from tests.support.deploy import AGENT

# --- the project's own pattern: an agent confined to its node ---------------------------------

CONFINE = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "eviction-agent-own-node"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["DELETE"],
                    "resources": ["pods"],
                },
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["pods/status", "nodes", "nodes/status"],
                },
            ]
        },
        "matchConditions": [
            {"name": "agent", "expression": f"request.userInfo.username == '{AGENT}'"}
        ],
        "variables": [
            {
                "name": "node",
                "expression": f"has(request.userInfo.extra) && '{NODE_NAME_EXTRA}' in"
                f" request.userInfo.extra ? request.userInfo.extra['{NODE_NAME_EXTRA}'][0] : ''",
            }
        ],
        "validations": [
            {
                "expression": "variables.node != ''",
                "message": "the agent's token carries no node (bind it to its pod)",
                "reason": "Forbidden",
            },
            {
                "expression": "request.resource.resource != 'pods' || oldObject.spec.nodeName =="
                " variables.node",
                "messageExpression": "'pod ' + oldObject.metadata.name + ' is not on node ' +"
                " variables.node",
                "reason": "Forbidden",
            },
            {
                "expression": "request.resource.resource != 'nodes' || request.name =="
                " variables.node",
                "messageExpression": "'node ' + request.name + ' is not ' + variables.node",
                "reason": "Forbidden",
            },
        ],
    },
}


async def test_agent_confined_to_its_node(sim: Simulator) -> None:
    await install(sim, CONFINE, binding("eviction-agent-own-node", "eviction-agent-own-node"))
    agent = sim.tokens.add(
        "agent",
        UserInfo(AGENT, groups=("system:serviceaccounts",), extra={NODE_NAME_EXTRA: ("node-1",)}),
    )
    bare = sim.tokens.add("bare", UserInfo(AGENT, groups=("system:serviceaccounts",)))
    merge = "application/merge-patch+json"
    # web-0 and db-0 are on node-1, web-1 on node-2.
    code, body, _ = await call(sim, "DELETE", f"{PODS}/web-1", token=agent)
    assert code == 403, body
    assert body["message"] == (
        "pods \"web-1\" is forbidden: ValidatingAdmissionPolicy 'eviction-agent-own-node' with"
        " binding 'eviction-agent-own-node' denied request: pod web-1 is not on node node-1"
    )
    code, _, _ = await call(
        sim, "PATCH", f"{PODS}/web-1/status", token=agent, body={"status": {}}, content_type=merge
    )
    assert code == 403
    code, body, _ = await call(
        sim,
        "PATCH",
        "/api/v1/nodes/node-2",
        token=agent,
        body={"spec": {"unschedulable": True}},
        content_type=merge,
    )
    assert (code, body["details"]["kind"]) == (403, "nodes")
    assert body["message"].endswith("denied request: node node-2 is not node-1")
    code, _, _ = await call(
        sim,
        "PATCH",
        "/api/v1/nodes/node-2/status",
        token=agent,
        body={"status": {"phase": "x"}},
        content_type=merge,
    )
    assert code == 403
    # Its own node and pods: allowed.
    for path, patch in (
        ("/api/v1/nodes/node-1", {"spec": {"unschedulable": True}}),
        ("/api/v1/nodes/node-1/status", {"status": {"phase": "Running"}}),
        (f"{PODS}/web-0/status", {"status": {"message": "evicting"}}),
    ):
        code, body, _ = await call(sim, "PATCH", path, token=agent, body=patch, content_type=merge)
        assert code == 200, (path, body)
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-0", token=agent)
    assert code == 200
    # A token without the node extra may do none of it.
    code, body, _ = await call(sim, "DELETE", "/api/v1/namespaces/prod/pods/db-0", token=bare)
    assert code == 403
    assert body["message"].endswith(
        "denied request: the agent's token carries no node (bind it to its pod)"
    )
    # Other users are not matched (matchConditions).
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-1")
    assert code == 200

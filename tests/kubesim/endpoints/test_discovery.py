"""Discovery (legacy and aggregated), /version and the OpenAPI v3 documents kubectl reads."""

from __future__ import annotations

from kubernetes_asyncio import client

from kubesim.sim import Simulator
from tests.support.api import raw


async def test_core_resource_list_has_eviction_and_status(api: client.ApiClient) -> None:
    resources = await client.CoreV1Api(api).get_api_resources()
    by_name = {r.name: r for r in resources.resources}
    eviction = by_name["pods/eviction"]
    assert (eviction.group, eviction.version, eviction.kind, eviction.verbs) == (
        "policy",
        "v1",
        "Eviction",
        ["create"],
    )
    assert by_name["pods/status"].verbs == ["get", "patch", "update"]
    assert by_name["nodes/status"].kind == "Node"
    pods = by_name["pods"]
    assert pods.namespaced is True
    assert pods.short_names == ["po"]
    assert pods.categories == ["all"]
    assert set(pods.verbs) >= {"create", "delete", "get", "list", "patch", "update", "watch"}
    assert by_name["nodes"].namespaced is False
    assert by_name["namespaces"].short_names == ["ns"]


async def test_group_versions(sim: Simulator) -> None:
    code, _, groups = await raw(sim, "GET", "/apis")
    assert code == 200
    assert groups["kind"] == "APIGroupList"
    names = [g["name"] for g in groups["groups"]]
    assert names == [
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "batch",
        "policy",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
    ]
    expected = {
        "/apis/policy/v1": {
            ("poddisruptionbudgets", "PodDisruptionBudget"),
            ("poddisruptionbudgets/status", "PodDisruptionBudget"),
        },
        "/apis/scheduling.k8s.io/v1": {("priorityclasses", "PriorityClass")},
        "/apis/events.k8s.io/v1": {("events", "Event")},
        "/apis/batch/v1": {("jobs", "Job"), ("jobs/status", "Job")},
        "/apis/coordination.k8s.io/v1": {("leases", "Lease")},
    }
    for path, want in expected.items():
        code, _, doc = await raw(sim, "GET", path)
        assert code == 200
        assert {(r["name"], r["kind"]) for r in doc["resources"]} == want
    code, _, apps = await raw(sim, "GET", "/apis/apps/v1")
    short = {r["name"]: r.get("shortNames") for r in apps["resources"]}
    assert short["deployments"] == ["deploy"]
    assert short["statefulsets"] == ["sts"]
    assert short["daemonsets"] == ["ds"]
    assert short["replicasets"] == ["rs"]
    code, _, group = await raw(sim, "GET", "/apis/policy")
    assert group["preferredVersion"] == {"groupVersion": "policy/v1", "version": "v1"}


async def test_aggregated_discovery_when_asked(sim: Simulator) -> None:
    accept = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json"
    )
    code, headers, doc = await raw(sim, "GET", "/apis", accept=accept)
    assert code == 200
    assert headers["Content-Type"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    assert doc["kind"] == "APIGroupDiscoveryList"
    policy = next(i for i in doc["items"] if i["metadata"]["name"] == "policy")
    pdb = policy["versions"][0]["resources"][0]
    assert pdb["resource"] == "poddisruptionbudgets"
    assert pdb["scope"] == "Namespaced"
    assert pdb["subresources"][0]["subresource"] == "status"
    code, _, core = await raw(sim, "GET", "/api", accept=accept)
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    eviction = next(s for s in pods["subresources"] if s["subresource"] == "eviction")
    assert eviction["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    # Plain JSON gets the legacy document.
    code, headers, legacy = await raw(sim, "GET", "/api")
    assert legacy["kind"] == "APIVersions" and legacy["versions"] == ["v1"]


async def test_version(api: client.ApiClient) -> None:
    info = await client.VersionApi(api).get_code()
    assert info.major == "1"
    assert info.git_version.startswith("v1.")


async def test_openapi_v3_declares_field_validation(sim: Simulator) -> None:
    code, _, root = await raw(sim, "GET", "/openapi/v3")
    assert code == 200
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    code, _, doc = await raw(sim, "GET", url)
    assert code == 200
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])
    code, _, _ = await raw(sim, "GET", "/openapi/v2")
    assert code == 404

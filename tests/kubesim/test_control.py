"""The request log, the /_kubesim/ control API, the typed fault file, and sim.apply/get."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client

import kubesim
from kubesim.faults.file import CallRange, FaultError, load_faults, parse_faults
from kubesim.sim import Simulator, StateError
from tests.support.api import raw


async def test_request_log_records_every_request(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    sim.requests.clear()
    await v1.read_namespaced_pod("web-0", "default")
    await v1.patch_node("node-1", {"spec": {"unschedulable": True}})
    await v1.list_pod_for_all_namespaces(label_selector="app=web")
    with pytest.raises(client.ApiException):
        await v1.read_namespaced_pod("nope", "prod")
    recs = list(sim.requests)
    assert [(r.verb, r.method, r.resource, r.namespace, r.name, r.code) for r in recs] == [
        ("get", "GET", "pods", "default", "web-0", 200),
        ("patch", "PATCH", "nodes", "", "node-1", 200),
        ("list", "GET", "pods", "", "", 200),
        ("get", "GET", "pods", "prod", "nope", 404),
    ]
    assert recs[1].body == {"spec": {"unschedulable": True}}
    assert recs[1].path == "/api/v1/nodes/node-1"
    assert recs[2].query == {"labelSelector": ["app=web"]}
    assert recs[0].time <= recs[3].time
    assert sim.requests.filter(verb="patch")[0].name == "node-1"


async def test_request_log_over_http_and_reset(sim: Simulator, api: client.ApiClient) -> None:
    await client.CoreV1Api(api).patch_namespaced_pod_status(
        "web-0", "default", {"status": {"phase": "Failed"}}
    )
    code, _, body = await raw(sim, "GET", "/_kubesim/requests")
    assert code == 200
    last = body["requests"][-1]
    assert (last["verb"], last["resource"], last["subresource"], last["code"]) == (
        "patch",
        "pods",
        "status",
        200,
    )
    assert last["body"] == {"status": {"phase": "Failed"}}  # decoded, as the record reads it
    assert "raw_body" not in last
    code, _, _ = await raw(sim, "DELETE", "/_kubesim/requests")
    assert code == 200
    assert len(sim.requests) == 0


async def test_post_faults_at_run_time(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/_kubesim/faults",
        body="faults:\n- match: {verb: get, resource: pods, name: web-0}\n  delay: 0.5\n",
        content_type="application/yaml",
    )
    assert code == 200
    assert body == {"added": {"faults": 1, "pods": 0}}
    assert sim.faults.faults[0].delay == 0.5
    code, _, body = await raw(sim, "POST", "/_kubesim/faults", body="faults: [{match: {}}]")
    assert code == 400
    assert "a fault needs respond, delay, drop or silent" in body["error"]


def test_fault_file_schema(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(
        """
faults:
- match: {verb: create, resource: pods, subresource: eviction, namespace: default,
          name: web-0, calls: "1-3"}
  respond: {code: 429, reason: TooManyRequests, message: "no",
            causes: [{reason: DisruptionBudget, message: "budget"}], retryAfterSeconds: 1}
- match: {verb: get, resource: pods, name: web-0, calls: "2-"}
  delay: 2.5
- match: {verb: watch, resource: pods}
  drop: true
- match: {verb: watch, resource: poddisruptionbudgets}
  silent: true
pods:
- ref: default/web-0
  deletionDelay: 2.0
  neverDelete: false
  recreateAfterDelete: {uid: web-0-new, node: node-2, after: 0.5}
  timeline: [{after: 1.0, set: {status.phase: Failed}}, {after: 2.0, delete: true}]
latency: 0.02
"""
    )
    fs = load_faults(path)
    first = fs.faults[0]
    assert first.match.subresource == "eviction"
    assert first.match.calls == CallRange(1, 3)
    assert first.respond is not None
    assert first.respond.to_dict() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "no",
        "reason": "TooManyRequests",
        "details": {
            "causes": [{"reason": "DisruptionBudget", "message": "budget"}],
            "retryAfterSeconds": 1,
        },
        "code": 429,
    }
    assert first.respond.response_headers() == {"Retry-After": "1"}
    assert fs.faults[1].match.calls.contains(2) and not fs.faults[1].match.calls.contains(1)
    assert fs.faults[1].match.calls.last is None
    assert fs.faults[2].drop is True
    assert fs.faults[3].silent is True and not fs.faults[3].drop
    pod = fs.pods[0]
    assert (pod.namespace, pod.name, pod.deletion_delay) == ("default", "web-0", 2.0)
    assert pod.recreate_after_delete is not None
    assert pod.recreate_after_delete.node == "node-2"
    assert pod.timeline[0].set == {"status.phase": "Failed"}
    assert pod.timeline[1].delete is True
    assert fs.latency == 0.02


@pytest.mark.parametrize(
    ("text", "field", "detail"),
    [
        ("faults: [{match: {verb: fetch}, delay: 1}]", "faults[0].match.verb", "unknown verb"),
        ("faults: [{match: {calls: '3-1'}, drop: true}]", "faults[0].match.calls", "invalid"),
        ("faults: [{match: {}, silent: 1}]", "faults[0].silent", "true or false"),
        ("faults: [{match: {}, respond: {code: 99}}]", "faults[0].respond.code", "HTTP status"),
        ("pods: [{ref: web-0x/}]", "pods[0].ref", "namespace/name"),
        ("pods: [{ref: a/b, timeline: [{set: {x: 1}}]}]", "pods[0].timeline[0].after", "Required"),
        ("latency: fast", "latency", "number of seconds"),
        ("bogus: 1", "bogus", "unknown field"),
    ],
)
def test_bad_fault_files_name_the_field(tmp_path: Path, text: str, field: str, detail: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("latency: 0\n---\n" + text)
    with pytest.raises(FaultError) as info:
        load_faults(path)
    assert info.value.source == str(path)
    assert info.value.document == 2
    assert info.value.field == field
    assert detail in info.value.detail


def test_parse_faults_accepts_a_mapping() -> None:
    fs = parse_faults({"faults": [{"match": {"verb": "list"}, "drop": True}]})
    assert fs.faults[0].match.verb == "list"


async def test_sim_apply_get_and_add_faults(sim: Simulator) -> None:
    out = sim.apply(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "prod"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                },
                "status": {"replicas": 2},
            },
        ]
    )
    assert out[0]["metadata"]["generation"] == 1
    got = sim.get("deployments", "prod", "d")
    assert got is not None and got["status"] == {"replicas": 2}
    got["status"]["replicas"] = 9  # a copy: the store is unaffected
    assert sim.get("Deployment", "prod", "d")["status"] == {"replicas": 2}  # type: ignore[index]
    uid = sim.get("Pod", "default", "web-0")["metadata"]["uid"]  # type: ignore[index]
    sim.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\n"
        "spec: {containers: [{name: c, image: y}]}\nstatus: {phase: Failed}\n"
    )
    replaced = sim.get("po", "default", "web-0")
    assert replaced is not None
    assert replaced["metadata"]["uid"] == uid
    assert replaced["status"]["phase"] == "Failed"
    sim.add_faults({"latency": 0.01})
    assert sim.faults.latency == 0.01
    with pytest.raises(StateError) as info:
        sim.apply({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert info.value.field == "kind"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def test_example_files_load() -> None:
    from kubesim import serve

    faults = load_faults(EXAMPLES / "kubesim-faults.yaml")
    assert faults.faults[0].match.calls == CallRange(1, 3)
    async with serve(state=EXAMPLES / "kubesim-state.yaml", faults=faults) as sim:
        names = {p["metadata"]["name"] for p in sim.list_objects("Pod")}
        # The DaemonSet controller may already have added node-2's exporter pod.
        assert {"web-0", "web-1", "node-exporter-abcde"} <= names
        assert all(n.startswith("node-exporter-") for n in names - {"web-0", "web-1"})
        assert sim.faults.latency == 0.01
        for _ in range(100):
            pod = sim.get("Pod", "kube-system", "node-exporter-abcde")
            assert pod is not None
            if pod["status"]["phase"] == "Running":
                break
            await asyncio.sleep(0.01)
        assert pod["status"]["phase"] == "Running"
        assert sim.get("Pod", "default", "web-0")["status"]["conditions"] == [  # type: ignore[index]
            {"type": "Ready", "status": "True"}
        ]


async def test_a_silent_fault_answers_200_and_then_sends_nothing() -> None:
    faults = {"faults": [{"match": {"verb": "watch", "resource": "pods"}, "silent": True}]}
    async with kubesim.serve(faults=faults, bookmark_interval=0.05) as sim:
        async with aiohttp.ClientSession() as session:
            url = f"{sim.url}/api/v1/pods?watch=true&allowWatchBookmarks=true"
            async with session.get(url) as resp:
                assert resp.status == 200
                # a healthy watch would carry a bookmark every 0.05 s; this one stays open, empty
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.3):
                        await resp.content.readline()
        (watch,) = sim.requests.filter(verb="watch", resource="pods")
        assert watch.code == 200

"""DELETE options: a body wins over the query; protobuf DeleteOptions on every DELETE.

kube-apiserver's DELETE handler decodes a non-empty body as DeleteOptions (JSON, YAML or
protobuf, as kubectl 1.32's typed client sends for ``drain --disable-eviction``) and reads the
query parameters only when there is no body.
"""

from __future__ import annotations

import json

from kubernetes_asyncio import client

from kubesim.endpoints.protobuf import decode_object
from kubesim.sim import Simulator
from tests.support.api import raw

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def protobuf_delete_options(
    *, grace: int | None = None, dry_run: bool = False, kind: str = "DeleteOptions"
) -> bytes:
    opts = b""
    if grace is not None:
        opts += _field(1, grace)
    if dry_run:
        opts += _field(5, b"All")
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, opts)


def grace_of(sim: Simulator, name: str) -> int | None:
    pod = sim.get("Pod", "default", name)
    assert pod is not None
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    return None if grace is None else int(grace)


async def test_body_wins_over_query(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim,
        "DELETE",
        "/api/v1/namespaces/default/pods/web-0?gracePeriodSeconds=0",
        body=json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 7}),
    )
    assert code == 200
    assert grace_of(sim, "web-0") == 7


async def test_empty_body_object_ignores_the_query(sim: Simulator) -> None:
    # web-1 has terminationGracePeriodSeconds 5; the query's 0 is not read.
    code, _, _ = await raw(
        sim, "DELETE", "/api/v1/namespaces/default/pods/web-1?gracePeriodSeconds=0", body="{}"
    )
    assert code == 200
    assert grace_of(sim, "web-1") == 5


async def test_query_is_read_without_a_body(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim, "DELETE", "/api/v1/namespaces/default/pods/web-1?gracePeriodSeconds=3"
    )
    assert code == 200
    assert grace_of(sim, "web-1") == 3


async def test_query_dry_run_is_ignored_when_a_body_is_sent(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim,
        "DELETE",
        "/api/v1/namespaces/default/pods/web-1?dryRun=All",
        body=json.dumps({"gracePeriodSeconds": 0}),
    )
    assert code == 200
    assert sim.get("Pod", "default", "web-1") is None


async def test_typed_client_body_and_query(api: client.ApiClient, sim: Simulator) -> None:
    v1 = client.CoreV1Api(api)
    await v1.delete_namespaced_pod(
        "web-0",
        "default",
        grace_period_seconds=1,
        body=client.V1DeleteOptions(grace_period_seconds=9),
    )
    assert grace_of(sim, "web-0") == 9


async def test_protobuf_delete_options(sim: Simulator) -> None:
    path = "/api/v1/namespaces/default/pods/{}"
    code, _, _ = await raw(
        sim,
        "DELETE",
        path.format("web-0"),
        body=protobuf_delete_options(grace=4),
        content_type=PROTOBUF,
    )
    assert code == 200
    assert grace_of(sim, "web-0") == 4
    # A dry run leaves the pod alone; a zero grace period (a set pointer) deletes at once.
    code, _, _ = await raw(
        sim,
        "DELETE",
        path.format("web-1"),
        body=protobuf_delete_options(grace=0, dry_run=True),
        content_type=PROTOBUF,
    )
    assert code == 200
    assert sim.get("Pod", "default", "web-1") is not None
    code, _, _ = await raw(
        sim,
        "DELETE",
        path.format("web-1"),
        body=protobuf_delete_options(grace=0),
        content_type=PROTOBUF,
    )
    assert code == 200
    assert sim.get("Pod", "default", "web-1") is None


async def test_protobuf_delete_on_other_kinds_and_collections(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim,
        "DELETE",
        "/api/v1/namespaces/prod",
        body=protobuf_delete_options(),
        content_type=PROTOBUF,
    )
    assert code == 200
    ns = sim.get("Namespace", None, "prod")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    code, _, out = await raw(
        sim,
        "DELETE",
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        body=protobuf_delete_options(grace=0),
        content_type=PROTOBUF,
    )
    assert code == 200
    assert sorted(p["metadata"]["name"] for p in out["items"]) == ["web-0", "web-1"]
    assert sim.get("Pod", "default", "web-0") is None


async def test_protobuf_body_of_another_kind_is_refused(sim: Simulator) -> None:
    code, _, status = await raw(
        sim,
        "DELETE",
        "/api/v1/namespaces/default/pods/web-0",
        body=protobuf_delete_options(kind="Eviction"),
        content_type=PROTOBUF,
    )
    assert code == 500
    assert status["message"] == "decoded object cannot be converted to DeleteOptions"
    assert sim.get("Pod", "default", "web-0") is not None


def test_protobuf_zero_values() -> None:
    # Go writes a pointer only when set: zero then means zero, not "unset".
    assert decode_object(protobuf_delete_options(grace=0)) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
    }
    assert decode_object(protobuf_delete_options()) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
    }


async def test_yaml_body_and_unknown_media_type(sim: Simulator) -> None:
    path = "/api/v1/namespaces/default/pods/web-0"
    code, _, status = await raw(sim, "DELETE", path, body="a=b", content_type="text/plain")
    assert code == 415
    assert status["reason"] == "UnsupportedMediaType"
    code, _, _ = await raw(
        sim, "DELETE", path, body="gracePeriodSeconds: 6\n", content_type="application/yaml"
    )
    assert code == 200
    assert grace_of(sim, "web-0") == 6

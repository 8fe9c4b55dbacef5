"""Protobuf bodies of ``kubectl create deployment`` / ``kubectl create job`` (kubectl 1.32).

The byte strings are what kubectl v1.32.4 sent to kubesim for
``kubectl create deployment web --image=nginx:1.25 --replicas=3 --port=8080 -- sleep 100`` and
``kubectl create job j1 --image=busybox -- echo hi`` (captured from the request log), so these
tests hold without a kubectl binary; ``test_fidelity_kubectl`` runs the real thing.
"""

from __future__ import annotations

import pytest

from kubesim.apiserver.protobuf import ProtobufError, decode_object
from kubesim.sim import Simulator

from .conftest import raw

PROTOBUF = "application/vnd.kubernetes.protobuf"

DEPLOYMENT = (
    b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xca\x01\n\x1f\n\x03web\x12\x00\x1a\x00"
    b'"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12\x98\x01\x08\x03\x12\x0c\n\n\n\x03app'
    b'\x12\x03web\x1a~\n\x1c\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03'
    b"web\x12^\x12@\n\x05nginx\x12\nnginx:1.25\x1a\x05sleep\x1a\x03100*\x002\x0b\n\x00\x10\x00"
    b'\x18\x90?"\x00*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x00'
    b'2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02'
    b'\n\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 \x00(\x008\x00\x1a\x00"\x00'
)

JOB = (
    b'k8s\x00\n\x0f\n\x08batch/v1\x12\x03Job\x12\x84\x01\n\x12\n\x02j1\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12d2b\n\x10\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12N\x12+'
    b"\n\x02j1\x12\x07busybox\x1a\x04echo\x1a\x02hi*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00"
    b"\x90\x01\x00\xa2\x01\x00\x1a\x05Never2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a"
    b'\x01\x00\x9a\x01\x00\xc2\x01\x00\x1a\x08 \x00(\x000\x00:\x00\x1a\x00"\x00'
)


def test_decode_kubectl_deployment() -> None:
    assert decode_object(DEPLOYMENT) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "command": ["sleep", "100"],
                            "ports": [{"containerPort": 8080}],
                            "resources": {},
                        }
                    ]
                },
            },
            "strategy": {},
        },
        "status": {},
    }


def test_decode_kubectl_job() -> None:
    job = decode_object(JOB)
    assert job["kind"] == "Job" and job["apiVersion"] == "batch/v1"
    assert job["spec"]["template"]["spec"] == {
        "containers": [
            {"name": "j1", "image": "busybox", "command": ["echo", "hi"], "resources": {}}
        ],
        "restartPolicy": "Never",
    }


def _field(number: int, payload: bytes) -> bytes:
    assert number < 16 and len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_unknown_non_empty_field_is_refused() -> None:
    type_meta = _field(1, b"apps/v1") + _field(2, b"Deployment")
    meta = _field(1, b"web")
    # DeploymentSpec field 10 is not in kubesim's schema: empty it is ignored ...
    empty = (
        b"k8s\x00" + _field(1, type_meta) + _field(2, _field(1, meta) + _field(2, _field(10, b"")))
    )
    assert decode_object(empty)["spec"] == {}
    # ... set, decoding would lose it, so the body is refused (a 415 at the endpoint).
    body = (
        b"k8s\x00" + _field(1, type_meta) + _field(2, _field(1, meta) + _field(2, _field(10, b"x")))
    )
    with pytest.raises(ProtobufError, match="field 10 of DeploymentSpec"):
        decode_object(body)


async def test_create_deployment_from_protobuf(sim: Simulator) -> None:
    code, _, created = await raw(
        sim,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        body=DEPLOYMENT,
        content_type=PROTOBUF,
    )
    assert code == 201, created
    spec = created["spec"]
    assert spec["replicas"] == 3
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]


async def test_create_job_from_protobuf_gets_a_generated_selector(sim: Simulator) -> None:
    code, _, created = await raw(
        sim, "POST", "/apis/batch/v1/namespaces/default/jobs", body=JOB, content_type=PROTOBUF
    )
    assert code == 201, created
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels == {
        "batch.kubernetes.io/controller-uid": uid,
        "controller-uid": uid,
        "batch.kubernetes.io/job-name": "j1",
        "job-name": "j1",
    }
    assert created["metadata"]["labels"] == labels
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)

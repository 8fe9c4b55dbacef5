"""Protobuf bodies of ``kubectl create deployment`` / ``kubectl create job`` (kubectl 1.32).

The byte strings are what kubectl v1.32.4 sent to kubesim for
``kubectl create deployment web --image=nginx:1.25 --replicas=3 --port=8080 -- sleep 100`` and
``kubectl create job j1 --image=busybox -- echo hi`` (captured from the request log), so these
tests hold without a kubectl binary; ``tests/kubesim/kubectl/test_fidelity.py`` runs the real thing.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.endpoints.protobuf import KINDS, ProtobufError, decode_object
from kubesim.sim import Simulator
from tests.support.api import raw

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


# --- properties -------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _enc(number: int, payload: bytes | int | bool) -> bytes:
    if isinstance(payload, bool | int):
        return _varint(number << 3) + _varint(int(payload))
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)


@st.composite
def delete_options(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    grace = draw(st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1))
    if grace is not None:
        out["gracePeriodSeconds"] = grace
    if draw(st.booleans()):
        out["preconditions"] = {"uid": draw(names), "resourceVersion": draw(names)}
    orphan = draw(st.none() | st.booleans())
    if orphan is not None:
        out["orphanDependents"] = orphan
    policy = draw(st.none() | st.sampled_from(["", "Orphan", "Background", "Foreground"]))
    if policy is not None:
        out["propagationPolicy"] = policy
    dry = draw(st.lists(names, max_size=3))
    if dry:
        out["dryRun"] = dry
    return out


def _encode_delete_options(opts: dict[str, Any]) -> bytes:
    raw_obj = b""
    if "gracePeriodSeconds" in opts:
        raw_obj += _enc(1, opts["gracePeriodSeconds"])
    if "preconditions" in opts:
        pre = opts["preconditions"]
        raw_obj += _enc(2, _enc(1, pre["uid"].encode()) + _enc(2, pre["resourceVersion"].encode()))
    if "orphanDependents" in opts:
        raw_obj += _enc(3, opts["orphanDependents"])
    if "propagationPolicy" in opts:
        raw_obj += _enc(4, opts["propagationPolicy"].encode())
    for value in opts.get("dryRun", []):
        raw_obj += _enc(5, value.encode())
    type_meta = _enc(1, b"v1") + _enc(2, b"DeleteOptions")
    return b"k8s\x00" + _enc(1, type_meta) + _enc(2, raw_obj) + _enc(3, b"") + _enc(4, b"")


@given(delete_options())
def test_delete_options_round_trip(opts: dict[str, Any]) -> None:
    # Pointer fields (grace, orphan, policy) keep their zero values: set means set.
    decoded = decode_object(_encode_delete_options(opts))
    assert decoded == {"kind": "DeleteOptions", "apiVersion": "v1", **opts}


@given(
    st.sampled_from(sorted(KINDS)),
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=16),
            st.integers(min_value=0, max_value=2**64 - 1) | st.binary(max_size=40),
        ),
        max_size=8,
    ),
    st.binary(max_size=20),
)
def test_malformed_bodies_are_refused_not_crashed(
    kind: str, fields: list[tuple[int, int | bytes]], tail: bytes
) -> None:
    """Any body decodes or raises ProtobufError/UnicodeDecodeError (a 415), nothing else."""
    raw_obj = b"".join(_enc(n, v) for n, v in fields) + tail
    type_meta = _enc(1, b"v1") + _enc(2, kind.encode())
    with contextlib.suppress(ProtobufError, UnicodeDecodeError):
        decode_object(b"k8s\x00" + _enc(1, type_meta) + _enc(2, raw_obj))

"""Property tests for the controllers' pure helpers."""

from __future__ import annotations

import ipaddress
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.controllers.base import pods_to_delete_order
from kubesim.controllers.daemonset import daemon_pod_tolerations
from kubesim.controllers.deployment import pod_template_hash
from kubesim.controllers.statefulset import pod_ordinal
from kubesim.core.names import safe_encode
from kubesim.node.kubelet import _PodNetwork

ALPHABET = set("bcdfghjklmnpqrstvwxz2456789")
names = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
json_leaf = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none())
json_obj = st.recursive(
    json_leaf,
    lambda inner: (
        st.dictionaries(st.text(max_size=5), inner, max_size=4) | st.lists(inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.text(max_size=30))
def test_safe_encode_keeps_length_and_alphabet(text: str) -> None:
    out = safe_encode(text)
    assert len(out) == len(text)
    assert set(out) <= ALPHABET


@given(st.dictionaries(st.text(max_size=5), json_obj, max_size=5), st.integers(0, 5))
def test_template_hash_ignores_key_order(template: dict[str, Any], collisions: int) -> None:
    reordered = dict(reversed(list(template.items())))
    assert pod_template_hash(template, collisions) == pod_template_hash(reordered, collisions)
    assert set(pod_template_hash(template, collisions)) <= ALPHABET


@given(names, st.integers(0, 10_000))
def test_pod_ordinal_inverts_the_naming(name: str, ordinal: int) -> None:
    assert pod_ordinal(name, f"{name}-{ordinal}") == ordinal
    assert pod_ordinal(name + "x", f"{name}-{ordinal}") is None


pods = st.lists(
    st.fixed_dictionaries(
        {
            "assigned": st.booleans(),
            "phase": st.sampled_from(["Pending", "Running", "Unknown"]),
            "ready": st.booleans(),
            "created": st.integers(0, 10_000),
        }
    ),
    max_size=12,
)


def _pod(i: int, d: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": d["phase"]}
    if d["ready"]:
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": d["created"] + 1}
        ]
    return {
        "metadata": {"name": f"p{i}", "creationTimestamp": d["created"]},
        "spec": {"nodeName": "n"} if d["assigned"] else {},
        "status": status,
    }


@given(pods)
def test_scale_down_order_is_a_permutation_unassigned_first(raw: list[dict[str, Any]]) -> None:
    items = [_pod(i, d) for i, d in enumerate(raw)]
    ordered = pods_to_delete_order(items)
    assert sorted(p["metadata"]["name"] for p in ordered) == sorted(
        p["metadata"]["name"] for p in items
    )
    assigned = [bool(p["spec"].get("nodeName")) for p in ordered]
    assert assigned == sorted(assigned)  # every unassigned pod before any assigned one


tolerations = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["node.kubernetes.io/unschedulable", "dedicated", ""]),
            "operator": st.sampled_from(["Exists", "Equal"]),
            "effect": st.sampled_from(["NoSchedule", "NoExecute", ""]),
        }
    ),
    max_size=5,
)


@given(tolerations, st.booleans())
def test_daemon_tolerations_are_idempotent_and_complete(
    given_tolerations: list[dict[str, Any]], host_network: bool
) -> None:
    spec = {"tolerations": given_tolerations, "hostNetwork": host_network}
    once = daemon_pod_tolerations(spec)
    assert daemon_pod_tolerations({**spec, "tolerations": once}) == once
    pairs = {(t.get("key"), t.get("effect"), t.get("operator")) for t in once}
    assert ("node.kubernetes.io/unschedulable", "NoSchedule", "Exists") in pairs
    assert ("node.kubernetes.io/not-ready", "NoExecute", "Exists") in pairs
    network = ("node.kubernetes.io/network-unavailable", "NoSchedule", "Exists")
    assert (network in pairs) == (
        host_network
        or any((t["key"], t["effect"], t["operator"]) == network for t in given_tolerations)
    )


@settings(max_examples=30)
@given(st.integers(0, 255), st.lists(st.booleans(), min_size=1, max_size=300))
def test_pod_network_never_hands_out_an_ip_twice(third: int, ops: list[bool]) -> None:
    net = _PodNetwork(f"10.244.{third}.0/24")
    cidr = ipaddress.ip_network(net.cidr)
    held: list[str] = []
    for allocate in ops:
        if allocate and len(held) < 253:
            ip = net.allocate()
            assert ip not in held
            assert ipaddress.ip_address(ip) in cidr
            assert not ip.endswith((".0", ".1", ".255"))
            held.append(ip)
        elif held:
            net.release(held.pop(0))

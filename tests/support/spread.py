"""The PodTopologySpread tests' vocabulary, in the shape of kube's ``st.MakePod`` tables: constraint
and field shorthands for ``tests.support.objects``' pods and nodes, upstream's four-node cluster,
the plugin, its PreFilter run and the state it must reach."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code, CycleState
from scheduler.plugins.podtopologyspread.common import MAX_INT32, CriticalPaths
from scheduler.plugins.podtopologyspread.filtering import PreFilterState
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.snapshot import Snapshot
from tests.support.objects import node, pod

FOO: Mapping[str, Any] = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: Mapping[str, Any] = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DNS = "DoNotSchedule"
SA = "ScheduleAnyway"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
NONE: Mapping[str, Any] = {"none": True}  # marker: no labelSelector at all


def match_labels(**labels: str) -> dict[str, Any]:
    return {"matchLabels": labels}


def tsc(
    max_skew: int,
    key: str,
    when: str = DNS,
    selector: Mapping[str, Any] = FOO,
    *,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> dict[str, Any]:
    """One ``topologySpreadConstraints`` entry; ``selector=NONE`` leaves it out."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not NONE:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy is not None:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def node_in(key: str, values: Sequence[str], *, op: str = "In") -> dict[str, Any]:
    """A required nodeAffinity of one ``key op values`` expression (``objects.pod``'s affinity)."""
    expr = {"key": key, "operator": op, "values": list(values)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }


def node_not_in(key: str, values: Sequence[str]) -> dict[str, Any]:
    return node_in(key, values, op="NotIn")


def tolerate(key: str) -> list[dict[str, str]]:
    """Tolerations of ``key``'s NoSchedule taint (none for ``""``)."""
    return [{"key": key, "operator": "Exists", "effect": "NoSchedule"}] if key else []


def unschedulable(tainted: bool) -> list[Mapping[str, str]]:
    """A node's taints: the unschedulable one, or none."""
    return [UNSCHEDULABLE_TAINT] if tainted else []


def zn(name: str, zone: str, **extra: str) -> Node:
    """A node labelled ``zone`` and ``node`` (its own name), as upstream's tables use."""
    return node(name, {"zone": zone, "node": name, **extra})


def four_nodes() -> list[Node]:
    """node-a, node-b in zone1; node-x, node-y in zone2."""
    return [
        zn("node-a", "zone1"),
        zn("node-b", "zone1"),
        zn("node-x", "zone2"),
        zn("node-y", "zone2"),
    ]


def on(
    node_name: str,
    count: int,
    *,
    labels: Mapping[str, str] | None = None,
    ns: str = "default",
    tag: str = "",
) -> list[Pod]:
    """``count`` pods labelled ``foo`` (or ``labels``) bound to ``node_name``."""
    lab = {"foo": ""} if labels is None else dict(labels)
    short = node_name.rsplit("-", 1)[-1]
    return [
        pod(f"p-{short}{tag}{i}", node_name=node_name, namespace=ns, labels=lab)
        for i in range(1, count + 1)
    ]


def service(selector: Mapping[str, str], *, name: str = "svc") -> KubeObject:
    from kube.objects import Service

    return Service.from_dict(
        {"kind": "Service", "metadata": {"name": name}, "spec": {"selector": dict(selector)}}
    )


def replica_set(name: str, selector: Mapping[str, Any]) -> KubeObject:
    from kube.objects import ReplicaSet

    return ReplicaSet.from_dict(
        {"kind": "ReplicaSet", "metadata": {"name": name}, "spec": {"selector": dict(selector)}}
    )


S, U, UU = Code.Success, Code.Unschedulable, Code.UnschedulableAndUnresolvable


Paths = Mapping[str, tuple[tuple[str, int], tuple[str, int]]]


Pairs = Mapping[tuple[str, str], int]

NO_GATES: dict[str, bool] = {
    "enable_node_inclusion_policy": False,
    "enable_match_label_keys": False,
}


def plugin(**kw: Any) -> PodTopologySpread:
    return PodTopologySpread(defaulting_type="List", **kw)


def run_pre_filter(
    pl: PodTopologySpread, pod: Pod, objects: Sequence[KubeObject]
) -> tuple[CycleState, Snapshot, Any]:
    snapshot = Snapshot.from_objects(objects)
    state = CycleState()
    return state, snapshot, pl.pre_filter(state, pod, snapshot)


def assert_state(s: PreFilterState, domains: Mapping[str, int], paths: Paths, pairs: Pairs) -> None:
    assert s.tp_key_to_domains_num == dict(domains)
    assert s.tp_key_to_critical_paths == {k: CriticalPaths(*v) for k, v in paths.items()}
    assert s.tp_pair_to_match_num == dict(pairs)


NOT_SET = ("", MAX_INT32)


def z(v1: int, v2: int, v3: int | None = None) -> dict[tuple[str, str], int]:
    out = {("zone", "zone1"): v1, ("zone", "zone2"): v2}
    if v3 is not None:
        out[("zone", "zone3")] = v3
    return out


def n(**counts: int) -> dict[tuple[str, str], int]:
    return {("node", f"node-{k}"): v for k, v in counts.items()}


HI = ("Honor", "Ignore")

II = ("Ignore", "Ignore")

HH = ("Honor", "Honor")

"""InterPodAffinity Filter: required (anti-)affinity in both directions, namespaces,
self-affinity, and the AddPod/RemovePod extensions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.interpodaffinity.filtering import (
    InterPodAffinity,
    required_affinity_terms,
    required_anti_affinity_terms,
)
from scheduler.snapshot import Snapshot
from tests.support.objects import namespace, node, pod, required, term

AFFINITY = Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
ANTI = Status(Code.Unschedulable, "node(s) didn't match pod anti-affinity rules")
EXISTING = Status(Code.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules")
ZONE = "topology.kubernetes.io/zone"


def _nodes() -> list[Node]:
    return [
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={ZONE: "a"}),
        node("n3", labels={ZONE: "b"}),
        node("n4"),
    ]


def _verdicts(incoming: Pod, objects: list[KubeObject]) -> dict[str, Status | None]:
    snap = Snapshot.from_objects(objects)
    plugin = InterPodAffinity()
    state = CycleState()
    pre = plugin.pre_filter(state, incoming, snap)
    if pre is not None and pre.code is Code.Skip:
        return {ni.name: None for ni in snap.node_info_list}
    assert pre is None
    return {ni.name: plugin.filter(state, incoming, ni) for ni in snap.node_info_list}


def _web(name: str = "web", node_name: str = "n1", **kw: Any) -> Pod:
    labels = kw.pop("labels", {"app": "web"})
    return pod(name, labels=labels, node_name=node_name, **kw)


def test_required_affinity() -> None:
    incoming = pod(
        "p", affinity=required("podAffinity", term({"matchLabels": {"app": "web"}}, ZONE))
    )
    verdicts = _verdicts(incoming, [*_nodes(), _web()])
    assert verdicts == {"n1": None, "n2": None, "n3": AFFINITY, "n4": AFFINITY}


def test_affinity_needs_one_pod_matching_all_terms() -> None:
    terms = (
        term({"matchLabels": {"app": "web"}}, ZONE),
        term({"matchLabels": {"tier": "1"}}, ZONE),
    )
    incoming = pod("p", affinity=required("podAffinity", *terms))
    # Two pods in zone a that each match one term do not satisfy both.
    split = [_web(), _web("t", labels={"tier": "1"}, node_name="n2")]
    assert _verdicts(incoming, [*_nodes(), *split])["n1"] == AFFINITY
    both = _web("both", labels={"app": "web", "tier": "1"}, node_name="n3")
    assert _verdicts(incoming, [*_nodes(), both]) == {
        "n1": AFFINITY,
        "n2": AFFINITY,
        "n3": None,
        "n4": AFFINITY,
    }


def test_first_pod_of_a_self_affine_group_goes_anywhere_with_the_label() -> None:
    affinity = required("podAffinity", term({"matchLabels": {"app": "db"}}, ZONE))
    self_affine = pod("p", labels={"app": "db"}, affinity=affinity)
    assert _verdicts(self_affine, [*_nodes(), _web()]) == {
        "n1": None,
        "n2": None,
        "n3": None,
        "n4": AFFINITY,
    }
    not_self = pod("p", labels={"app": "other"}, affinity=affinity)
    assert set(_verdicts(not_self, [*_nodes(), _web()]).values()) == {AFFINITY}
    # Once one db pod runs, the others must follow it.
    db = _web("db", labels={"app": "db"}, node_name="n3")
    assert _verdicts(self_affine, [*_nodes(), db]) == {
        "n1": AFFINITY,
        "n2": AFFINITY,
        "n3": None,
        "n4": AFFINITY,
    }


def test_required_anti_affinity_of_the_incoming_pod() -> None:
    incoming = pod(
        "p", affinity=required("podAntiAffinity", term({"matchLabels": {"app": "web"}}, ZONE))
    )
    assert _verdicts(incoming, [*_nodes(), _web()]) == {
        "n1": ANTI,
        "n2": ANTI,
        "n3": None,
        "n4": None,
    }


def test_existing_pods_anti_affinity() -> None:
    guard = _web(
        "guard", affinity=required("podAntiAffinity", term({"matchLabels": {"app": "new"}}, ZONE))
    )
    assert _verdicts(pod("p", labels={"app": "new"}), [*_nodes(), guard]) == {
        "n1": EXISTING,
        "n2": EXISTING,
        "n3": None,
        "n4": None,
    }
    assert set(_verdicts(pod("p", labels={"app": "old"}), [*_nodes(), guard]).values()) == {None}


def test_affinity_is_checked_before_anti_affinity() -> None:
    affinity = {
        **required("podAffinity", term({"matchLabels": {"app": "web"}}, ZONE)),
        **required("podAntiAffinity", term({"matchLabels": {"app": "web"}}, ZONE)),
    }
    verdicts = _verdicts(pod("p", affinity=affinity), [*_nodes(), _web()])
    assert verdicts == {"n1": ANTI, "n2": ANTI, "n3": AFFINITY, "n4": AFFINITY}


def test_namespaces() -> None:
    other = _web(namespace="other")
    sel = {"matchLabels": {"app": "web"}}

    def anti(**extra: Any) -> Pod:
        return pod("p", affinity=required("podAntiAffinity", term(sel, ZONE, **extra)))

    objects: list[KubeObject] = [*_nodes(), other, namespace("other", {"team": "x"})]
    assert _verdicts(anti(), objects)["n1"] is None  # defaults to the pod's own namespace
    assert _verdicts(anti(namespaces=["other"]), objects)["n1"] == ANTI
    assert _verdicts(anti(namespaceSelector={"matchLabels": {"team": "x"}}), objects)["n1"] == ANTI
    assert _verdicts(anti(namespaceSelector={"matchLabels": {"team": "y"}}), objects)["n1"] is None
    assert _verdicts(anti(namespaceSelector={}), objects)["n1"] == ANTI  # every namespace
    # A namespace the snapshot does not know has just its name label.
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "other"}}
    assert _verdicts(anti(namespaceSelector=by_name), [*_nodes(), other])["n1"] == ANTI


def test_existing_terms_use_the_incoming_pods_namespace_labels() -> None:
    guard = _web(
        "guard",
        affinity=required(
            "podAntiAffinity",
            term(
                {"matchLabels": {"app": "new"}},
                ZONE,
                namespaceSelector={"matchLabels": {"team": "x"}},
            ),
        ),
    )
    objects: list[KubeObject] = [
        *_nodes(),
        guard,
        namespace("ns-x", {"team": "x"}),
        namespace("ns-y"),
    ]
    assert _verdicts(pod("p", namespace="ns-x", labels={"app": "new"}), objects)["n1"] == EXISTING
    assert _verdicts(pod("p", namespace="ns-y", labels={"app": "new"}), objects)["n1"] is None


def test_match_label_keys_narrow_the_selector() -> None:
    anti = required(
        "podAntiAffinity", term({"matchLabels": {"app": "web"}}, ZONE, matchLabelKeys=["version"])
    )
    incoming = pod("p", labels={"app": "web", "version": "v2"}, affinity=anti)
    v1 = _web("v1", labels={"app": "web", "version": "v1"}, node_name="n1")
    v2 = _web("v2", labels={"app": "web", "version": "v2"}, node_name="n3")
    assert _verdicts(incoming, [*_nodes(), v1, v2]) == {
        "n1": None,
        "n2": None,
        "n3": ANTI,
        "n4": None,
    }


def test_prefilter_skip() -> None:
    plugin = InterPodAffinity()
    unrelated = _web(
        "guard", affinity=required("podAntiAffinity", term({"matchLabels": {"app": "x"}}, ZONE))
    )
    snap = Snapshot.from_objects([*_nodes(), unrelated])
    assert plugin.pre_filter(CycleState(), pod("p"), snap) == Status(Code.Skip)
    assert plugin.pre_filter(CycleState(), pod("p", labels={"app": "x"}), snap) is None
    preferred_only = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term({}, ZONE)}
            ]
        }
    }
    assert plugin.pre_filter(CycleState(), pod("p", affinity=preferred_only), snap) == Status(
        Code.Skip
    )


def test_add_and_remove_pod_update_the_counts() -> None:
    plugin = InterPodAffinity()
    snap = Snapshot.from_objects([*_nodes(), _web()])
    n3 = snap.node_info("n3")
    incoming = pod(
        "p",
        labels={"app": "new"},
        affinity=required("podAffinity", term({"matchLabels": {"app": "web"}}, ZONE)),
    )
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snap) is None
    assert plugin.filter(state, incoming, n3) == AFFINITY
    added = _web("web2", node_name="n3")
    clone = state.clone()
    assert plugin.add_pod(clone, incoming, added, n3) is None
    assert plugin.filter(clone, incoming, n3) is None
    assert plugin.filter(state, incoming, n3) == AFFINITY  # the original state is untouched
    guard = _web(
        "guard",
        labels={},
        node_name="n3",
        affinity=required("podAntiAffinity", term({"matchLabels": {"app": "new"}}, ZONE)),
    )
    assert plugin.add_pod(clone, incoming, guard, n3) is None
    assert plugin.filter(clone, incoming, n3) == EXISTING
    assert plugin.remove_pod(clone, incoming, guard, n3) is None
    assert plugin.filter(clone, incoming, n3) is None
    # Removing the only web pod from zone a (as preemption would) fails zone a.
    assert plugin.remove_pod(clone, incoming, _web(), snap.node_info("n1")) is None
    assert plugin.filter(clone, incoming, snap.node_info("n1")) == AFFINITY


def test_filter_without_prefilter_state_is_an_error() -> None:
    status = InterPodAffinity().filter(
        CycleState(), pod("p"), Snapshot.from_objects(_nodes()).node_info("n1")
    )
    assert status is not None and status.code is Code.Error


# --- property: agreement with a brute-force reading of the rules ----------------------------

_LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.just("x"), max_size=2)
_TOPOLOGY = st.sampled_from(["zone", "rack", "kubernetes.io/hostname"])


@st.composite
def _terms(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        selector = draw(st.none() | _LABELS.map(lambda m: {"matchLabels": m}))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["namespaces"] = draw(st.lists(st.sampled_from(["default", "other"]), min_size=1))
        out.append(term(selector, draw(_TOPOLOGY), **extra))
    return out


@st.composite
def _pods(draw: st.DrawFn, name: str, node_names: list[str]) -> Pod:
    affinity: dict[str, Any] = {}
    aff, anti = draw(_terms()), draw(_terms())
    if aff:
        affinity.update(required("podAffinity", *aff))
    if anti:
        affinity.update(required("podAntiAffinity", *anti))
    return pod(
        name,
        namespace=draw(st.sampled_from(["default", "other"])),
        labels=draw(_LABELS),
        affinity=affinity or None,
        node_name=draw(st.sampled_from(node_names)) if node_names else "",
    )


def _node_labels(i: int, zone: str | None, rack: str | None) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if zone is not None:
        labels["zone"] = zone
    if rack is not None:
        labels["rack"] = rack
    return labels


@st.composite
def _clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], Pod]:
    count = draw(st.integers(1, 4))
    nodes = [
        node(
            f"n{i}",
            labels=_node_labels(
                i,
                draw(st.none() | st.sampled_from(["a", "b"])),
                draw(st.none() | st.sampled_from(["r1", "r2"])),
            ),
        )
        for i in range(count)
    ]
    names = [n.name for n in nodes]
    existing = [draw(_pods(f"e{j}", names)) for j in range(draw(st.integers(0, 5)))]
    return nodes, existing, draw(_pods("incoming", []))


def _same_domain(a: Mapping[str, str], b: Mapping[str, str], key: str) -> bool:
    return key in a and key in b and a[key] == b[key]


def _reference(nodes: list[Node], existing: list[Pod], incoming: Pod) -> dict[str, Status | None]:
    by_name = {n.name: n for n in nodes}
    ns_labels = lambda ns: {"kubernetes.io/metadata.name": ns}  # noqa: E731

    def hits(t: Any, p: Pod) -> bool:
        return bool(t.matches(p, ns_labels(p.namespace)))

    aff = required_affinity_terms(incoming)
    anti = required_anti_affinity_terms(incoming)
    placed = [(p, by_name[p.node_name].labels) for p in existing]
    matching_all = [(p, lab) for p, lab in placed if aff and all(hits(t, p) for t in aff)]
    any_counted = any(t.topology_key in lab for _, lab in matching_all for t in aff)
    self_match = bool(aff) and all(hits(t, incoming) for t in aff)
    out: dict[str, Status | None] = {}
    for n in nodes:
        labels = n.labels
        verdict: Status | None = None
        if aff:
            if any(t.topology_key not in labels for t in aff):
                verdict = AFFINITY
            elif not all(
                any(_same_domain(labels, lab, t.topology_key) for _, lab in matching_all)
                for t in aff
            ):
                verdict = None if (not any_counted and self_match) else AFFINITY
        if verdict is None and any(
            hits(t, p) and _same_domain(labels, lab, t.topology_key)
            for t in anti
            for p, lab in placed
        ):
            verdict = ANTI
        if verdict is None and any(
            hits(t, incoming) and _same_domain(labels, lab, t.topology_key)
            for p, lab in placed
            for t in required_anti_affinity_terms(p)
        ):
            verdict = EXISTING
        out[n.name] = verdict
    return out


@given(_clusters())
def test_agrees_with_brute_force(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    nodes, existing, incoming = cluster
    assert _verdicts(incoming, [*nodes, *existing]) == _reference(nodes, existing, incoming)

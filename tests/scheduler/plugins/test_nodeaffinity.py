"""NodeAffinity Filter: nodeSelector AND required node affinity, PreFilter Skip and node names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.nodeaffinity import NodeAffinity, required_node_affinity_node_names
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import node, pod, run_plugin

MISMATCH = Status(
    Code.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector"
)


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def _check(
    p_affinity: dict[str, Any] | None,
    labels: dict[str, str],
    name: str = "n",
    node_selector: dict[str, str] | None = None,
) -> Status | None:
    p = pod("p", affinity=p_affinity, node_selector=node_selector)
    return run_plugin(NodeAffinity(), p, NodeInfo(node(name, labels=labels)))


@pytest.mark.parametrize(
    ("expr", "labels", "fits"),
    [
        (_expr("zone", "In", "a", "b"), {"zone": "b"}, True),
        (_expr("zone", "In", "a", "b"), {"zone": "c"}, False),
        (_expr("zone", "In", "a"), {}, False),
        (_expr("zone", "NotIn", "a"), {"zone": "b"}, True),
        (_expr("zone", "NotIn", "a"), {}, True),
        (_expr("zone", "NotIn", "a"), {"zone": "a"}, False),
        (_expr("gpu", "Exists"), {"gpu": ""}, True),
        (_expr("gpu", "Exists"), {}, False),
        (_expr("gpu", "DoesNotExist"), {}, True),
        (_expr("gpu", "DoesNotExist"), {"gpu": "x"}, False),
        (_expr("cores", "Gt", "4"), {"cores": "8"}, True),
        (_expr("cores", "Gt", "4"), {"cores": "4"}, False),
        (_expr("cores", "Gt", "4"), {"cores": "many"}, False),
        (_expr("cores", "Gt", "4"), {}, False),
        (_expr("cores", "Lt", "4"), {"cores": "-1"}, True),
        (_expr("cores", "Lt", "4"), {"cores": "4"}, False),
    ],
)
def test_operators(expr: dict[str, Any], labels: dict[str, str], fits: bool) -> None:
    status = _check(_required({"matchExpressions": [expr]}), labels)
    assert status == (None if fits else MISMATCH)


def test_terms_are_ored_and_requirements_anded() -> None:
    both = {"matchExpressions": [_expr("a", "In", "1"), _expr("b", "In", "2")]}
    other = {"matchExpressions": [_expr("c", "Exists")]}
    affinity = _required(both, other)
    assert _check(affinity, {"a": "1", "b": "2"}) is None
    assert _check(affinity, {"a": "1"}) == MISMATCH
    assert _check(affinity, {"c": "x"}) is None


def test_empty_term_matches_nothing() -> None:
    assert _check(_required({}), {"a": "1"}) == MISMATCH
    assert _check(_required({}, {"matchExpressions": [_expr("a", "Exists")]}), {"a": "1"}) is None


def test_match_fields_metadata_name() -> None:
    affinity = _required({"matchFields": [_expr("metadata.name", "In", "n1")]})
    assert _check(affinity, {}, name="n1") is None
    assert _check(affinity, {}, name="n2") == MISMATCH
    not_in = _required({"matchFields": [_expr("metadata.name", "NotIn", "n1")]})
    assert _check(not_in, {}, name="n2") is None
    assert _check(not_in, {}, name="n1") == MISMATCH


def test_node_selector_and_affinity_must_both_match() -> None:
    affinity = _required({"matchExpressions": [_expr("zone", "In", "a")]})
    assert _check(affinity, {"zone": "a", "disk": "ssd"}, node_selector={"disk": "ssd"}) is None
    assert _check(affinity, {"zone": "a"}, node_selector={"disk": "ssd"}) == MISMATCH
    assert _check(None, {"disk": "hdd"}, node_selector={"disk": "ssd"}) == MISMATCH
    assert _check(None, {"disk": "ssd"}, node_selector={"disk": "ssd"}) is None


def test_prefilter_skips_pods_without_required_constraints() -> None:
    preferred_only = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [_expr("a", "Exists")]}}
            ]
        }
    }
    for p in (pod("p"), pod("p", affinity=preferred_only)):
        assert NodeAffinity().pre_filter(CycleState(), p, Snapshot()) == Status(Code.Skip)
    assert (
        NodeAffinity().pre_filter(CycleState(), pod("p", node_selector={"a": "b"}), Snapshot())
        is None
    )


def test_prefilter_result_node_names() -> None:
    def names(*terms: dict[str, Any]) -> frozenset[str] | None:
        return required_node_affinity_node_names(pod("p", affinity=_required(*terms)))

    def name_in(v: str) -> dict[str, Any]:
        return {"key": "metadata.name", "operator": "In", "values": [v]}

    # (API validation allows one value per matchFields requirement.)
    assert names({"matchFields": [name_in("a")]}) == {"a"}
    # Within a term the name sets intersect; across terms they are united.
    assert names({"matchFields": [name_in("a"), name_in("a")]}) == {"a"}
    assert names({"matchFields": [name_in("a")]}, {"matchFields": [name_in("c")]}) == {"a", "c"}
    # A term without a name requirement allows every node.
    assert (
        names({"matchFields": [name_in("a")]}, {"matchExpressions": [_expr("x", "Exists")]}) is None
    )
    assert names({"matchExpressions": [_expr("x", "Exists")]}) is None
    not_in = {"key": "metadata.name", "operator": "NotIn", "values": ["a"]}
    assert names({"matchFields": [not_in]}) is None
    assert names({"matchFields": [name_in("a"), name_in("b")]}) == frozenset()
    conflict = pod("p", affinity=_required({"matchFields": [name_in("a"), name_in("b")]}))
    assert NodeAffinity().pre_filter(CycleState(), conflict, Snapshot()) == Status(
        Code.UnschedulableAndUnresolvable, "pod affinity terms conflict"
    )


# --- property: agreement with a direct evaluation of the manifest ----------------------------

_KEYS = ["a", "b", "c"]
_VALUES = ["1", "2", "10", "x"]


def _ref_requirement(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if key not in labels:
        return False
    try:
        have, want = int(labels[key]), int(values[0])
    except ValueError:
        return False
    return have > want if op == "Gt" else have < want


def _ref_matches(
    node_selector: dict[str, str],
    terms: list[dict[str, Any]] | None,
    name: str,
    labels: dict[str, str],
) -> bool:
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    if terms is None:
        return True
    for t in terms:
        exprs, fields = t.get("matchExpressions", []), t.get("matchFields", [])
        if not exprs and not fields:
            continue
        if all(_ref_requirement(e, labels) for e in exprs) and all(
            _ref_requirement(f, {"metadata.name": name}) for f in fields
        ):
            return True
    return False


@st.composite
def _expressions(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    key = draw(st.sampled_from(_KEYS))
    if op in ("In", "NotIn"):
        return _expr(key, op, *draw(st.lists(st.sampled_from(_VALUES), min_size=1, max_size=3)))
    if op in ("Gt", "Lt"):
        return _expr(key, op, str(draw(st.integers(-1, 11))))
    return _expr(key, op)


@st.composite
def _terms(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": draw(st.lists(_expressions(), max_size=3))}
    if draw(st.booleans()):
        op = draw(st.sampled_from(["In", "NotIn"]))
        term["matchFields"] = [_expr("metadata.name", op, draw(st.sampled_from(["n0", "n1"])))]
    return term


@given(
    node_selector=st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=2),
    terms=st.none() | st.lists(_terms(), min_size=1, max_size=3),
    name=st.sampled_from(["n0", "n1"]),
    labels=st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=3),
)
def test_matching_agrees_with_direct_evaluation(
    node_selector: dict[str, str],
    terms: list[dict[str, Any]] | None,
    name: str,
    labels: dict[str, str],
) -> None:
    affinity = _required(*terms) if terms is not None else None
    status = _check(affinity, labels, name=name, node_selector=node_selector)
    expected = _ref_matches(node_selector, terms, name, labels)
    if status is not None and status.reasons == ("pod affinity terms conflict",):
        assert not expected  # PreFilter proved no node can match
    else:
        assert status == (None if expected else MISMATCH)

"""Rules, reasons and codes of NodeUnschedulable, NodeName, TaintToleration, NodePorts and
NodeResourcesFit."""

from __future__ import annotations

import pytest

from kube.objects import Taint, Toleration
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts, check_conflict
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.registry import default_filter_plugins, default_framework
from scheduler.plugins.tainttoleration import TaintToleration, find_matching_untolerated_taint
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import node, pod, run_plugin

UU = Code.UnschedulableAndUnresolvable
U = Code.Unschedulable


def test_default_profile_order() -> None:
    # default_plugins.go (1.32), filter plugins only (volume plugins not modelled).
    assert [p.name for p in default_filter_plugins()] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert default_framework().filter_plugins[0].name == "NodeUnschedulable"


# --- NodeUnschedulable -----------------------------------------------------------------------

CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "operator": "Exists"}


def test_cordoned_node_rejects_with_uu() -> None:
    status = run_plugin(NodeUnschedulable(), pod("p"), NodeInfo(node("n", unschedulable=True)))
    assert status == Status(UU, "node(s) were unschedulable")


@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        (CORDON, True),
        ({"operator": "Exists"}, True),  # tolerates every taint
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}, True),
        (
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoExecute",
                "operator": "Exists",
            },
            False,
        ),
        ({"key": "other", "operator": "Exists", "effect": "NoSchedule"}, False),
    ],
)
def test_cordon_toleration(toleration: dict[str, str], fits: bool) -> None:
    p = pod("p", tolerations=[toleration])
    status = run_plugin(NodeUnschedulable(), p, NodeInfo(node("n", unschedulable=True)))
    assert (status is None) is fits
    # The plugin's own Filter agrees when PreFilter did not run.
    direct = NodeUnschedulable().filter(CycleState(), p, NodeInfo(node("n", unschedulable=True)))
    assert (direct is None) is fits


def test_prefilter_skips_when_no_node_is_cordoned_or_the_pod_tolerates_it() -> None:
    assert run_plugin(NodeUnschedulable(), pod("p"), NodeInfo(node("n"))) is None
    plain = Snapshot.from_objects([node("a"), node("b")])
    cordoned = Snapshot.from_objects([node("a"), node("b", unschedulable=True)])
    plugin = NodeUnschedulable()
    assert plugin.pre_filter(CycleState(), pod("p"), plain) == Status(Code.Skip)
    assert plugin.pre_filter(CycleState(), pod("p"), cordoned) is None
    tolerant = pod("p", tolerations=[CORDON])
    assert plugin.pre_filter(CycleState(), tolerant, cordoned) == Status(Code.Skip)


# --- NodeName --------------------------------------------------------------------------------


def test_node_name() -> None:
    p = pod("p", node_name="n1")
    assert run_plugin(NodeName(), p, NodeInfo(node("n1"))) is None
    assert run_plugin(NodeName(), p, NodeInfo(node("n2"))) == Status(
        UU, "node(s) didn't match the requested node name"
    )
    skip = NodeName().pre_filter(CycleState(), pod("q"), Snapshot())
    assert skip is not None and skip.code is Code.Skip


# --- TaintToleration -------------------------------------------------------------------------

UNTOLERATED = Status(UU, "node(s) had untolerated taint(s)")


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_untolerated_do_not_schedule_taints(effect: str) -> None:
    n = node("n", taints=[{"key": "k", "value": "v", "effect": effect}])
    assert run_plugin(TaintToleration(), pod("p"), NodeInfo(n)) == UNTOLERATED


def test_prefer_no_schedule_is_not_filtered() -> None:
    n = node("n", taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])
    assert run_plugin(TaintToleration(), pod("p"), NodeInfo(n)) is None


@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, True),  # Equal by default, any effect
        ({"key": "k", "value": "w"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_toleration_matching(toleration: dict[str, str], fits: bool) -> None:
    n = node("n", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    status = run_plugin(TaintToleration(), pod("p", tolerations=[toleration]), NodeInfo(n))
    assert status == (None if fits else UNTOLERATED)


def test_every_taint_must_be_tolerated_and_the_first_is_reported() -> None:
    taints = (Taint("a", "1", "NoSchedule"), Taint("b", "2", "NoExecute"))
    tolerate_a = (Toleration(key="a", operator="Exists"),)
    assert find_matching_untolerated_taint(taints, ()) == taints[0]
    assert find_matching_untolerated_taint(taints, tolerate_a) == taints[1]
    n = node(
        "n",
        taints=[
            {"key": "a", "value": "1", "effect": "NoSchedule"},
            {"key": "b", "value": "2", "effect": "NoExecute"},
        ],
    )
    p = pod("p", tolerations=[{"key": "a", "operator": "Exists"}])
    assert run_plugin(TaintToleration(), p, NodeInfo(n)) == UNTOLERATED


def test_prefilter_skips_without_tainted_nodes_or_when_everything_is_tolerated() -> None:
    plugin = TaintToleration()
    soft = Snapshot.from_objects([node("a", taints=[{"key": "k", "effect": "PreferNoSchedule"}])])
    assert plugin.pre_filter(CycleState(), pod("p"), soft) == Status(Code.Skip)
    for effect in ("NoSchedule", "NoExecute"):
        tainted = Snapshot.from_objects(
            [node("a"), node("b", taints=[{"key": "k", "effect": effect}])]
        )
        assert plugin.pre_filter(CycleState(), pod("p"), tainted) is None
    tainted = Snapshot.from_objects([node("b", taints=[{"key": "k", "effect": "NoSchedule"}])])
    anything = [{"operator": "Exists"}]
    assert plugin.pre_filter(CycleState(), pod("p", tolerations=anything), tainted) == Status(
        Code.Skip
    )
    both = [
        {"operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute"},
    ]
    assert plugin.pre_filter(CycleState(), pod("p", tolerations=both), tainted) == Status(Code.Skip)
    one = [{"operator": "Exists", "effect": "NoSchedule"}]
    assert plugin.pre_filter(CycleState(), pod("p", tolerations=one), tainted) is None


# --- NodePorts -------------------------------------------------------------------------------

NO_PORTS = Status(U, "node(s) didn't have free ports for the requested pod ports")


@pytest.mark.parametrize(
    ("used", "want", "conflict"),
    [
        (("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
        (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False),
        (("0.0.0.0", "UDP", 80), ("0.0.0.0", "TCP", 80), False),
        (("0.0.0.0", "TCP", 81), ("0.0.0.0", "TCP", 80), False),
        (("0.0.0.0", "TCP", 80), ("", "", 80), True),  # defaults 0.0.0.0 / TCP
        (("0.0.0.0", "TCP", 80), ("0.0.0.0", "TCP", 0), False),
    ],
)
def test_check_conflict(
    used: tuple[str, str, int], want: tuple[str, str, int], conflict: bool
) -> None:
    assert check_conflict({used: 1}, *want) is conflict


def test_host_port_conflict_is_unschedulable() -> None:
    holder = pod("holder", node_name="n", host_ports=[8080])
    ni = NodeInfo(node("n"), [holder])
    assert run_plugin(NodePorts(), pod("p", host_ports=[8080]), ni) == NO_PORTS
    assert run_plugin(NodePorts(), pod("p", host_ports=[(8080, "UDP", "")]), ni) is None
    assert run_plugin(NodePorts(), pod("p", host_ports=[9090]), ni) is None
    skip = NodePorts().pre_filter(CycleState(), pod("p"), Snapshot())
    assert skip is not None and skip.code is Code.Skip


# --- NodeResourcesFit ------------------------------------------------------------------------


def test_resources_fit_reasons_and_codes() -> None:
    n = node("n", cpu="2", memory="4Gi", pods="2")
    ni = NodeInfo(n, [pod("a", cpu="1500m", memory="1Gi", node_name="n")])
    fit = NodeResourcesFit()
    assert run_plugin(fit, pod("p", cpu="500m", memory="3Gi"), ni) is None
    assert run_plugin(fit, pod("p", cpu="501m"), ni) == Status(U, "Insufficient cpu")
    assert run_plugin(fit, pod("p", cpu="1", memory="4Gi"), ni) == Status(
        U, ["Insufficient cpu", "Insufficient memory"]
    )
    # More than the node has at all: preemption cannot help.
    assert run_plugin(fit, pod("p", cpu="3"), ni) == Status(UU, "Insufficient cpu")
    ni.add_pod(pod("b", node_name="n"))
    assert run_plugin(fit, pod("p"), ni) == Status(U, "Too many pods")
    assert run_plugin(fit, pod("p", requests={"example.com/gpu": "1"}), NodeInfo(n)) == Status(
        UU, "Insufficient example.com/gpu"
    )

"""Defaulting as ``pkg/scheduler/apis/config/v1``: ``default_plugins_test.go``'s
``TestMergePlugins`` table and ``defaults_test.go``'s empty-config and args cases, as data."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import default_configuration
from scheduler.config.defaults import API_VERSION, merge_plugins, set_defaults


def names(*items: str | tuple[str, int]) -> list[dict[str, Any]]:
    return [{"name": i} if isinstance(i, str) else {"name": i[0], "weight": i[1]} for i in items]


def filter_set(
    enabled: list[dict[str, Any]], disabled: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"enabled": enabled} if enabled else {}
    if disabled:
        out["disabled"] = disabled
    return out


DEFAULT_FILTERS = {"filter": filter_set(names("DefaultPlugin1", "DefaultPlugin2"))}
P123 = {"filter": filter_set(names("Plugin1", "Plugin2", "Plugin3"))}
MERGE_CASES: list[tuple[str, dict[str, Any] | None, dict[str, Any], dict[str, Any]]] = [
    (
        "AppendCustomPlugin",
        {"filter": filter_set(names("CustomPlugin"))},
        DEFAULT_FILTERS,
        {"filter": filter_set(names("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"))},
    ),
    (
        "InsertAfterDefaultPlugins2",
        {"filter": filter_set(names("CustomPlugin", "DefaultPlugin2"), names("DefaultPlugin2"))},
        DEFAULT_FILTERS,
        {
            "filter": filter_set(
                names("DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"), names("DefaultPlugin2")
            )
        },
    ),
    (
        "InsertBeforeAllPlugins",
        {
            "filter": filter_set(
                names("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"), names("*")
            )
        },
        DEFAULT_FILTERS,
        {
            "filter": filter_set(
                names("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"), names("*")
            )
        },
    ),
    (
        "ReorderDefaultPlugins",
        {"filter": filter_set(names("DefaultPlugin2", "DefaultPlugin1"), names("*"))},
        DEFAULT_FILTERS,
        {"filter": filter_set(names("DefaultPlugin2", "DefaultPlugin1"), names("*"))},
    ),
    ("ApplyNilCustomPlugin", None, DEFAULT_FILTERS, DEFAULT_FILTERS),
    (
        "CustomPluginOverrideDefaultPlugin",
        {"filter": filter_set(names(("Plugin1", 2), ("Plugin3", 3)))},
        P123,
        {"filter": filter_set(names(("Plugin1", 2), "Plugin2", ("Plugin3", 3)))},
    ),
    (
        "OrderPreserveAfterOverride",
        {"filter": filter_set(names(("Plugin2", 2), ("Plugin1", 1)))},
        P123,
        {"filter": filter_set(names(("Plugin1", 1), ("Plugin2", 2), "Plugin3"))},
    ),
    (
        "RepeatedCustomPlugin",
        {"filter": filter_set(names("Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4)))},
        P123,
        {"filter": filter_set(names("Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2)))},
    ),
    (
        "Append custom MultiPoint plugin",
        {"multiPoint": filter_set(names("CustomPlugin"))},
        {"multiPoint": filter_set(names("DefaultPlugin1", "DefaultPlugin2"))},
        {"multiPoint": filter_set(names("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"))},
    ),
    (
        "Append disabled Multipoint plugins",
        {
            "multiPoint": filter_set(
                names("CustomPlugin", "CustomPlugin2"), names("DefaultPlugin2")
            ),
            "score": filter_set([], names("CustomPlugin2")),
        },
        {"multiPoint": filter_set(names("DefaultPlugin1", "DefaultPlugin2"))},
        {
            "multiPoint": filter_set(
                names("DefaultPlugin1", "CustomPlugin", "CustomPlugin2"), names("DefaultPlugin2")
            ),
            "score": filter_set([], names("CustomPlugin2")),
        },
    ),
    (
        "override default MultiPoint plugins with custom value",
        {"multiPoint": filter_set(names(("DefaultPlugin", 5)))},
        {"multiPoint": filter_set(names("DefaultPlugin"))},
        {"multiPoint": filter_set(names(("DefaultPlugin", 5)))},
    ),
    (
        "disabled MultiPoint plugin in default set",
        {"multiPoint": filter_set(names("CustomPlugin"))},
        {"multiPoint": filter_set(names("DefaultPlugin"), names("DefaultPlugin2"))},
        {"multiPoint": filter_set(names("DefaultPlugin", "CustomPlugin"), names("DefaultPlugin2"))},
    ),
    (
        "disabled MultiPoint plugin in default set for specific extension point",
        {"multiPoint": filter_set(names("CustomPlugin"))},
        {
            "multiPoint": filter_set(names("DefaultPlugin")),
            "score": filter_set([], names("DefaultPlugin2")),
        },
        {
            "multiPoint": filter_set(names("DefaultPlugin", "CustomPlugin")),
            "score": filter_set([], names("DefaultPlugin2")),
        },
    ),
    (
        "multipoint with only disabled gets merged",
        {"multiPoint": filter_set([], names("DefaultPlugin"))},
        {"multiPoint": filter_set(names("DefaultPlugin"))},
        {"multiPoint": filter_set([], names("DefaultPlugin"))},
    ),
]


@pytest.mark.parametrize(
    ("custom", "default", "want"),
    [case[1:] for case in MERGE_CASES],
    ids=[case[0] for case in MERGE_CASES],
)
def test_merge_plugins(
    custom: dict[str, Any] | None, default: dict[str, Any], want: dict[str, Any]
) -> None:
    assert merge_plugins(default, custom) == want


DEFAULT_MULTI_POINT = names(
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    "NodePorts",
    ("NodeResourcesFit", 1),
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    "DefaultPreemption",
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    "DefaultBinder",
)
RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def args(kind: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, **fields}


DEFAULT_PLUGIN_CONFIG = [
    {
        "name": "DefaultPreemption",
        "args": args(
            "DefaultPreemptionArgs", minCandidateNodesPercentage=10, minCandidateNodesAbsolute=100
        ),
    },
    {
        "name": "InterPodAffinity",
        "args": args(
            "InterPodAffinityArgs",
            hardPodAffinityWeight=1,
            ignorePreferredTermsOfExistingPods=False,
        ),
    },
    {"name": "NodeAffinity", "args": args("NodeAffinityArgs")},
    {
        "name": "NodeResourcesBalancedAllocation",
        "args": args("NodeResourcesBalancedAllocationArgs", resources=RESOURCES),
    },
    {
        "name": "NodeResourcesFit",
        "args": args(
            "NodeResourcesFitArgs",
            scoringStrategy={"type": "LeastAllocated", "resources": RESOURCES},
        ),
    },
    {"name": "PodTopologySpread", "args": args("PodTopologySpreadArgs", defaultingType="System")},
    {"name": "VolumeBinding", "args": args("VolumeBindingArgs", bindTimeoutSeconds=600)},
]


def test_empty_config_is_kubes_default() -> None:
    """``defaults_test.go`` "empty config": one default-scheduler profile, the MultiPoint
    list, every args type's defaults in name order, and the top-level numbers."""
    got = set_defaults({})
    assert got["parallelism"] == 16
    assert got["percentageOfNodesToScore"] == 0
    assert (got["podInitialBackoffSeconds"], got["podMaxBackoffSeconds"]) == (1, 10)
    assert got["leaderElection"]["resourceLock"] == "leases"
    assert got["clientConnection"] == {
        "contentType": "application/vnd.kubernetes.protobuf",
        "qps": 50.0,
        "burst": 100,
    }
    (profile,) = got["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    assert profile["plugins"] == {"multiPoint": {"enabled": DEFAULT_MULTI_POINT}}
    assert profile["pluginConfig"] == DEFAULT_PLUGIN_CONFIG
    assert default_configuration().document == got


def test_two_profiles_keep_no_default_name() -> None:
    """Only a single profile gets ``default-scheduler``; validation then wants names."""
    got = set_defaults({"profiles": [{}, {"schedulerName": "b"}]})
    assert "schedulerName" not in got["profiles"][0]
    assert got["profiles"][1]["schedulerName"] == "b"


ARGS_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "NodeResourcesFitArgs resources empty",
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
        args(
            "NodeResourcesFitArgs",
            scoringStrategy={"type": "MostAllocated", "resources": RESOURCES},
        ),
    ),
    (
        "NodeResourcesFitArgs weight 0 is 1",
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 0}, {"name": "x/y", "weight": 2}],
                }
            },
        },
        args(
            "NodeResourcesFitArgs",
            scoringStrategy={
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "x/y", "weight": 2}],
            },
        ),
    ),
    (
        "BalancedAllocationArgs weight unset is 1",
        {
            "name": "NodeResourcesBalancedAllocation",
            "args": {"resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu"}]},
        },
        args(
            "NodeResourcesBalancedAllocationArgs",
            resources=[{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}],
        ),
    ),
    (
        "PodTopologySpreadArgs List kept",
        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
        args("PodTopologySpreadArgs", defaultingType="List"),
    ),
    (
        "InterPodAffinityArgs weight kept",
        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}},
        args(
            "InterPodAffinityArgs",
            hardPodAffinityWeight=5,
            ignorePreferredTermsOfExistingPods=False,
        ),
    ),
    (
        "DefaultPreemptionArgs half given",
        {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 50}},
        args("DefaultPreemptionArgs", minCandidateNodesAbsolute=50, minCandidateNodesPercentage=10),
    ),
]


@pytest.mark.parametrize(
    ("given", "want"), [c[1:] for c in ARGS_CASES], ids=[c[0] for c in ARGS_CASES]
)
def test_given_args_are_defaulted_in_place(given: dict[str, Any], want: dict[str, Any]) -> None:
    got = set_defaults({"profiles": [{"pluginConfig": [given]}]})
    configs = got["profiles"][0]["pluginConfig"]
    assert configs[0] == {"name": given["name"], "args": want}
    # the other plugins' defaults follow, in name order, without the given one
    rest = [c for c in DEFAULT_PLUGIN_CONFIG if c["name"] != given["name"]]
    assert configs[1:] == rest


def test_defaulting_twice_changes_nothing() -> None:
    once = set_defaults(
        {"profiles": [{"schedulerName": "a", "plugins": {"score": {"disabled": [{"name": "*"}]}}}]}
    )
    assert set_defaults(once) == once

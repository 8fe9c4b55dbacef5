"""Validation with kube's messages: ``validation_test.go`` (the configuration) and
``validation_pluginargs_test.go`` (each plugin's args), ported as data: the document (or the
args), and the error strings kube's ``field.Error`` prints."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.defaults import set_defaults
from scheduler.config.validation import (
    validate_configuration,
    validate_default_preemption_args,
    validate_inter_pod_affinity_args,
    validate_node_affinity_args,
    validate_node_resources_balanced_allocation_args,
    validate_node_resources_fit_args,
    validate_pod_topology_spread_args,
)

VALID: dict[str, Any] = {
    "parallelism": 8,
    "percentageOfNodesToScore": 35,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 1,
    "profiles": [
        {"schedulerName": "me", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
        {"schedulerName": "other"},
    ],
}


def variant(**changes: Any) -> dict[str, Any]:
    doc = {**VALID, **changes}
    return set_defaults(doc)


CONFIG_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("good", variant(), []),
    (
        "bad-parallelism-invalid-value",
        variant(parallelism=0),
        ["parallelism: Invalid value: 0: should be an integer value greater than zero"],
    ),
    (
        "bad-percentage-of-nodes-to-score",
        variant(percentageOfNodesToScore=101),
        ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
    ),
    (
        "scheduler-name-not-set",
        variant(profiles=[{"schedulerName": "me"}, {"schedulerName": ""}]),
        ["profiles[1].schedulerName: Required value"],
    ),
    (
        "repeated-scheduler-name",
        variant(profiles=[{"schedulerName": "other"}, {"schedulerName": "other"}]),
        ['profiles[1].schedulerName: Duplicate value: "profiles[0].schedulerName"'],
    ),
    (
        "bad-percentage-in-profile",
        variant(profiles=[{"schedulerName": "me", "percentageOfNodesToScore": -1}]),
        ["profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
    ),
    (
        "different-queue-sort",
        variant(
            profiles=[
                {
                    "schedulerName": "me",
                    "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                },
                {
                    "schedulerName": "other",
                    "plugins": {"queueSort": {"enabled": [{"name": "AnotherSort"}]}},
                },
            ]
        ),
        [
            'profiles[1].plugins.queueSort: Invalid value: {"enabled":[{"name":"AnotherSort"}]}:'
            " must be the same for all profiles"
        ],
    ),
    (
        "invalid-node-percentage",
        variant(
            profiles=[
                {
                    "schedulerName": "me",
                    "pluginConfig": [
                        {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 200}}
                    ],
                }
            ]
        ),
        [
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 200:"
            " not in valid range [0, 100]"
        ],
    ),
    (
        "duplicated-plugin-config",
        variant(
            profiles=[
                {"schedulerName": "me", "pluginConfig": [{"name": "config"}, {"name": "config"}]}
            ]
        ),
        ['profiles[0].pluginConfig[1]: Duplicate value: "config"'],
    ),
    (
        "bad-removed-plugins",
        variant(
            profiles=[
                {
                    "schedulerName": "me",
                    "plugins": {"score": {"enabled": [{"name": "EBSLimits", "weight": 2}]}},
                }
            ]
        ),
        [
            'profiles[0].plugins.score.enabled[0]: Invalid value: "EBSLimits": was invalid in'
            ' version "kubescheduler.config.k8s.io/v1" (KubeSchedulerConfiguration is version'
            ' "kubescheduler.config.k8s.io/v1")'
        ],
    ),
    (
        "backoff",
        variant(podInitialBackoffSeconds=0, podMaxBackoffSeconds=-1),
        [
            "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
            "podMaxBackoffSeconds: Invalid value: -1: must be greater than or equal to"
            " PodInitialBackoffSeconds",
        ],
    ),
    (
        "resource-lock",
        variant(leaderElection={"leaderElect": True, "resourceLock": "configmaps"}),
        [
            'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be'
            ' "leases"'
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES]
)
def test_validate_configuration(doc: dict[str, Any], want: list[str]) -> None:
    assert [str(e) for e in validate_configuration(doc)] == want


ARGS_CASES: list[tuple[str, Any, dict[str, Any], list[str]]] = [
    # DefaultPreemptionArgs
    (
        "preemption valid",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
        [],
    ),
    (
        "preemption negative percentage",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
        ["minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"],
    ),
    (
        "preemption percentage over 100",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
        ["minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]"],
    ),
    (
        "preemption negative absolute",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
        ["minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
    ),
    (
        "preemption all zero",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        [
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as"
            " minCandidateNodesAbsolute",
            "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as"
            " minCandidateNodesPercentage",
        ],
    ),
    (
        "preemption both out of range",
        validate_default_preemption_args,
        {"minCandidateNodesPercentage": -2, "minCandidateNodesAbsolute": -2},
        [
            "minCandidateNodesPercentage: Invalid value: -2: not in valid range [0, 100]",
            "minCandidateNodesAbsolute: Invalid value: -2: not in valid range [0, inf)",
        ],
    ),
    # InterPodAffinityArgs
    ("ipa valid", validate_inter_pod_affinity_args, {"hardPodAffinityWeight": 10}, []),
    (
        "ipa weight below range",
        validate_inter_pod_affinity_args,
        {"hardPodAffinityWeight": -1},
        ["hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"],
    ),
    (
        "ipa weight above range",
        validate_inter_pod_affinity_args,
        {"hardPodAffinityWeight": 101},
        ["hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"],
    ),
    # PodTopologySpreadArgs
    (
        "pts valid List",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ],
            "defaultingType": "List",
        },
        [],
    ),
    (
        "pts maxSkew less than zero",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": -1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "defaultingType": "List",
        },
        ["defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)"],
    ),
    (
        "pts empty topology key",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "defaultingType": "List",
        },
        ["defaultConstraints[0].topologyKey: Required value: can not be empty"],
    ),
    (
        "pts whenUnsatisfiable is empty",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": ""}],
            "defaultingType": "List",
        },
        ["defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"],
    ),
    (
        "pts whenUnsatisfiable contains unsupported action",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "unknown action"}
            ],
            "defaultingType": "List",
        },
        [
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "unknown action":'
            ' supported values: "DoNotSchedule", "ScheduleAnyway"'
        ],
    ),
    (
        "pts duplicated constraints",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
            ],
            "defaultingType": "List",
        },
        ['defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'],
    ),
    (
        "pts label selector present",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "key",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"a": "b"}},
                }
            ],
            "defaultingType": "List",
        },
        [
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a"
            " selector, as they deduced for each pod"
        ],
    ),
    (
        "pts list default constraints, no constraints",
        validate_pod_topology_spread_args,
        {"defaultingType": "List"},
        [],
    ),
    (
        "pts system default constraints",
        validate_pod_topology_spread_args,
        {"defaultingType": "System"},
        [],
    ),
    (
        "pts wrong constraints",
        validate_pod_topology_spread_args,
        {
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "defaultingType": "System",
        },
        [
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ],
    ),
    (
        "pts unsupported defaulting type",
        validate_pod_topology_spread_args,
        {"defaultingType": "Unknown"},
        ['defaultingType: Unsupported value: "Unknown": supported values: "System", "List"'],
    ),
    # NodeResourcesBalancedAllocationArgs
    (
        "balanced valid",
        validate_node_resources_balanced_allocation_args,
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
        [],
    ),
    (
        "balanced invalid weight",
        validate_node_resources_balanced_allocation_args,
        {"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]},
        ["resources[0].weight: Invalid value: 2: must be 1"],
    ),
    (
        "balanced repeated resources",
        validate_node_resources_balanced_allocation_args,
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
        ['resources[1].name: Duplicate value: "cpu"'],
    ),
    # NodeResourcesFitArgs
    (
        "fit IgnoredResources: too long value",
        validate_node_resources_fit_args,
        {
            "ignoredResources": ["a" * 64],
            "scoringStrategy": {"type": "LeastAllocated", "resources": []},
        },
        [
            f'ignoredResources[0]: Invalid value: "{"a" * 64}": name part must be no more than 63'
            f" characters"
        ],
    ),
    (
        "fit IgnoredResourceGroups: valid args",
        validate_node_resources_fit_args,
        {
            "ignoredResourceGroups": ["example.com"],
            "scoringStrategy": {"type": "LeastAllocated", "resources": []},
        },
        [],
    ),
    (
        "fit IgnoredResourceGroups: name is with slash",
        validate_node_resources_fit_args,
        {
            "ignoredResourceGroups": ["example.com/aaa"],
            "scoringStrategy": {"type": "LeastAllocated", "resources": []},
        },
        [
            'ignoredResourceGroups[0]: Invalid value: "example.com/aaa": resource group name'
            " can't contain '/'",
        ],
    ),
    (
        "fit ScoringStrategy: field is required",
        validate_node_resources_fit_args,
        {},
        ["scoringStrategy: Required value: ScoringStrategy field is required"],
    ),
    (
        "fit ScoringStrategy: type is unsupported",
        validate_node_resources_fit_args,
        {"scoringStrategy": {"type": "Invalid"}},
        [
            'scoringStrategy.type: Unsupported value: "Invalid": supported values:'
            ' "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
        ],
    ),
    (
        "fit ScoringStrategy: resource weight out of range",
        validate_node_resources_fit_args,
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 101}],
            }
        },
        [
            "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not"
            " in valid range (0, 100]"
        ],
    ),
    (
        "fit RequestedToCapacityRatio: shape required",
        validate_node_resources_fit_args,
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}],
            }
        },
        [
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when"
            " type is RequestedToCapacityRatio"
        ],
    ),
    (
        "fit RequestedToCapacityRatio: shape utilization not sorted, out of range, score too high",
        validate_node_resources_fit_args,
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}],
                "requestedToCapacityRatio": {
                    "shape": [
                        {"utilization": 30, "score": 3},
                        {"utilization": 20, "score": 11},
                        {"utilization": 101, "score": 1},
                    ]
                },
            }
        },
        [
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 20:"
            " values must be sorted in increasing order",
            "scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: not in"
            " valid range [0, 10]",
            "scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 101:"
            " not in valid range [0, 100]",
        ],
    ),
    (
        "fit RequestedToCapacityRatio: empty shape",
        validate_node_resources_fit_args,
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": []},
            }
        },
        [
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point"
            " must be specified"
        ],
    ),
    (
        "fit requestedToCapacityRatio with another type",
        validate_node_resources_fit_args,
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "requestedToCapacityRatio": {"shape": [{"utilization": 1, "score": 1}]},
            }
        },
        [
            "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not"
            " RequestedToCapacityRatio"
        ],
    ),
    # NodeAffinityArgs
    ("affinity empty", validate_node_affinity_args, {}, []),
    (
        "affinity valid added affinity",
        validate_node_affinity_args,
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "label-1", "operator": "In", "values": ["label-1-val"]}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                            ]
                        },
                    }
                ],
            }
        },
        [],
    ),
]


@pytest.mark.parametrize(
    ("check", "args", "want"), [c[1:] for c in ARGS_CASES], ids=[c[0] for c in ARGS_CASES]
)
def test_validate_args(check: Any, args: dict[str, Any], want: list[str]) -> None:
    assert [str(e) for e in check("", args)] == want


def test_invalid_added_affinity_names_its_field() -> None:
    """``ValidateNodeAffinityArgs`` "invalid added affinity": a bad operator is named under
    ``addedAffinity`` (the detail is the pod validation's)."""
    errs = validate_node_affinity_args(
        "args",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "label-1", "operator": "Foo"}]}
                    ]
                }
            }
        },
    )
    assert len(errs) == 1
    assert errs[0].field.startswith(
        "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    )
    assert "Foo" in str(errs[0])

"""The fields of ``kubescheduler.config.k8s.io/v1`` (``k8s.io/kube-scheduler/config/v1``:
``types.go``, ``types_pluginargs.go``), in ``kube.strict``'s schema form, so a
KubeSchedulerConfiguration is decoded as strictly as kube-scheduler's codec decodes it: a field
the struct does not have is named (``unknown field "profiles[0].plugins.score.enabeld"``), a
value of the wrong JSON type gets Go's ``json: cannot unmarshal`` message. Type names carry a
``V1`` prefix as the generated schema's do (Go's messages drop it); the args refer to the
generated schema's core types (``V1NodeAffinity``, ``V1TopologySpreadConstraint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["ARGS_TYPES", "CONFIG_TYPE", "EXTENSION_POINTS", "TYPES"]

CONFIG_TYPE: Final = "V1KubeSchedulerConfiguration"

_PLUGIN_SET: Final = {"enabled": "list[V1Plugin]", "disabled": "list[V1Plugin]"}
EXTENSION_POINTS: Final = (
    "multiPoint",
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
"""``Plugins``' fields, in ``mergePlugins``' order (validation walks them in the same order)."""
_TYPE_META: Final = {"apiVersion": "str", "kind": "str"}

TYPES: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        CONFIG_TYPE: {
            **_TYPE_META,
            "parallelism": "int",
            "leaderElection": "V1LeaderElectionConfiguration",
            "clientConnection": "V1ClientConnectionConfiguration",
            "healthzBindAddress": "str",
            "metricsBindAddress": "str",
            "enableProfiling": "bool",
            "enableContentionProfiling": "bool",
            "percentageOfNodesToScore": "int",
            "podInitialBackoffSeconds": "int",
            "podMaxBackoffSeconds": "int",
            "profiles": "list[V1KubeSchedulerProfile]",
            "extenders": "list[object]",
            "delayCacheUntilActive": "bool",
        },
        "V1LeaderElectionConfiguration": {
            "leaderElect": "bool",
            "leaseDuration": "str",
            "renewDeadline": "str",
            "retryPeriod": "str",
            "resourceLock": "str",
            "resourceName": "str",
            "resourceNamespace": "str",
        },
        "V1ClientConnectionConfiguration": {
            "kubeconfig": "str",
            "acceptContentTypes": "str",
            "contentType": "str",
            "qps": "float",
            "burst": "int",
        },
        "V1KubeSchedulerProfile": {
            "schedulerName": "str",
            "percentageOfNodesToScore": "int",
            "plugins": "V1Plugins",
            "pluginConfig": "list[V1PluginConfig]",
        },
        "V1Plugins": dict.fromkeys(EXTENSION_POINTS, "V1PluginSet"),
        "V1PluginSet": _PLUGIN_SET,
        "V1Plugin": {"name": "str", "weight": "int"},
        "V1PluginConfig": {"name": "str", "args": "object"},
        # The args of the in-tree plugins (types_pluginargs.go).
        "V1DefaultPreemptionArgs": {
            **_TYPE_META,
            "minCandidateNodesPercentage": "int",
            "minCandidateNodesAbsolute": "int",
        },
        "V1InterPodAffinityArgs": {
            **_TYPE_META,
            "hardPodAffinityWeight": "int",
            "ignorePreferredTermsOfExistingPods": "bool",
        },
        "V1NodeResourcesFitArgs": {
            **_TYPE_META,
            "ignoredResources": "list[str]",
            "ignoredResourceGroups": "list[str]",
            "scoringStrategy": "V1ScoringStrategy",
        },
        "V1ScoringStrategy": {
            "type": "str",
            "resources": "list[V1ResourceSpec]",
            "requestedToCapacityRatio": "V1RequestedToCapacityRatioParam",
        },
        "V1RequestedToCapacityRatioParam": {"shape": "list[V1UtilizationShapePoint]"},
        "V1UtilizationShapePoint": {"utilization": "int", "score": "int"},
        "V1ResourceSpec": {"name": "str", "weight": "int"},
        "V1NodeResourcesBalancedAllocationArgs": {
            **_TYPE_META,
            "resources": "list[V1ResourceSpec]",
        },
        "V1PodTopologySpreadArgs": {
            **_TYPE_META,
            "defaultConstraints": "list[V1TopologySpreadConstraint]",
            "defaultingType": "str",
        },
        "V1NodeAffinityArgs": {**_TYPE_META, "addedAffinity": "V1NodeAffinity"},
        "V1VolumeBindingArgs": {
            **_TYPE_META,
            "bindTimeoutSeconds": "int",
            "shape": "list[V1UtilizationShapePoint]",
        },
    }
)
"""Type name -> field -> type, for ``kube.strict.check_object(extra_types=...)``."""

ARGS_TYPES: Final[Mapping[str, str]] = MappingProxyType(
    {
        name: f"V1{name}Args"
        for name in (
            "DefaultPreemption",
            "InterPodAffinity",
            "NodeResourcesFit",
            "NodeResourcesBalancedAllocation",
            "PodTopologySpread",
            "NodeAffinity",
            "VolumeBinding",
        )
    }
)
"""Plugin name -> the schema type of its args (kind ``<Plugin>Args``)."""

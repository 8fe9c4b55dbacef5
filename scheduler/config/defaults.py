"""Defaulting of a KubeSchedulerConfiguration, as ``pkg/scheduler/apis/config/v1/defaults.go``
and ``default_plugins.go`` do it, on the decoded document (a field absent here is a nil
pointer there), so that a file means here what it means to kube-scheduler.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from kube.objects import DEFAULT_SCHEDULER_NAME
from scheduler.config.schema import ARGS_TYPES, EXTENSION_POINTS
from scheduler.plugins.defaults import MULTI_POINT

__all__ = ["API_VERSION", "default_args", "merge_plugins", "set_defaults"]

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"

_DEFAULT_RESOURCES: Final = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})

Doc = dict[str, Any]


def _default_multi_point() -> list[Doc]:
    return [
        {"name": name} if weight is None else {"name": name, "weight": weight}
        for name, weight in MULTI_POINT
    ]


def _merge_plugin_set(default: Mapping[str, Any], custom: Mapping[str, Any]) -> Doc:
    """``mergePluginSet``: ``disabled`` drops defaults, ``*`` all of them; an enabled plugin
    that is a default replaces it in place, others are appended."""
    disabled = [{"name": p["name"]} for p in custom.get("disabled") or ()]
    disabled += [{"name": p["name"]} for p in default.get("disabled") or ()]
    off = {p["name"] for p in disabled}
    custom_enabled = list(custom.get("enabled") or ())
    by_name = {p["name"]: (i, p) for i, p in enumerate(custom_enabled)}
    replaced: set[int] = set()
    enabled: list[Doc] = []
    if "*" not in off:
        for default_plugin in default.get("enabled") or ():
            name = default_plugin["name"]
            if name in off:
                continue
            plugin = default_plugin
            if name in by_name:  # re-configured: the custom entry, in the default's place
                i, plugin = by_name[name]
                replaced.add(i)
            enabled.append(dict(plugin))
    enabled += [dict(p) for i, p in enumerate(custom_enabled) if i not in replaced]
    out: Doc = {}
    if enabled:
        out["enabled"] = enabled
    if disabled:
        out["disabled"] = disabled
    return out


def merge_plugins(default: Mapping[str, Any], custom: Mapping[str, Any] | None) -> Doc:
    """``mergePlugins``: a profile's own ``plugins`` merged into ``default``, point by point."""
    if custom is None:
        return copy.deepcopy(dict(default))
    out: Doc = {}
    for point in EXTENSION_POINTS:
        merged = _merge_plugin_set(default.get(point, {}), custom.get(point) or {})
        if merged:
            out[point] = merged
    return out


def _resources(given: list[Doc] | None) -> list[Doc]:
    if not given:
        return [dict(r) for r in _DEFAULT_RESOURCES]
    return [{**r, "weight": r.get("weight") or 1} for r in given]


def _fit(args: Doc) -> None:
    strategy = args.get("scoringStrategy")
    if strategy is None:
        args["scoringStrategy"] = {"type": "LeastAllocated", "resources": _resources(None)}
        return
    strategy["resources"] = _resources(strategy.get("resources"))


def _balanced(args: Doc) -> None:
    args["resources"] = _resources(args.get("resources"))


def _preemption(args: Doc) -> None:
    args.setdefault("minCandidateNodesPercentage", 10)
    args.setdefault("minCandidateNodesAbsolute", 100)


def _inter_pod_affinity(args: Doc) -> None:
    args.setdefault("hardPodAffinityWeight", 1)
    args.setdefault("ignorePreferredTermsOfExistingPods", False)


def _spread(args: Doc) -> None:
    if not args.get("defaultingType"):
        args["defaultingType"] = "System"


def _volume_binding(args: Doc) -> None:
    args.setdefault("bindTimeoutSeconds", 600)


_ARGS_DEFAULTS: Final[Mapping[str, Callable[[Doc], None]]] = {
    "DefaultPreemption": _preemption,
    "InterPodAffinity": _inter_pod_affinity,
    "NodeAffinity": lambda args: None,
    "NodeResourcesBalancedAllocation": _balanced,
    "NodeResourcesFit": _fit,
    "PodTopologySpread": _spread,
    "VolumeBinding": _volume_binding,
}


def default_args(plugin: str, args: Mapping[str, Any] | None = None) -> Doc | None:
    """``plugin``'s args with kube's defaults (``SetDefaults_<Plugin>Args``), with their
    apiVersion and kind; None for a plugin without args."""
    setter = _ARGS_DEFAULTS.get(plugin)
    if setter is None:
        return None
    out: Doc = copy.deepcopy(dict(args or {}))
    out.setdefault("apiVersion", API_VERSION)
    out.setdefault("kind", ARGS_TYPES[plugin].removeprefix("V1"))
    setter(out)
    return out


def _plugin_names(plugins: Mapping[str, Any]) -> list[str]:
    """``pluginsNames``: every enabled plugin's name, sorted."""
    names = {p["name"] for point in plugins.values() for p in point.get("enabled") or ()}
    return sorted(names)


def _default_profile(profile: Doc) -> None:
    """The profile's ``plugins`` are the default MultiPoint list merged with its own; each
    plugin that takes args and has no ``pluginConfig`` entry gets one with its defaulted args,
    in name order; given args are defaulted too."""
    default = {"multiPoint": {"enabled": _default_multi_point()}}
    profile["plugins"] = plugins = merge_plugins(default, profile.get("plugins"))
    configs: list[Doc] = profile.setdefault("pluginConfig", [])
    have = set()
    for entry in configs:
        have.add(entry.get("name"))
        args = default_args(entry.get("name", ""), entry.get("args"))
        if args is not None:
            entry["args"] = args
    for name in _plugin_names(plugins):
        if name in have:
            continue
        args = default_args(name)
        if args is not None:
            configs.append({"name": name, "args": args})


def set_defaults(document: Mapping[str, Any]) -> Doc:
    """A defaulted copy of a decoded KubeSchedulerConfiguration
    (``SetDefaults_KubeSchedulerConfiguration``).

    No profile gives one; a single profile without ``schedulerName`` is ``default-scheduler``;
    each profile as ``_default_profile``; the top-level numbers: ``parallelism`` 16,
    ``percentageOfNodesToScore`` 0 (adaptive), ``podInitialBackoffSeconds`` 1,
    ``podMaxBackoffSeconds`` 10, and the leader-election and client-connection defaults.
    """
    out: Doc = copy.deepcopy(dict(document))
    out.setdefault("apiVersion", API_VERSION)
    out.setdefault("kind", "KubeSchedulerConfiguration")
    out.setdefault("parallelism", 16)
    profiles: list[Doc] = out.get("profiles") or [{}]
    out["profiles"] = profiles
    if len(profiles) == 1 and profiles[0].get("schedulerName") is None:
        profiles[0]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    for profile in profiles:
        _default_profile(profile)
    out.setdefault("percentageOfNodesToScore", 0)
    election: Doc = out.setdefault("leaderElection", {})
    election.setdefault("leaderElect", True)
    election.setdefault("leaseDuration", "15s")
    election.setdefault("renewDeadline", "10s")
    election.setdefault("retryPeriod", "2s")
    if not election.get("resourceLock"):
        election["resourceLock"] = "leases"
    if not election.get("resourceNamespace"):
        election["resourceNamespace"] = "kube-system"
    if not election.get("resourceName"):
        election["resourceName"] = "kube-scheduler"
    client: Doc = out.setdefault("clientConnection", {})
    if not client.get("contentType"):
        client["contentType"] = "application/vnd.kubernetes.protobuf"
    if not client.get("qps"):
        client["qps"] = 50.0
    if not client.get("burst"):
        client["burst"] = 100
    out.setdefault("podInitialBackoffSeconds", 1)
    out.setdefault("podMaxBackoffSeconds", 10)
    out.setdefault("enableProfiling", True)
    if out["enableProfiling"]:
        out.setdefault("enableContentionProfiling", True)
    return out

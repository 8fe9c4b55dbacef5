"""A profile's plugins as kube-scheduler's framework builds them (``pkg/scheduler/framework/
runtime/framework.go``: ``NewFramework``, ``updatePluginList``, ``expandMultiPointPlugins``,
``getScoreWeights``) from a defaulted, validated profile, so that a profile runs the plugins,
in the order and with the weights, that kube-scheduler would run for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler.framework import MAX_NODE_SCORE, FilterPlugin, Framework, ScorePlugin
from scheduler.plugins.imagelocality import ImageLocalityScorer
from scheduler.plugins.interpodaffinity.filtering import InterPodAffinity
from scheduler.plugins.interpodaffinity.scoring import InterPodAffinityScorer
from scheduler.plugins.nodeaffinity import NodeAffinity, NodeAffinityScorer
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocationScorer
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.registry import (
    FILTER_REGISTRY,
    IN_TREE_PLUGINS,
    SCORE_REGISTRY,
    node_resources_fit_scorer,
)

__all__ = ["ProfileError", "SchedulerProfile", "build_profile", "expand_plugins"]

Doc = Mapping[str, Any]

# getExtensionPoints' order: the first point a MultiPoint name is checked at words the error.
_POINTS: Final = (
    ("preFilter", "PreFilter"),
    ("filter", "Filter"),
    ("postFilter", "PostFilter"),
    ("reserve", "Reserve"),
    ("preScore", "PreScore"),
    ("score", "Score"),
    ("preBind", "PreBind"),
    ("bind", "Bind"),
    ("postBind", "PostBind"),
    ("permit", "Permit"),
    ("preEnqueue", "PreEnqueue"),
    ("queueSort", "QueueSort"),
)
_MAX_TOTAL_SCORE: Final = 2**63 - 1


class ProfileError(ValueError):
    """A profile kube-scheduler would refuse to build; the message is kube's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerProfile:
    """One profile, built: what ``schedule_one`` and ``preempt`` run for its pods.

    ``plugins`` holds the plugin names per extension point after MultiPoint's expansion
    (kube's order), ``weights`` the Score weights; ``framework`` and ``score_plugins`` are
    the ones of them this library runs, with their args. ``percentage_of_nodes_to_score``
    is the profile's own (None: the configuration's).
    """

    scheduler_name: str
    plugins: Mapping[str, tuple[str, ...]]
    weights: Mapping[str, int]
    framework: Framework
    score_plugins: tuple[ScorePlugin, ...]
    percentage_of_nodes_to_score: int | None
    preemption: bool
    min_candidate_nodes_percentage: int
    min_candidate_nodes_absolute: int


def _enabled(plugins: Doc, point: str) -> list[Doc]:
    return list((plugins.get(point) or {}).get("enabled") or ())


def expand_plugins(plugins: Doc) -> dict[str, tuple[str, ...]]:
    """Each extension point's plugins after ``updatePluginList`` and
    ``expandMultiPointPlugins``; raises ``ProfileError`` as ``NewFramework`` fails.

    For each extension point the plugins enabled there come first as listed; then MultiPoint's
    plugins that implement it (skipping those disabled there, all of them with ``*``), in this
    order: the ones also enabled at the point itself (an override, in that list's order), the
    MultiPoint ones, then the rest of the point's own. A plugin kube's registry does not have,
    one named at a point it does not implement, or one registered twice stops the profile, with
    kube's words.
    """
    out: dict[str, tuple[str, ...]] = {}
    for point, kind in _POINTS:
        kind_name = f"{kind}Plugin"
        own: list[str] = []
        for p in _enabled(plugins, point):
            name = p["name"]
            if name not in IN_TREE_PLUGINS:
                raise ProfileError(f'{kind_name} "{name}" does not exist')
            if kind not in IN_TREE_PLUGINS[name]:
                raise ProfileError(f'plugin "{name}" does not extend {kind_name} plugin')
            if name in own:
                raise ProfileError(f'plugin "{name}" already registered as "{kind_name}"')
            own.append(name)
        out[point] = tuple(own)
    multi = _enabled(plugins, "multiPoint")
    if not multi:
        return out
    for point, kind in _POINTS:
        kind_name = f"{kind}Plugin"
        disabled = {p["name"] for p in (plugins.get(point) or {}).get("disabled") or ()}
        if "*" in disabled:
            continue
        own = list(out[point])
        overrides: list[str] = []
        expanded: list[str] = []
        for p in multi:
            name = p["name"]
            if name not in IN_TREE_PLUGINS:
                raise ProfileError(f'{kind_name} "{name}" does not exist')
            if kind not in IN_TREE_PLUGINS[name] or name in disabled:
                continue
            if name in own:
                overrides.append(name)
                continue
            if name in expanded:
                raise ProfileError(f'plugin "{name}" already registered as "{kind_name}"')
            expanded.append(name)
        first = [n for n in own if n in overrides]
        rest = [n for n in own if n not in overrides]
        out[point] = (*first, *expanded, *rest)
    return out


def _weights(plugins: Doc, scorers: Sequence[str]) -> dict[str, int]:
    """``getScoreWeights``: a Score plugin's weight is the one given at Score, else at
    MultiPoint; 0 means 1; no overflow."""
    weights: dict[str, int] = {}
    total = 0
    for p in _enabled(plugins, "score") + _enabled(plugins, "multiPoint"):
        name = p["name"]
        if name not in scorers or name in weights:
            continue
        weights[name] = p.get("weight") or 1
        if weights[name] * MAX_NODE_SCORE > _MAX_TOTAL_SCORE - total:
            raise ProfileError("total score of Score plugins could overflow")
        total += weights[name] * MAX_NODE_SCORE
    return weights


def _filter_plugin(name: str, args: Doc) -> FilterPlugin:
    if name == "NodeAffinity":
        return NodeAffinity(added_affinity=args.get("addedAffinity"))
    if name == "NodeResourcesFit":
        return NodeResourcesFit(
            ignored_resources=args.get("ignoredResources") or (),
            ignored_resource_groups=args.get("ignoredResourceGroups") or (),
        )
    if name == "PodTopologySpread":
        return PodTopologySpread(
            default_constraints=args.get("defaultConstraints") or (),
            defaulting_type=args.get("defaultingType") or "System",
        )
    if name == "InterPodAffinity":
        return InterPodAffinity()
    plugin: FilterPlugin = FILTER_REGISTRY[name]()
    return plugin


def _score_plugin(name: str, weight: int, args: Doc) -> ScorePlugin:
    if name == "NodeResourcesFit":
        return node_resources_fit_scorer(weight, args.get("scoringStrategy"))
    if name == "NodeResourcesBalancedAllocation":
        return BalancedAllocationScorer(weight, resources=args.get("resources") or None)
    if name == "NodeAffinity":
        return NodeAffinityScorer(weight, added_affinity=args.get("addedAffinity"))
    if name == "PodTopologySpread":
        return PodTopologySpread(
            weight,
            default_constraints=args.get("defaultConstraints") or (),
            defaulting_type=args.get("defaultingType") or "System",
        )
    if name == "InterPodAffinity":
        return InterPodAffinityScorer(
            weight,
            hard_pod_affinity_weight=args.get("hardPodAffinityWeight", 1),
            ignore_preferred_terms_of_existing_pods=bool(
                args.get("ignorePreferredTermsOfExistingPods", False)
            ),
        )
    if name == "ImageLocality":
        return ImageLocalityScorer(weight=weight)
    plugin: ScorePlugin = SCORE_REGISTRY[name](weight=weight)
    return plugin


def build_profile(profile: Doc) -> SchedulerProfile:
    """``NewFramework`` for one defaulted, validated profile; ``ProfileError`` as kube's.

    What runs: the Filter and Score plugins this library has (``scheduler.plugins.registry``),
    each with its args from ``pluginConfig``; DefaultPreemption at PostFilter; PrioritySort (the
    only queue sort there is). The volume plugins and DynamicResources are accepted and left
    out, as in the default profile (``scheduler.schedule.unmodelled_warning`` names the pods
    they would judge). A plugin's PreFilter and PreScore run with its Filter and Score.
    """
    name = profile.get("schedulerName", "")
    plugins: Doc = profile.get("plugins") or {}
    args: dict[str, Doc] = {}
    for entry in profile.get("pluginConfig") or ():
        if entry["name"] in args:
            raise ProfileError(f"repeated config for plugin {entry['name']}")
        args[entry["name"]] = entry.get("args") or {}
    points = expand_plugins(plugins)
    if len(points["queueSort"]) != 1:
        raise ProfileError(
            "only one queue sort plugin required for profile with scheduler name"
            f' "{name}", but got {len(points["queueSort"])}'
        )
    if not points["bind"]:
        raise ProfileError(
            f'at least one bind plugin is needed for profile with scheduler name "{name}"'
        )
    weights = _weights(plugins, points["score"])
    try:
        filters = [
            _filter_plugin(p, args.get(p, {})) for p in points["filter"] if p in FILTER_REGISTRY
        ]
        scorers = tuple(
            _score_plugin(p, weights[p], args.get(p, {}))
            for p in points["score"]
            if p in SCORE_REGISTRY
        )
    except ValueError as exc:  # an args check the validation does not word
        raise ProfileError(str(exc)) from None
    preemption = args.get("DefaultPreemption", {})
    return SchedulerProfile(
        scheduler_name=name,
        plugins=points,
        weights=weights,
        framework=Framework(filters),
        score_plugins=scorers,
        percentage_of_nodes_to_score=profile.get("percentageOfNodesToScore"),
        preemption="DefaultPreemption" in points["postFilter"],
        min_candidate_nodes_percentage=preemption.get("minCandidateNodesPercentage", 10),
        min_candidate_nodes_absolute=preemption.get("minCandidateNodesAbsolute", 100),
    )

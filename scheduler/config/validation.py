"""Validation of a defaulted KubeSchedulerConfiguration with kube's messages
(``pkg/scheduler/apis/config/validation``: ``validation.go``, ``validation_pluginargs.go``).

Each check names the field as kube's ``field.Path`` prints it (``profiles[1].schedulerName``)
and words the rule as kube does (``Required value``, ``Duplicate value``, ``not in valid range
[0-100]``…), so an operator reads here what kube-scheduler would print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kube.apierrors import ErrorType, FieldError
from kube.labels import qualified_name_errors
from kube.objects import Pod
from kube.reader import InvalidObject
from scheduler.config.defaults import API_VERSION
from scheduler.config.schema import EXTENSION_POINTS

__all__ = [
    "INVALID_PLUGINS",
    "validate_configuration",
    "validate_default_preemption_args",
    "validate_inter_pod_affinity_args",
    "validate_node_affinity_args",
    "validate_node_resources_balanced_allocation_args",
    "validate_node_resources_fit_args",
    "validate_pod_topology_spread_args",
]

Doc = Mapping[str, Any]

INVALID_PLUGINS: Final = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
"""``invalidPluginsByVersion`` for v1: plugins removed before or in this version."""

_STAGES: Final = tuple(p for p in EXTENSION_POINTS if p != "multiPoint")
_STRATEGIES: Final = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_PRIORITY_SCORE: Final = 10


def _dot(path: str) -> str:
    """``path`` ready for a child (kube's tests validate args at a nil path)."""
    return f"{path}." if path else ""


def _duplicate(field: str, value: object) -> FieldError:
    return FieldError(ErrorType.Duplicate, field, "", value)


def _percentage(path: str, value: object) -> list[FieldError]:
    if isinstance(value, int) and not 0 <= value <= 100:
        return [FieldError.invalid(path, value, "not in valid range [0-100]")]
    return []


def validate_configuration(doc: Doc) -> list[FieldError]:
    """``ValidateKubeSchedulerConfiguration`` on a defaulted document."""
    errs: list[FieldError] = []
    election = doc.get("leaderElection") or {}
    if election.get("leaderElect") and election.get("resourceLock") != "leases":
        errs.append(
            FieldError.invalid(
                "leaderElection.resourceLock",
                election.get("resourceLock"),
                'resourceLock value must be "leases"',
            )
        )
    parallelism = doc.get("parallelism", 16)
    if parallelism <= 0:
        errs.append(
            FieldError.invalid(
                "parallelism", parallelism, "should be an integer value greater than zero"
            )
        )
    profiles: Sequence[Doc] = doc.get("profiles") or ()
    if not profiles:
        errs.append(FieldError.required("profiles"))
    else:
        seen: dict[str, int] = {}
        for i, profile in enumerate(profiles):
            path = f"profiles[{i}]"
            errs += _validate_profile(path, profile)
            name = profile.get("schedulerName") or ""
            if name in seen:
                errs.append(
                    _duplicate(
                        f"{_dot(path)}schedulerName", f"profiles[{seen[name]}].schedulerName"
                    )
                )
            seen[name] = i
        errs += _validate_common_queue_sort(profiles)
    errs += _percentage("percentageOfNodesToScore", doc.get("percentageOfNodesToScore"))
    initial = doc.get("podInitialBackoffSeconds", 1)
    maximum = doc.get("podMaxBackoffSeconds", 10)
    if initial <= 0:
        errs.append(
            FieldError.invalid("podInitialBackoffSeconds", initial, "must be greater than 0")
        )
    if maximum < initial:
        errs.append(
            FieldError.invalid(
                "podMaxBackoffSeconds",
                maximum,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    if doc.get("extenders"):  # beyond kube: an HTTP extender's answers cannot be predicted
        errs.append(
            FieldError.forbidden(
                "extenders", "scheduler extenders are not modelled: their answers are unknown here"
            )
        )
    return errs


def _invalid_plugin(path: str, name: object) -> FieldError:
    return FieldError.invalid(
        path,
        name,
        f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version'
        f' "{API_VERSION}")',
    )


def _validate_profile(path: str, profile: Doc) -> list[FieldError]:
    errs: list[FieldError] = []
    if not profile.get("schedulerName"):
        errs.append(FieldError.required(f"{_dot(path)}schedulerName"))
    errs += _percentage(
        f"{_dot(path)}percentageOfNodesToScore", profile.get("percentageOfNodesToScore")
    )
    plugins: Doc = profile.get("plugins") or {}
    for stage in _STAGES:
        for j, plugin in enumerate((plugins.get(stage) or {}).get("enabled") or ()):
            if plugin.get("name") in INVALID_PLUGINS:
                errs.append(
                    _invalid_plugin(f"{_dot(path)}plugins.{stage}.enabled[{j}]", plugin["name"])
                )
    seen: set[str] = set()
    for j, entry in enumerate(profile.get("pluginConfig") or ()):
        at = f"{_dot(path)}pluginConfig[{j}]"
        name = entry.get("name", "")
        if name in seen:
            errs.append(_duplicate(at, name))
        seen.add(name)
        if name in INVALID_PLUGINS:
            errs.append(_invalid_plugin(at, name))
            continue
        check = ARGS_VALIDATION.get(name)
        if check is not None:
            errs += check(f"{at}.args", entry.get("args") or {})
    return errs


def _validate_common_queue_sort(profiles: Sequence[Doc]) -> list[FieldError]:
    """``validateCommonQueueSort``: every profile has the first one's queueSort."""
    errs: list[FieldError] = []

    def queue_sort(profile: Doc) -> Doc:
        found: Doc = (profile.get("plugins") or {}).get("queueSort") or {}
        return found

    canon = queue_sort(profiles[0])
    enabled = canon.get("enabled") or ()
    if len(enabled) > 1:
        errs.append(
            FieldError.invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    name = enabled[0]["name"] if enabled else ""
    args = next(
        (
            c.get("args")
            for c in profiles[0].get("pluginConfig") or ()
            if name and c["name"] == name
        ),
        None,
    )
    for i in range(1, len(profiles)):
        current = queue_sort(profiles[i])
        if current != canon:
            errs.append(
                FieldError.invalid(
                    f"profiles[{i}].plugins.queueSort", current, "must be the same for all profiles"
                )
            )
        errs.extend(
            FieldError.invalid(
                f"profiles[{i}].pluginConfig.args",
                c.get("args"),
                "queueSort must be the same for all profiles",
            )
            for c in profiles[i].get("pluginConfig") or ()
            if c.get("name") == name and c.get("args") != args
        )
    return errs


# --- the args of the in-tree plugins ----------------------------------------------------------


def validate_default_preemption_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidateDefaultPreemptionArgs``."""
    errs: list[FieldError] = []
    pct_path = f"{_dot(path)}minCandidateNodesPercentage"
    abs_path = f"{_dot(path)}minCandidateNodesAbsolute"
    pct = args.get("minCandidateNodesPercentage", 10)
    absolute = args.get("minCandidateNodesAbsolute", 100)
    if not 0 <= pct <= 100:
        errs.append(FieldError.invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(FieldError.invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(
            FieldError.invalid(
                pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"
            )
        )
        errs.append(
            FieldError.invalid(
                abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        )
    return errs


def validate_inter_pod_affinity_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidateInterPodAffinityArgs``."""
    weight = args.get("hardPodAffinityWeight", 1)
    if not 0 <= weight <= 100:
        return [
            FieldError.invalid(
                f"{_dot(path)}hardPodAffinityWeight", weight, "not in valid range [0, 100]"
            )
        ]
    return []


def _label_name(path: str, value: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName``."""
    return [FieldError.invalid(path, value, msg) for msg in qualified_name_errors(value)]


def validate_pod_topology_spread_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidatePodTopologySpreadArgs``."""
    errs: list[FieldError] = []
    defaulting = args.get("defaultingType", "System")
    constraints: Sequence[Doc] = args.get("defaultConstraints") or ()
    if defaulting not in ("System", "List"):
        errs.append(
            FieldError.not_supported(f"{_dot(path)}defaultingType", defaulting, ["System", "List"])
        )
    elif defaulting == "System" and constraints:
        errs.append(
            FieldError.invalid(
                f"{_dot(path)}defaultingType", defaulting, "when .defaultConstraints are not empty"
            )
        )
    base = f"{_dot(path)}defaultConstraints"
    for i, c in enumerate(constraints):
        p = f"{base}[{i}]"
        max_skew = c.get("maxSkew", 0)
        if max_skew <= 0:
            errs.append(FieldError.invalid(f"{p}.maxSkew", max_skew, "not in valid range (0, inf)"))
        key = c.get("topologyKey", "")
        if not key:
            errs.append(FieldError.required(f"{p}.topologyKey", "can not be empty"))
        else:
            errs += _label_name(f"{p}.topologyKey", key)
        when = c.get("whenUnsatisfiable", "")
        if not when:
            errs.append(FieldError.required(f"{p}.whenUnsatisfiable", "can not be empty"))
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                FieldError.not_supported(
                    f"{p}.whenUnsatisfiable", when, ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        if c.get("labelSelector") is not None:
            errs.append(
                FieldError.forbidden(
                    f"{p}.labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        for other in constraints[:i]:
            if (other.get("topologyKey"), other.get("whenUnsatisfiable")) == (key, when):
                errs.append(_duplicate(p, f"{{{key}, {when}}}"))
                break
    return errs


def _function_shape(path: str, shape: Sequence[Doc]) -> list[FieldError]:
    """``validateFunctionShape``."""
    if not shape:
        return [FieldError.required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].get("utilization", 0) >= shape[i].get("utilization", 0):
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].utilization",
                    shape[i].get("utilization", 0),
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        if not 0 <= utilization <= 100:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].utilization", utilization, "not in valid range [0, 100]"
                )
            )
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].score",
                    score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errs


def _resources(path: str, resources: Sequence[Doc]) -> list[FieldError]:
    """``validateResources``."""
    errs: list[FieldError] = []
    for i, r in enumerate(resources):
        weight = r.get("weight", 0)
        if not 0 < weight <= 100:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].weight",
                    weight,
                    f"resource weight of {r.get('name', '')} not in valid range (0, 100]",
                )
            )
    return errs


def validate_node_resources_balanced_allocation_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidateNodeResourcesBalancedAllocationArgs``."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, r in enumerate(args.get("resources") or ()):
        name = r.get("name", "")
        if name in seen:
            errs.append(_duplicate(f"{_dot(path)}resources[{i}].name", name))
        seen.add(name)
        if r.get("weight", 0) != 1:
            errs.append(
                FieldError.invalid(
                    f"{_dot(path)}resources[{i}].weight", r.get("weight", 0), "must be 1"
                )
            )
    return errs


def validate_node_resources_fit_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidateNodeResourcesFitArgs``. kube validates these args only when the plugin is
    built, without a path (its table keys the check under ``NodeResourcesFitArgs``); here they
    are checked with the others and named in full, on the operator's side."""
    errs: list[FieldError] = []
    for i, res in enumerate(args.get("ignoredResources") or ()):
        errs += _label_name(f"{_dot(path)}ignoredResources[{i}]", res)
    for i, group in enumerate(args.get("ignoredResourceGroups") or ()):
        at = f"{_dot(path)}ignoredResourceGroups[{i}]"
        if "/" in group:
            errs.append(FieldError.invalid(at, group, "resource group name can't contain '/'"))
        errs += _label_name(at, group)
    at = f"{_dot(path)}scoringStrategy"
    strategy: Doc | None = args.get("scoringStrategy")
    if strategy is None:
        errs.append(FieldError.required(at, "ScoringStrategy field is required"))
        return errs
    kind = strategy.get("type", "")
    if kind not in _STRATEGIES:
        errs.append(FieldError.not_supported(f"{at}.type", kind, sorted(_STRATEGIES)))
    errs += _resources(f"{at}.resources", strategy.get("resources") or ())
    ratio: Doc | None = strategy.get("requestedToCapacityRatio")
    if kind == "RequestedToCapacityRatio":
        if ratio is None:
            errs.append(
                FieldError.required(
                    f"{at}.requestedToCapacityRatio",
                    "must be specified when type is RequestedToCapacityRatio",
                )
            )
        else:
            errs += _function_shape(
                f"{at}.requestedToCapacityRatio.shape", ratio.get("shape") or ()
            )
    elif ratio is not None:
        errs.append(
            FieldError.forbidden(
                f"{at}.requestedToCapacityRatio",
                "must be nil when type is not RequestedToCapacityRatio",
            )
        )
    return errs


_POD_PATH: Final = "spec.affinity.nodeAffinity"


def validate_node_affinity_args(path: str, args: Doc) -> list[FieldError]:
    """``ValidateNodeAffinityArgs``: ``addedAffinity`` must be a node affinity a pod could
    carry (keys, operators and values of its selector terms, weights of its preferences)."""
    added = args.get("addedAffinity")
    if not added:
        return []
    try:
        Pod.from_dict({"metadata": {"name": "args"}, "spec": {"affinity": {"nodeAffinity": added}}})
    except InvalidObject as exc:
        where = exc.field.replace(_POD_PATH, f"{_dot(path)}addedAffinity", 1)
        return [FieldError(ErrorType.Invalid, where, exc.detail)]
    return []


ARGS_VALIDATION: Final[Mapping[str, Callable[[str, Doc], list[FieldError]]]] = {
    "DefaultPreemption": validate_default_preemption_args,
    "InterPodAffinity": validate_inter_pod_affinity_args,
    "NodeAffinity": validate_node_affinity_args,
    "NodeResourcesBalancedAllocation": validate_node_resources_balanced_allocation_args,
    "NodeResourcesFit": validate_node_resources_fit_args,
    "PodTopologySpread": validate_pod_topology_spread_args,
}
"""Plugin name -> the check of its args (``validatePluginConfig``'s table)."""

"""The test cases of a ``performance-config.yaml``, decoded and checked as upstream does.

A test case (``scheduler_perf.go``'s ``testCase``) is a ``workloadTemplate`` of ops with
``$params``, and ``workloads`` that give the params, labels, feature gates and the CI floor
(``threshold``, pods/s of the metric their selector names). ``load_config`` refuses what
upstream's ``getTestCases`` and ``validateTestCases`` refuse, naming it; the ops stay decoded
fields here, typed once a workload's params are known (``ops.plan``). ``select`` picks
workloads by name and by upstream's label filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kube.strict import ManifestError, parse_yaml, read_text
from scheduler.config import ConfigError as SchedulerConfigError
from scheduler.config import KubeSchedulerConfiguration
from scheduler.config import load_config as load_scheduler_config

from . import gojson
from .errors import ConfigError

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIGS",
    "DEFAULT_TABLE",
    "OP_FIELDS",
    "UNMODELLED_OPS",
    "TestCase",
    "Workload",
    "enabled",
    "load_config",
    "select",
]

CONFIG_DIR: Final = Path(__file__).resolve().parent  # the package sits beside its configs
DEFAULT_CONFIGS: Final = (
    CONFIG_DIR / "misc" / "performance-config.yaml",
    CONFIG_DIR / "topology_spreading" / "performance-config.yaml",
    CONFIG_DIR / "affinity" / "performance-config.yaml",
)
# The default table: every workload with a floor, at the size upstream's CI runs (affinity/'s
# in both variants of its SchedulerQueueingHints gate).
DEFAULT_TABLE: Final = (
    "SchedulingBasic/5000Nodes_10000Pods",
    "SchedulingDaemonset/15000Nodes",
    "PreemptionBasic/5000Nodes",
    "PreemptionAsync/5000Nodes",
    "Unschedulable/5kNodes/100Init/10kPods",
    "SchedulingWhileGated/1Node_10000GatedPods",
    "TopologySpreading/5000Nodes_5000Pods",
    "PreferredTopologySpreading/5000Nodes_5000Pods",
    "DefaultTopologySpreading/5000Nodes_50000Pods",
    "SchedulingWithNodeInclusionPolicy/5000Nodes",
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods_QueueingHintsEnabled",
    "SchedulingPodMatchingAntiAffinity/5000Nodes_5000Pods",
    "SchedulingPodMatchingAntiAffinity/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingPodAffinity/5000Nodes_5000Pods",
    "SchedulingPodAffinity/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
    "SchedulingPreferredPodAffinity/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods",
    "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingNodeAffinity/5000Nodes_10000Pods",
    "SchedulingNodeAffinity/5000Nodes_10000Pods_QueueingHintsEnabled",
    "MixedSchedulingBasePod/5000Nodes_5000Pods",
    "MixedSchedulingBasePod/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes_2000Pods_QueueingHintsEnabled",
    "SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    "SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods_QueueingHintsEnabled",
    "SchedulingRequiredPodAffinityWithNSSelector/5000Nodes_2000Pods",
    "SchedulingRequiredPodAffinityWithNSSelector/5000Nodes_2000Pods_QueueingHintsEnabled",
    "SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods",
    "SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods_QueueingHintsEnabled",
    "SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10000GatedPods",
    "SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10000GatedPods_QueueingHintsEnabled",
)

TEST_CASE_FIELDS: Final = (
    "name",
    "featureGates",
    "metricsCollectorConfig",
    "workloadTemplate",
    "workloads",
    "schedulerConfigPath",
    "defaultPodTemplatePath",
    "labels",
    "defaultThresholdMetricSelector",
)
WORKLOAD_FIELDS: Final = (
    "name",
    "params",
    "labels",
    "threshold",
    "thresholdMetricSelector",
    "featureGates",
)
METRIC_SELECTOR_FIELDS: Final = ("name", "labels", "dataBucket", "expectLower")
OP_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "createNodes": (
        "opcode",
        "count",
        "countParam",
        "nodeTemplatePath",
        "nodeAllocatableStrategy",
        "labelNodePrepareStrategy",
        "uniqueNodeLabelStrategy",
        "templateParams",
    ),
    "createNamespaces": ("opcode", "prefix", "count", "countParam", "namespaceTemplatePath"),
    "createPods": (
        "opcode",
        "count",
        "countParam",
        "countMultiplierParam",
        "steadyState",
        "steadyStateParam",
        "duration",
        "durationParam",
        "collectMetrics",
        "namespace",
        "podTemplatePath",
        "skipWaitToCompletion",
        "persistentVolumeTemplatePath",
        "persistentVolumeClaimTemplatePath",
        "templateParams",
        "signatureBatchSize",
        "signatureBatchSizeParam",
    ),
    "createPodSets": ("opcode", "count", "countParam", "namespacePrefix", "createPodsOp"),
    "createAny": ("opcode", "namespace", "templatePath", "count", "countParam", "templateParams"),
    "deletePods": (
        "opcode",
        "namespace",
        "labelSelector",
        "skipWaitToCompletion",
        "deletePodsPerSecond",
    ),
    "churn": ("opcode", "mode", "number", "intervalMilliseconds", "namespace", "templatePaths"),
    "barrier": ("opcode", "namespaces", "labelSelector", "stageRequirement"),
    "sleep": ("opcode", "duration", "durationParam"),
    "startCollectingMetrics": ("opcode", "name", "namespaces", "labelSelector"),
    "stopCollectingMetrics": ("opcode",),
}
# Upstream opcodes this runner does not play (their workloads say so).
UNMODELLED_OPS: Final = {
    "allocResourceClaims": "DRA ResourceClaims (DynamicResources is not modelled)",
    "createResourceClaims": "DRA ResourceClaims (DynamicResources is not modelled)",
    "createResourceDriver": "DRA drivers (DynamicResources is not modelled)",
    "updateAny": "updates from templates",
    "createPodGroups": "PodGroups (gang scheduling is not modelled)",
    "waitForPodGroups": "PodGroups (gang scheduling is not modelled)",
    "startCollectingProfile": "Go CPU profiles",
    "stopCollectingProfile": "Go CPU profiles",
}


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...]
    threshold: float
    metric: str
    bucket: str
    expect_lower: bool
    feature_gates: Mapping[str, bool]


@dataclass(frozen=True, slots=True)
class TestCase:
    name: str
    source: Path
    ops: tuple[Mapping[str, Any], ...]  # decoded fields, opcode canonical
    workloads: tuple[Workload, ...]
    labels: tuple[str, ...]
    feature_gates: Mapping[str, bool]
    default_pod_template: Path | None
    scheduler_config: str
    # schedulerConfigPath read as kube-scheduler reads --config (from the config's directory)
    scheduler_configuration: KubeSchedulerConfiguration | None = None

    @property
    def base(self) -> Path:
        return self.source.parent

    def full_name(self, w: Workload) -> str:
        return f"{self.name}/{w.name}"


def _gates(raw: object, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, not {raw!r}")
    return {str(k): gojson.boolean(v, f"{where}.{k}") for k, v in raw.items()}


def _metric_selector(raw: object, where: str) -> tuple[str, str, bool] | None:
    if raw is None:
        return None
    f = gojson.fields(raw, METRIC_SELECTOR_FIELDS, where)
    bucket = gojson.string(f.get("dataBucket", ""), f"{where}.dataBucket")
    if not bucket:
        raise ConfigError(f"{where}: dataBucket should be set for metric {f.get('name', '')}")
    return (
        gojson.string(f.get("name", ""), f"{where}.name"),
        bucket,
        gojson.boolean(f.get("expectLower", False), f"{where}.expectLower"),
    )


def _threshold(raw: object, where: str) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, Mapping):  # per topic; this runner has the default topic only
        return 0.0
    value = float(gojson.integer(raw, where)) if isinstance(raw, int) else raw
    if isinstance(value, bool) or not isinstance(value, float):
        raise ConfigError(f"{where}: expected either float64 or topic name -> float64 map")
    if value < 0:
        raise ConfigError(f"{where}: invalid Threshold={value}; should be non-negative")
    return value


def _op(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, not {raw!r}")
    code = None
    for k, v in raw.items():
        if str(k).lower() == "opcode":
            code = v
    if not isinstance(code, str):
        raise ConfigError(f"{where}: decoding opcode: missing opcode")
    canonical = {c.lower(): c for c in (*OP_FIELDS, *UNMODELLED_OPS)}.get(code.lower())
    # Go compares the opcode string exactly.
    if canonical != code:
        raise ConfigError(f'{where}: unknown opcode "{code}"')
    if code in UNMODELLED_OPS:
        return {"opcode": code, "_raw": dict(raw)}
    fields = gojson.fields(raw, OP_FIELDS[code], f"{where} ({code})")
    fields["opcode"] = code
    return fields


def load_config(path: Path) -> list[TestCase]:
    """The test cases of one ``performance-config.yaml``; ``ConfigError`` when upstream's
    ``getTestCases`` / ``validateTestCases`` would refuse it."""
    source = str(path)
    try:
        docs, duplicates = parse_yaml(read_text(path), source=source)
    except ManifestError as exc:
        raise ConfigError(str(exc)) from None
    if duplicates:
        _, keys = next(iter(duplicates.values()))
        raise ConfigError(f'{source}: duplicate key "{keys[0]}"')
    if len(docs) != 1 or not isinstance(docs[0], list):
        raise ConfigError(f"{source}: expected one YAML list of test cases")
    cases: list[TestCase] = []
    seen: set[str] = set()
    for i, raw in enumerate(docs[0]):
        where = f"{source}: [{i}]"
        f = gojson.fields(raw, TEST_CASE_FIELDS, where)
        name = gojson.string(f.get("name", ""), f"{where}.name")
        where = f"{source}: {name or f'[{i}]'}"
        if name in seen:
            raise ConfigError(f"{where}: name is not unique")
        seen.add(name)
        template = f.get("workloadTemplate")
        if not isinstance(template, list) or not template:
            raise ConfigError(f"{where}: no ops defined")
        ops = tuple(_op(o, f"{where}: workloadTemplate[{j}]") for j, o in enumerate(template))
        if not any(
            o["opcode"] == "stopCollectingMetrics" or o.get("collectMetrics") is True for o in ops
        ):
            raise ConfigError(f"{where}: no op in the workload template collects metrics")
        default_selector = _metric_selector(
            f.get("defaultThresholdMetricSelector"), f"{where}.defaultThresholdMetricSelector"
        )
        raw_workloads = f.get("workloads")
        if not isinstance(raw_workloads, list) or not raw_workloads:
            raise ConfigError(f"{where}: no workloads defined")
        workloads: list[Workload] = []
        names: set[str] = set()
        for j, rw in enumerate(raw_workloads):
            wwhere = f"{where}: workloads[{j}]"
            wf = gojson.fields(rw, WORKLOAD_FIELDS, wwhere)
            wname = gojson.string(wf.get("name", ""), f"{wwhere}.name")
            if wname in names:
                raise ConfigError(f"{where}: workload name {wname} is not unique")
            names.add(wname)
            params = wf.get("params") or {}
            if not isinstance(params, Mapping):
                raise ConfigError(f"{wwhere}.params: expected an object")
            selector = (
                _metric_selector(
                    wf.get("thresholdMetricSelector"), f"{wwhere}.thresholdMetricSelector"
                )
                or default_selector
                or ("SchedulingThroughput", "Average", False)
            )
            workloads.append(
                Workload(
                    name=wname,
                    params=dict(params),
                    labels=tuple(gojson.string_list(wf.get("labels"), f"{wwhere}.labels")),
                    threshold=_threshold(wf.get("threshold"), f"{wwhere}.threshold"),
                    metric=selector[0],
                    bucket=selector[1],
                    expect_lower=selector[2],
                    feature_gates=_gates(wf.get("featureGates"), f"{wwhere}.featureGates"),
                )
            )
        default_pod = f.get("defaultPodTemplatePath")
        scheduler_config = gojson.string(
            f.get("schedulerConfigPath") or "", f"{where}.schedulerConfigPath"
        )
        cases.append(
            TestCase(
                name=name,
                source=path,
                ops=ops,
                workloads=tuple(workloads),
                labels=tuple(gojson.string_list(f.get("labels"), f"{where}.labels")),
                feature_gates=_gates(f.get("featureGates"), f"{where}.featureGates"),
                default_pod_template=(
                    None
                    if default_pod is None
                    else path.parent / gojson.string(default_pod, f"{where}.defaultPodTemplatePath")
                ),
                scheduler_config=scheduler_config,
                scheduler_configuration=_scheduler_configuration(
                    path.parent, scheduler_config, f"{where}.schedulerConfigPath"
                ),
            )
        )
    if not cases:
        raise ConfigError(f"{source}: no test cases defined")
    return cases


def _scheduler_configuration(
    base: Path, relative: str, where: str
) -> KubeSchedulerConfiguration | None:
    """The test case's KubeSchedulerConfiguration (upstream's ``loadSchedulerConfig``), read
    when the configs are: a bad one stops the run (exit 2) naming the field."""
    if not relative:
        return None
    try:
        return load_scheduler_config(base / relative)
    except SchedulerConfigError as exc:
        raise ConfigError(f"{where}: {exc.field}: {exc}") from None


def enabled(selectors: Sequence[str], labels: Iterable[str]) -> bool:
    """Upstream's label filter: ``label``/``+label`` must be present, ``-label`` absent."""
    have = set(labels)
    for raw in selectors:
        sel = raw.strip()
        if not sel:
            continue
        if sel.startswith("-"):
            if sel[1:] in have:
                return False
        elif sel.lstrip("+") not in have:
            return False
    return True


def select(
    cases: Sequence[TestCase], pattern: str | None, label_filter: str | None
) -> list[tuple[TestCase, Workload]]:
    """Workloads whose ``TestCase/Workload`` name matches ``pattern`` (a regex, searched) and
    whose labels pass ``label_filter``; without either, the names of ``DEFAULT_TABLE``."""
    selectors = label_filter.split(",") if label_filter else []
    regex = re.compile(pattern) if pattern else None
    out: list[tuple[TestCase, Workload]] = []
    for tc in cases:
        for w in tc.workloads:
            full = tc.full_name(w)
            if regex is None and not selectors:
                if full not in DEFAULT_TABLE:
                    continue
            elif regex is not None and not regex.search(full):
                continue
            if selectors and not enabled(selectors, (*tc.labels, *w.labels)):
                continue
            out.append((tc, w))
    return out

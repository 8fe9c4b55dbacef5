"""kube-scheduler's scheduler_perf workloads, run from their YAML, against ``scheduler``.

scheduler_perf (kubernetes ``test/integration/scheduler_perf``) describes each benchmark as
data: a test case is a ``workloadTemplate`` of opcodes (``createNodes``, ``createPods``,
``churn``, ``barrier``…) with ``$params``, and ``workloads`` that give the params and the CI
floor (``threshold``, pods/s). This runner reads those files as upstream does and plays them:

* decoding is Go's: field names match case-insensitively (``encoding/json``), an unknown field
  or opcode fails the file with its name; a ``$param`` must exist and be a number, and a
  workload param no op uses is an error, as upstream's ``unusedParams`` check;
* paths (``podTemplatePath``, ``nodeTemplatePath``, ``templatePath(s)``,
  ``defaultPodTemplatePath``) are relative to the config file's directory, where upstream's
  ``go test`` runs; templates go through a subset of Go's ``html/template`` (``{{.Index}}``,
  ``{{.Count}}``, template params and the arithmetic functions; anything else is named and
  refused), then are decoded strictly (``scheduler.strict``) into the object kube would store;
* names come from ``generateName`` plus five characters of the API server's alphabet (seeded,
  so a run is repeatable); nodes get ``kubernetes.io/hostname`` = their name and label
  strategies are applied over the name-sorted node list from the op's first index, as
  ``IntegrationTestNodePreparer`` does; each pod gets the ``signature`` label upstream's pod
  template adds; pods without a template are ``makeBasePod`` (pause, 100m / 500Mi), nodes
  ``makeBaseNode`` (4 CPU, 32Gi, 110 pods);
* pods go to the namespace ``namespace-<op index>`` unless one is named; ``barrier`` waits for
  the pods counted by ``skipWaitToCompletion`` ops (``Scheduled`` or ``Attempted``); ``churn``
  creates (or creates and deletes) its objects every ``intervalMilliseconds`` of wall time
  while later ops run; ``deletePods`` deletes at ``deletePodsPerSecond``. A bound pod is
  deleted at once only with a grace period of 0: otherwise it stays terminating, as on an
  integration cluster without kubelets.

The scheduler is ``scheduler``'s own machinery driven as kube-scheduler's ``scheduleOne``
loop drives it: ``SchedulingQueue`` (informer events, backoff flushes each second, leftover
flushes each 30 s, on the wall clock), ``schedule_one`` with kube's adaptive
percentageOfNodesToScore and the round-robin start index, binding into the ``Snapshot``
(``AssignedPodAdd`` to the queue), and on failure DefaultPreemption (``preempt``, sampled as
kube searches, seeded): victims deleted, the preemptor nominated and requeued. One thread does
everything, so a cycle's time includes the informer work kube does on other goroutines.

SchedulingThroughput is upstream's: every second the number of measured pods bound so far is
sampled; the first sample is only the start, a second with nothing new is merged into the
next, each sample is new pods over its duration, and the figure is the average of the
samples (percentiles beside it). Upstream starts collecting before it creates the pods, and so
does this runner. A run shorter than two samples has no such figure (upstream warns and
reports none): then the line's ``value`` is ``overall`` — the op's pods over the seconds from
its start to the last bind — and ``measure`` says so. ``per_cpu_second`` divides by this
process's CPU time instead of the wall clock, for machines shared with other work.

With ``--through kubesim`` the same ops go to a ``kubesim serve`` process over HTTP (pods,
nodes, deletes as API requests, kubelets off as in an integration cluster); its scheduler loop
binds the pods and the figure is sampled from a pod watch. Printed beside the library's
figure as a ratio, without a floor.

What cannot be modelled is said per workload, never skipped silently: DRA and volume
opcodes, feature gates that change the scheduler (``SchedulerAsyncAPICalls`` and
``SchedulerAsyncPreemption`` only change how API calls are issued: noted, run as usual), a
``schedulerConfigPath``, steady-state pod creation, other metrics than SchedulingThroughput.

Usage: ``python bench/scheduler_perf [CONFIG…] [--workload REGEX] [--label-filter LABELS]
[--through scheduler|kubesim|both]``; without configs, the repository's copies in
``bench/scheduler_perf/``; without a filter, the table of the issue (the workloads in
``DEFAULT_TABLE``). One JSON line per workload (``both``: the library's line with the kubesim
figure and their ratio added). Exit 2 for a bad config or filter, 1 when a workload fails
(pods left unscheduled, timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import html
import json
import math
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, Protocol

from kube.objects import (
    InvalidObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    object_from_dict,
)
from kube.strict import ManifestError, check_object, model_for, parse_yaml, read_text
from kube.times import parse_rfc3339
from scheduler import eventhandlers as handlers
from scheduler.framework import Code
from scheduler.preemption import preempt
from scheduler.preemption.core import default_preemption_framework
from scheduler.queue import (
    NominatingInfo,
    NominatingMode,
    PodAlreadyPresentError,
    QueuedPodInfo,
    SchedulingQueue,
)
from scheduler.queue import events as qev
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot

CONFIG_DIR: Final = Path(__file__).resolve().parent  # the package sits beside its configs
DEFAULT_CONFIGS: Final = (
    CONFIG_DIR / "misc" / "performance-config.yaml",
    CONFIG_DIR / "topology_spreading" / "performance-config.yaml",
)
# The table: every workload a floor is asked for, at the size upstream's CI runs.
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
)
SAMPLE_INTERVAL: Final = 1.0  # throughputSampleInterval
BACKOFF_FLUSH: Final = 1.0  # the queue's flushers, as kube-scheduler runs them
LEFTOVER_FLUSH: Final = 30.0
DEFAULT_TIMEOUT: Final = 600.0  # upstream waits 10 minutes for a createPods op
NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
DEFAULT_GRACE: Final = 30


# --- errors ------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """The config (or a template it names) is not what upstream would accept: exit 2."""


class Unmodelled(Exception):
    """A workload uses something this runner cannot reproduce; its line says what."""


class WorkloadFailed(RuntimeError):
    """The workload ran but did not complete: pods left unscheduled, a timeout."""


# --- Go-style decoding -----------------------------------------------------------------------


def _fields(raw: object, allowed: Sequence[str], where: str) -> dict[str, Any]:
    """``raw`` decoded as ``encoding/json`` fills a struct with ``allowed`` fields: keys match
    case-insensitively (exact first), an unknown one fails with its name."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, not {type(raw).__name__}")
    exact = set(allowed)
    folded = {a.lower(): a for a in allowed}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key if key in exact else folded.get(str(key).lower())
        if name is None:
            raise ConfigError(f'{where}: unknown field "{key}"')
        out[name] = value
    return out


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, not {value!r}")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, not {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{where}: expected an integer, not {value!r}")
    return int(value)


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, not {value!r}")
    return value


def _str_list(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list, not {value!r}")
    return [_str(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _str_map(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object, not {value!r}")
    return {str(k): _str(v, f"{where}.{k}") for k, v in value.items()}


_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str, where: str) -> float:
    """Go's ``time.ParseDuration`` (``1m30s``, ``500ms``) in seconds."""
    if text in ("0", "+0", "-0"):
        return 0.0
    body = text.lstrip("+-")
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            raise ConfigError(f'{where}: time: invalid duration "{text}"')
        total += float(m[1]) * _DURATION_UNITS[m[2]]
        pos = m.end()
    if not body:
        raise ConfigError(f'{where}: time: invalid duration "{text}"')
    return -total if text.startswith("-") else total


# --- Go templates (the subset scheduler_perf's templates use) --------------------------------


def _go_float(value: float) -> str:
    """Go's ``%v`` of a float64 (``strconv`` ``'g'``, shortest): the fewest digits that read
    back the same, in exponent form when the exponent is below -4 or at least 6."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    exp = len(digits) + exponent - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"


def _to_float(value: object) -> float:
    if isinstance(value, bool):
        raise TypeError(f"cannot cast {value} to float64")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TypeError(f"cannot cast {value!r} to float64")


def _div(a: object, b: object) -> float:
    d = _to_float(b)
    if d == 0:
        raise TypeError("division by zero")
    return _to_float(a) / d


TEMPLATE_FUNCS: Final[dict[str, Callable[..., object]]] = {
    "AddFloat": lambda *n: sum(_to_float(x) for x in n),
    "AddInt": lambda *n: int(sum(_to_float(x) for x in n)),
    "SubtractFloat": lambda a, b: _to_float(a) - _to_float(b),
    "SubtractInt": lambda a, b: int(_to_float(a) - _to_float(b)),
    "MultiplyFloat": lambda *n: math.prod(_to_float(x) for x in n),
    "MultiplyInt": lambda *n: int(math.prod(_to_float(x) for x in n)),
    "DivideFloat": _div,
    "DivideInt": lambda a, b: int(_div(a, b)),
    "Mod": lambda a, b: int(math.fmod(int(_to_float(a)), int(_to_float(b)))),
}
_ACTION: Final = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_ARG: Final = re.compile(r'\.([A-Za-z_]\w*)|(-?\d+(?:\.\d+)?)|"((?:[^"\\]|\\.)*)"')


def _go_print(value: object) -> str:
    """``%v`` as ``html/template`` prints it in text context (HTML-escaped)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = _go_float(float(value))
    else:
        text = str(value)
    return html.escape(text, quote=True).replace("&#x27;", "&#39;").replace("&quot;", "&#34;")


def render_template(text: str, env: Mapping[str, object], source: str) -> str:
    """Go template text with ``{{.Key}}`` and ``{{Func args…}}`` actions evaluated."""
    if "{{" not in text:
        return text
    out: list[str] = []
    pos = 0
    for m in _ACTION.finditer(text):
        before = text[pos : m.start()]
        out.append(before.rstrip() if m[1] else before)
        out.append(_go_print(_evaluate(m[2].strip(), env, source)))
        pos = m.end()
        if m[3]:
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip())
    out.append(text[pos:])
    return "".join(out)


def _evaluate(action: str, env: Mapping[str, object], source: str) -> object:
    words = action.split(None, 1)
    if not words:
        raise ConfigError(f"{source}: empty template action {{{{}}}}")
    func = TEMPLATE_FUNCS.get(words[0])
    arg_text = words[1] if func is not None and len(words) > 1 else action
    args: list[object] = []
    pos = 0
    while pos < len(arg_text):
        if arg_text[pos].isspace():
            pos += 1
            continue
        m = _ARG.match(arg_text, pos)
        if m is None:
            raise ConfigError(
                f"{source}: template action {{{{{action}}}}} is not supported here (only"
                f" .Field values and the functions {', '.join(TEMPLATE_FUNCS)})"
            )
        if m[1] is not None:
            if m[1] not in env:
                raise ConfigError(f"{source}: template has no value for .{m[1]}")
            args.append(env[m[1]])
        elif m[2] is not None:
            args.append(float(m[2]) if "." in m[2] else int(m[2]))
        else:
            args.append(json.loads(f'"{m[3]}"'))
        pos = m.end()
    if func is None:
        if len(args) != 1 or words[0] in ("if", "range", "with", "define", "template", "block"):
            raise ConfigError(
                f"{source}: template action {{{{{action}}}}} is not supported here (only"
                f" .Field values and the functions {', '.join(TEMPLATE_FUNCS)})"
            )
        return args[0]
    try:
        return func(*args)
    except TypeError as exc:
        raise ConfigError(f"{source}: template action {{{{{action}}}}}: {exc}") from None


# --- the config model --------------------------------------------------------------------------

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
    "createPodSets": "pod sets in generated namespaces",
    "updateAny": "updates from templates",
    "createPodGroups": "PodGroups (gang scheduling is not modelled)",
    "waitForPodGroups": "PodGroups (gang scheduling is not modelled)",
    "startCollectingProfile": "Go CPU profiles",
    "stopCollectingProfile": "Go CPU profiles",
}
# Feature gates whose setting changes nothing the library decides (it makes no API calls),
# and the values that match what it does.
NOTED_GATES: Final[dict[str, str]] = {
    "SchedulerAsyncAPICalls": "API calls are not issued by the library (kubesim binds inline)",
    "SchedulerAsyncPreemption": "preemption deletes its victims in the same cycle",
}
MODELLED_GATE_VALUES: Final = {
    "OpportunisticBatching": False,  # upstream's scheduler_perf turns it off unless asked
    "NodeDeclaredFeatures": False,  # no NodeDeclaredFeatures plugin here
    "DynamicResourceAllocation": False,
    "DRAExtendedResource": False,
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
    return {str(k): _bool(v, f"{where}.{k}") for k, v in raw.items()}


def _metric_selector(raw: object, where: str) -> tuple[str, str, bool] | None:
    if raw is None:
        return None
    f = _fields(raw, METRIC_SELECTOR_FIELDS, where)
    bucket = _str(f.get("dataBucket", ""), f"{where}.dataBucket")
    if not bucket:
        raise ConfigError(f"{where}: dataBucket should be set for metric {f.get('name', '')}")
    return (
        _str(f.get("name", ""), f"{where}.name"),
        bucket,
        _bool(f.get("expectLower", False), f"{where}.expectLower"),
    )


def _threshold(raw: object, where: str) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, Mapping):  # per topic; this runner has the default topic only
        return 0.0
    value = float(_int(raw, where)) if isinstance(raw, int) else raw
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
    fields = _fields(raw, OP_FIELDS[code], f"{where} ({code})")
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
        f = _fields(raw, TEST_CASE_FIELDS, where)
        name = _str(f.get("name", ""), f"{where}.name")
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
            wf = _fields(rw, WORKLOAD_FIELDS, wwhere)
            wname = _str(wf.get("name", ""), f"{wwhere}.name")
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
                    labels=tuple(_str_list(wf.get("labels"), f"{wwhere}.labels")),
                    threshold=_threshold(wf.get("threshold"), f"{wwhere}.threshold"),
                    metric=selector[0],
                    bucket=selector[1],
                    expect_lower=selector[2],
                    feature_gates=_gates(wf.get("featureGates"), f"{wwhere}.featureGates"),
                )
            )
        default_pod = f.get("defaultPodTemplatePath")
        cases.append(
            TestCase(
                name=name,
                source=path,
                ops=ops,
                workloads=tuple(workloads),
                labels=tuple(_str_list(f.get("labels"), f"{where}.labels")),
                feature_gates=_gates(f.get("featureGates"), f"{where}.featureGates"),
                default_pod_template=(
                    None
                    if default_pod is None
                    else path.parent / _str(default_pod, f"{where}.defaultPodTemplatePath")
                ),
                scheduler_config=_str(
                    f.get("schedulerConfigPath") or "", f"{where}.schedulerConfigPath"
                ),
            )
        )
    if not cases:
        raise ConfigError(f"{source}: no test cases defined")
    return cases


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


# --- ops with their params resolved --------------------------------------------------------------


@dataclass(slots=True)
class Params:
    """A workload's params and which of them the ops used (``unusedParams``)."""

    values: Mapping[str, Any]
    used: set[str] = field(default_factory=set)

    def number(self, ref: str, where: str) -> int:
        key = ref[1:]
        self.used.add(key)
        if key not in self.values:
            raise ConfigError(f"{where}: parameter {key} is undefined")
        value = self.values[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: parameter {key} has the wrong type {type(value).__name__}")
        return int(value)

    def string(self, ref: str, where: str) -> str:
        key = ref[1:]
        self.used.add(key)
        if key not in self.values:
            raise ConfigError(f"{where}: parameter {key} is undefined")
        value = self.values[key]
        if not isinstance(value, str):
            raise ConfigError(f"{where}: parameter {key} has the wrong type {type(value).__name__}")
        return value

    def template_params(self, raw: object, where: str) -> dict[str, object]:
        """``resolveTemplateParams``: ``$name`` values come from the workload."""
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: expected an object")
        out: dict[str, object] = {}
        for k, given in raw.items():
            value = given
            if isinstance(given, str) and given.startswith("$"):
                if given[1:] not in self.values:
                    raise ConfigError(f'{where}: parameter "{given[1:]}" not found')
                self.used.add(given[1:])
                value = self.values[given[1:]]
            # JSON numbers are float64 in Go: they print as floats (1e+06), unlike .Index.
            is_number = isinstance(value, int | float) and not isinstance(value, bool)
            out[str(k)] = float(value) if is_number else value
        return out


def _count(op: Mapping[str, Any], params: Params, where: str, *, default: int = 0) -> int:
    if op.get("countParam"):
        ref = _str(op["countParam"], f"{where}.countParam")
        if not ref.startswith("$"):
            raise ConfigError(f"{where}: invalid Count / CountParam={ref!r}")
        return params.number(ref, where)
    count = _int(op.get("count", default), f"{where}.count")
    if count < 0:
        raise ConfigError(f"{where}: invalid Count={count}")
    return count


@dataclass(frozen=True, slots=True)
class CreateNodes:
    count: int
    template: Path | None
    label_key: str = ""
    label_values: tuple[str, ...] = ()
    unique_label_key: str = ""
    template_params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreateNamespaces:
    prefix: str
    count: int
    template: Path | None


@dataclass(frozen=True, slots=True)
class CreatePods:
    count: int
    namespace: str | None
    template: Path | None
    collect_metrics: bool
    skip_wait: bool
    template_params: Mapping[str, object]
    batch_size: int


@dataclass(frozen=True, slots=True)
class CreateAny:
    namespace: str
    template: Path
    count: int
    template_params: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class DeletePods:
    namespace: str
    label_selector: Mapping[str, str]
    skip_wait: bool
    per_second: int


@dataclass(frozen=True, slots=True)
class Churn:
    mode: str
    number: int
    interval: float
    namespace: str | None
    templates: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class Barrier:
    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str]
    stage: str


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class StartCollecting:
    name: str
    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class StopCollecting:
    pass


Op = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | CreateAny
    | DeletePods
    | Churn
    | Barrier
    | Sleep
    | StartCollecting
    | StopCollecting
)


def plan(tc: TestCase, w: Workload) -> tuple[list[Op], list[str]]:
    """The workload's ops with params patched (``patchParams``), and the notes to print.

    Raises ``ConfigError`` for what upstream refuses (undefined or unused params, invalid
    counts) and ``Unmodelled`` for what this runner cannot reproduce.
    """
    notes: list[str] = []
    gates = {**tc.feature_gates, **w.feature_gates}
    for gate, value in sorted(gates.items()):
        if gate in NOTED_GATES:
            notes.append(f"{gate}={str(value).lower()}: {NOTED_GATES[gate]}")
        elif gate in MODELLED_GATE_VALUES:
            if MODELLED_GATE_VALUES[gate] != value:
                raise Unmodelled(f"feature gate {gate}={str(value).lower()} is not modelled")
        else:
            raise Unmodelled(f"feature gate {gate} is not modelled")
    if tc.scheduler_config:
        raise Unmodelled(
            f"schedulerConfigPath {tc.scheduler_config}: only the default profile is modelled"
        )
    if w.metric != "SchedulingThroughput":
        raise Unmodelled(f"threshold metric {w.metric}: only SchedulingThroughput is measured")
    params = Params(w.params)
    ops: list[Op] = []
    base = tc.base
    for i, raw in enumerate(tc.ops):
        where = f"{tc.full_name(w)}: op {i}"
        code = raw["opcode"]
        if code in UNMODELLED_OPS:
            raise Unmodelled(f"op {i}: opcode {code}: {UNMODELLED_OPS[code]}")
        ops.append(_plan_op(code, raw, params, base, where))
    unused = sorted(set(w.params) - params.used)
    if unused:
        raise ConfigError(
            f"{tc.full_name(w)}: the parameters {unused} are defined on workload {w.name}, but"
            " unused"
        )
    return ops, notes


def _path(raw: Mapping[str, Any], key: str, base: Path, where: str) -> Path | None:
    value = raw.get(key)
    if value is None:
        return None
    return base / _str(value, f"{where}.{key}")


def _plan_op(code: str, raw: Mapping[str, Any], params: Params, base: Path, where: str) -> Op:
    if code == "createNodes":
        if raw.get("nodeAllocatableStrategy") is not None:
            raise Unmodelled(f"{where}: nodeAllocatableStrategy (CSINode volume limits)")
        label = _fields(
            raw.get("labelNodePrepareStrategy"),
            ("labelKey", "labelValues"),
            f"{where}.labelNodePrepareStrategy",
        )
        unique = _fields(
            raw.get("uniqueNodeLabelStrategy"), ("labelKey",), f"{where}.uniqueNodeLabelStrategy"
        )
        values = tuple(_str_list(label.get("labelValues"), f"{where}.labelValues"))
        if label and not values:
            raise ConfigError(f"{where}: labelNodePrepareStrategy needs labelValues")
        return CreateNodes(
            count=_count(raw, params, where),
            template=_path(raw, "nodeTemplatePath", base, where),
            label_key=_str(label.get("labelKey", ""), f"{where}.labelKey"),
            label_values=values,
            unique_label_key=_str(unique.get("labelKey", ""), f"{where}.labelKey"),
            template_params=params.template_params(raw.get("templateParams"), where),
        )
    if code == "createNamespaces":
        return CreateNamespaces(
            prefix=_str(raw.get("prefix", ""), f"{where}.prefix"),
            count=_count(raw, params, where),
            template=_path(raw, "namespaceTemplatePath", base, where),
        )
    if code == "createPods":
        count = _count(raw, params, where)
        if raw.get("countMultiplierParam"):
            count *= params.number(_str(raw["countMultiplierParam"], where), where)
        steady = raw.get("steadyState", False)
        if raw.get("steadyStateParam"):
            steady = params.values.get(_str(raw["steadyStateParam"], where)[1:])
            params.used.add(raw["steadyStateParam"][1:])
        if steady:
            raise Unmodelled(f"{where}: steadyState pod creation")
        if raw.get("persistentVolumeClaimTemplatePath") or raw.get("persistentVolumeTemplatePath"):
            raise Unmodelled(f"{where}: PersistentVolumes (volume binding is not modelled)")
        collect = _bool(raw.get("collectMetrics", False), f"{where}.collectMetrics")
        skip = _bool(raw.get("skipWaitToCompletion", False), f"{where}.skipWaitToCompletion")
        if collect and skip:
            raise ConfigError(
                f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time"
            )
        batch = _int(raw.get("signatureBatchSize", 0), f"{where}.signatureBatchSize")
        if raw.get("signatureBatchSizeParam"):
            batch = params.number(_str(raw["signatureBatchSizeParam"], where), where)
        if raw.get("durationParam"):
            params.string(_str(raw["durationParam"], where), where)
        namespace = raw.get("namespace")
        return CreatePods(
            count=count,
            namespace=None if namespace is None else _str(namespace, f"{where}.namespace"),
            template=_path(raw, "podTemplatePath", base, where),
            collect_metrics=collect,
            skip_wait=skip,
            template_params=params.template_params(raw.get("templateParams"), where),
            batch_size=batch or 1,
        )
    if code == "createAny":
        template = _path(raw, "templatePath", base, where)
        if template is None:
            raise ConfigError(f"{where}: TemplatePath must be set")
        count = (
            _count(raw, params, where, default=1)
            if ("count" in raw or raw.get("countParam"))
            else 1
        )
        return CreateAny(
            namespace=_str(raw.get("namespace", ""), f"{where}.namespace"),
            template=template,
            count=count,
            template_params=params.template_params(raw.get("templateParams"), where),
        )
    if code == "deletePods":
        per_second = _int(raw.get("deletePodsPerSecond", 0), f"{where}.deletePodsPerSecond")
        if per_second < 0:
            raise ConfigError(
                f"{where}: invalid DeletePodsPerSecond={per_second}; should be non-negative"
            )
        return DeletePods(
            namespace=_str(raw.get("namespace", ""), f"{where}.namespace"),
            label_selector=_str_map(raw.get("labelSelector"), f"{where}.labelSelector"),
            skip_wait=_bool(
                raw.get("skipWaitToCompletion", False), f"{where}.skipWaitToCompletion"
            ),
            per_second=per_second,
        )
    if code == "churn":
        mode = _str(raw.get("mode", ""), f"{where}.mode")
        number = _int(raw.get("number", 0), f"{where}.number")
        if mode not in ("create", "recreate"):
            raise ConfigError(f"{where}: invalid mode: {mode}. must be one of [recreate create]")
        if number < 0:
            raise ConfigError(f"{where}: number ({number}) cannot be negative")
        if mode == "recreate" and number == 0:
            raise ConfigError(f"{where}: number cannot be 0 when mode is recreate")
        templates = _str_list(raw.get("templatePaths"), f"{where}.templatePaths")
        if not templates:
            raise ConfigError(f"{where}: at least one template spec file needs to be specified")
        interval = _int(raw.get("intervalMilliseconds", 0), f"{where}.intervalMilliseconds")
        namespace = raw.get("namespace")
        return Churn(
            mode=mode,
            number=number,
            interval=(interval or 500) / 1000.0,
            namespace=None if namespace is None else _str(namespace, f"{where}.namespace"),
            templates=tuple(base / t for t in templates),
        )
    if code == "barrier":
        stage = _str(raw.get("stageRequirement", "") or "Scheduled", f"{where}.stageRequirement")
        if stage not in ("Scheduled", "Attempted"):
            raise ConfigError(f"{where}: invalid StageRequirement {stage}")
        return Barrier(
            namespaces=tuple(_str_list(raw.get("namespaces"), f"{where}.namespaces")),
            label_selector=_str_map(raw.get("labelSelector"), f"{where}.labelSelector"),
            stage=stage,
        )
    if code == "sleep":
        seconds = 0.0
        if raw.get("duration") is not None:
            seconds = parse_duration(_str(raw["duration"], f"{where}.duration"), where)
        if raw.get("durationParam"):
            seconds = parse_duration(params.string(_str(raw["durationParam"], where), where), where)
        return Sleep(seconds)
    if code == "startCollectingMetrics":
        namespaces = tuple(_str_list(raw.get("namespaces"), f"{where}.namespaces"))
        if not namespaces:
            raise ConfigError(f"{where}: namespaces cannot be empty")
        return StartCollecting(
            name=_str(raw.get("name", ""), f"{where}.name"),
            namespaces=namespaces,
            label_selector=_str_map(raw.get("labelSelector"), f"{where}.labelSelector"),
        )
    return StopCollecting()


# --- objects from templates ------------------------------------------------------------------


def base_pod() -> dict[str, Any]:
    """``makeBasePod``: ``testutils.MakePodSpec`` (pause, 100m / 500Mi, port 80)."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": dict(resources), "requests": dict(resources)},
                }
            ]
        },
    }


def base_node(prefix: str) -> dict[str, Any]:
    """``makeBaseNode``: 4 CPU, 32Gi, 110 pods, Ready."""
    amounts = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {
            "capacity": dict(amounts),
            "allocatable": dict(amounts),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@dataclass(frozen=True, slots=True)
class NewPod:
    """A pod to create: ``template`` is the decoded manifest (shared by the pods of one
    rendering); name, namespace and labels are this pod's."""

    template: Mapping[str, Any]
    name: str
    namespace: str
    labels: Mapping[str, str]
    uid: str

    def manifest(self) -> dict[str, Any]:
        meta = dict(self.template.get("metadata") or {})
        meta.pop("generateName", None)
        meta.update(name=self.name, namespace=self.namespace, labels=dict(self.labels))
        return {**self.template, "metadata": meta}


class Templates:
    """Reads, renders and strictly decodes template files; names objects as the API server
    does (``generateName`` + 5 characters, seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._text: dict[Path, str] = {}
        self._decoded: dict[tuple[Path, str, str], dict[str, Any]] = {}
        self._names: set[tuple[str, str, str]] = set()

    def has_actions(self, path: Path) -> bool:
        return "{{" in self.text(path)

    def text(self, path: Path) -> str:
        text = self._text.get(path)
        if text is None:
            try:
                text = read_text(path)
            except ManifestError as exc:
                raise ConfigError(str(exc)) from None
            self._text[path] = text
        return text

    def load(
        self, path: Path, env: Mapping[str, object], *, kind: str | None = None
    ) -> dict[str, Any]:
        """The template decoded into ``kind`` (as ``yaml.UnmarshalStrict`` into a typed
        object), or any kind the schema knows when None. Cached when it has no actions."""
        text = self.text(path)
        rendered = render_template(text, env, str(path))
        key = (path, kind or "", rendered)
        cached = self._decoded.get(key)
        if cached is not None:
            return cached
        try:
            docs, duplicates = parse_yaml(rendered, source=str(path))
        except ManifestError as exc:
            raise ConfigError(str(exc)) from None
        docs = [d for d in docs if d is not None]
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise ConfigError(f"{path}: expected one object")
        manifest: dict[str, Any] = docs[0]
        model = None if kind is None else model_for("v1", kind)
        try:
            problems = check_object(manifest, model=model, duplicates=duplicates, fold_case=True)
        except ManifestError as exc:
            raise ConfigError(f"{path}: {exc.detail}") from None
        if problems.type_error is not None:
            raise ConfigError(f"{path}: {problems.type_error}")
        if problems.strict:
            raise ConfigError(f"{path}: {', '.join(problems.strict)}")
        if kind is not None:
            manifest.setdefault("apiVersion", "v1")
            manifest.setdefault("kind", kind)
        self._decoded[key] = manifest
        return manifest

    def name(self, kind: str, namespace: str, meta: Mapping[str, Any]) -> str:
        """``metadata.name``, or ``generateName`` plus five random characters."""
        name = meta.get("name")
        if isinstance(name, str) and name:
            self._names.add((kind, namespace, name))
            return name
        prefix = meta.get("generateName")
        if not isinstance(prefix, str) or not prefix:
            raise ConfigError(f"{kind}: name or generateName is required")
        while True:
            name = prefix[:58] + "".join(self.rng.choice(NAME_ALPHABET) for _ in range(5))
            if (kind, namespace, name) not in self._names:
                self._names.add((kind, namespace, name))
                return name

    def uid(self) -> str:
        bits = self.rng.getrandbits(128)
        h = f"{bits:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def pods(
        self,
        path: Path | None,
        count: int,
        namespace: str,
        params: Mapping[str, object],
        batch: int,
    ) -> list[NewPod]:
        """``createPodsRapidly``'s pods: the template per index, plus the ``signature`` label."""
        out: list[NewPod] = []
        static = base_pod() if path is None else None
        for index in range(count):
            if static is not None:
                manifest = static
            else:
                assert path is not None
                manifest = self.load(path, {**params, "Index": index, "Count": count}, kind="Pod")
            meta = manifest.get("metadata") or {}
            labels = dict(meta.get("labels") or {})
            labels["signature"] = f"signature-label-{index // batch}"
            out.append(
                NewPod(
                    manifest,
                    self.name("Pod", namespace, meta),
                    namespace,
                    labels,
                    self.uid(),
                )
            )
        return out


# --- the measurement -----------------------------------------------------------------------------


def _labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(slots=True)
class Collector:
    """upstream's ``throughputCollector``: pods of ``namespaces`` (matching ``selector``)
    seen going from unbound to bound, sampled each second from ``started`` to ``stopped``.

    Bind times are recorded and the samples taken afterwards at the ticks (``samples``), so
    an observer that hears of binds late (a watch behind a busy server) still counts each
    one in the second it happened.
    """

    name: str
    namespaces: frozenset[str]
    selector: Mapping[str, str]
    started: float
    binds: list[float] = field(default_factory=list)
    stopped: float | None = None

    def bound(self, namespace: str, labels: Mapping[str, str], at: float) -> None:
        if namespace in self.namespaces and (
            not self.selector or _labels_match(labels, self.selector)
        ):
            self.binds.append(at)

    @property
    def scheduled(self) -> int:
        return len(self.binds)

    @property
    def last_bound(self) -> float | None:
        return max(self.binds) if self.binds else None

    def samples(self) -> list[float]:
        """The throughput samples of the ticks up to ``stopped``: nothing until a pod is
        bound; the first tick after that only starts the clock; a tick with nothing new is
        merged into the next; each sample is new pods over its seconds, repeated once per
        tick it covers."""
        binds = sorted(self.binds)
        end = self.stopped if self.stopped is not None else (binds[-1] if binds else 0.0)
        out: list[float] = []
        last_count, last_time, began, skipped = 0, 0.0, False, 0
        tick = self.started + SAMPLE_INTERVAL
        while tick <= end:
            scheduled = bisect_right(binds, tick)
            if scheduled and not began:
                began = True
                last_count, last_time = scheduled, tick
            elif scheduled:
                if scheduled == last_count:
                    skipped += 1
                else:
                    rate = (scheduled - last_count) / (tick - last_time)
                    out.extend([rate] * (skipped + 1))
                    skipped = 0
                    last_count, last_time = scheduled, tick
            tick += SAMPLE_INTERVAL
        return out

    def summary(self) -> dict[str, float] | None:
        s = sorted(self.samples())
        if not s:
            return None
        n = len(s)

        def perc(p: int) -> float:
            return s[math.ceil(n * p / 100) - 1]

        return {
            "Average": sum(s) / n,
            "Perc50": perc(50),
            "Perc90": perc(90),
            "Perc95": perc(95),
            "Perc99": perc(99),
        }


# --- backends ----------------------------------------------------------------------------------


BoundListener = Callable[[str, Mapping[str, str], float], None]


class Backend(Protocol):
    """What the executor needs from a cluster with a scheduler."""

    name: str

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None: ...
    def create_nodes(self, manifests: Sequence[Mapping[str, Any]]) -> None: ...
    def label_nodes(self, labels: Mapping[str, Mapping[str, str]]) -> None: ...
    def prepare_pods(self, pods: Sequence[NewPod]) -> object: ...
    def submit_pods(self, prepared: object) -> None: ...
    def create_object(self, manifest: Mapping[str, Any]) -> None: ...
    def delete_object(self, kind: str, namespace: str, name: str) -> None: ...
    def pod_names(self, namespace: str, selector: Mapping[str, str]) -> list[str]: ...
    def node_names(self) -> list[str]: ...
    def count(self, namespace: str, selector: Mapping[str, str], *, attempted: bool) -> int: ...
    def step(self, until: float) -> bool: ...
    def pending_summary(self) -> str: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...

    listeners: list[BoundListener]


class LibraryBackend:
    """kube-scheduler's loop over ``scheduler``: queue, ``schedule_one``, bind, preempt.

    ``pods`` is what the API server would hold (every live pod, the latest version); events
    that an informer would deliver after a cycle (binds, deletions) are applied after it.
    """

    name = "scheduler"

    def __init__(self, *, seed: int, percentage_of_nodes_to_score: int = 0) -> None:
        self.snapshot = Snapshot()
        self.framework = default_preemption_framework()
        self.queue = SchedulingQueue(
            time.monotonic,
            pod_lister=self.snapshot,
            namespace_labels=self.snapshot.namespace_labels,
        )
        self.percentage = percentage_of_nodes_to_score
        self.rng = random.Random(seed)
        self.next_start = 0
        self.pods: dict[str, Pod] = {}
        self.by_namespace: dict[str, dict[str, Pod]] = {}
        self.attempted: set[str] = set()  # pending pods with PodScheduled=False
        self.scheduled_in: Counter[str] = Counter()  # bound pods per namespace
        self.attempted_in: Counter[str] = Counter()  # attempted pending pods per namespace
        self.last_message: dict[str, str] = {}
        self.listeners: list[BoundListener] = []
        self.results: Counter[str] = Counter()
        self.victims = 0
        self._next_backoff_flush = time.monotonic() + BACKOFF_FLUSH
        self._next_leftover_flush = time.monotonic() + LEFTOVER_FLUSH

    # --- the API side ---------------------------------------------------------------------

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self.snapshot.namespaces[name] = Namespace(
            name, {**labels, "kubernetes.io/metadata.name": name}
        )
        self.by_namespace.setdefault(name, {})

    def create_nodes(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        for m in manifests:
            handlers.add_node(self.snapshot, self.queue, _typed(Node.from_dict, m))

    def label_nodes(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        for name, extra in labels.items():
            ni = self.snapshot.get_node_info(name)
            if ni is None or ni.node is None:
                continue
            node = ni.node.with_changes(labels={**ni.node.labels, **extra})
            self.snapshot.update_node(node)
            self.queue.move_all_to_active_or_backoff_queue(qev.NodeLabelChange, new_obj=node)

    def node_names(self) -> list[str]:
        return self.snapshot.node_names()

    def prepare_pods(self, pods: Sequence[NewPod]) -> object:
        typed: dict[int, Pod] = {}
        out: list[Pod] = []
        for p in pods:
            template = typed.get(id(p.template))
            if template is None:
                template = _typed(Pod.from_dict, p.manifest())
                typed[id(p.template)] = template
            out.append(
                template.with_changes(
                    name=p.name, namespace=p.namespace, labels=p.labels, uid=p.uid
                )
            )
        return out

    def submit_pods(self, prepared: object) -> None:
        assert isinstance(prepared, list)
        for pod in prepared:
            self._add_pod(pod)

    def _add_pod(self, pod: Pod) -> None:
        self.pods[pod.key] = pod
        self.by_namespace.setdefault(pod.namespace, {})[pod.key] = pod
        if pod.node_name:
            self.scheduled_in[pod.namespace] += 1
            handlers.add_assigned_pod(self.snapshot, self.queue, pod)
            return
        handlers.add_pending_pod(self.snapshot, self.queue, pod)
        if pod.scheduling_gates:
            self._attempted(pod)  # PodScheduled=False, reason SchedulingGated

    def _attempted(self, pod: Pod) -> None:
        if pod.key not in self.attempted:
            self.attempted.add(pod.key)
            self.attempted_in[pod.namespace] += 1

    def _forget_attempt(self, pod: Pod) -> None:
        if pod.key in self.attempted:
            self.attempted.discard(pod.key)
            self.attempted_in[pod.namespace] -= 1

    def create_object(self, manifest: Mapping[str, Any]) -> None:
        kind = manifest.get("kind")
        if kind == "Pod":
            self._add_pod(_typed(Pod.from_dict, manifest))
            return
        if kind == "Node":
            self.create_nodes([manifest])
            return
        obj = _typed(object_from_dict, manifest)
        snap = self.snapshot
        if isinstance(obj, Service):
            snap.services.append(obj)
        elif isinstance(obj, ReplicaSet):
            snap.replica_sets.append(obj)
        elif isinstance(obj, ReplicationController):
            snap.replication_controllers.append(obj)
        elif isinstance(obj, StatefulSet):
            snap.stateful_sets.append(obj)
        elif isinstance(obj, PodDisruptionBudget):
            snap.add_pdb(obj)
        elif isinstance(obj, PriorityClass):
            snap.priority_classes[obj.name] = obj
        elif isinstance(obj, Namespace):
            snap.namespaces[obj.name] = obj
        else:
            raise Unmodelled(f"createAny of kind {kind}")

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if kind == "Pod":
            self.delete_pod(f"{namespace}/{name}")
        elif kind == "Node":
            handlers.delete_node(self.snapshot, self.queue, name)
        elif kind == "Service":
            self.snapshot.services = [
                s for s in self.snapshot.services if (s.namespace, s.name) != (namespace, name)
            ]
        else:
            raise Unmodelled(f"deleting objects of kind {kind}")

    def delete_pod(self, key: str, *, grace: int | None = None) -> None:
        """DELETE with default options: a bound pod with a grace period stays terminating."""
        pod = self.pods.get(key)
        if pod is None:
            return
        period = pod.termination_grace_period_seconds if grace is None else grace
        if period is None:
            period = DEFAULT_GRACE
        if pod.node_name and period > 0:
            if not pod.is_terminating:
                updated = pod.with_changes(deletion_timestamp=time.time() + period)
                self.pods[key] = updated
                self.by_namespace[pod.namespace][key] = updated
                self.snapshot.update_pod(updated)
                self.queue.assigned_pod_updated(pod, updated)
            return
        del self.pods[key]
        del self.by_namespace[pod.namespace][key]
        self._forget_attempt(pod)
        if pod.node_name:
            self.scheduled_in[pod.namespace] -= 1
        handlers.delete_pod(self.snapshot, self.queue, pod)

    def pod_names(self, namespace: str, selector: Mapping[str, str]) -> list[str]:
        pods = self.by_namespace.get(namespace, {}).values()
        return [p.name for p in pods if _labels_match(p.labels, selector)]

    def count(self, namespace: str, selector: Mapping[str, str], *, attempted: bool) -> int:
        if not selector:
            n = self.scheduled_in[namespace]
            return n + self.attempted_in[namespace] if attempted else n
        n = 0
        for p in self.by_namespace.get(namespace, {}).values():
            if selector and not _labels_match(p.labels, selector):
                continue
            if p.node_name or (attempted and p.key in self.attempted):
                n += 1
        return n

    # --- the scheduler --------------------------------------------------------------------

    def step(self, until: float) -> bool:
        """One scheduling cycle; False when nothing is poppable."""
        now = time.monotonic()
        if now >= self._next_backoff_flush:
            self._next_backoff_flush = now + BACKOFF_FLUSH
            self.queue.flush_backoff_q_completed()
            if now >= self._next_leftover_flush:
                self._next_leftover_flush = now + LEFTOVER_FLUSH
                self.queue.flush_unschedulable_pods_leftover()
        pinfo = self.queue.pop()
        if pinfo is None:
            return False
        self.schedule_pod(pinfo)
        return True

    def schedule_pod(self, pinfo: QueuedPodInfo) -> None:
        pod = self.pods.get(pinfo.pod.key)
        if pod is None or pod.uid != pinfo.pod.uid or pod.node_name or pod.is_terminating:
            return  # skipPodSchedule
        pinfo.pod = pod
        cycle = self.queue.scheduling_cycle
        result = schedule_one(
            pod,
            self.snapshot,
            framework=self.framework,
            percentage_of_nodes_to_score=self.percentage,
            start_index=self.next_start,
        )
        self.next_start = result.next_start_index
        if result.succeeded:
            self.results["scheduled"] += 1
            bound = self.snapshot.bind_pod(pod, result.suggested_host)
            self.pods[pod.key] = bound
            self.by_namespace[pod.namespace][pod.key] = bound
            self._forget_attempt(pod)
            self.scheduled_in[pod.namespace] += 1
            now = time.monotonic()
            for listener in self.listeners:
                listener(bound.namespace, bound.labels, now)
            self.queue.assigned_pod_added(bound)  # the informer's AssignedPodAdd
            return
        self._attempted(pod)
        self.last_message[pod.key] = result.message or result.status.message
        if result.status.code is not Code.Unschedulable:
            self.results["error"] += 1
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._requeue(pinfo, cycle, None)
            return
        self.results["unschedulable"] += 1
        diagnosis = result.diagnosis
        pinfo.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(diagnosis.pending_plugins)
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode="sampled",
            rng=self.rng,
            framework=self.framework,
        )
        nominating: NominatingInfo | None = None
        if outcome.nominated_node_name is not None:
            nominating = NominatingInfo(NominatingMode.Override, outcome.nominated_node_name)
        deletions: list[Pod] = []
        if outcome.nominated_node_name:
            self.results["preemption"] += 1
            self.victims += len(outcome.victims)
            deletions = list(outcome.victims)
            for other in outcome.nominated_pods_to_clear:
                self._set_nomination(other.key, "")
        self._requeue(pinfo, cycle, nominating)
        # The victims' deletions reach the queue after the failure handler, as informer events.
        for victim in deletions:
            current = self.pods.get(victim.key)
            if current is not None and current.uid == victim.uid:
                self.delete_pod(victim.key)

    def _set_nomination(self, key: str, node: str) -> Pod | None:
        current = self.pods.get(key)
        if current is None or current.node_name or current.nominated_node_name == node:
            return current
        updated = current.with_changes(nominated_node_name=node)
        self.pods[key] = updated
        self.by_namespace[updated.namespace][key] = updated
        self.snapshot.update_pod(updated)
        self.queue.update(current, updated)
        return updated

    def _requeue(self, pinfo: QueuedPodInfo, cycle: int, nominating: NominatingInfo | None) -> None:
        """``handleSchedulingFailure``: nominate, then back to the queue."""
        current = self.pods.get(pinfo.pod.key)
        if current is None or current.uid != pinfo.pod.uid or current.node_name:
            return
        if nominating is not None and nominating.mode is NominatingMode.Override:
            current = current.with_changes(nominated_node_name=nominating.nominated_node_name)
            self.pods[current.key] = current
            self.by_namespace[current.namespace][current.key] = current
            self.snapshot.update_pod(current)
        pinfo.pod = current
        self.queue.nominator.add_nominated_pod(current, nominating)
        with contextlib.suppress(PodAlreadyPresentError):
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)

    def pending_summary(self) -> str:
        _, summary = self.queue.pending_pods()
        pending = [k for k, p in self.pods.items() if not p.node_name]
        if not pending:
            return summary
        first = pending[0]
        message = self.last_message.get(first, "never attempted")
        return f"{summary}; {len(pending)} pods pending, e.g. {first}: {message}"

    def stats(self) -> dict[str, Any]:
        return {"attempts": dict(self.results), "victims": self.victims}

    def close(self) -> None:
        pass


# Where each kind a workload may create lives in the API (namespaced or not).
API_PATHS: Final[dict[str, tuple[str, bool]]] = {
    "Pod": ("/api/v1/{ns}pods", True),
    "Node": ("/api/v1/nodes", False),
    "Namespace": ("/api/v1/namespaces", False),
    "Service": ("/api/v1/{ns}services", True),
    "ReplicationController": ("/api/v1/{ns}replicationcontrollers", True),
    "ReplicaSet": ("/apis/apps/v1/{ns}replicasets", True),
    "StatefulSet": ("/apis/apps/v1/{ns}statefulsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1/{ns}poddisruptionbudgets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", False),
}
# The kubesim controllers an integration cluster has: the scheduler and the namespace
# controller (no kubelets, no workload controllers).
KUBESIM_ON: Final = frozenset({"scheduler", "namespace"})
CONCURRENT_REQUESTS: Final = 32
STALL_SECONDS: Final = 30.0  # no pod event for this long while waiting: nothing moves


def _api_path(kind: str, namespace: str, name: str = "") -> str:
    template, namespaced = API_PATHS[kind]
    path = template.format(ns=f"namespaces/{namespace}/" if namespaced else "")
    return f"{path}/{name}" if name else path


@dataclass(slots=True)
class _PodView:
    namespace: str
    labels: Mapping[str, str]
    node: str
    attempted: bool


class _LoopThread:
    """An event loop running in a thread of its own, with an HTTP session on it."""

    def __init__(self, aiohttp: Any, url: str, *, limit: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def open_session() -> Any:
            return aiohttp.ClientSession(
                url,
                connector=aiohttp.TCPConnector(limit=limit),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            )

        self.session: Any = self.call(open_session())

    def submit(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Any) -> Any:
        return self.submit(coro).result()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call(self.session.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class KubesimBackend:
    """The same ops against ``kubesim serve`` (a process of its own) over HTTP.

    Requests go out from an event loop in a thread of this process, as many at once as
    ``CONCURRENT_REQUESTS`` (upstream's client allows 5000 QPS); a watch on every pod plays
    the informer (the pods' latest node and PodScheduled condition). Each bind's time is the
    ``eventTime`` of the scheduler's ``Scheduled`` event (microseconds, the server's clock,
    which is this machine's), watched beside the pods and delivered to the listeners from
    ``step`` (so in the executor's thread): a busy server may stream its watches late, but
    every bind still counts in the second it happened. The watches have an event loop of
    their own, so thousands of requests in flight do not hold them up.
    """

    name = "kubesim"

    def __init__(self, *, url: str | None = None) -> None:
        import aiohttp  # only this backend needs the HTTP client

        self.listeners: list[BoundListener] = []
        self._proc: subprocess.Popen[str] | None = None
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by close()
        self._api: _LoopThread | None = None
        self._watcher: _LoopThread | None = None
        self.url = url or self._start()
        self._api = _LoopThread(aiohttp, self.url, limit=CONCURRENT_REQUESTS)
        self._watcher = _LoopThread(aiohttp, self.url, limit=2)
        self.pods: dict[str, _PodView] = {}
        self._last_event = time.monotonic()
        self.requests = 0
        self.refused: Counter[str] = Counter()  # creations the API server refused, by reason
        self._clock_offset = time.time() - time.monotonic()
        self._binds: deque[tuple[str, float]] = deque()  # (pod key, monotonic bind time)
        self._watch = self._watcher.submit(self._watch_pods(self._watcher.session))
        self._scheduled_watch = self._watcher.submit(self._watch_binds(self._watcher.session))
        self._pending_creates: list[Any] = []

    # --- plumbing ---------------------------------------------------------------------------

    def _start(self) -> str:
        from kubesim.controllers import CONTROLLER_NAMES

        # kube's integration-test servers run without Priority admission: scheduler_perf's
        # templates set spec.priority without a PriorityClass.
        cmd = [sys.executable, "-m", "kubesim", "serve", "--port", "0"]
        cmd += ["--disable-admission-plugins", "Priority"]
        for name in CONTROLLER_NAMES:
            if name not in KUBESIM_ON:
                cmd += ["--disable-controller", name]
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self._log, text=True, start_new_session=True
        )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in self._proc.stdout:
            if line.startswith("kubesim: serving on "):
                return line.split()[-1]
            if time.monotonic() > deadline:
                break
        self.close()
        self._log.seek(0)
        raise WorkloadFailed(f"kubesim did not start: {self._log.read()[-500:]}")

    def _call(self, coro: Any) -> Any:
        assert self._api is not None
        return self._api.call(coro)

    async def _request(
        self, method: str, path: str, body: object = None, *, session: Any = None
    ) -> tuple[int, Any]:
        self.requests += 1
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        assert self._api is not None
        client = session if session is not None else self._api.session
        async with client.request(method, path, json=body, headers=headers) as resp:
            data = await resp.json(content_type=None)
            return resp.status, data

    async def _create_all(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        async def one(path: str, body: Mapping[str, Any]) -> None:
            status, data = await self._request("POST", path, body)
            if status >= 300:
                reason = data.get("message", status) if isinstance(data, dict) else status
                self.refused[str(reason)] += 1

        await asyncio.gather(*(one(path, body) for path, body in items))

    async def _watch_pods(self, session: Any) -> None:
        status, listed = await self._request("GET", "/api/v1/pods", session=session)
        rv = listed["metadata"]["resourceVersion"] if status == 200 else "0"
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "86400"}
        async with session.get("/api/v1/pods", params=params) as resp:
            async for line in resp.content:
                if line.strip():
                    self._on_pod_event(json.loads(line))

    async def _watch_binds(self, session: Any) -> None:
        path = "/apis/events.k8s.io/v1/events"
        status, listed = await self._request("GET", path, session=session)
        rv = listed["metadata"]["resourceVersion"] if status == 200 else "0"
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "86400"}
        async with session.get(path, params=params) as resp:
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                regarding = obj.get("regarding") or {}
                if (
                    event.get("type") == "ADDED"
                    and obj.get("reason") == "Scheduled"
                    and regarding.get("kind") == "Pod"
                    and obj.get("eventTime")
                ):
                    at = parse_rfc3339(obj["eventTime"]) - self._clock_offset
                    self._binds.append(
                        (f"{regarding.get('namespace')}/{regarding.get('name')}", at)
                    )

    def _on_pod_event(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        self._last_event = time.monotonic()
        if event.get("type") == "DELETED":
            self.pods.pop(key, None)
            return
        node = (obj.get("spec") or {}).get("nodeName") or ""
        conditions = (obj.get("status") or {}).get("conditions") or []
        attempted = any(
            c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions
        )
        self.pods[key] = _PodView(
            str(meta.get("namespace")), meta.get("labels") or {}, node, attempted
        )

    # --- Backend ----------------------------------------------------------------------------

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        if labels:
            body["metadata"] = {"name": name, "labels": dict(labels)}
        self._call(self._request("POST", "/api/v1/namespaces", body))

    def create_nodes(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        self._call(self._create_all([("/api/v1/nodes", m) for m in manifests]))

    def label_nodes(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        async def patch_all() -> None:
            await asyncio.gather(
                *(
                    self._request("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": extra}})
                    for name, extra in labels.items()
                )
            )

        self._call(patch_all())

    def node_names(self) -> list[str]:
        status, data = self._call(self._request("GET", "/api/v1/nodes"))
        return [item["metadata"]["name"] for item in data.get("items", [])] if status == 200 else []

    def prepare_pods(self, pods: Sequence[NewPod]) -> object:
        return [
            (
                _api_path("Pod", p.namespace),
                {**p.manifest(), "metadata": {**p.manifest()["metadata"]}},
            )
            for p in pods
        ]

    def submit_pods(self, prepared: object) -> None:
        """Start creating the pods and return: the executor samples and waits meanwhile, as
        upstream's collector runs beside ``createPodsRapidly``."""
        assert isinstance(prepared, list)
        assert self._api is not None
        self._pending_creates.append(self._api.submit(self._create_all(prepared)))

    def create_object(self, manifest: Mapping[str, Any]) -> None:
        kind = str(manifest.get("kind"))
        if kind not in API_PATHS:
            raise Unmodelled(f"createAny of kind {kind}")
        namespace = str((manifest.get("metadata") or {}).get("namespace") or "")
        self._call(self._create_all([(_api_path(kind, namespace), manifest)]))

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if kind not in API_PATHS:
            raise Unmodelled(f"deleting objects of kind {kind}")
        self._call(self._request("DELETE", _api_path(kind, namespace, name)))

    def pod_names(self, namespace: str, selector: Mapping[str, str]) -> list[str]:
        return [
            key.split("/", 1)[1]
            for key, p in list(self.pods.items())
            if p.namespace == namespace and _labels_match(p.labels, selector)
        ]

    def count(self, namespace: str, selector: Mapping[str, str], *, attempted: bool) -> int:
        self._deliver()  # listeners hear of every bind counted here
        return sum(
            1
            for p in list(self.pods.values())
            if p.namespace == namespace
            and (not selector or _labels_match(p.labels, selector))
            and (p.node or (attempted and p.attempted))
        )

    def step(self, until: float) -> bool:
        """Deliver the binds the watch saw; wait a little. False once nothing moved for
        ``STALL_SECONDS``."""
        self._deliver()
        for done in [f for f in self._pending_creates if f.done()]:
            self._pending_creates.remove(done)
            done.result()  # raises what failed the requests
        for watch in (self._watch, self._scheduled_watch):
            if watch.done():
                watch.result()  # raises what ended the watch
                raise WorkloadFailed("a watch on kubesim ended")
        time.sleep(max(0.0, min(0.01, until - time.monotonic())))
        return time.monotonic() - self._last_event < STALL_SECONDS

    def _deliver(self) -> None:
        while self._binds:
            key, at = self._binds.popleft()
            view = self.pods.get(key)
            labels: Mapping[str, str] = view.labels if view is not None else {}
            for listener in self.listeners:
                listener(key.split("/", 1)[0], labels, at)

    def pending_summary(self) -> str:
        pending = sum(1 for p in list(self.pods.values()) if not p.node)
        refused = "; ".join(f"{n} refused: {r}" for r, n in self.refused.most_common(2))
        return f"{pending} pods pending in kubesim" + (f"; {refused}" if refused else "")

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"requests": self.requests}
        if self.refused:
            out["refused"] = dict(self.refused)
        return out

    def close(self) -> None:
        if self._watcher is not None:
            self._watch.cancel()
            self._scheduled_watch.cancel()
            self._watcher.close()
        if self._api is not None:
            self._api.close()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()


def _typed(convert: Callable[[Mapping[str, Any]], Any], manifest: Mapping[str, Any]) -> Any:
    try:
        return convert(manifest)
    except InvalidObject as exc:
        raise ConfigError(str(exc)) from None


# --- the executor --------------------------------------------------------------------------------


@dataclass(slots=True)
class Timer:
    """A background op (churn, paced deletes): ``fire`` runs at ``due`` and every ``period``
    after; it returns False when it is done."""

    due: float
    period: float
    fire: Callable[[], bool]


@dataclass(slots=True)
class Result:
    """One measured op of a workload."""

    name: str
    collector: Collector
    seconds: float
    pods: int
    cpu_seconds: float  # this process's CPU time over the op (the machine may be shared)


class Executor:
    """Plays one workload's ops against a backend (``runWorkload``)."""

    def __init__(
        self,
        tc: TestCase,
        w: Workload,
        backend: Backend,
        templates: Templates,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.tc = tc
        self.w = w
        self.backend = backend
        self.templates = templates
        self.timeout = timeout
        self.ns_counts: dict[str, int] = {}  # numPodsScheduledPerNamespace
        self.timers: list[Timer] = []
        self.collector: Collector | None = None
        self.results: list[Result] = []
        self.next_node_index = 0
        self.cpu_started = 0.0
        backend.listeners.append(self._bound)

    def _bound(self, namespace: str, labels: Mapping[str, str], now: float) -> None:
        if self.collector is not None:
            self.collector.bound(namespace, labels, now)

    # --- time -----------------------------------------------------------------------------

    def _fire_timers(self, now: float) -> None:
        """Fire what is due, once each: like Go's ``time.Ticker``, a timer whose receiver
        was slow does not fire the ticks it missed."""
        for t in list(self.timers):
            if t.due <= now:
                if not t.fire():
                    self.timers.remove(t)
                    continue
                t.due = max(t.due + t.period, now)

    def run_until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            now = time.monotonic()
            self._fire_timers(now)
            if done():
                return
            if now > deadline:
                raise WorkloadFailed(
                    f"timed out after {self.timeout:.0f} s waiting for {what}:"
                    f" {self.backend.pending_summary()}"
                )
            next_due = min((t.due for t in self.timers), default=deadline)
            if self.backend.step(next_due):
                continue
            if not self.timers:
                raise WorkloadFailed(
                    f"nothing left to schedule while waiting for {what}:"
                    f" {self.backend.pending_summary()}"
                )
            time.sleep(max(0.0, min(next_due, deadline) - time.monotonic()))

    # --- ops --------------------------------------------------------------------------------

    def _namespace(self, name: str) -> None:
        if name not in self.ns_counts:
            self.backend.create_namespace(name, {})
            self.ns_counts[name] = 0

    def run(self, ops: Sequence[Op]) -> list[Result]:
        for index, op in enumerate(ops):
            self._run_op(index, op)
        return self.results

    def _run_op(self, index: int, op: Op) -> None:
        if isinstance(op, CreateNodes):
            self._create_nodes(index, op)
        elif isinstance(op, CreateNamespaces):
            self._create_namespaces(op)
        elif isinstance(op, CreatePods):
            self._create_pods(index, op)
        elif isinstance(op, CreateAny):
            self._create_any(op)
        elif isinstance(op, DeletePods):
            self._delete_pods(op)
        elif isinstance(op, Churn):
            self._churn(index, op)
        elif isinstance(op, Barrier):
            self._barrier(op)
        elif isinstance(op, Sleep):
            end = time.monotonic() + op.seconds
            self.run_until(lambda: time.monotonic() >= end, f"sleep {op.seconds}s")
        elif isinstance(op, StartCollecting):
            self._start_collecting(op.name, op.namespaces, op.label_selector)
        else:
            self._stop_collecting(0)

    def _create_nodes(self, index: int, op: CreateNodes) -> None:
        existing = set(self.backend.node_names())
        manifests: list[dict[str, Any]] = []
        for i in range(op.count):
            if op.template is None:
                template: Mapping[str, Any] = base_node(f"node-{index}-")
            else:
                env = {**op.template_params, "Index": i, "Count": op.count}
                template = self.templates.load(op.template, env, kind="Node")
            meta = dict(template.get("metadata") or {})
            name = self.templates.name("Node", "", meta)
            meta.pop("generateName", None)
            meta["name"] = name
            meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/hostname": name}
            manifests.append({**template, "metadata": meta})
        # Strategies patch the nodes of the name-sorted list from the op's first index, as
        # IntegrationTestNodePreparer does (new and earlier nodes alike).
        labels: dict[str, dict[str, str]] = {}
        if op.label_key or op.unique_label_key:
            everything = sorted(existing | {m["metadata"]["name"] for m in manifests})
            chosen = everything[self.next_node_index : self.next_node_index + op.count]
            for j, name in enumerate(chosen):
                if op.label_key:
                    labels[name] = {op.label_key: op.label_values[j % len(op.label_values)]}
                else:
                    labels[name] = {op.unique_label_key: self.templates.uid()}
        for m in manifests:
            extra = labels.pop(m["metadata"]["name"], None)
            if extra:
                m["metadata"]["labels"].update(extra)
        self.backend.create_nodes(manifests)
        if labels:
            self.backend.label_nodes(labels)
        self.next_node_index += op.count

    def _create_namespaces(self, op: CreateNamespaces) -> None:
        labels: Mapping[str, str] = {}
        if op.template is not None:
            ns = self.templates.load(op.template, {}, kind="Namespace")
            labels = (ns.get("metadata") or {}).get("labels") or {}
        for i in range(op.count):
            name = f"{op.prefix}-{i}"
            if name not in self.ns_counts:
                self.backend.create_namespace(name, labels)
                self.ns_counts[name] = 0

    def _create_pods(self, index: int, op: CreatePods) -> None:
        namespace = op.namespace if op.namespace is not None else f"namespace-{index}"
        self._namespace(namespace)
        template = op.template if op.template is not None else self.tc.default_pod_template
        pods = self.templates.pods(template, op.count, namespace, op.template_params, op.batch_size)
        prepared = self.backend.prepare_pods(pods)
        if op.collect_metrics:
            self._start_collecting(namespace, (namespace,), {})
        began = time.monotonic()
        self.backend.submit_pods(prepared)
        if op.skip_wait:
            self.ns_counts[namespace] += op.count
        else:
            collector = self.collector

            def done() -> bool:
                return self.backend.count(namespace, {}, attempted=False) >= op.count and (
                    # and the collector has heard of every bind (a watch may lag)
                    collector is None or collector.scheduled >= op.count
                )

            self.run_until(done, f"{op.count} pods of namespace {namespace} to be scheduled")
        if op.collect_metrics:
            self._stop_collecting(op.count, began)

    def _start_collecting(
        self, name: str, namespaces: Sequence[str], selector: Mapping[str, str]
    ) -> None:
        if self.collector is not None:
            raise ConfigError(
                f"{self.tc.full_name(self.w)}: metrics collection is overlapping. Probably"
                " second collector was started before stopping a previous one"
            )
        # Upstream runs runtime.GC() before collecting. Here the objects built so far (the
        # cluster) also move out of the cyclic collector's generations: otherwise each full
        # collection walks every pod and node again, a pause of tens of ms in the cycle it
        # lands in.
        gc.collect()
        gc.freeze()
        self.collector = Collector(name, frozenset(namespaces), selector, time.monotonic())
        self.cpu_started = time.process_time()

    def _stop_collecting(self, pods: int, began: float | None = None) -> None:
        collector = self.collector
        if collector is None:
            raise ConfigError(
                f"{self.tc.full_name(self.w)}: missing startCollectingMetrics operation before"
                " stopping"
            )
        self.collector = None
        collector.stopped = time.monotonic()
        end = collector.last_bound or collector.stopped
        start = began if began is not None else collector.started
        self.results.append(
            Result(
                collector.name,
                collector,
                end - start,
                pods or collector.scheduled,
                time.process_time() - self.cpu_started,
            )
        )

    def _create_any(self, op: CreateAny) -> None:
        if op.namespace:
            self._namespace(op.namespace)
        for i in range(op.count):
            env = {**op.template_params, "Index": i, "Count": op.count}
            self._create_from(op.template, env, op.namespace)

    def _create_from(
        self, path: Path, env: Mapping[str, object], namespace: str
    ) -> tuple[str, str]:
        manifest = self.templates.load(path, env)
        kind = str(manifest.get("kind"))
        meta = dict(manifest.get("metadata") or {})
        name = self.templates.name(kind, namespace, meta)
        meta.pop("generateName", None)
        meta["name"] = name
        if API_PATHS.get(kind, ("", True))[1]:
            meta["namespace"] = namespace or "default"
        if kind == "Pod":
            meta.setdefault("uid", self.templates.uid())
        self.backend.create_object({**manifest, "metadata": meta})
        return kind, name

    def _delete_pods(self, op: DeletePods) -> None:
        names = self.backend.pod_names(op.namespace, op.label_selector)
        if op.per_second <= 0:
            for name in names:
                self.backend.delete_object("Pod", op.namespace, name)
            return
        queue = deque(names)

        def delete_next() -> bool:
            if queue:
                self.backend.delete_object("Pod", op.namespace, queue.popleft())
            return bool(queue)

        period = 1.0 / op.per_second
        timer = Timer(time.monotonic() + period, period, delete_next)
        self.timers.append(timer)
        if not op.skip_wait:
            self.run_until(lambda: not queue, f"deleting pods of namespace {op.namespace}")

    def _churn(self, index: int, op: Churn) -> None:
        namespace = op.namespace if op.namespace is not None else f"namespace-{index}"
        if namespace not in self.ns_counts:
            self.backend.create_namespace(namespace, {})
        slots: list[list[tuple[str, str] | None]] = [
            [None] * max(op.number, 1) for _ in op.templates
        ]
        for path in op.templates:  # parse errors surface now, as upstream's do
            self.templates.load(path, {})
        count = 0

        def tick() -> bool:
            nonlocal count
            for i, path in enumerate(op.templates):
                if op.mode == "create":
                    self._create_from(path, {}, namespace)
                    continue
                slot = count % op.number
                held = slots[i][slot]
                if held is not None:
                    self.backend.delete_object(held[0], namespace, held[1])
                    slots[i][slot] = None
                else:
                    slots[i][slot] = self._create_from(path, {}, namespace)
            count += 1
            return op.mode == "recreate" or op.number == 0 or count < op.number

        self.timers.append(Timer(time.monotonic() + op.interval, op.interval, tick))

    def _barrier(self, op: Barrier) -> None:
        for ns in op.namespaces:
            if ns not in self.ns_counts:
                raise WorkloadFailed(f"barrier: unknown namespace {ns}")
        namespaces = list(op.namespaces) or list(self.ns_counts)
        attempted = op.stage == "Attempted"
        for ns in namespaces:
            want = self.ns_counts[ns]

            def reached(ns: str = ns, want: int = want) -> bool:
                return self.backend.count(ns, op.label_selector, attempted=attempted) >= want

            self.run_until(reached, f"{want} pods of namespace {ns} to be {op.stage.lower()}")
        if not attempted:
            for ns in namespaces:
                self.ns_counts.pop(ns, None)
            if not op.namespaces:
                self.ns_counts.clear()


# --- running workloads ---------------------------------------------------------------------------


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def run_workload(
    tc: TestCase,
    w: Workload,
    *,
    through: str = "scheduler",
    seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    kubesim_url: str | None = None,
) -> dict[str, Any]:
    """Run one workload; the JSON object its line prints.

    ``ConfigError`` and ``WorkloadFailed`` propagate; ``Unmodelled`` becomes the line.
    """
    full = tc.full_name(w)
    line: dict[str, Any] = {
        "bench": "scheduler_perf",
        "workload": full,
        "through": through,
        "unit": "pods/s",
        "floor": w.threshold or None,
    }
    try:
        ops, notes = plan(tc, w)
    except Unmodelled as exc:
        return {**line, "value": None, "unmodelled": str(exc)}
    backend: Backend = (
        KubesimBackend(url=kubesim_url) if through == "kubesim" else LibraryBackend(seed=seed)
    )
    templates = Templates(seed)
    executor = Executor(tc, w, backend, templates, timeout=timeout)
    began = time.monotonic()
    try:
        results = executor.run(ops)
    except Unmodelled as exc:
        return {**line, "value": None, "unmodelled": str(exc)}
    finally:
        executor.timers.clear()
        backend.close()
        gc.unfreeze()
    line["seconds_total"] = round(time.monotonic() - began, 1)
    measured = results[-1] if results else None
    if measured is None:
        return {**line, "value": None, "note": "no op collected metrics"}
    summary = measured.collector.summary()
    collector = measured.collector
    overall = collector.scheduled / measured.seconds if measured.seconds > 0 else None
    if summary is not None:
        value = summary.get(w.bucket)
        measure = f"SchedulingThroughput {w.bucket} of {len(collector.samples())} samples"
    else:
        # Upstream warns and reports nothing; here the op's pods over its seconds stand in.
        value = overall if collector.scheduled else None
        measure = "overall (fewer than two 1-s samples of SchedulingThroughput)"
    line.update(
        value=_round(value),
        measure=measure,
        ratio=(
            round(value / w.threshold, 3)
            if value is not None and w.threshold and not w.expect_lower
            else None
        ),
        measured_pods=measured.pods,
        scheduled=measured.collector.scheduled,
        samples=len(measured.collector.samples()),
        percentiles=(
            None
            if summary is None
            else {k: round(v, 1) for k, v in summary.items() if k != "Average"}
        ),
        overall=_round(overall),
        # The library's figure per second of this process's CPU (the machine may be shared;
        # kubesim schedules in a process of its own, so there it says nothing).
        per_cpu_second=round(measured.collector.scheduled / measured.cpu_seconds, 1)
        if measured.cpu_seconds > 0 and through == "scheduler"
        else None,
        **backend.stats(),
    )
    if notes:
        line["notes"] = notes
    return line


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run scheduler_perf workloads (upstream's YAML) against scheduler or kubesim."
    )
    parser.add_argument(
        "configs",
        nargs="*",
        type=Path,
        help="performance-config.yaml files (default: the copies in bench/scheduler_perf/)",
    )
    parser.add_argument(
        "--workload",
        metavar="REGEX",
        help="run the workloads whose TestCase/Workload name matches (default: the issue's table)",
    )
    parser.add_argument(
        "--label-filter",
        metavar="LABELS",
        help="comma-separated labels a workload must have (label or +label) or not have (-label),"
        " as upstream's -perf-scheduling-label-filter",
    )
    parser.add_argument(
        "--through",
        choices=("scheduler", "kubesim", "both"),
        default="scheduler",
        help="run through the scheduler library (default), kubesim's API and scheduler loop, or"
        " both (then each line has the kubesim figure and its ratio to the library's)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for names and sampled preemption")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds to wait for an op's pods before failing (upstream: 600)",
    )
    parser.add_argument("--list", action="store_true", help="list the selected workloads and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    try:
        if args.workload:
            re.compile(args.workload)
        cases = [tc for path in (args.configs or DEFAULT_CONFIGS) for tc in load_config(path)]
        chosen = select(cases, args.workload, args.label_filter)
        if not chosen:
            raise ConfigError("no workload matches the filter")
    except (ConfigError, re.error) as exc:
        print(f"scheduler_perf: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for tc, w in chosen:
            print(tc.full_name(w))
        return 0
    status = 0
    for tc, w in chosen:
        try:
            if args.through == "both":
                line = run_workload(tc, w, seed=args.seed, timeout=args.timeout)
                sim = run_workload(tc, w, through="kubesim", seed=args.seed, timeout=args.timeout)
                line["kubesim"] = sim.get("value")
                line["kubesim_overall"] = sim.get("overall")
                if sim.get("value") and line.get("value"):
                    line["kubesim_ratio"] = round(sim["value"] / line["value"], 3)
            else:
                line = run_workload(
                    tc, w, through=args.through, seed=args.seed, timeout=args.timeout
                )
        except ConfigError as exc:
            if args.debug:
                raise
            print(f"scheduler_perf: {exc}", file=sys.stderr)
            return 2
        except WorkloadFailed as exc:
            if args.debug:
                raise
            print(f"scheduler_perf: {tc.full_name(w)}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(json.dumps(line), flush=True)
    return status

"""A workload's ops, typed, with its params patched in (upstream's ``patchParams``).

Each opcode of upstream's ``operations.go`` that this runner plays has a class here; ``plan``
turns a test case's decoded ops into them for one workload. What cannot be modelled — DRA and
volume opcodes, feature gates that change the scheduler, a ``schedulerConfigPath``,
steady-state pod creation, other metrics than SchedulingThroughput — raises ``Unmodelled``
with the reason the workload's line prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kube.duration import DurationError, parse_go_duration
from scheduler.features import FEATURE_GATES, SCHEDULER_QUEUEING_HINTS

from . import gojson
from .config import OP_FIELDS, UNMODELLED_OPS, TestCase, Workload
from .errors import ConfigError, Unmodelled

__all__ = [
    "MODELLED_GATE_VALUES",
    "NOTED_GATES",
    "Barrier",
    "Churn",
    "CreateAny",
    "CreateNamespaces",
    "CreateNodes",
    "CreatePods",
    "DeletePods",
    "Op",
    "Params",
    "Sleep",
    "StartCollecting",
    "StopCollecting",
    "plan",
    "queueing_hints",
]

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


def _duration(text: str, where: str) -> float:
    """A ``metav1.Duration`` field or param: Go's ``time.ParseDuration``, in seconds."""
    try:
        return parse_go_duration(text)
    except DurationError as exc:
        raise ConfigError(f"{where}: {exc}") from None


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
        ref = gojson.string(op["countParam"], f"{where}.countParam")
        if not ref.startswith("$"):
            raise ConfigError(f"{where}: invalid Count / CountParam={ref!r}")
        return params.number(ref, where)
    count = gojson.integer(op.get("count", default), f"{where}.count")
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


def queueing_hints(tc: TestCase, w: Workload) -> bool:
    """The workload's SchedulerQueueingHints: its own setting, the test case's, else kube's
    1.32 default (on)."""
    gates = {**tc.feature_gates, **w.feature_gates}
    return bool(gates.get(SCHEDULER_QUEUEING_HINTS, FEATURE_GATES[SCHEDULER_QUEUEING_HINTS]))


def plan(tc: TestCase, w: Workload) -> tuple[list[Op], list[str]]:
    """The workload's ops with params patched (``patchParams``), and the notes to print.

    ``$params`` are resolved (a param must exist and be a number, and one no op uses is an
    error, as ``unusedParams``), paths made relative to the config file's directory, and what
    upstream's ``isValid`` checks is checked. Raises ``ConfigError`` for what upstream refuses
    (undefined or unused params, invalid counts) and ``Unmodelled`` for what this runner
    cannot reproduce.
    """
    notes: list[str] = []
    gates = {**tc.feature_gates, **w.feature_gates}
    for gate, value in sorted(gates.items()):
        if gate in NOTED_GATES:
            notes.append(f"{gate}={str(value).lower()}: {NOTED_GATES[gate]}")
        elif gate in FEATURE_GATES:  # modelled both ways (scheduler.features)
            continue
        elif gate in MODELLED_GATE_VALUES:
            if MODELLED_GATE_VALUES[gate] != value:
                raise Unmodelled(f"feature gate {gate}={str(value).lower()} is not modelled")
        else:
            raise Unmodelled(f"feature gate {gate} is not modelled")
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
        if code == "createPodSets":
            ops.extend(_pod_sets(raw, params, base, where))
        else:
            ops.append(_plan_op(code, raw, params, base, where))
    unused = sorted(set(w.params) - params.used)
    if unused:
        raise ConfigError(
            f"{tc.full_name(w)}: the parameters {unused} are defined on workload {w.name}, but"
            " unused"
        )
    return ops, notes


def _pod_sets(raw: Mapping[str, Any], params: Params, base: Path, where: str) -> list[CreatePods]:
    """``createPodSets`` unrolled as ``unrollWorkloadTemplate`` does: its ``createPodsOp``
    once per namespace ``<namespacePrefix>-<i>``, i from 0 to count-1, each patched with the
    workload's params; the ops after it count their index in the unrolled list."""
    count = _count(raw, params, where)
    if count <= 0 and not raw.get("countParam"):
        raise ConfigError(f"{where}: invalid Count={count} / CountParam=''")
    prefix = gojson.string(raw.get("namespacePrefix", ""), f"{where}.namespacePrefix")
    inner = gojson.fields(
        raw.get("createPodsOp") or {}, (*OP_FIELDS["createPods"],), f"{where}.createPodsOp"
    )
    out: list[CreatePods] = []
    for i in range(count):
        op = _plan_op("createPods", {**inner, "namespace": f"{prefix}-{i}"}, params, base, where)
        assert isinstance(op, CreatePods)
        out.append(op)
    if count == 0:  # the params the template names are used all the same
        _plan_op("createPods", {**inner, "namespace": prefix}, params, base, where)
    return out


def _path(raw: Mapping[str, Any], key: str, base: Path, where: str) -> Path | None:
    value = raw.get(key)
    if value is None:
        return None
    return base / gojson.string(value, f"{where}.{key}")


def _plan_op(code: str, raw: Mapping[str, Any], params: Params, base: Path, where: str) -> Op:
    if code == "createNodes":
        if raw.get("nodeAllocatableStrategy") is not None:
            raise Unmodelled(f"{where}: nodeAllocatableStrategy (CSINode volume limits)")
        label = gojson.fields(
            raw.get("labelNodePrepareStrategy"),
            ("labelKey", "labelValues"),
            f"{where}.labelNodePrepareStrategy",
        )
        unique = gojson.fields(
            raw.get("uniqueNodeLabelStrategy"), ("labelKey",), f"{where}.uniqueNodeLabelStrategy"
        )
        values = tuple(gojson.string_list(label.get("labelValues"), f"{where}.labelValues"))
        if label and not values:
            raise ConfigError(f"{where}: labelNodePrepareStrategy needs labelValues")
        return CreateNodes(
            count=_count(raw, params, where),
            template=_path(raw, "nodeTemplatePath", base, where),
            label_key=gojson.string(label.get("labelKey", ""), f"{where}.labelKey"),
            label_values=values,
            unique_label_key=gojson.string(unique.get("labelKey", ""), f"{where}.labelKey"),
            template_params=params.template_params(raw.get("templateParams"), where),
        )
    if code == "createNamespaces":
        return CreateNamespaces(
            prefix=gojson.string(raw.get("prefix", ""), f"{where}.prefix"),
            count=_count(raw, params, where),
            template=_path(raw, "namespaceTemplatePath", base, where),
        )
    if code == "createPods":
        count = _count(raw, params, where)
        if raw.get("countMultiplierParam"):
            count *= params.number(gojson.string(raw["countMultiplierParam"], where), where)
        steady = raw.get("steadyState", False)
        if raw.get("steadyStateParam"):
            steady = params.values.get(gojson.string(raw["steadyStateParam"], where)[1:])
            params.used.add(raw["steadyStateParam"][1:])
        if steady:
            raise Unmodelled(f"{where}: steadyState pod creation")
        if raw.get("persistentVolumeClaimTemplatePath") or raw.get("persistentVolumeTemplatePath"):
            raise Unmodelled(f"{where}: PersistentVolumes (volume binding is not modelled)")
        collect = gojson.boolean(raw.get("collectMetrics", False), f"{where}.collectMetrics")
        skip = gojson.boolean(
            raw.get("skipWaitToCompletion", False), f"{where}.skipWaitToCompletion"
        )
        if collect and skip:
            raise ConfigError(
                f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time"
            )
        batch = gojson.integer(raw.get("signatureBatchSize", 0), f"{where}.signatureBatchSize")
        if raw.get("signatureBatchSizeParam"):
            batch = params.number(gojson.string(raw["signatureBatchSizeParam"], where), where)
        if raw.get("durationParam"):
            params.string(gojson.string(raw["durationParam"], where), where)
        namespace = raw.get("namespace")
        return CreatePods(
            count=count,
            namespace=None if namespace is None else gojson.string(namespace, f"{where}.namespace"),
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
            namespace=gojson.string(raw.get("namespace", ""), f"{where}.namespace"),
            template=template,
            count=count,
            template_params=params.template_params(raw.get("templateParams"), where),
        )
    if code == "deletePods":
        per_second = gojson.integer(
            raw.get("deletePodsPerSecond", 0), f"{where}.deletePodsPerSecond"
        )
        if per_second < 0:
            raise ConfigError(
                f"{where}: invalid DeletePodsPerSecond={per_second}; should be non-negative"
            )
        return DeletePods(
            namespace=gojson.string(raw.get("namespace", ""), f"{where}.namespace"),
            label_selector=gojson.string_map(raw.get("labelSelector"), f"{where}.labelSelector"),
            skip_wait=gojson.boolean(
                raw.get("skipWaitToCompletion", False), f"{where}.skipWaitToCompletion"
            ),
            per_second=per_second,
        )
    if code == "churn":
        mode = gojson.string(raw.get("mode", ""), f"{where}.mode")
        number = gojson.integer(raw.get("number", 0), f"{where}.number")
        if mode not in ("create", "recreate"):
            raise ConfigError(f"{where}: invalid mode: {mode}. must be one of [recreate create]")
        if number < 0:
            raise ConfigError(f"{where}: number ({number}) cannot be negative")
        if mode == "recreate" and number == 0:
            raise ConfigError(f"{where}: number cannot be 0 when mode is recreate")
        templates = gojson.string_list(raw.get("templatePaths"), f"{where}.templatePaths")
        if not templates:
            raise ConfigError(f"{where}: at least one template spec file needs to be specified")
        interval = gojson.integer(
            raw.get("intervalMilliseconds", 0), f"{where}.intervalMilliseconds"
        )
        namespace = raw.get("namespace")
        return Churn(
            mode=mode,
            number=number,
            interval=(interval or 500) / 1000.0,
            namespace=None if namespace is None else gojson.string(namespace, f"{where}.namespace"),
            templates=tuple(base / t for t in templates),
        )
    if code == "barrier":
        stage = gojson.string(
            raw.get("stageRequirement", "") or "Scheduled", f"{where}.stageRequirement"
        )
        if stage not in ("Scheduled", "Attempted"):
            raise ConfigError(f"{where}: invalid StageRequirement {stage}")
        return Barrier(
            namespaces=tuple(gojson.string_list(raw.get("namespaces"), f"{where}.namespaces")),
            label_selector=gojson.string_map(raw.get("labelSelector"), f"{where}.labelSelector"),
            stage=stage,
        )
    if code == "sleep":
        seconds = 0.0
        if raw.get("duration") is not None:
            seconds = _duration(gojson.string(raw["duration"], f"{where}.duration"), where)
        if raw.get("durationParam"):
            seconds = _duration(
                params.string(gojson.string(raw["durationParam"], where), where), where
            )
        return Sleep(seconds)
    if code == "startCollectingMetrics":
        namespaces = tuple(gojson.string_list(raw.get("namespaces"), f"{where}.namespaces"))
        if not namespaces:
            raise ConfigError(f"{where}: namespaces cannot be empty")
        return StartCollecting(
            name=gojson.string(raw.get("name", ""), f"{where}.name"),
            namespaces=namespaces,
            label_selector=gojson.string_map(raw.get("labelSelector"), f"{where}.labelSelector"),
        )
    return StopCollecting()

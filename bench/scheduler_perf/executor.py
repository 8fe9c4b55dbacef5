"""Plays one workload's ops against a backend, as upstream's ``WorkloadExecutor`` does.

The throughput collector starts before the measured pods are created, as upstream's does;
``run_workload`` turns its samples into the workload's line.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .backend import Backend
from .config import TestCase, Workload
from .errors import ConfigError, Unmodelled, WorkloadFailed
from .kubesim_backend import KubesimBackend
from .library_backend import LibraryBackend
from .objects import API_PATHS, Templates, base_node
from .ops import (
    Barrier,
    Churn,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    DeletePods,
    Op,
    Sleep,
    StartCollecting,
    plan,
    queueing_hints,
)
from .throughput import Collector

# A kubesim already running (``kubesim_url``) was started with its own --feature-gates.
KUBESIM_URL_GATES_NOTE: Final = (
    "SchedulerQueueingHints: a running kubesim (--kubesim-url) schedules with its own"
    " --feature-gates"
)

__all__ = ["DEFAULT_TIMEOUT", "Executor", "Result", "run_workload"]

DEFAULT_TIMEOUT: Final = 600.0  # upstream waits 10 minutes for a createPods op


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
    cpu_seconds: float  # the scheduler's process's CPU time over the op (the machine is shared)


class Executor:
    """Plays one workload's ops against a backend (``runWorkload``).

    Pods go to the namespace ``namespace-<op index>`` unless one is named; ``barrier`` waits for
    the pods counted by ``skipWaitToCompletion`` ops (``Scheduled`` or ``Attempted``); ``churn``
    creates (or creates and deletes) its objects every ``intervalMilliseconds`` of wall time while
    later ops run; ``deletePods`` deletes at ``deletePodsPerSecond``. Label strategies of
    ``createNodes`` patch the name-sorted node list from the op's first index, as
    ``IntegrationTestNodePreparer`` does.
    """

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
        self.cpu_started = self.backend.cpu_time()

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
                self.backend.cpu_time() - self.cpu_started,
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

    ``ConfigError`` and ``WorkloadFailed`` propagate; ``Unmodelled`` becomes the line. ``overall``
    (the op's pods over the seconds to the last bind) stands in when there are fewer than two
    throughput samples, and ``per_cpu_second`` (over the CPU time of the process that schedules:
    this one, or ``kubesim serve``) is for machines shared with other work.
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
    config = tc.scheduler_configuration
    hints = queueing_hints(tc, w)
    if through == "kubesim" and kubesim_url is not None:
        notes = [*notes, KUBESIM_URL_GATES_NOTE]
    if config is not None and through == "kubesim" and kubesim_url is not None:
        return {
            **line,
            "value": None,
            "unmodelled": f"schedulerConfigPath {tc.scheduler_config}: a running kubesim"
            " (--kubesim-url) schedules with its own configuration",
        }
    backend: Backend = (
        KubesimBackend(
            url=kubesim_url,
            scheduler_config=tc.base / tc.scheduler_config if config is not None else None,
            queueing_hints=hints,
        )
        if through == "kubesim"
        else LibraryBackend(seed=seed, config=config, queueing_hints=hints)
    )
    executor: Executor | None = None
    began = time.monotonic()
    try:  # from here on, whatever ends the run (a signal too) closes the backend
        executor = Executor(tc, w, backend, Templates(seed), timeout=timeout)
        results = executor.run(ops)
    except Unmodelled as exc:
        return {**line, "value": None, "unmodelled": str(exc)}
    finally:
        if executor is not None:
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
        # The pods per CPU second of the process that schedules (this one, or the kubesim
        # serve child): what a shared machine takes away from ``value`` it leaves here.
        per_cpu_second=round(measured.collector.scheduled / measured.cpu_seconds, 1)
        if measured.cpu_seconds > 0
        else None,
        **backend.stats(),
    )
    if notes:
        line["notes"] = notes
    return line

"""The ``SchedulerQueueingHints`` gate in upstream's configs: both values are played, a workload
that does not set it runs with kube 1.32's default (on), and the library's queue gets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import load_bench

SP = load_bench("scheduler_perf")

POD = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: p-
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: 100m}}
"""
CONFIG = """\
- name: Gate
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - opcode: createPods
    count: 3
    collectMetrics: true
  workloads:
  - name: hintsOff
    featureGates: {SchedulerQueueingHints: false}
  - name: hintsOn
    featureGates: {SchedulerQueueingHints: true}
  - name: unset
"""


def _cases(tmp_path: Path) -> dict[str, tuple[object, object]]:
    (tmp_path / "pod.yaml").write_text(POD)
    path = tmp_path / "performance-config.yaml"
    path.write_text(CONFIG)
    [tc] = SP.load_config(path)
    return {w.name: (tc, w) for w in tc.workloads}


@pytest.mark.parametrize(
    ("name", "hints"), [("hintsOff", False), ("hintsOn", True), ("unset", True)]
)
def test_both_values_are_played_and_unset_is_on(tmp_path: Path, name: str, hints: bool) -> None:
    tc, w = _cases(tmp_path)[name]
    _, notes = SP.plan(tc, w)
    assert notes == []
    assert SP.queueing_hints(tc, w) is hints
    line = SP.run_workload(tc, w, timeout=30)
    assert "unmodelled" not in line, line
    assert line["scheduled"] == line["measured_pods"] == 3


def test_the_library_queue_gets_the_gate() -> None:
    assert SP.LibraryBackend(seed=1).queue.queueing_hints_enabled
    assert not SP.LibraryBackend(seed=1, queueing_hints=False).queue.queueing_hints_enabled


@pytest.mark.parametrize(("name", "hints"), [("hintsOff", False), ("unset", True)])
def test_kubesim_serve_gets_the_workloads_gate(tmp_path: Path, name: str, hints: bool) -> None:
    tc, w = _cases(tmp_path)[name]
    backend = SP.KubesimBackend(queueing_hints=SP.queueing_hints(tc, w))
    try:
        gate = backend.command[backend.command.index("--feature-gates") + 1]
        assert gate == f"SchedulerQueueingHints={str(hints).lower()}"
        # kubesim serve parses it into its loop: tests/kubesim/test_cli.py
        executor = SP.Executor(tc, w, backend, SP.Templates(0), timeout=60)
        (result,) = executor.run(SP.plan(tc, w)[0])
        assert result.collector.scheduled == 3
        assert backend.cpu_time() > 0.1  # the child's CPU: it imported kubesim, at least
    finally:
        backend.close()

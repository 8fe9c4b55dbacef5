"""``createPodSets`` and the ``SchedulerQueueingHints`` gate, as upstream's affinity configs
use them.

``createPodSets`` is unrolled as upstream's ``unrollWorkloadTemplate`` does: its
``createPodsOp`` once per namespace ``<namespacePrefix>-<i>``, patched with the workload's
params; the ops after it count their index in the unrolled list (the default namespace
``namespace-<index>``). ``SchedulerQueueingHints: false`` is what the library runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import load_bench

SP = load_bench("scheduler_perf")

NS = """\
apiVersion: v1
kind: Namespace
metadata:
  labels:
    team: devops
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: p-
  labels: {color: green}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: 100m}}
"""
CONFIG = """\
- name: Sets
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - opcode: createNodes
    count: 4
  - opcode: createNamespaces
    prefix: init-ns
    countParam: $sets
    namespaceTemplatePath: ns.yaml
  - opcode: createPodSets
    countParam: $sets
    namespacePrefix: init-ns
    createPodsOp:
      opcode: createPods
      countParam: $perSet
  - opcode: createPods
    count: 2
    collectMetrics: true
  workloads:
  - name: three
    featureGates: {SchedulerQueueingHints: false}
    params: {sets: 3, perSet: 2}
"""


def _case(tmp_path: Path, config: str) -> tuple[object, object]:
    (tmp_path / "ns.yaml").write_text(NS)
    (tmp_path / "pod.yaml").write_text(POD)
    path = tmp_path / "performance-config.yaml"
    path.write_text(config)
    [tc] = SP.load_config(path)
    [w] = tc.workloads
    return tc, w


def test_pod_sets_unroll_into_one_create_pods_per_namespace(tmp_path: Path) -> None:
    tc, w = _case(tmp_path, CONFIG)
    ops, notes = SP.plan(tc, w)
    creates = [op for op in ops if type(op).__name__ == "CreatePods"]
    assert [(op.namespace, op.count) for op in creates] == [
        ("init-ns-0", 2),
        ("init-ns-1", 2),
        ("init-ns-2", 2),
        (None, 2),
    ]
    assert notes == []
    backend = SP.LibraryBackend(seed=1)
    SP.Executor(tc, w, backend, SP.Templates(1)).run(ops)
    placed: dict[str, int] = {}
    for pod in backend.snapshot.bound_pods():
        placed[pod.namespace] = placed.get(pod.namespace, 0) + 1
    # The measured op is the fifth of the unrolled list (index 5): upstream's namespace-5.
    assert placed == {"init-ns-0": 2, "init-ns-1": 2, "init-ns-2": 2, "namespace-5": 2}
    assert backend.snapshot.namespace_labels("init-ns-1")["team"] == "devops"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("countParam: $perSet", "countParm: $perSet"), 'unknown field "countParm"'),
        (("countParam: $sets\n    namespacePrefix", "count: 0\n    namespacePrefix"), "Count=0"),
        (("{sets: 3, perSet: 2}", "{sets: 3}"), "parameter perSet is undefined"),
    ],
)
def test_what_upstream_refuses_in_pod_sets_is_named(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    tc, w = _case(tmp_path, CONFIG.replace(*edit))
    with pytest.raises(SP.ConfigError, match=message):
        SP.plan(tc, w)


def test_pod_sets_with_a_namespace_selector_through_kubesim() -> None:
    """Upstream's config unmodified, over HTTP: the labelled namespaces are created through the
    API and kubesim's scheduler loop resolves the namespaceSelector against them."""
    name = "SchedulingRequiredPodAffinityWithNSSelector"
    [tc] = [
        tc
        for tc in SP.load_config(SP.CONFIG_DIR / "affinity" / "performance-config.yaml")
        if tc.name == name
    ]
    [w] = [w for w in tc.workloads if w.name == "10Nodes"]
    line = SP.run_workload(tc, w, through="kubesim", timeout=60)
    assert line["scheduled"] == line["measured_pods"] == 10, line
    assert line["requests"] >= 10 + 2 * 2 + 10  # nodes, the pod sets' pods, measured pods

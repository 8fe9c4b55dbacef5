"""``bench/scheduler_perf``: upstream's workload files played against ``scheduler``.

The small (integration-test) variant of every test case in the repository's copies of
upstream's configs runs here and must place every measured pod; the runner must read files as
upstream writes them (template paths relative to the config, ``generateName``, Go's
case-insensitive field names, ``$params``) and refuse what upstream refuses, naming it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.bench import BENCH_DIR, load_bench

BENCH = BENCH_DIR / "scheduler_perf"  # run as python bench/scheduler_perf


SP = load_bench("scheduler_perf")
NAMED = {name.split("/")[0] for name in SP.DEFAULT_TABLE}


def _small() -> list[tuple[Any, Any]]:
    cases = [tc for path in SP.DEFAULT_CONFIGS for tc in SP.load_config(path)]
    return [
        (tc, w)
        for tc in cases
        for w in tc.workloads
        if "integration-test" in w.labels and "AsyncAPICallsEnabled" not in w.name
    ]


def test_every_named_test_case_has_a_small_variant_in_the_repository() -> None:
    assert {tc.name for tc, _ in _small()} == NAMED
    for name in SP.DEFAULT_TABLE:  # and the default table's sizes are there too
        test_case, _, workload = name.partition("/")
        assert any(
            tc.name == test_case and w.name == workload
            for tc, w in SP.select(
                [tc for path in SP.DEFAULT_CONFIGS for tc in SP.load_config(path)], None, None
            )
        )


@pytest.mark.parametrize(("tc", "w"), _small(), ids=lambda v: getattr(v, "name", ""))
def test_small_workloads_place_every_measured_pod(tc: Any, w: Any) -> None:
    line = SP.run_workload(tc, w, timeout=60)
    assert "unmodelled" not in line, line
    assert line["measured_pods"] > 0
    assert line["scheduled"] == line["measured_pods"], line
    assert line["attempts"]["scheduled"] >= line["measured_pods"]


def test_preemption_basic_preempts_three_low_priority_pods_per_measured_pod() -> None:
    [(tc, w)] = [(tc, w) for tc, w in _small() if tc.name == "PreemptionBasic"]
    line = SP.run_workload(tc, w, timeout=60)
    # 4 x 0.9 CPU per 4-CPU node; a 3-CPU pod of priority 10 needs three of them gone.
    assert line["attempts"]["preemption"] == line["measured_pods"] == 5
    assert line["victims"] == 15


def test_node_inclusion_policy_fields_are_read_as_go_reads_them() -> None:
    """Upstream's template spells ``NodeAffinityPolicy``/``NodeTaintsPolicy`` capitalized;
    Go's encoding/json takes them for the fields, and so does the runner."""
    path = SP.CONFIG_DIR / "templates" / "pod-with-node-inclusion-policy.yaml"
    assert "NodeTaintsPolicy: Honor" in path.read_text()
    manifest = SP.Templates(0).load(path, {}, kind="Pod")
    [constraint] = manifest["spec"]["topologySpreadConstraints"]
    assert constraint["nodeTaintsPolicy"] == "Honor"
    assert constraint["nodeAffinityPolicy"] == "Honor"


def _write(tmp: Path, config: str, templates: dict[str, str]) -> Path:
    (tmp / "cases").mkdir()
    (tmp / "templates").mkdir()
    for name, text in templates.items():
        (tmp / "templates" / name).write_text(text)
    path = tmp / "cases" / "performance-config.yaml"
    path.write_text(config)
    return path


NODE = """\
apiVersion: v1
kind: Node
metadata:
  generateName: perf-{{.Index}}-
status:
  capacity: {pods: "110", cpu: "{{AddInt 1 .Index}}", memory: 8Gi}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  generateName: web-
  labels: {app: web}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: 500m}}
"""
CONFIG = """\
- name: Small
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeTemplatePath: ../templates/node.yaml
    labelNodePrepareStrategy:
      labelKey: zone
      labelValues: [a, b]
  - OpCode: createPods
    countParam: $pods
    PodTemplatePath: ../templates/pod.yaml
    collectMetrics: true
  workloads:
  - name: tiny
    threshold: 100
    params: {nodes: 3, pods: 4}
"""


def test_templates_resolve_from_the_configs_directory_with_go_templates(tmp_path: Path) -> None:
    path = _write(tmp_path, CONFIG, {"node.yaml": NODE, "pod.yaml": POD})
    [tc] = SP.load_config(path)
    [w] = tc.workloads
    backend = SP.LibraryBackend(seed=1)
    ops, _ = SP.plan(tc, w)
    SP.Executor(tc, w, backend, SP.Templates(1)).run(ops)
    nodes = {ni.name: ni.node for ni in backend.snapshot.node_info_list}
    assert sorted(n.split("-")[1] for n in nodes) == ["0", "1", "2"]
    for name, node in nodes.items():
        assert node.labels["kubernetes.io/hostname"] == name
        assert len(name) == len("perf-0-") + 5  # generateName and five characters
        assert node.allocatable["cpu"] == 1000 * (1 + int(name.split("-")[1]))
    # The label strategy goes round the name-sorted list.
    assert [nodes[n].labels["zone"] for n in sorted(nodes)] == ["a", "b", "a"]
    pods = list(backend.snapshot.bound_pods())
    assert len(pods) == 4
    assert {p.namespace for p in pods} == {"namespace-1"}
    assert sorted(p.labels["signature"] for p in pods) == [f"signature-label-{i}" for i in range(4)]


@pytest.mark.parametrize(
    ("config", "node", "message"),
    [
        (
            CONFIG.replace("opcode: createNodes", "opcode: createNode"),
            NODE,
            'unknown opcode "createNode"',
        ),
        (
            CONFIG.replace("countParam: $pods", "countParm: $pods"),
            NODE,
            'unknown field "countParm"',
        ),
        (CONFIG.replace("{nodes: 3, pods: 4}", "{nodes: 3, pods: 4, spare: 1}"), NODE, "['spare']"),
        (
            CONFIG.replace("countParam: $pods", "countParam: $pod"),
            NODE,
            "parameter pod is undefined",
        ),
        (
            CONFIG.replace("    collectMetrics: true\n", ""),
            NODE,
            "no op in the workload template collects",
        ),
        (CONFIG, NODE.replace("AddInt 1", "Sprintf 1"), "{{Sprintf 1 .Index}} is not supported"),
    ],
)
def test_what_upstream_refuses_is_named(
    tmp_path: Path, config: str, node: str, message: str
) -> None:
    path = _write(tmp_path, config, {"node.yaml": node, "pod.yaml": POD})
    out = subprocess.run(
        [sys.executable, str(BENCH), str(path), "--workload", "Small"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_unknown_template_fields_are_named(tmp_path: Path) -> None:
    path = _write(
        tmp_path, CONFIG, {"node.yaml": NODE, "pod.yaml": POD.replace("image:", "imagee:")}
    )
    [tc] = SP.load_config(path)
    [w] = tc.workloads
    ops, _ = SP.plan(tc, w)
    with pytest.raises(SP.ConfigError, match=r'unknown field "spec.containers\[0\].imagee"'):
        SP.Executor(tc, w, SP.LibraryBackend(seed=0), SP.Templates(0)).run(ops)


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        ("1m30s", 90.0),
        ("$wait", 0.25),
        ("5", 'time: missing unit in duration "5"'),
        ("1d", 'time: invalid duration "1d"'),
    ],
)
def test_sleep_durations_are_gos(tmp_path: Path, duration: str, expected: object) -> None:
    """``sleep``'s ``duration`` (or ``durationParam``) is a ``metav1.Duration``: Go's
    ``time.ParseDuration``, with Go's message when it is not one."""
    param = duration.startswith("$")
    op = "durationParam: $wait" if param else f"duration: '{duration}'"
    config = CONFIG.replace("  workloads:\n", f"  - opcode: sleep\n    {op}\n  workloads:\n")
    if param:
        config = config.replace("{nodes: 3, pods: 4}", "{nodes: 3, pods: 4, wait: 250ms}")
    [tc] = SP.load_config(_write(tmp_path, config, {"node.yaml": NODE, "pod.yaml": POD}))
    [w] = tc.workloads
    if isinstance(expected, float):
        ops, _ = SP.plan(tc, w)
        assert ops[-1].seconds == expected
        return
    with pytest.raises(SP.ConfigError, match=r"Small/tiny: op 2: " + re.escape(str(expected))):
        SP.plan(tc, w)


def test_workloads_it_cannot_model_say_so(tmp_path: Path) -> None:
    config = (
        CONFIG
        + """\
  - name: dra
    featureGates: {DynamicResourceAllocation: true}
    params: {nodes: 1, pods: 1}
- name: Claims
  workloadTemplate:
  - opcode: createResourceClaims
    templatePath: claim.yaml
  - opcode: createPods
    count: 1
    collectMetrics: true
  workloads:
  - name: one
"""
    )
    path = _write(tmp_path, config, {"node.yaml": NODE, "pod.yaml": POD})
    out = subprocess.run(
        [sys.executable, str(BENCH), str(path), "--workload", "dra|Claims"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(x["workload"], x["unmodelled"]) for x in lines] == [
        ("Small/dra", "feature gate DynamicResourceAllocation=true is not modelled"),
        (
            "Claims/one",
            "op 0: opcode createResourceClaims: DRA ResourceClaims (DynamicResources is not"
            " modelled)",
        ),
    ]


def test_pods_that_never_fit_fail_the_workload_with_exit_1(tmp_path: Path) -> None:
    path = _write(tmp_path, CONFIG, {"node.yaml": NODE, "pod.yaml": POD.replace("500m", "64")})
    out = subprocess.run(
        [sys.executable, str(BENCH), str(path), "--workload", "Small"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert "Insufficient cpu" in out.stderr


def test_throughput_is_sampled_as_scheduler_perf_samples_it() -> None:
    c = SP.Collector("x", frozenset({"ns"}), {}, started=0.0)
    for t in (1.5, 1.6, 1.7):
        c.bound("ns", {}, t)
    c.bound("other", {}, 1.8)  # not measured
    c.bound("ns", {"app": "a"}, 2.2)
    for _ in range(9):
        c.bound("ns", {}, 2.5)
    for _ in range(30):
        c.bound("ns", {}, 4.5)
    c.bound("ns", {}, 5.9)  # after the last tick before the end: not sampled
    c.stopped = 5.95
    # Tick 1: nothing bound yet. Tick 2 only starts the clock (3 bound). Tick 3: 10 more in
    # 1 s. Tick 4: nothing new, merged into tick 5: 30 in 2 s, counted for both seconds.
    assert c.samples() == [10.0, 15.0, 15.0]
    summary = c.summary()
    assert summary is not None
    assert summary["Average"] == pytest.approx(40 / 3)
    assert summary["Perc50"] == 15.0
    assert c.scheduled == 44
    selective = SP.Collector("y", frozenset({"ns"}), {"app": "a"}, started=0.0)
    selective.bound("ns", {"app": "a"}, 1.0)
    selective.bound("ns", {}, 1.0)
    assert selective.scheduled == 1
    assert selective.summary() is None  # one bind: no sample


@pytest.mark.parametrize(
    ("value", "text"),
    [(5.0, "5"), (0.5, "0.5"), (123456.0, "123456"), (1e6, "1e+06"), (1.5e-5, "1.5e-05")],
)
def test_template_numbers_print_as_gos_percent_v(value: float, text: str) -> None:
    assert SP.render_template("{{.X}}", {"X": value}, "t") == text
    assert SP.render_template("{{ .N -}} x", {"N": 1000000}, "t") == "1000000x"  # Go int


def test_through_kubesim_binds_every_measured_pod() -> None:
    [(tc, w)] = [(tc, w) for tc, w in _small() if tc.name == "SchedulingBasic"]
    line = SP.run_workload(tc, w, through="kubesim", timeout=60)
    assert line["scheduled"] == line["measured_pods"] == 10, line
    assert line["requests"] >= 5 + 5 + 10  # nodes, init pods and measured pods as requests


NO_FIT_FILTER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      disabled:
      - name: NodeResourcesFit
"""


def test_scheduler_config_path_is_the_profile_that_schedules(tmp_path: Path) -> None:
    """``schedulerConfigPath`` (from the config's directory) is read as kube-scheduler reads
    ``--config``: pods too big for every node fail the workload by default and are placed
    once the profile disables NodeResourcesFit's Filter."""
    config = CONFIG.replace("- name: Small\n", "- name: Small\n  schedulerConfigPath: sched.yaml\n")
    path = _write(tmp_path, config, {"node.yaml": NODE, "pod.yaml": POD.replace("500m", "64")})
    (path.parent / "sched.yaml").write_text(NO_FIT_FILTER)
    out = subprocess.run(
        [sys.executable, str(BENCH), str(path), "--workload", "Small"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    (line,) = [json.loads(x) for x in out.stdout.splitlines()]
    assert line["value"] is not None and "unmodelled" not in line
    (path.parent / "sched.yaml").write_text(NO_FIT_FILTER.replace("filter:", "filtre:"))
    out = subprocess.run(
        [sys.executable, str(BENCH), str(path), "--workload", "Small"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "Small.schedulerConfigPath: profiles[0].plugins.filtre" in out.stderr
    assert 'unknown field "profiles[0].plugins.filtre"' in out.stderr

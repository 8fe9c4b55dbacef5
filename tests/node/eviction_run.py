"""``runEvictionTest`` for the agent: one scenario of eviction_scenarios.py, run and verified.

The same run serves the host (cgroup v1: kubesim and the agent as processes of this machine)
and the guest (cgroup v2: both inside the VM, driven over its channel); what differs is how a
request reaches the API server, how a wait is done and how the agent is started
(``ClusterAccess``). A wait is a GET repeated until a Python expression over the answer ``o``
holds, so in the guest one channel call does the whole wait.

The steps follow upstream's: place the thresholds against the node's summary and start the
evictor with them (``tempSetCurrentKubeletConfig`` restarts the kubelet), create the pods,
wait for the node condition, wait until every pod of non-zero priority was evicted, then
check the order (no pod evicted while one of higher ``evictionPriority`` still ran), that no
priority-0 pod was evicted or failed, the ``Evicted`` events (one per pod, the starved
resource, for memory the offending container and its usage over its request), that the
condition goes away and stays away with no further eviction (``postTestConditionMonitoring``),
and clean up. Eviction times are the events' ``eventTime`` (microseconds, written by the agent
before it deletes), so the order is checked on the agent's own clock, not on when this
process happened to look.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from tests.node.eviction_scenarios import (
    AGENT_CONTROLLER,
    HIGH_PRIORITY,
    HIGH_PRIORITY_CLASS,
    NodeFigures,
    Scale,
    Scenario,
)

JSONDict = dict[str, Any]


class ApiError(Exception):
    """An API request answered with an error status."""

    def __init__(self, code: int, body: Any) -> None:
        super().__init__(f"HTTP {code}: {json.dumps(body)[:500]}")
        self.code = code
        self.body = body


class ClusterAccess(Protocol):
    """How a run reaches the cluster and the node (host or guest)."""

    kubeconfig: str

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One API request; the decoded answer (an error status raises ApiError)."""

    def wait(self, path: str, until: str, *, timeout: float) -> Any:
        """GET ``path`` until ``until`` (a Python expression over the answer ``o``) holds;
        the answer. A timeout raises AssertionError with the last answer."""

    def fetch(self, url: str) -> Any:
        """GET a URL that is not the API server's (the node's kubelet), decoded."""

    def start_agent(self, name: str, args: list[str]) -> None:
        """Start ``eviction-agent run ARGS``, known as ``name``."""

    def stop_agent(self, name: str) -> str:
        """Stop the agent (SIGTERM, then SIGKILL); its log's tail."""


@dataclass(frozen=True)
class NodeInfo:
    """What the agent is told about the scenario's node (its flags)."""

    name: str
    cgroup: str  # the node's cgroup below the cgroup root (kubelet cgroupRoot)
    disk: str  # the node's filesystem: kubelet/ and containerd/ below it
    memory_capacity: int


@dataclass
class ScenarioResult:
    scenario: str
    environment: str
    seconds: float = 0.0
    condition_after_s: float | None = None
    # pod name -> seconds from the pods' creation to its Evicted event, in eviction order
    evictions: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # phase -> seconds it took (agent start, to the evictions, the condition clearing, ...)
    phases: dict[str, float] = field(default_factory=dict)
    _mark: float = field(default_factory=time.monotonic, repr=False)

    def phase(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = now - self._mark
        self._mark = now

    def line(self) -> str:
        order = " → ".join(f"{name} ({t:.1f} s)" for name, t in self.evictions) or "none"
        seen = (
            f"; condition after {self.condition_after_s:.1f} s"
            if self.condition_after_s is not None
            else ""
        )
        phases = ", ".join(f"{k} {v:.0f} s" for k, v in self.phases.items())
        return (
            f"{self.scenario} [{self.environment}]: passed in {self.seconds:.1f} s{seen};"
            f" evicted: {order} ({phases})"
        )


def parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def agent_args(node: NodeInfo, *, kubeconfig: str, kubelet_port: int, scale: Scale) -> list[str]:
    """The flags every scenario gives the agent: its node as kubesim runs it, the node's
    kubelet summary, conditions on, and the scale's pressure transition period."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--node-name={node.name}",
        f"--node-cgroup={node.cgroup}",
        f"--memory-capacity={node.memory_capacity}",
        f"--kubelet-root={node.disk}/kubelet",
        f"--runtime-root={node.disk}/containerd",
        f"--kubelet-summary-url=http://127.0.0.1:{kubelet_port}/stats/summary",
        "--kubelet-token-file=",
        "--node-conditions",
        f"--eviction-pressure-transition-period={scale.transition_period_s}s",
        "--listen=127.0.0.1:0",
    ]


def ensure_common_objects(access: ClusterAccess, namespace: str) -> None:
    """The scenario's namespace and the suite's high PriorityClass (``f.BaseName + "-high-
    priority"``, 999999999)."""
    for path, obj in (
        (
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": HIGH_PRIORITY_CLASS},
                "value": HIGH_PRIORITY,
            },
        ),
    ):
        try:
            access.api("POST", path, obj)
        except ApiError as exc:
            if exc.code != 409:  # AlreadyExists: an earlier scenario made it
                raise


def _condition(node: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c  # type: ignore[no-any-return]
    return None


def evicted_events(events: Mapping[str, Any]) -> list[JSONDict]:
    return [
        e
        for e in events.get("items") or []
        if e.get("reason") == "Evicted" and e.get("reportingController") == AGENT_CONTROLLER
    ]


def ordering_violations(scenario: Scenario, evicted_at: Mapping[str, float]) -> list[str]:
    """``verifyEvictionOrdering``: a pod must not go while one of a higher evictionPriority
    still runs, and priority-0 pods never go."""
    out = []
    by_name = {s.name: s for s in scenario.specs}
    for name, at in evicted_at.items():
        spec = by_name.get(name)
        if spec is None:
            continue
        if spec.eviction_priority == 0:
            out.append(f"priority 0 pod {name} was evicted")
            continue
        for other in scenario.specs:
            if other.eviction_priority <= spec.eviction_priority:
                continue
            when = evicted_at.get(other.name)
            if when is None or when > at:
                out.append(
                    f"priority {spec.eviction_priority} pod {name} was evicted before priority"
                    f" {other.eviction_priority} pod {other.name}"
                )
    return out


def event_problems(scenario: Scenario, events: list[JSONDict]) -> list[str]:
    """``verifyEvictionEvents``: one Evicted event per evicted pod, naming the starved
    resource; for memory, the offending container and its usage above its request."""
    out = []
    for spec in scenario.specs:
        if spec.eviction_priority == 0:
            continue
        mine = [e for e in events if (e.get("regarding") or {}).get("name") == spec.name]
        if len(mine) != 1:
            out.append(f"{spec.name}: {len(mine)} Evicted events, want 1")
            continue
        if scenario.starved_resource is None:
            continue
        annotations = (mine[0].get("metadata") or {}).get("annotations") or {}
        starved = annotations.get("starved_resource")
        if starved != scenario.starved_resource:
            out.append(
                f"{spec.name}: starved_resource {starved!r}, want {scenario.starved_resource!r}"
            )
        if scenario.starved_resource == "memory":
            container = spec.pod["spec"]["containers"][0]
            offenders = str(annotations.get("offending_containers", "")).split(",")
            if offenders != [container["name"]]:
                out.append(f"{spec.name}: offending_containers {offenders}")
            usage = str(annotations.get("offending_containers_usage", "")).split(",")
            request = ((container.get("resources") or {}).get("requests") or {}).get("memory")
            if len(usage) != 1 or _bytes(usage[0]) <= _bytes(request or "0"):
                out.append(f"{spec.name}: offending usage {usage} not above request {request}")
    return out


def _bytes(quantity: str) -> int:
    from kube.quantity import quantity_value

    return quantity_value(quantity)


def run_scenario(
    access: ClusterAccess,
    scenario: Scenario,
    node: NodeInfo,
    *,
    scale: Scale,
    kubelet_port: int,
    environment: str = "",
) -> ScenarioResult:
    """Run one scenario end to end; AssertionError (with the agent's log tail) if it fails."""
    result = ScenarioResult(scenario.name, environment or scale.name)
    started = time.monotonic()
    namespace = scenario.node
    ensure_common_objects(access, namespace)
    node_path = f"/api/v1/nodes/{node.name}"
    summary = access.fetch(f"http://127.0.0.1:{kubelet_port}/stats/summary")
    figures = NodeFigures.from_summary(summary)
    args = [
        *agent_args(node, kubeconfig=access.kubeconfig, kubelet_port=kubelet_port, scale=scale),
        *scenario.thresholds(figures),
    ]
    result.notes.append(f"figures {figures}; agent {' '.join(args[-4:])}")
    condition = scenario.agent_condition
    access.start_agent(node.name, args)
    try:
        # the agent is up once its first sync wrote its conditions
        access.wait(
            node_path,
            "any(c['type'].startswith('NodePressureAgent') and"
            " c.get('reason', '').startswith('NodeHasNo')"
            " for c in o['status'].get('conditions', []))",
            timeout=scale.timeout_s,
        )
        result.phase("agent up")
        created = time.time()
        for spec in scenario.specs:
            pod = json.loads(json.dumps(spec.pod))
            pod["metadata"]["namespace"] = namespace
            pod["spec"]["nodeName"] = node.name
            access.api("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        pods_path = f"/api/v1/namespaces/{namespace}/pods"
        if condition is not None:
            seen = access.wait(
                node_path,
                f"any(c['type'] == {condition!r} and c['status'] == 'True'"
                " for c in o['status'].get('conditions', []))",
                timeout=scale.timeout_s,
            )
            transition = _condition(seen, condition)
            assert transition is not None
            result.condition_after_s = parse_time(transition["lastTransitionTime"]) - created
        events_path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        expected, innocent = scenario.expected_evicted(), scenario.innocent()
        evicted_names = (
            "{e['regarding']['name'] for e in o['items'] if e.get('reason') == 'Evicted'"
            f" and e.get('reportingController') == {AGENT_CONTROLLER!r}}}"
        )
        answer = access.wait(
            events_path,
            f"{evicted_names} >= {set(expected)!r} or bool({evicted_names} & {set(innocent)!r})",
            timeout=scale.timeout_s,
        )
        result.phase("to evictions")
        events = evicted_events(answer)
        evicted_at = {e["regarding"]["name"]: parse_time(e["eventTime"]) for e in events}
        result.evictions = sorted(
            ((n, t - created) for n, t in evicted_at.items()), key=lambda x: x[1]
        )
        problems = ordering_violations(scenario, evicted_at)
        problems += event_problems(scenario, events)
        if scenario.soft_grace_s is not None and result.condition_after_s is not None:
            # whole seconds on the condition: allow one
            for name, after in result.evictions:
                if after - result.condition_after_s < scenario.soft_grace_s - 1:
                    problems.append(
                        f"{name} evicted {after - result.condition_after_s:.1f} s into the"
                        f" pressure, before the soft grace period of {scenario.soft_grace_s} s"
                    )
        pods = access.api("GET", pods_path)
        problems += _innocent_problems(pods, innocent)
        assert not problems, "; ".join(problems)
        if condition is not None:
            access.wait(
                node_path,
                f"any(c['type'] == {condition!r} and c['status'] == 'False'"
                " for c in o['status'].get('conditions', []))",
                timeout=scale.timeout_s,
            )
        # postTestConditionMonitoringPeriod: nothing more happens (looked at twice: each look
        # is a few calls, seconds under TCG)
        result.phase("condition gone")
        for _ in range(2):
            time.sleep(scale.watch_after_s / 2)
            node_now = access.api("GET", node_path)
            if condition is not None:
                now = _condition(node_now, condition)
                assert now is not None and now["status"] == "False", f"{condition} came back: {now}"
            later = evicted_events(access.api("GET", events_path))
            assert len(later) == len(events), (
                f"more evictions after the test: {[e['regarding']['name'] for e in later]}"
            )
            problems = _innocent_problems(access.api("GET", pods_path), innocent)
            assert not problems, "; ".join(problems)
    except AssertionError as exc:
        tail = access.stop_agent(node.name)
        raise AssertionError(
            f"{scenario.name} [{result.environment}]: {exc}\n--- agent log (tail)\n{tail}"
        ) from None
    finally:
        access.stop_agent(node.name)
        result.phase("watch")
        _delete_pods(access, namespace, scale)
    result.phase("cleanup")
    result.seconds = time.monotonic() - started
    return result


def _innocent_problems(pods: Mapping[str, Any], innocent: list[str]) -> list[str]:
    out = []
    by_name = {p["metadata"]["name"]: p for p in pods.get("items") or []}
    for name in innocent:
        pod = by_name.get(name)
        if pod is None:
            out.append(f"priority 0 pod {name} is gone")
            continue
        if pod["metadata"].get("deletionTimestamp"):
            out.append(f"priority 0 pod {name} is being deleted")
        phase = pod["status"].get("phase")
        if phase != "Running":
            states = [c.get("state") for c in pod["status"].get("containerStatuses") or []]
            out.append(f"priority 0 pod {name} is {phase}: {states}")
    return out


def _delete_pods(access: ClusterAccess, namespace: str, scale: Scale) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    try:
        access.api("DELETE", f"{path}?gracePeriodSeconds=0")
        access.wait(path, "not o['items']", timeout=scale.timeout_s)
    except Exception as exc:  # cleanup must not hide the verdict
        print(f"cleanup of {namespace}: {exc}")


class ScenarioPool:
    """Scenarios run at once, ``workers`` at a time, each on its own node with its own agent.

    The nodes share nothing a scenario puts under pressure — each has its own memory cgroup,
    its own disk, and only the PID scenario thresholds on the machine-wide pid.available — so
    running them together changes only how long each takes. A test asks for its scenario's
    result (``result``), which re-raises the scenario's failure.
    """

    def __init__(
        self,
        access: ClusterAccess,
        scenarios: Iterable[Scenario],
        *,
        nodes: Mapping[str, NodeInfo],
        kubelet_ports: Mapping[str, int],
        scale: Scale,
        environment: str,
        workers: int,
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scenario")
        self._futures: dict[str, Future[ScenarioResult]] = {
            sc.name: self._executor.submit(
                run_scenario,
                access,
                sc,
                nodes[sc.node],
                scale=scale,
                kubelet_port=kubelet_ports[sc.node],
                environment=environment,
            )
            for sc in scenarios
        }

    def result(self, name: str) -> ScenarioResult:
        return self._futures[name].result()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


class ScenarioCluster(ClusterAccess, Protocol):
    """A kubesim with the scenarios' nodes (host or guest), started and stopped as a whole."""

    @property
    def nodes(self) -> Mapping[str, NodeInfo]: ...

    @property
    def kubelet_ports(self) -> Mapping[str, int]: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


@contextmanager
def running(
    cluster: ScenarioCluster,
    scenarios: Iterable[Scenario],
    *,
    scale: Scale,
    environment: str,
    workers: int,
) -> Iterator[ScenarioPool]:
    """The cluster started and the scenarios running on it, longest first; at the end every
    scenario is waited for and the cluster stopped."""
    pool = None
    try:
        cluster.start()
        pool = ScenarioPool(
            cluster,
            longest_first(scenarios),
            nodes=cluster.nodes,
            kubelet_ports=cluster.kubelet_ports,
            scale=scale,
            environment=environment,
            workers=workers,
        )
        yield pool
    finally:
        if pool is not None:
            pool.close()
        cluster.stop()


def longest_first(scenarios: Iterable[Scenario]) -> list[Scenario]:
    """The order to start them in: disk fills first (they take longest), memory last."""
    rank = {"DiskPressure": 0, "PIDPressure": 1, None: 2, "MemoryPressure": 3}
    return sorted(scenarios, key=lambda sc: rank.get(sc.condition, 2))


def selected(items: Iterable[Any], module: str, scenarios: Iterable[Scenario]) -> list[Scenario]:
    """The scenarios of ``module`` this session runs (its test items that were not deselected)."""
    names = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        if item.module.__name__ == module and callspec is not None:
            names.add(callspec.params["scenario"].name)
    return [sc for sc in scenarios if sc.name in names]

"""``evict`` as users run it, against kubesim: kubectl's lines, exit codes and requests."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesim
from kube.duration import parse_go_duration
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.evict import BASE, WEB, Evict, lines
from tests.support.living import living, pin, placement, settle
from tests.support.manifests import node, pdb, pod, replicaset

DRAIN = ("drain", "node-1", "--ignore-daemonsets")


async def _serve(objs: list[dict[str, Any]], faults: Any = None) -> AsyncIterator[Evict]:
    # A frozen cluster: for tests whose pods need no controller (or that inject faults).
    async with kubesim.serve(
        state=objs, faults=faults, time_scale=0.01, disabled_controllers=FROZEN
    ) as sim:
        yield Evict(sim)


async def _living(objs: list[dict[str, Any]], **kw: Any) -> AsyncIterator[Evict]:
    # The controllers run: evicted pods are replaced on node-2, budgets reopen by themselves.
    async with living(objs, **kw) as sim:
        await settle(sim)
        yield Evict(sim)


@pytest.fixture
async def evict() -> AsyncIterator[Evict]:
    async for e in _living([*BASE, pdb("web", min_available=2)]):
        yield e


def writes(sim: Simulator) -> list[Any]:
    return [r for r in sim.requests if r.verb in ("create", "update", "patch", "delete")]


def test_help_does_not_import_the_api_client() -> None:
    code = (
        "import sys\n"
        "from evictor import cli\n"
        "sys.argv = ['evict', 'drain', '--help']\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED' if 'kubernetes_asyncio' in sys.modules else 'LIGHT')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "--ignore-daemonsets" in out and "--chunk-size" in out
    assert out.strip().endswith("LIGHT")


@pytest.fixture
async def slow_ready() -> AsyncIterator[Evict]:
    """The living cluster whose replacements take 0.5 s to be Ready (50 s at its time scale):
    of three evictions sent at once, two find the budget closed, however slowly a loaded
    machine sends them. (Ready at once, a replacement could reopen the budget between two
    of them.)"""
    async for e in _living([*BASE, pdb("web", min_available=2)], ready_after=50):
        yield e


async def test_drain_prints_kubectls_lines_and_retries_when_the_budget_reopens(
    slow_ready: Evict,
) -> None:
    evict = slow_ready
    code, out, err = await evict(*DRAIN, "--timeout=60s")
    assert code == 0, err
    got = lines(out)
    assert got[0] == "node/node-1 cordoned"
    assert got[-1] == "node/node-1 drained"
    assert sorted(set(got[1:-1])) == sorted(
        [f"evicting pod default/web-{i}" for i in range(3)]
        + [f"pod/web-{i} evicted" for i in range(3)]
    )
    assert "Warning: ignoring DaemonSet-managed Pods: kube-system/agent-x" in err
    waits = re.findall(
        r'error when evicting pods/"web-\d" -n "default" \(will retry after ([\d.]+m?s)\)', err
    )
    assert waits, err  # the budget (1 disruption) blocked someone
    # each wait ended when the budget reopened (a replacement made Ready by the living
    # cluster), before kubectl's fixed 5 s retry: the line tells the wait it really was
    assert all(parse_go_duration(w) < 5 for w in waits), waits
    sim = evict.sim
    await settle(sim)
    assert all(sim.get("Pod", "default", f"web-{i}") is None for i in range(3))
    # the ReplicaSet's replacements went to node-2 (node-1 is cordoned); the DaemonSet pod stayed
    assert placement(sim)[("default", "web", "node-2")] == 3
    assert ("default", "web", "node-1") not in placement(sim)
    assert sim.get("Pod", "kube-system", "agent-x") is not None
    assert sim.get("Node", None, "node-1")["spec"]["unschedulable"] is True  # type: ignore[index]
    evictions = sim.requests.filter(subresource="eviction")
    assert all(r.body["deleteOptions"]["preconditions"]["uid"] for r in evictions)


async def test_blocking_filters_stop_the_node_before_any_eviction(evict: Evict) -> None:
    evict.sim.apply(pod("bare", owner=None))
    code, out, err = await evict("drain", "node-1", "--uncordon-on-failure")
    assert code == 1
    assert lines(out) == ["node/node-1 cordoned", "node/node-1 uncordoned"]
    errors = [
        "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
        "kube-system/agent-x",
        "cannot delete Pods that declare no controller (use --force to override): default/bare",
    ]
    got = lines(err)
    # grouped by message in the order the pods were listed (Go's map order is random)
    listed = got[3:]
    assert sorted(listed) == sorted(errors)
    assert got[:3] == [
        f'error: unable to drain node "node-1" due to error: [{", ".join(listed)}], '
        "continuing command...",
        "There are pending nodes to be drained:",
        " node-1",
    ]
    assert evict.sim.requests.filter(subresource="eviction") == []
    assert not evict.sim.get("Node", None, "node-1")["spec"].get("unschedulable")  # type: ignore[index]


async def test_timeout_diagnoses_replicas_that_cannot_become_ready() -> None:
    # One node: once it is cordoned, the replacement of the first evicted pod has nowhere to go,
    # so the budget stays at zero and the others wait until the timeout.
    objs = [node("node-1"), replicaset("web"), pdb("web", max_unavailable=1), *WEB]
    async for evict in _living(objs):
        code, out, err = await evict("drain", "node-1", "--timeout=2s")
        assert code == 1
        # That the timeout cuts the 5 s retry short, with no further attempt, is shown on a
        # fake clock (test_evictor.py::test_deadline_ends_a_blocked_eviction_as_blocked_by_pdb).
        found = re.findall(r'error when evicting pods/"(web-\d)" -n "default": global timeout', err)
        blocked = sorted(set(found))
        assert len(blocked) == 2, err
        # the one the budget let go was gone long before the timeout: not an error
        (first,) = {"web-0", "web-1", "web-2"} - set(blocked)
        assert f"pod/{first} evicted" in lines(out)
        assert f'waiting for pod "{first}"' not in err
        assert 'There are pending pods in node "node-1" when an error occurred' in err
        assert {f"pod/{name}" for name in blocked} <= set(lines(err))
        assert (
            f"diagnosis: PodDisruptionBudget default/web blocked 2 pod(s) ({', '.join(blocked)}): "
            "disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2, expectedPods=3" in err
        ), err
        # why: the replacement (a new pod of the ReplicaSet) cannot be scheduled
        assert re.search(
            r"unhealthy pods selected by it: web-\w{5} \(not Ready, Pending: 0/1 nodes are "
            r"available: 1 node\(s\) were unschedulable",
            err,
        ), err
        assert "replicas not Ready: ReplicaSet web 2/3" in err
        assert "it needs 2 healthy pods and has 2: 1 more must be Ready" in err
        assert "remedies:" in err
        assert lines(err)[-1].startswith("error: [")
        assert "node/node-1 drained" not in out


async def test_json_report(evict: Evict) -> None:
    pin(evict.sim, "web", 0, healthy=2, desired=3)
    code, out, err = await evict(*DRAIN, "--timeout=0.5s", "-o", "json")
    assert code == 1
    report = json.loads(out)  # stdout holds the report only
    (n,) = report["nodes"]
    assert n["name"] == "node-1" and n["drained"] is False
    pods = {p["name"]: p for p in n["pods"]}
    assert set(pods) == {"web-0", "web-1", "web-2"}
    for p in pods.values():
        assert p["outcome"] == "blocked_by_pdb" and p["attempts"] >= 1
        assert (p["statusCode"], p["reason"]) == (429, "TooManyRequests")
        (b,) = p["pdbs"]
        assert b["name"] == "web" and b["currentHealthy"] == 2 and b["desiredHealthy"] == 3
    assert "node/node-1 cordoned" in err  # the human lines went to stderr


async def test_json_report_of_a_successful_drain(evict: Evict) -> None:
    code, out, _ = await evict(*DRAIN, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["success"] is True
    outcomes = {p["name"]: (p["outcome"], p["deletion"]) for p in report["nodes"][0]["pods"]}
    assert outcomes == {f"web-{i}": ("evicted", "deleted") for i in range(3)}
    assert {(p["statusCode"], p["reason"]) for p in report["nodes"][0]["pods"]} == {(201, "")}


async def test_server_dry_run_sends_dry_run_and_does_not_wait(evict: Evict) -> None:
    code, out, err = await evict(*DRAIN, "--dry-run=server")
    assert code == 0, err
    assert lines(out)[0] == "node/node-1 cordoned (server dry run)"
    assert lines(out)[-1] == "node/node-1 drained (server dry run)"
    sim = evict.sim
    (patch,) = sim.requests.filter(verb="patch")
    assert patch.query.get("dryRun") == ["All"]
    evictions = sim.requests.filter(subresource="eviction")
    assert evictions and all(r.body["deleteOptions"]["dryRun"] == ["All"] for r in evictions)
    assert sim.requests.filter(verb="watch", resource="pods") == []
    assert all(sim.get("Pod", "default", f"web-{i}") is not None for i in range(3))
    assert not sim.get("Node", None, "node-1")["spec"].get("unschedulable")  # type: ignore[index]


async def test_server_dry_run_with_disable_eviction_does_not_hang(evict: Evict) -> None:
    # kubernetes/kubectl#1830: kubectl waited for pods a dry-run delete never removes.
    code, _, err = await evict(*DRAIN, "--dry-run=server", "--disable-eviction", timeout=20)
    assert code == 0, err
    sim = evict.sim
    deletes = sim.requests.filter(verb="delete", resource="pods")
    assert len(deletes) == 3 and all(r.query.get("dryRun") == ["All"] for r in deletes)
    assert sim.requests.filter(subresource="eviction") == []
    assert all(sim.get("Pod", "default", f"web-{i}") is not None for i in range(3))


async def test_every_request_names_evict_as_kubectl_names_itself(evict: Evict) -> None:
    code, _, err = await evict(*DRAIN)
    assert code == 0, err
    agents = {r.user_agent for r in evict.sim.requests if r.user_agent != "kubesim"}
    # kubectl: "kubectl/v1.31.0 (linux/amd64) ..."; the audit log tells the tools apart
    assert len(agents) == 1, agents
    assert re.fullmatch(r"evict/v\d+\.\d+\.\d+\S* \(\w+/\w+\)", agents.pop())


async def test_client_dry_run_sends_nothing(evict: Evict) -> None:
    code, out, _ = await evict(*DRAIN, "--dry-run=client")
    assert code == 0
    assert lines(out) == [
        "node/node-1 cordoned (dry run)",
        *[f"evicting pod default/web-{i} (dry run)" for i in range(3)],
        "node/node-1 drained (dry run)",
    ]
    assert writes(evict.sim) == []


async def test_disable_eviction_deletes(evict: Evict) -> None:
    code, out, err = await evict(*DRAIN, "--disable-eviction", "--grace-period=0")
    assert code == 0, err
    assert {f"pod/web-{i} deleted" for i in range(3)} <= set(lines(out))
    deletes = evict.sim.requests.filter(verb="delete", resource="pods")
    assert {r.name for r in deletes if r.user_agent != "kubesim"} >= {"web-0", "web-1", "web-2"}
    assert evict.sim.requests.filter(subresource="eviction") == []


async def test_chunk_size_pages_the_pod_list() -> None:
    objs = [node("node-1"), replicaset("web"), *[pod(f"w-{i}", app="web") for i in range(7)]]
    async for evict in _serve(objs):
        code, _, err = await evict("drain", "node-1", "--chunk-size=2", "--dry-run=client")
        assert code == 0, err
        pages = evict.sim.requests.filter(verb="list", resource="pods")
        assert [r.query.get("limit") for r in pages] == [["2"]] * 4
        assert [bool(r.query.get("continue")) for r in pages] == [False, True, True, True]
        code, out, _ = await evict("drain", "node-1", "--chunk-size=0", "--dry-run=client")
        assert len(lines(out)) == 2 + 7
        assert "limit" not in evict.sim.requests.filter(verb="list", resource="pods")[-1].query


async def test_priority_order_evicts_lowest_priority_first() -> None:
    objs = [
        node("node-1"),
        replicaset("web"),
        pod("high", app="web", priority=1000),
        pod("low-a", app="web", priority=-10),
        pod("mid", app="web", priority=0),
        pod("low-b", app="web", priority=-10),
    ]
    async for evict in _serve(objs):
        code, out, err = await evict("drain", "node-1", "--order=priority")
        assert code == 0, err
        order = [r.name for r in evict.sim.requests.filter(subresource="eviction")]
        assert sorted(order[:2]) == ["low-a", "low-b"] and order[2:] == ["mid", "high"]
        # each priority level is gone before the next one is evicted
        got = lines(out)
        mid = got.index("evicting pod default/mid")
        assert {"pod/low-a evicted", "pod/low-b evicted"} <= set(got[:mid])
        assert got.index("pod/mid evicted") < got.index("evicting pod default/high")


async def test_evict_pod_command(evict: Evict) -> None:
    code, out, err = await evict("-n", "default", "pod", "web-1", "--timeout=10s")
    assert code == 0, err
    assert lines(out) == ["evicting pod default/web-1", "pod/web-1 evicted"]
    code, _, err = await evict("-n", "default", "pod", "nope")
    assert code == 1 and lines(err) == ['error: pods "nope" not found']
    # without -n, the kubeconfig context's namespace applies, as in kubectl
    evict.sim.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}},
            pod("db-0", namespace="prod", owner=None),
        ]
    )
    cfg = Path(str(evict.sim.kubeconfig_path))
    data = yaml.safe_load(cfg.read_text())
    data["contexts"][0]["context"]["namespace"] = "prod"
    cfg.write_text(yaml.safe_dump(data))
    code, out, err = await evict("pod", "db-0", "--dry-run=server")
    assert code == 0, err
    assert lines(out) == ["evicting pod prod/db-0 (server dry run)"]


async def test_cordon_and_uncordon(evict: Evict) -> None:
    assert (await evict("cordon", "node-1"))[1] == "node/node-1 cordoned\n"
    assert (await evict("cordon", "node-1"))[1] == "node/node-1 already cordoned\n"
    assert (await evict("uncordon", "node-1"))[1] == "node/node-1 uncordoned\n"
    assert (await evict("uncordon", "node-1", "--dry-run=server"))[1] == (
        "node/node-1 already uncordoned (server dry run)\n"
    )
    patches = evict.sim.requests.filter(verb="patch")
    assert [r.body for r in patches] == [
        {"spec": {"unschedulable": True}},
        {"spec": {"unschedulable": None}},
    ]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("drain", "node-1", "-l", "a=b"), 2, "cannot specify both a node name and a --selector"),
        (("drain",), 2, "USAGE: drain NODE"),
        (("drain", "node-1", "--pod-selector=a=(b"), 2, "must be a valid label selector"),
        (("drain", "node-1", "--timeout=soon"), 2, 'time: invalid duration "soon"'),
        (("drain", "node-1", "--dry-run=maybe"), 2, "Invalid dry-run value"),
        (("drain", "node-1", "--bogus"), 2, "No such option"),
        (("--kubeconfig", "/nonexistent/kubeconfig", "drain", "node-1"), 2, "no such file"),
        (("--context", "elsewhere", "drain", "node-1"), 2, "invalid configuration"),
        (("drain", "nope"), 1, 'Error from server (NotFound): nodes "nope" not found'),
        (("cordon", "node-1", "nope"), 1, 'Error from server (NotFound): nodes "nope" not found'),
    ],
)  # fmt: skip
async def test_bad_input_is_one_line_and_changes_nothing(
    evict: Evict, args: tuple[str, ...], code: int, message: str
) -> None:
    got, _, err = await evict(*args)
    assert got == code, err
    assert len(lines(err)) == 1 and message in err, err
    assert "Traceback" not in err
    assert writes(evict.sim) == []


async def test_unreachable_server_is_a_runtime_error(tmp_path: Any) -> None:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    proc = subprocess.run(
        [str(Evict.binary()), "--kubeconfig", str(cfg), "drain", "node-1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 1
    assert len(lines(proc.stderr)) == 1 and "unable to connect to the server" in proc.stderr


async def test_drain_by_node_selector_cordons_all_then_drains_one_by_one() -> None:
    objs = [
        node("node-1", labels={"pool": "old"}),
        node("node-2", labels={"pool": "old"}),
        node("node-3", labels={"pool": "new"}),
        replicaset("web"),
        pod("a", app="web", node_name="node-1"),
        pod("b", app="web", node_name="node-2"),
    ]
    async for evict in _serve(objs):
        code, out, err = await evict("drain", "-l", "pool=old", "--chunk-size=1")
        assert code == 0, err
        got = lines(out)
        assert got[:2] == ["node/node-1 cordoned", "node/node-2 cordoned"]
        assert got[2:] == [
            "evicting pod default/a",
            "pod/a evicted",
            "node/node-1 drained",
            "evicting pod default/b",
            "pod/b evicted",
            "node/node-2 drained",
        ]
        assert not evict.sim.get("Node", None, "node-3")["spec"].get("unschedulable")  # type: ignore[index]
        pages = evict.sim.requests.filter(verb="list", resource="nodes")
        assert len(pages) >= 2 and all(r.query.get("limit") == ["1"] for r in pages)


def test_progress_line_names_blocking_pdbs() -> None:
    from types import SimpleNamespace

    from evictor.cli.common import Output
    from evictor.cli.progress import Progress
    from evictor.drain.helper import PodReport
    from evictor.pdbwatch import PdbState
    from evictor.result import EvictionResult, Outcome
    from kube.objects import Pod

    reps = [PodReport(Pod.from_dict(pod(f"web-{i}", app="web"))) for i in range(3)]
    reps[0].result = EvictionResult("default", "web-0", Outcome.EVICTED)
    reps[0].wait = SimpleNamespace(state="deleted")  # type: ignore[assignment]
    for r in reps[1:]:
        r.blocked_by = ("web",)
        r.next_retry = time.time() + 4
    state = PdbState("web", "default", current_healthy=2, desired_healthy=3)
    evictor = SimpleNamespace(pdb_state=lambda _ns, _n: state)
    progress = Progress.__new__(Progress)
    progress.reports, progress.evictor, progress.io = lambda: reps, evictor, Output()  # type: ignore[assignment]
    text = progress.render().plain
    assert text.startswith("1/3 pods done")
    assert "2 blocked by PDB web 2/3 healthy" in text
    assert re.search(r"next retry in [34]\.\ds", text)


async def test_concurrency_flag_bounds_evictions_in_flight() -> None:
    objs = [node("node-1"), replicaset("web"), *[pod(f"w-{i}", app="web") for i in range(8)]]
    faults = {
        "faults": [
            {"match": {"verb": "create", "resource": "pods", "subresource": "eviction"},
             "delay": 0.2}
        ]
    }  # fmt: skip
    async for evict in _serve(objs, faults):
        code, _, err = await evict("drain", "node-1", "--concurrency=2")
        assert code == 0, err
        arrivals = sorted(r.time for r in evict.sim.requests.filter(subresource="eviction"))
        assert len(arrivals) == 8
        assert all(b - a >= 0.18 for a, b in zip(arrivals, arrivals[2:], strict=False))

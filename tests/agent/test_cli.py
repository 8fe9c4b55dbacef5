"""``eviction-agent``: exit codes, messages without tracebacks, fast ``--help``, rank output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent.cli import cli
from kube.cliutil import user_agent


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_help_does_not_import_the_api_client() -> None:
    code = (
        "import sys\n"
        "from agent.cli import main\n"
        "rc = main(['run', '--help'])\n"
        "bad = [m for m in sys.modules if m.startswith(('kubernetes_asyncio', 'agent.eviction'))]\n"
        "print(rc, bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip().splitlines()[-1] == "0 []"
    assert "--eviction-hard" in out.stdout and "Exit status" in out.stdout


def test_help_documents_exit_codes() -> None:
    code, out, _ = run("--help")
    assert code == 0
    assert "0  success" in out and "1  runtime failure" in out and "2  usage error" in out


def test_check_config_prints_effective_thresholds() -> None:
    code, out, err = run(
        "check-config",
        "--eviction-hard",
        "memory.available<1Gi",
        "--merge-default-eviction-settings",
        "-o",
        "json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["evictionHard"]["memory.available"] == "1Gi"
    assert data["evictionHard"]["nodefs.available"] == "10%"
    assert {
        "signal": "memory.available",
        "kind": "hard",
        "value": str(2**30),
        "gracePeriodSeconds": 0.0,
        "minimumReclaim": None,
    } in data["thresholds"]
    assert "configuration OK" in err


def test_bad_entry_exit_2_names_field_without_traceback() -> None:
    code, _, err = run("check-config", "--eviction-soft", "memory.available<1Gi")
    assert code == 2
    assert err.startswith("error: evictionSoft (--eviction-soft)[memory.available]")
    assert "grace period must be specified" in err
    assert "Traceback" not in err


def test_node_status_report_frequency_flag_is_range_checked() -> None:
    code, out, err = run("check-config", "--node-status-report-frequency", "90s", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["nodeStatusReportFrequency"] == "90s"
    code, _, err = run("check-config", "--node-status-report-frequency", "1s")
    assert code == 2
    assert err.startswith("error: nodeStatusReportFrequency (--node-status-report-frequency)")
    assert "must be >= 10s" in err and "Traceback" not in err


def test_a_duplicate_key_or_an_alias_in_the_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "evictionHard:\n  memory.available: 300Mi\nnodeName: n1\n"
        "evictionHard:\n  nodefs.available: 10%\n"
    )
    code, _, err = run("check-config", "--config", str(path))
    assert code == 2
    assert err == f"error: evictionHard: duplicate key (lines 1 and 4) in {path}\n"
    path.write_text("a: &a [x, x]\nb: &b [*a, *a]\nevictionHard: *b\n")
    code, _, err = run("check-config", "--config", str(path))
    assert code == 2
    assert "line 2: YAML aliases (*a) are not allowed" in err and "Traceback" not in err


def test_malformed_flag_and_unknown_file_field_exit_2(tmp_path: Path) -> None:
    code, _, err = run("check-config", "--eviction-hard", "memory.available")
    assert code == 2 and "expect string<string" in err
    path = tmp_path / "c.yaml"
    path.write_text("evictionHrad: {}\n")
    code, _, err = run("check-config", "--config", str(path))
    assert code == 2 and "evictionHrad" in err


def test_run_requires_node_name() -> None:
    result = CliRunner(env={"NODE_NAME": ""}).invoke(cli, ["run"])
    assert result.exit_code == 2
    assert "nodeName (--node-name): required" in result.stderr


def test_run_with_missing_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run(
        "run",
        "--node-name",
        "n1",
        "--kubeconfig",
        str(tmp_path / "nope"),
        "--listen",
        "127.0.0.1:0",
        "--proc-root",
        str(tmp_path),
        "--cgroup-root",
        str(tmp_path),
    )
    assert code == 2
    assert "kubeconfig" in err and "Traceback" not in err


def test_run_with_a_kubeconfig_it_cannot_read_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in a pod, with a ServiceAccount at hand: still refused at start-up, naming the file and
    # the field, never run as that other identity
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("clusters: [{name: c, cluster: {server: 6443}}]\n")
    args = ["run", "--node-name", "n1", "--listen", "127.0.0.1:0", "--proc-root", str(tmp_path)]
    for how in (("--kubeconfig", str(kubeconfig)), ()):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        code, _, err = run(*args, *how, "--cgroup-root", str(tmp_path))
        assert code == 2
        assert err.splitlines() == [
            f"error: kubeconfig (--kubeconfig): {kubeconfig}: clusters 'c': server: must be a "
            "string, not a number"
        ]


def test_rank_from_a_stats_file_explains_positions(tmp_path: Path) -> None:
    mi = 2**20
    summary = {
        "node": {
            "nodeName": "n1",
            "memory": {
                "time": "2026-01-01T00:00:00Z",
                "availableBytes": 50 * mi,
                "workingSetBytes": 950 * mi,
            },
        },
        "pods": [
            {
                "podRef": {"name": n, "namespace": "default", "uid": f"u-{n}"},
                "memory": {"time": "2026-01-01T00:00:00Z", "workingSetBytes": ws * mi},
            }
            for n, ws in (("small", 10), ("big", 500), ("mid", 100))
        ],
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    code, out, err = run("rank", "--stats-file", str(path), "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["signal"] == "memory.available"
    assert [r["pod"]["name"] for r in report["pods"]] == ["big", "mid", "small"]
    assert report["pods"][0]["reason"] == "before default/mid: more memory above its request"
    assert any(t["signal"] == "memory.available" and t["met"] for t in report["thresholds"])
    code, out, _ = run("rank", "--stats-file", str(path))
    assert code == 0 and "1. default/big" in out


def test_rank_rejects_unknown_signal(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"node": {"nodeName": "n"}, "pods": []}))
    code, _, err = run("rank", "--stats-file", str(path), "--signal", "cpu.available")
    assert code == 2 and "cpu.available" in err


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and "eviction-agent" in out


async def test_run_serves_probes_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    import asyncio
    import signal
    import socket

    import aiohttp

    import kubesim

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    async with kubesim.serve(state=node, time_scale=0.01) as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent",
            "run",
            "--node-name",
            "n1",
            "--kubeconfig",
            str(sim.kubeconfig_path),
            "--listen",
            f"127.0.0.1:{port}",
            "--proc-root",
            str(tmp_path),
            "--cgroup-root",
            str(tmp_path),
            "--kubelet-root",
            str(tmp_path),
            "--runtime-root",
            str(tmp_path),
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            ready = False
            async with aiohttp.ClientSession() as session:
                for _ in range(300):
                    await asyncio.sleep(0.1)
                    try:
                        async with session.get(f"http://127.0.0.1:{port}/readyz") as r:
                            if r.status == 200:
                                ready = True
                                break
                    except aiohttp.ClientError:
                        continue
                assert ready
                async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                    assert "eviction_agent_syncs_total" in await r.text()
            proc.send_signal(signal.SIGTERM)
            rc = await asyncio.wait_for(proc.wait(), 15)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert rc == 0
        assert proc.stderr is not None
        logs = [json.loads(line) for line in (await proc.stderr.read()).decode().splitlines()]
        assert any(line["msg"] == "agent ready" for line in logs)
        listed = sim.requests.filter(verb="list", resource="pods")
        assert listed and listed[0].query["fieldSelector"] == ["spec.nodeName=n1"]
        # named as kubectl names itself, for the API server's audit log
        agents = {r.user_agent for r in sim.requests if r.user_agent != "kubesim"}
        assert agents == {user_agent("eviction-agent")}
        assert agents.pop().startswith("eviction-agent/v")


async def test_rank_with_pods_from_the_api(tmp_path: Path) -> None:
    import asyncio

    import kubesim
    from tests.support.fakenode import MI, NODES, FakeNode, pod

    state = "\n---\n".join(
        [
            NODES,
            pod("low", priority=0, request="10Mi"),
            pod("high", priority=100, request="10Mi"),
            pod("crit", priority=2000000000),
            # calls itself static: the kubelet would overwrite that, so the ranking does too
            pod(
                "forged",
                priority=50,
                request="10Mi",
                annotations={"kubernetes.io/config.source": "file"},
            ),
        ]
    )
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        usage = {"low": 50 * MI, "high": 500 * MI, "crit": 900 * MI, "forged": 60 * MI}
        fake = FakeNode(sim, usage={f"default/{name}": ws for name, ws in usage.items()})
        stats = tmp_path / "summary.json"
        stats.write_text(json.dumps(fake.summary()))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent",
            "rank",
            "--node-name",
            "node-1",
            "--kubeconfig",
            str(sim.kubeconfig_path),
            "--stats-file",
            str(stats),
            "-o",
            "json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    report = json.loads(out)
    assert report["podSource"] == "API, pods bound to node-1"
    rows = report["pods"]
    # all exceed their requests: priority decides, lowest first; critical stays in the ranking
    assert [r["pod"]["name"] for r in rows] == ["low", "forged", "high", "crit"]
    assert rows[0]["reason"] == "before default/forged: lower priority"
    assert [r["skipped"] for r in rows] == [None, None, None, "critical pod: never evicted"]


def test_runtime_failure_exit_1_and_debug_traceback(tmp_path: Path) -> None:
    import socket

    from kubesim.kubeconfig import write_kubeconfig

    kubeconfig = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:9")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = [
            "run",
            "--node-name",
            "n1",
            "--kubeconfig",
            str(kubeconfig),
            "--listen",
            f"127.0.0.1:{port}",
            "--proc-root",
            str(tmp_path),
        ]
        code, _, err = run(*args)
        assert code == 1
        assert err.startswith("error: ") and "Traceback" not in err
        code, _, err = run("--debug", *args)
        assert code == 1 and "Traceback" in err


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("housekeepingInterval: .nan", "housekeepingInterval"),
        ("housekeepingInterval: .inf", "housekeepingInterval"),
        ("housekeepingInterval: -.inf", "housekeepingInterval"),
        ('housekeepingInterval: "9999999999999999h"', "housekeepingInterval"),
        ("evictionPressureTransitionPeriod: .nan", "evictionPressureTransitionPeriod"),
        (
            'evictionPressureTransitionPeriod: "9999999999999999h"',
            "evictionPressureTransitionPeriod",
        ),
        ("evictionMaxPodGracePeriod: .nan", "evictionMaxPodGracePeriod"),
        (
            "evictionSoft: {memory.available: 1Gi}\n"
            'evictionSoftGracePeriod: {memory.available: "9999999999999999h"}',
            "evictionSoftGracePeriod",
        ),
        ("evictionHard: {memory.available: 1e400}", "evictionHard"),
        ("memoryCapacity: 1e400", "memoryCapacity"),
    ],
)
@pytest.mark.parametrize("command", ["check-config", "run"])
def test_wedging_values_exit_2_with_one_line_naming_the_field(
    tmp_path: Path, text: str, field: str, command: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text + "\n")
    code, out, err = run(command, "--config", str(path), "--node-name", "n1")
    assert code == 2
    assert err.startswith(f"error: {field}")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "configuration OK" not in err and out == ""


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (
            '{"node": {"memory": {"availableBytes": 1, "workingSetBytes": 1' + "0" * 400 + "}}}",
            "int64",
        ),
        ('{"node": {"memory": {"availableBytes": ' + "1" * 5000 + "}}}", "digits"),
        ('{"node": {"memory": {"availableBytes": 1e400}}}', "non-negative integer"),
        ('{"node": {"fs": {"availableBytes": 2, "capacityBytes": 1}}}', "more than capacityBytes"),
    ],
)
def test_rank_stats_file_with_hostile_numbers_or_nesting_exits_2(
    tmp_path: Path, content: str, rule: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    code, _, err = run("rank", "--stats-file", str(path))
    assert code == 2
    assert err.startswith("error: --stats-file:") and rule in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_http_kubelet_url_with_the_token_exits_2_naming_the_field() -> None:
    url = "http://10.0.0.1:10255/stats/summary"
    code, out, err = run("check-config", "--kubelet-summary-url", url)
    assert code == 2 and out == ""
    assert err.startswith("error: kubeletSummaryUrl (--kubelet-summary-url): must be https")
    assert err.count("\n") == 1
    code, out, _ = run(
        "check-config", "--kubelet-summary-url", url, "--kubelet-token-file", "", "-o", "json"
    )
    assert code == 0 and json.loads(out)["kubeletTokenFile"] == ""

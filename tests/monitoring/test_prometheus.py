"""A real Prometheus scrapes the demo's agent under pressure: every dashboard query returns data.

The setup is the demo's (``examples/demo.py``): kubesim with node-1 running its pods as real
processes in memory cgroups while their working sets climb, and ``eviction-agent run`` against
node-1. The demo's agent gets what lets every panel show something: a soft threshold above the
hard one and a brake of one eviction a minute (so decisions are held back), the Eviction API
with the first eviction request of every pod answered 500 by kubesim's fault injection (API
errors, failed evictions), and a kubelet ``/stats/summary`` to fetch (a stand-in serving node-1's
name and no pod figures: only its age is shown). Debian's ``prometheus`` scrapes the agent every
second with ``deploy/monitoring/rules.yaml`` loaded, as the PodMonitor would (``job``,
``node``).

Then, over the run: every query of every panel, with Grafana's variables substituted as Grafana
would, returns at least one series with a number in it; the evictions panel counts every
eviction the demo saw (the first one of a signal included); every alert rule evaluates without
error on the real series, and the brake and pressure alerts go pending.

Marked ``prometheus``: ``make test-monitoring`` runs it (CI too), ``make unit`` does not.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml

from kube.times import parse_rfc3339
from tests.monitoring.promql import (
    ROOT,
    RULES,
    alert_rules,
    grafana_to_promql,
    panel_queries,
)
from tests.support.wait import until_sync

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="prometheus not installed (Debian: apt-get install prometheus)"
    ),
]
NODE = "node-1"
SCRAPE_SECONDS = 1
# Grafana's $__rate_interval: max(step + scrape interval, 4 x scrape interval), step 1 s here
RATE_INTERVAL = f"{4 * SCRAPE_SECONDS}s"
FAULTS = {
    "faults": [
        {
            "match": {
                "verb": "create",
                "resource": "pods",
                "subresource": "eviction",
                "calls": "1",
            },
            "respond": {
                "code": 500,
                "reason": "InternalError",
                "message": "etcdserver: request timed out",
            },
        }
    ]
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Kubelet(BaseHTTPRequestHandler):
    """The kubelet's /stats/summary, node-1's name and no figures: the agent times its fetches."""

    def do_GET(self) -> None:
        body = json.dumps({"node": {"nodeName": NODE}, "pods": []}).encode()
        self.send_response(200 if self.path == "/stats/summary" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Run:
    url: str  # the Prometheus
    start: float
    end: float
    report: dict[str, Any]

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as r:
            answer = json.load(r)
        assert answer["status"] == "success", answer
        return answer["data"]

    def query_range(self, expr: str) -> list[dict[str, Any]]:
        data = self.get(
            "/api/v1/query_range",
            query=expr,
            start=str(self.start),
            end=str(self.end),
            step=str(SCRAPE_SECONDS),
        )
        result: list[dict[str, Any]] = data["result"]
        return result

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.get("/api/v1/query", query=expr, time=str(self.end))[
            "result"
        ]
        return result


def _wait_evaluated_after(run: Run, timeout: float = 60) -> None:
    """Until every rule group was evaluated after the run's end (Prometheus's own clock:
    it scrapes and evaluates every SCRAPE_SECONDS, so what was scraped before is in)."""

    def groups_evaluated() -> list[dict[str, Any]] | None:
        groups: list[dict[str, Any]] = run.get("/api/v1/rules")["groups"]
        last = [parse_rfc3339(g["lastEvaluation"]) for g in groups]
        return groups if groups and min(last) > run.end + SCRAPE_SECONDS else None

    until_sync(groups_evaluated, timeout=timeout, step=0.1, what="rules evaluated after the run")


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:

    def ready() -> bool:
        assert proc.poll() is None, "prometheus exited"
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(url + "/-/ready", timeout=2) as r,
        ):
            return r.status == 200
        return False

    until_sync(ready, timeout=timeout, step=0.2, what="prometheus ready")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    assert PROMETHEUS is not None
    tmp = tmp_path_factory.mktemp("prometheus")
    agent_port, prom_port = free_port(), free_port()
    kubelet = ThreadingHTTPServer(("127.0.0.1", 0), Kubelet)
    threading.Thread(target=kubelet.serve_forever, daemon=True).start()
    (tmp / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {
                    "scrape_interval": f"{SCRAPE_SECONDS}s",
                    "evaluation_interval": f"{SCRAPE_SECONDS}s",
                },
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {
                        "job_name": "eviction-agent",
                        "static_configs": [
                            {"targets": [f"127.0.0.1:{agent_port}"], "labels": {"node": NODE}}
                        ],
                    }
                ],
            }
        )
    )
    (tmp / "faults.yaml").write_text(yaml.safe_dump(FAULTS))
    url = f"http://127.0.0.1:{prom_port}"
    with open(tmp / "prometheus.log", "wb") as log:
        prom = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(url, prom)
        start = time.time()
        agent_args = [
            f"--listen=127.0.0.1:{agent_port}",
            "--eviction-mode=eviction-api",
            "--eviction-soft=memory.available<300Mi",
            "--eviction-soft-grace-period=memory.available=1s",
            "--max-evictions-per-minute=1",
            f"--kubelet-summary-url=http://127.0.0.1:{kubelet.server_port}/stats/summary",
            "--kubelet-token-file=",
        ]
        demo = subprocess.run(
            [
                sys.executable,
                str(ROOT / "examples" / "demo.py"),
                "--ui=plain",
                "--duration=90",
                f"--faults={tmp / 'faults.yaml'}",
                f"--summary-json={tmp / 'demo.json'}",
                *(f"--agent-arg={a}" for a in agent_args),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr
        run = Run(url, start, time.time(), json.loads((tmp / "demo.json").read_text()))
        _wait_evaluated_after(run)  # the last scrapes are in and the rules have seen them
        yield run
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        kubelet.shutdown()
        kubelet.server_close()


def _numbers(series: list[dict[str, Any]]) -> list[float]:
    return [
        float(v)
        for s in series
        for _, v in s.get("values") or [s["value"]]
        if not math.isnan(float(v))
    ]


def test_the_demo_evicted_and_cleaned_up(run: Run) -> None:
    assert len(run.report["evictions"]) >= 2
    assert run.report["leftover_processes"] == []


def test_every_panel_query_returns_data(run: Run) -> None:
    empty = {}
    for q in panel_queries():
        expr = grafana_to_promql(
            q.expr, node=NODE, rate_interval=RATE_INTERVAL, range_=f"{run.end - run.start:.0f}s"
        )
        if not _numbers(run.query_range(expr)):
            empty[f"{q.panel} [{q.ref}]"] = expr
    assert empty == {}
    assert len(panel_queries()) >= 20


def test_the_node_variable_lists_the_node(run: Run) -> None:
    values = run.get(
        "/api/v1/label/node/values",
        **{"match[]": "eviction_agent_last_sync_timestamp_seconds"},
        start=str(run.start),
        end=str(run.end),
    )
    assert values == [NODE]


def test_the_evictions_panel_counts_every_eviction_the_first_included(run: Run) -> None:
    evicted = len(run.report["evictions"])
    window = f"{run.end - run.start + 60:.0f}s"
    [total] = run.query(
        f'sum(increase(eviction_agent_evictions_total{{result="evicted"}}[{window}]))'
    )
    # increase() extrapolates a little past the last sample, never below the first (0)
    assert evicted <= float(total["value"][1]) < evicted + 1


def test_the_faults_show_as_api_errors_and_failed_evictions(run: Run) -> None:
    window = f"{run.end - run.start + 60:.0f}s"
    [errors] = run.query(f'max_over_time(eviction_agent_api_errors_total{{code="500"}}[{window}])')
    [failed] = run.query(
        f'sum(max_over_time(eviction_agent_evictions_total{{result="failed"}}[{window}]))'
    )
    assert float(errors["value"][1]) >= 1
    assert float(failed["value"][1]) >= 1


def test_every_rule_evaluates_on_the_real_series(run: Run) -> None:
    groups = run.get("/api/v1/rules")["groups"]
    rules = {r["name"]: r for g in groups for r in g["rules"]}
    assert set(rules) == {r["alert"] for r in alert_rules()}
    assert {name: r["health"] for name, r in rules.items() if r["health"] != "ok"} == {}


def test_the_brake_and_pressure_alerts_go_pending(run: Run) -> None:
    pending = {
        s["metric"]["alertname"]
        for s in run.query_range('ALERTS{alertstate="pending"}')
        if s["metric"].get("node") == NODE
    }
    assert {"EvictionAgentBrakeHoldingBack", "EvictionAgentNodeUnderPressure"} <= pending

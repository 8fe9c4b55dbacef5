"""The monitoring component, rendered by kubectl's kustomize: optional, and aimed at the agent.

The base install (``kubectl kustomize deploy/``) renders without any monitoring object; an
overlay naming ``deploy/monitoring`` as a component adds exactly the PodMonitor, the
PrometheusRule and the dashboard's ConfigMap, and the PodMonitor selects the DaemonSet's pods and
scrapes the port the agent listens on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.promql import DASHBOARD, ROOT

KUBECTL = shutil.which("kubectl")
pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (kustomize renders)"),
]
MONITORING_KINDS = {"PodMonitor", "PrometheusRule"}


def kustomize(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def with_monitoring(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The README's overlay: the base and the component (kustomize wants relative paths)."""
    overlay = tmp_path_factory.mktemp("overlay")
    deploy = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [deploy], "components": [f"{deploy}/monitoring"]})
    )
    return kustomize(overlay)


def test_the_base_install_has_no_monitoring_object() -> None:
    kinds = {d["kind"] for d in kustomize(ROOT / "deploy")}
    assert "DaemonSet" in kinds
    assert not kinds & (MONITORING_KINDS | {"ConfigMap"})


def test_the_component_adds_the_monitor_the_rules_and_the_dashboard(
    with_monitoring: list[dict[str, Any]],
) -> None:
    base = kustomize(ROOT / "deploy")
    added = [d for d in with_monitoring if d not in base]
    assert sorted(d["kind"] for d in added) == ["ConfigMap", "PodMonitor", "PrometheusRule"]
    for d in added:
        assert d["metadata"]["namespace"] == "kube-system"
    [cm] = [d for d in added if d["kind"] == "ConfigMap"]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["eviction-agent.json"]) == json.loads(DASHBOARD.read_text())
    # client-side apply keeps a copy in an annotation, which may hold 256 KiB
    assert len(cm["data"]["eviction-agent.json"]) < 128 * 1024


def test_the_pod_monitor_scrapes_the_agents_port_with_job_and_node(
    with_monitoring: list[dict[str, Any]],
) -> None:
    [monitor] = [d for d in with_monitoring if d["kind"] == "PodMonitor"]
    [ds] = [d for d in with_monitoring if d["kind"] == "DaemonSet"]
    template = ds["spec"]["template"]
    labels = template["metadata"]["labels"]
    spec = monitor["spec"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert labels[spec["jobLabel"]] == "eviction-agent"  # job="eviction-agent", as the rules say
    [endpoint] = spec["podMetricsEndpoints"]
    [agent] = template["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in agent["ports"]}
    assert endpoint["port"] in ports
    listen = next(a for a in agent["args"] if a.startswith("--http-address="))
    assert listen.endswith(f":{ports[endpoint['port']]}")
    assert endpoint["path"] == "/metrics"
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
    } in endpoint["relabelings"]

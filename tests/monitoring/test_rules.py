"""The alerts, checked by the real promtool: they parse, and each fires and stays silent as meant.

``promtool test rules`` runs tests/monitoring/rules_test.yaml (synthetic series, expected alerts
with their rendered annotations); here we also hold that every alert has both a firing and a
silent case there, a summary, a description and a runbook that exists in the README, and that
the Operator's PrometheusRule is exactly the plain rules file. promtool is Debian's
``prometheus`` package; without it these tests are skipped, saying so (``make test-monitoring``
installs it when run as root).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.monitoring.promql import MONITORING, ROOT, RULES, alert_rules

HERE = Path(__file__).resolve().parent
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus)"
)
RUNBOOK = "https://github.com/node-pressure-evictor/node-pressure-evictor/blob/main/README.md#"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


@needs_promtool
def test_promtool_checks_the_rules_file() -> None:
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    done = promtool("test", "rules", str(HERE / "rules_test.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """The unit tests hold the thresholds: an alert made twice as eager fails them."""
    rules = yaml.safe_load(RULES.read_text())
    for rule in rules["groups"][0]["rules"]:
        if rule["alert"] == "EvictionAgentEvictionsSpiking":
            rule["expr"] = rule["expr"].replace(">= 5", ">= 2")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    tests = yaml.safe_load((HERE / "rules_test.yaml").read_text())
    tests["rule_files"] = ["rules.yaml"]
    (tmp_path / "rules_test.yaml").write_text(yaml.safe_dump(tests))
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", "rules_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "EvictionAgentEvictionsSpiking" in done.stdout + done.stderr


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    tests = yaml.safe_load((HERE / "rules_test.yaml").read_text())["tests"]
    firing: set[str] = set()
    silent: set[str] = set()
    for test in tests:
        for case in test.get("alert_rule_test") or []:
            (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    alerts = {r["alert"] for r in alert_rules()}
    assert alerts - firing == set(), "alerts never fired"
    assert alerts - silent == set(), "alerts never shown silent"
    assert firing | silent <= alerts  # no test of an alert that is gone


def _readme_anchors() -> set[str]:
    """GitHub's anchors for the README's headings (lower case, punctuation dropped)."""
    text = re.sub(r"^```.*?^```$", "", (ROOT / "README.md").read_text(), flags=re.S | re.M)
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_alert_says_what_and_links_its_runbook() -> None:
    anchors = _readme_anchors()
    for rule in alert_rules():
        ann = rule["annotations"]
        assert ann["summary"] and ann["description"], rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        url = ann["runbook_url"]
        assert url == RUNBOOK + rule["alert"].lower(), rule["alert"]
        assert url.removeprefix(RUNBOOK) in anchors, f"README has no runbook for {rule['alert']}"


def test_the_prometheus_rule_wraps_the_rules_file() -> None:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["namespace"] == "kube-system"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())


def test_generated_files_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(MONITORING / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr

"""What the monitoring files ask Prometheus for: alert rules, dashboard queries, metric names.

Prometheus 2.42 offers no way to list the metrics an expression selects (no parse API, no
``promtool promql``), so ``metric_names`` reads them the way PromQL's lexer separates them: string
literals, label matchers (``{...}``), ranges and subqueries (``[...]``) and the label lists of
``by``/``without``/``on``/``ignoring``/``group_left``/``group_right`` hold no metric names; of the
identifiers left, those followed by ``(`` are functions or aggregations and a few are keywords.
Grafana's ``$variables`` never stand for a metric name in our queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "rules.yaml"
DASHBOARD = MONITORING / "dashboard.json"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENT = re.compile(r"(?<![\w.$:])([A-Za-z_:][\w:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "atan2", "nan", "inf", "NaN", "Inf"}
    | {"by", "without", "on", "ignoring", "group_left", "group_right"}  # without a label list
)
_LABEL_VALUES = re.compile(r"^label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*\w+\s*\)$")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    text = _STRING.sub(" ", expr)
    text = _BRACES.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    return {
        m.group(1)
        for m in _IDENT.finditer(text)
        if m.group(2) is None and m.group(1) not in _KEYWORDS
    }


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [r for g in groups for r in g["rules"] if "alert" in r]


@dataclass(frozen=True)
class PanelQuery:
    panel: str
    ref: str
    expr: str


def panel_queries(board: dict[str, Any] | None = None) -> list[PanelQuery]:
    """Every query of every panel (rows included) of the dashboard."""
    board = board if board is not None else json.loads(DASHBOARD.read_text())

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    return [
        PanelQuery(p["title"], t["refId"], t["expr"])
        for p in panels(board["panels"])
        for t in p.get("targets") or []
    ]


def variable_metrics(board: dict[str, Any] | None = None) -> set[str]:
    """The metrics the dashboard's query variables read (``label_values(metric, label)``)."""
    board = board if board is not None else json.loads(DASHBOARD.read_text())
    names = set()
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            m = _LABEL_VALUES.match(var["query"])
            assert m, f"variable {var['name']}: unexpected query {var['query']!r}"
            names.add(m.group(1))
    return names


def every_metric_name() -> dict[str, set[str]]:
    """Metric name → where it is used (alert names, panel titles, variables)."""
    used: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            used.setdefault(name, set()).add(f"alert {rule['alert']}")
    for q in panel_queries():
        for name in metric_names(q.expr):
            used.setdefault(name, set()).add(f"panel {q.panel!r}")
    for name in variable_metrics():
        used.setdefault(name, set()).add("a dashboard variable")
    return used


def grafana_to_promql(expr: str, *, node: str, rate_interval: str, range_: str) -> str:
    """A panel's query as Grafana sends it: its variables replaced by what they stand for."""
    return (
        expr.replace("$__rate_interval", rate_interval)
        .replace("$__range", range_)
        .replace("$node", node)
    )

"""Old module paths keep working: which stay, what they hand out, and which were retired.

Users' code and the held-out suites import ``scheduler.objects``, ``scheduler.filters``,
``scheduler.score`` and the rest, and ``scheduler.__all__`` is ``scheduler``'s public API. Two
moves left old paths behind:

* the Kubernetes basics went to the ``kube`` package: ``scheduler.objects`` and its seven
  siblings hand out the very objects ``kube`` defines (the same class, so ``isinstance`` and
  ``except`` keep matching), every public name of the new module included;
* the scheduler's plugins went to ``scheduler.plugins`` (one module or folder per plugin, as
  kube-scheduler's ``pkg/scheduler/framework/plugins``): ``scheduler.filters``, its modules and
  ``scheduler.score`` keep every public name they had (``OLD_SCHEDULER_NAMES``, taken from
  them before the move).

``RETIRED_MODULES`` and ``RETIRED_NAMES`` list what is gone on purpose, and why.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Modules kept only for their old path: each star-imports the modules its names moved to (its
# "homes") and builds ``__all__`` from theirs, so no list of names is kept by hand.
FACADES = (
    "scheduler.apierrors",
    "scheduler.cliutil",
    "scheduler.duration",
    "scheduler.labels",
    "scheduler.objects",
    "scheduler.quantity",
    "scheduler.schemagen",
    "scheduler.strict",
    "scheduler.filters.base",
    "scheduler.filters.nodeunschedulable",
    "scheduler.filters.nodename",
    "scheduler.filters.nodeports",
    "scheduler.filters.tainttoleration",
    "scheduler.filters.nodeaffinity",
    "scheduler.filters.noderesources",
    "scheduler.filters.interpodaffinity",
    "scheduler.filters.podtopologyspread",
    "scheduler.filters",
    "scheduler.score",
)


def _path(module: str) -> Path:
    path = ROOT / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _public_top_level_names(module: str) -> set[str]:
    """Names a module defines at top level (not imports, not TypeVars), minus private ones."""
    names: set[str] = set()
    for node in ast.parse(_path(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            is_typevar = isinstance(node.value, ast.Call) and getattr(
                node.value.func, "id", ""
            ) in ("TypeVar", "ParamSpec")
            names.update(t.id for t in node.targets if isinstance(t, ast.Name) and not is_typevar)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def _homes(facade: str) -> list[str]:
    """The modules a facade star-imports."""
    tree = ast.parse(_path(facade).read_text(encoding="utf-8"))
    return [
        node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.names[0].name == "*"
    ]


@pytest.mark.parametrize("facade", FACADES)
def test_facade_is_generated_from_its_homes(facade: str) -> None:
    """Imports, ``__all__`` built from the homes' ``__all__`` (no name written out), and at
    most a ``__main__`` guard."""
    tree = ast.parse(_path(facade).read_text(encoding="utf-8"))
    assert _homes(facade), f"{facade} star-imports nothing"
    body = tree.body[1:] if isinstance(tree.body[0], ast.Expr) else tree.body  # the docstring
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'":
            continue
        assert isinstance(node, ast.Assign), f"{facade}: {ast.unparse(node)[:60]}"
        assert [ast.unparse(t) for t in node.targets] == ["__all__"], ast.unparse(node)
        written = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)]
        assert not written, f"{facade} writes names out: {written}"


@pytest.mark.parametrize("facade", FACADES)
def test_facade_hands_out_its_homes_objects(facade: str) -> None:
    """Every name of every home, the very same object (so ``isinstance`` and ``except`` keep
    matching), and no name that two homes define differently."""
    old = importlib.import_module(facade)
    homes = [importlib.import_module(h) for h in _homes(facade)]
    for home in homes:
        unexported = _public_top_level_names(home.__name__) - set(home.__all__)
        assert not unexported, f"{home.__name__}.__all__ lacks {sorted(unexported)}"
        assert set(home.__all__) <= set(old.__all__), f"{facade} misses {home.__name__}'s names"
    for name in old.__all__:
        found = {id(getattr(h, name)) for h in homes if name in h.__all__}
        assert found == {id(getattr(old, name))}, f"{facade}.{name}"


def test_critical_pod_helpers_keep_their_scheduler_priority_names() -> None:
    import kube.critical
    import scheduler.priority

    for attr in kube.critical.__all__:
        assert getattr(scheduler.priority, attr) is getattr(kube.critical, attr), attr
        assert attr in scheduler.priority.__all__, attr


def test_package_level_names_come_from_kube() -> None:
    import kube.apierrors
    import kube.labels
    import kube.objects
    import kube.quantity
    import scheduler

    assert scheduler.Pod is kube.objects.Pod
    assert scheduler.LabelSelector is kube.labels.LabelSelector
    assert scheduler.StatusError is kube.apierrors.StatusError
    assert scheduler.parse_quantity is kube.quantity.parse_quantity


def test_every_package_level_name_resolves_to_its_home() -> None:
    """The public names (``scheduler.__all__``), imported from the top-level package (lazily), after
    the plugins moved."""
    import scheduler
    import scheduler.framework
    import scheduler.plugins.defaults
    import scheduler.plugins.podtopologyspread.plugin
    import scheduler.plugins.registry

    for name in scheduler.__all__:
        assert getattr(scheduler, name) is not None, name
    assert (
        scheduler.PodTopologySpread is scheduler.plugins.podtopologyspread.plugin.PodTopologySpread
    )
    assert scheduler.default_framework is scheduler.plugins.registry.default_framework
    assert scheduler.SCORE_REGISTRY is scheduler.plugins.registry.SCORE_REGISTRY
    assert scheduler.DEFAULT_PLUGIN_WEIGHTS is scheduler.plugins.defaults.DEFAULT_PLUGIN_WEIGHTS
    assert scheduler.DEFAULT_PLUGIN_WEIGHTS is scheduler.framework.DEFAULT_PLUGIN_WEIGHTS


# Every public name (``__all__`` and top-level definitions) of the scheduler's modules that
# moved, as they were before scheduler/ was organised per plugin. Each must stay importable
# from its old module.
OLD_SCHEDULER_NAMES: dict[str, str] = {
    "scheduler.filters": """BatchFilterPlugin FILTER_REGISTRY InterPodAffinity NodeAffinity
        NodeName NodePorts NodeResourcesFit NodeUnschedulable PodTopologySpread
        PreFilterResultPlugin TaintToleration default_filter_plugins default_framework
        fits_request""",
    "scheduler.filters.base": """BatchFilterPlugin FilterBatchResult MEMO_LIMIT
        NoPreFilterExtensions PreFilterResultPlugin SKIP remember split_by_filter
        tolerations_tolerate_taint""",
    "scheduler.filters.interpodaffinity": """ERR_REASON_AFFINITY_RULES_NOT_MATCH
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        InterPodAffinity NAME NamespaceLabels PRE_FILTER_STATE_KEY PreFilterState TopologyCounts
        existing_anti_affinity_counts incoming_affinity_anti_affinity_counts
        required_affinity_terms required_anti_affinity_terms""",
    "scheduler.filters.nodeaffinity": """ERR_REASON_CONFLICT ERR_REASON_POD NAME NodeAffinity
        OBJECT_NAME_FIELD RequiredNodeAffinity required_node_affinity_node_names""",
    "scheduler.filters.nodename": "ERR_REASON NAME NodeName",
    "scheduler.filters.nodeports": """DEFAULT_BIND_ALL_HOST_IP ERR_REASON HostPort NAME NodePorts
        check_conflict fits_ports""",
    "scheduler.filters.noderesources": """InsufficientResource NAME NodeResourcesFit fits_request
        insufficient_resources is_scalar_resource_name""",
    "scheduler.filters.nodeunschedulable": """ERR_REASON_UNSCHEDULABLE NAME NodeUnschedulable
        UNSCHEDULABLE_TAINT""",
    "scheduler.filters.podtopologyspread": """CriticalPaths ERR_REASON_CONSTRAINTS_NOT_MATCH
        ERR_REASON_NODE_LABEL_NOT_MATCH HONOR IGNORE LABEL_HOSTNAME LABEL_TOPOLOGY_ZONE MAX_INT32
        MAX_NODE_SCORE NAME PRE_FILTER_STATE_KEY PRE_SCORE_STATE_KEY PodTopologySpread
        PreFilterState PreScoreState SYSTEM_DEFAULT_CONSTRAINTS SpreadConstraint SpreadCounts
        TopologyPair count_pods_match_selector default_selector
        node_labels_match_spread_constraints""",
    "scheduler.filters.tainttoleration": """DO_NOT_SCHEDULE_EFFECTS ERR_REASON_UNTOLERATED NAME
        TaintToleration find_matching_untolerated_taint""",
    "scheduler.score": """BalancedAllocationScorer DEFAULT_HARD_POD_AFFINITY_WEIGHT
        ImageLocalityScorer InterPodAffinityScorer LeastAllocatedScorer MAX_CONTAINER_THRESHOLD
        MAX_NODE_SCORE MB MIN_NODE_SCORE MIN_THRESHOLD NodeAffinityScorer NodePluginScores
        NodeScores PluginScore SCORE_REGISTRY ScorePlugin TaintTolerationScorer TopologyScore
        balanced_resource_score calculate_image_priority
        count_intolerable_taints_prefer_no_schedule default_normalize_score default_score_plugins
        least_requested_score normalized_image_name prioritize_nodes resource_weights""",
    "scheduler.framework": """Code CycleState DEFAULT_PLUGIN_WEIGHTS FilterPlugin Framework
        NODE_LOCAL_PLUGINS NodeToStatus SUCCESS Status filter_status fit_error_message
        is_node_local is_success node_local_signature""",
}


@pytest.mark.parametrize("module", sorted(OLD_SCHEDULER_NAMES))
def test_old_scheduler_module_keeps_its_names(module: str) -> None:
    old = importlib.import_module(module)
    missing = [n for n in OLD_SCHEDULER_NAMES[module].split() if not hasattr(old, n)]
    assert not missing, f"{module} lost {missing}"


RETIRED_MODULES: dict[str, str] = {
    "scheduler.simulate": "now scheduler.simulator: scheduler.simulate is the function API users "
    "call, and one name cannot be both a module and a function without a hack on the package",
}
RETIRED_NAMES: dict[str, str] = {
    "scheduler.preemption.explain.VERDICTS": "unread; the values are the Literal type "
    "scheduler.preemption.explain.Verdict of NodeVerdict.verdict",
    "scheduler.queue.scheduling_queue.BACKOFF_ORDERING_WINDOW": "unread",
}


@pytest.mark.parametrize("module", sorted(RETIRED_MODULES))
def test_retired_module_is_gone(module: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize("name", sorted(RETIRED_NAMES))
def test_retired_name_is_gone(name: str) -> None:
    module, attr = name.rsplit(".", 1)
    assert not hasattr(importlib.import_module(module), attr)


def test_scheduler_simulate_is_the_function() -> None:
    import scheduler
    import scheduler.simulator

    assert scheduler.simulate is scheduler.simulator.simulate


def test_no_package_level_name_is_also_a_module_of_scheduler() -> None:
    """A submodule named like an exported function would rebind the package's attribute on
    import (the clash ``scheduler.simulate`` had)."""
    import scheduler

    modules = {p.stem for p in (ROOT / "scheduler").iterdir() if p.suffix == ".py" or p.is_dir()}
    assert not modules & set(scheduler.__all__)

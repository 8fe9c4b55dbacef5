"""``filter_nodes`` (the batch form) must give exactly the verdicts of ``filter`` per node."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given

from kube.objects import Pod
from scheduler.framework import BatchFilterPlugin, CycleState, Status
from scheduler.plugins.helper import split_by_filter
from scheduler.plugins.registry import default_framework
from scheduler.schedule import run_filter_plugins_batch
from scheduler.snapshot import NodeWindow, Snapshot
from tests.support.strategies import clusters


def _names(statuses: dict[str, Status]) -> dict[str, tuple[str, Any, tuple[str, ...]]]:
    return {n: (s.plugin, s.code, s.reasons) for n, s in statuses.items()}


@given(clusters())
def test_batch_runner_matches_the_framework_node_by_node(cluster: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = cluster
    fwk = default_framework()
    state = CycleState()
    assume(fwk.run_pre_filter_plugins(state, incoming, snapshot).is_success())
    nodes = snapshot.node_info_list
    expected = {ni.name: fwk.run_filter_plugins(state, incoming, ni) for ni in nodes}
    passed, failed = run_filter_plugins_batch(fwk, state, incoming, list(nodes))
    assert [ni.name for ni in passed] == [n for n, s in expected.items() if s.is_success()]
    # The statuses come in node order, as the walk records them.
    assert list(_names(failed).items()) == list(
        _names({n: s for n, s in expected.items() if not s.is_success()}).items()
    )


@given(clusters())
def test_each_plugin_batch_matches_its_filter(cluster: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = cluster
    fwk = default_framework()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, incoming, snapshot)
    # A window of the snapshot's nodes as the walk passes them, with some clones among them
    # (nodes outside the snapshot's columns, as preemption's dry runs pass).
    half = len(snapshot.node_info_list) // 2
    window = snapshot.node_info_list[half:] + snapshot.node_info_list[:half]
    mixed = [ni.clone() if i % 3 == 1 else ni for i, ni in enumerate(window)]
    # and the walk's own chunks: a NodeWindow reads the snapshot's columns.
    tail = NodeWindow(snapshot, half, len(snapshot.node_info_list) - half)
    for nodes in (mixed, tail):
        for plugin in fwk.filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            assert isinstance(plugin, BatchFilterPlugin)
            got_passed, got_rejected = plugin.filter_nodes(state, incoming, nodes)
            want_passed, want_rejected = split_by_filter(plugin.filter, state, incoming, nodes)
            assert [ni.name for ni in got_passed] == [ni.name for ni in want_passed]
            assert sorted((ni.name, s.code.name, s.reasons) for ni, s in got_rejected) == sorted(
                (ni.name, s.code.name, s.reasons) for ni, s in want_rejected
            )

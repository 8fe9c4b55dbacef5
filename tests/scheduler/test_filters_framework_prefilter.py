"""``Framework.run_pre_filter_plugins`` as ``RunPreFilterPlugins`` runs them."""

from __future__ import annotations

from dataclasses import dataclass, field

from kube.objects import Pod
from scheduler.framework import Code, CycleState, Framework, Status
from scheduler.plugins.helper import NoPreFilterExtensions
from scheduler.snapshot import NodeInfo, Snapshot


@dataclass
class _Recorder(NoPreFilterExtensions):
    name: str
    answer: Status | None
    calls: list[str] = field(default_factory=list)

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        self.calls.append(self.name)
        state.write(self.name, True)
        return self.answer

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


def _run(*answers: Status | None) -> tuple[Status, CycleState, list[_Recorder]]:
    plugins = [_Recorder(f"P{i}", a) for i, a in enumerate(answers)]
    state = CycleState()
    status = Framework(plugins).run_pre_filter_plugins(state, Pod("p"), Snapshot())
    return status, state, plugins


def test_unschedulable_lets_later_plugins_write_their_state() -> None:
    # kubernetes#119770: preemption needs every PreFilter state, so U does not stop the loop.
    status, state, plugins = _run(Status(Code.Unschedulable, "first"), None)
    assert status == Status(Code.Unschedulable, "first")
    assert status.plugin == "P0"
    assert [p.calls for p in plugins] == [["P0"], ["P1"]]
    assert state.read("P1") is True


def test_last_unschedulable_status_wins() -> None:
    status, _, _ = _run(Status(Code.Unschedulable, "a"), Status(Code.Unschedulable, "b"))
    assert status.reasons == ("b",)
    assert status.plugin == "P1"


def test_unresolvable_stops_at_once() -> None:
    status, state, plugins = _run(
        Status(Code.Unschedulable, "a"), Status(Code.UnschedulableAndUnresolvable, "b"), None
    )
    assert status == Status(Code.UnschedulableAndUnresolvable, "b")
    assert status.plugin == "P1"
    assert plugins[2].calls == []
    assert state.read("P2") is None


def test_other_codes_are_errors_and_skips_are_recorded() -> None:
    status, state, _ = _run(Status(Code.Skip), Status(Code.Pending, "waiting"))
    assert status.code is Code.Error
    assert status.message == 'running PreFilter plugin "P1": waiting'
    assert state.skip_filter_plugins == {"P0"}

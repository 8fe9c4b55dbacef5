"""Incident timelines: opened by pressure with their lead-in, closed after the tail, bounded,
read back as written — and written by a running agent next to its evictions."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent.timeline as timeline_module
import kubesim
from agent.config import ConfigError, load_config
from agent.eviction import Observation, Threshold, ThresholdValue
from agent.timeline import (
    FORMAT,
    TimelineError,
    TimelineRecorder,
    read_timeline,
    timeline_files,
)
from tests.support.agent import STATE, USAGE, config, more_syncs, start, stop
from tests.support.eviction import PodUsage, summary
from tests.support.fakenode import MI, FakeNode
from tests.support.wait import until

ROOT = Path(__file__).resolve().parents[2]
HARD = Threshold("memory.available", "LessThan", ThresholdValue(quantity=200 * MI))
SOFT = Threshold("memory.available", "LessThan", ThresholdValue(percentage=0.5), grace_period=30)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def recorder(tmp_path: Path, clock: Clock, **kw: Any) -> TimelineRecorder:
    return TimelineRecorder(tmp_path, node="node-1", clock=clock, lead_in=10, tail=5, **kw)


def sync(rec: TimelineRecorder, clock: Clock, available: int, *, met: bool = False) -> None:
    rec.record_sync(
        at=clock.now,
        observations={"memory.available": Observation(available, 1024 * MI, clock.now)},
        thresholds=[HARD, SOFT],
        met=["memory.available"] if met else [],
        summary=summary(
            mem_available=available,
            mem_working_set=1024 * MI - available,
            pods=[PodUsage("a", memory=300 * MI), PodUsage("b", memory=100 * MI)],
        ),
    )


def test_an_incident_opens_with_its_lead_in_and_closes_after_the_tail(tmp_path: Path) -> None:
    clock = Clock()
    rec = recorder(tmp_path, clock)
    for available in (900, 800, 700, 600, 500, 400, 300):  # 1 s apart: 7 quiet syncs
        sync(rec, clock, available * MI)
        clock.now += 1
    rec.flush()
    assert timeline_files(tmp_path) == []  # nothing written while nothing happens
    sync(rec, clock, 190 * MI, met=True)
    rec.record_eviction(
        at=clock.now + 0.02,
        pod="default/a",
        signal="memory.available",
        result="evicted",
        reaction_seconds=0.02,
        message="The node was low on resource: memory.",
    )
    for _ in range(6):  # quiet again: closed once 5 s passed
        clock.now += 1
        sync(rec, clock, 500 * MI)
    assert rec.incident is None
    rec.flush()
    [path] = timeline_files(tmp_path)
    assert path.name == "node-1-20231114T221327Z.timeline.jsonl"
    timeline = read_timeline(path)
    assert timeline.node == "node-1" and timeline.opened == 1_700_000_007.0
    # the 7 quiet syncs (within the 10 s lead-in), the met one, then the tail up to the first
    # sync 5 s after the eviction (7.02 s)
    lead_in, tail = [900, 800, 700, 600, 500, 400, 300], [500] * 6
    assert [s.signals["memory.available"][0] // MI for s in timeline.samples] == [
        *lead_in,
        190,
        *tail,
    ]
    met = timeline.samples[7]
    assert met.met == ("memory.available",)
    assert {(t.kind, t.value) for t in met.thresholds} == {("hard", 200 * MI), ("soft", 512 * MI)}
    assert met.pods == {"default/a": 300 * MI, "default/b": 100 * MI}
    [eviction] = timeline.evictions
    assert (eviction.pod, eviction.result, eviction.reaction_seconds) == (
        "default/a",
        "evicted",
        0.02,
    )
    assert timeline.closed == 1_700_000_013.0 and "for 5s" in timeline.reason


def test_the_lead_in_keeps_only_its_last_seconds(tmp_path: Path) -> None:
    clock = Clock()
    rec = recorder(tmp_path, clock)
    for _ in range(30):
        sync(rec, clock, 900 * MI)
        clock.now += 1
    rec.record_held_back(at=clock.now, pod="default/a", signal="memory.available")
    rec.close()
    [path] = timeline_files(tmp_path)
    timeline = read_timeline(path)
    assert [s.time - clock.now for s in timeline.samples] == [float(t) for t in range(-10, 0)]
    assert len(timeline.held) == 1
    assert timeline.reason == "agent stopped"


def test_a_long_incident_stops_sampling_at_the_size_bound_but_keeps_evictions(
    tmp_path: Path,
) -> None:
    clock = Clock()
    rec = recorder(tmp_path, clock, max_file_bytes=4000)
    for _ in range(40):
        sync(rec, clock, 100 * MI, met=True)
        clock.now += 1
    rec.record_eviction(
        at=clock.now,
        pod="default/b",
        signal="memory.available",
        result="failed",
        reaction_seconds=None,
        message="connection refused",
    )
    rec.close()
    [path] = timeline_files(tmp_path)
    assert path.stat().st_size < 4000 + 1000
    timeline = read_timeline(path)
    assert timeline.truncated and 0 < len(timeline.samples) < 40
    assert [e.result for e in timeline.evictions] == ["failed"]


def test_two_incidents_in_one_second_get_two_files(tmp_path: Path) -> None:
    clock = Clock()
    rec = TimelineRecorder(tmp_path, node="node-1", clock=clock, tail=0.5)
    sync(rec, clock, 100 * MI, met=True)
    clock.now += 0.5  # the tail has passed: closed
    sync(rec, clock, 900 * MI)
    clock.now += 0.2  # and open again within the same second, before anything is written
    sync(rec, clock, 100 * MI, met=True)
    rec.close()
    first = tmp_path / "node-1-20231114T221320Z.timeline.jsonl"
    second = tmp_path / "node-1-20231114T221320Z-2.timeline.jsonl"
    assert set(timeline_files(tmp_path)) == {first, second}
    assert [len(read_timeline(p).samples) for p in (first, second)] == [2, 1]


def test_only_the_newest_files_are_kept(tmp_path: Path) -> None:
    clock = Clock()
    rec = recorder(tmp_path, clock, keep=3)
    for _ in range(5):
        sync(rec, clock, 100 * MI, met=True)
        rec.close()
        clock.now += 60
    names = [p.name for p in timeline_files(tmp_path)]
    assert len(names) == 3
    assert names == sorted(names)  # the oldest went
    assert names[-1].startswith("node-1-20231114T2217")


def test_records_waiting_for_a_slow_disk_are_bounded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline_module, "MAX_PENDING_BYTES", 3000)
    clock = Clock()
    rec = recorder(tmp_path, clock)
    for _ in range(50):  # no flush meanwhile: the disk is stuck
        sync(rec, clock, 100 * MI, met=True)
        clock.now += 1
    rec.flush()
    [path] = timeline_files(tmp_path)
    assert path.stat().st_size <= 3000
    assert "timeline: lines dropped" in caplog.text


def test_a_failed_write_is_logged_and_never_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    gone = tmp_path / "gone"
    gone.mkdir()
    rec = recorder(gone, clock)
    sync(rec, clock, 100 * MI, met=True)
    shutil.rmtree(gone)
    rec.close()  # no exception
    assert "timeline: write failed" in caplog.text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(min_value=0.05, max_value=8), st.booleans(), st.booleans()),
        min_size=1,
        max_size=60,
    )
)
def test_incidents_never_overlap_and_hold_every_met_sync(
    steps: list[tuple[float, bool, bool]],
) -> None:
    """Whatever the pattern of pressure: every sync that met a threshold and every eviction are
    in exactly one incident; incidents follow each other; samples are in time order."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        rec = recorder(Path(tmp), clock, keep=1000)
        met_times, evictions = [], []
        for dt, met, evict in steps:
            clock.now += dt
            sync(rec, clock, 100 * MI if met else 900 * MI, met=met)
            if met:
                met_times.append(round(clock.now, 3))
            if evict:
                rec.record_eviction(
                    at=clock.now,
                    pod="default/a",
                    signal="memory.available",
                    result="evicted",
                    reaction_seconds=0.01,
                    message="",
                )
                evictions.append(round(clock.now, 3))
        rec.close()
        timelines = [read_timeline(p) for p in timeline_files(tmp)]
        timelines.sort(key=lambda t: t.opened)
        seen_met = [s.time for t in timelines for s in t.samples if s.met]
        assert sorted(seen_met) == met_times
        assert sorted(e.time for t in timelines for e in t.evictions) == evictions
        for t in timelines:
            times = [s.time for s in t.samples]
            assert times == sorted(times)
            assert t.closed is not None
            assert all(t.opened - 10 <= x <= t.closed for x in times)
        for earlier, later in itertools.pairwise(timelines):
            assert earlier.closed is not None and earlier.closed <= later.opened


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ('{"type": "sample", "time": 1}\n', "not an incident timeline"),
        (f'{{"type": "incident", "format": "{FORMAT}", "node": "n", "opened": 1}}\n{{', ":2: "),
        (
            f'{{"type": "incident", "format": "{FORMAT}", "node": "n", "opened": 1}}\n'
            '{"type": "sample", "time": "soon"}\n',
            ":2: time must be a number",
        ),
        (
            f'{{"type": "incident", "format": "{FORMAT}", "node": "n", "opened": 1}}\n'
            '{"type": "sample", "time": 2, "pods": {"a/b": -0.5}}\n',
            "must be an integer",
        ),
    ],
)
def test_a_bad_file_is_refused_with_its_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "x.timeline.jsonl"
    path.write_text(text)
    with pytest.raises(TimelineError, match=problem):
        read_timeline(path)


def test_records_of_a_later_format_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "x.timeline.jsonl"
    head = {"type": "incident", "format": FORMAT, "node": "n", "opened": 1}
    path.write_text(json.dumps(head) + '\n{"type": "cpu", "time": 2}\n')
    assert read_timeline(path).samples == []


# --- configuration -------------------------------------------------------------------------------


def test_the_timeline_dir_must_be_an_existing_directory(tmp_path: Path) -> None:
    assert load_config({"timelineDir": str(tmp_path)}, env={}).timeline_dir == str(tmp_path)
    assert load_config({"timelineDir": ""}, env={}).timeline_dir is None
    assert load_config({}, env={}).timeline_dir is None
    (tmp_path / "file").write_text("")
    for bad, rule in (
        (str(tmp_path / "missing"), "no such directory"),
        (str(tmp_path / "file"), "not a directory"),
        (7, "must be a string"),
    ):
        with pytest.raises(ConfigError) as info:
            load_config({"timelineDir": bad}, env={})
        assert info.value.field == "timelineDir (--timeline-dir)" and rule in str(info.value)


def test_a_directory_the_agent_cannot_write_exits_2_naming_the_field() -> None:
    """As the DaemonSet's agent (without CAP_DAC_OVERRIDE) meets a read-only host directory."""
    locked = Path(tempfile.mkdtemp(prefix="timeline-locked-"))
    try:
        locked.chmod(0o555)
        argv = [sys.executable, "-m", "agent", "check-config", "--timeline-dir", str(locked)]
        if os.geteuid() == 0:
            # root writes anywhere through CAP_DAC_OVERRIDE: ask without it (as root still, so
            # the checkout stays readable wherever it is, e.g. in a mode-700 mktemp directory)
            argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    finally:
        locked.rmdir()
    assert done.returncode == 2, done.stderr
    assert "timelineDir (--timeline-dir)" in done.stderr and "not writable" in done.stderr
    assert done.stderr.count("\n") == 1


def test_check_config_shows_the_timeline_dir(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent", "check-config", "--timeline-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"timelineDir: {tmp_path}" in done.stdout


def test_the_agent_never_imports_a_plotting_library() -> None:
    code = (
        "import sys, agent.cli, agent.daemon, agent.timeline; "
        "sys.exit(any(m.split('.')[0] == 'matplotlib' for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    lock = (ROOT / "requirements" / "runtime.lock").read_text()
    assert "matplotlib" not in lock and "numpy" not in lock


# --- a running agent -----------------------------------------------------------------------------


async def test_a_running_agent_writes_the_incident_of_its_evictions(tmp_path: Path) -> None:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as sim:
        fake = FakeNode(sim, usage=USAGE)
        agent, api = await start(sim, fake, config(timelineDir=str(tmp_path)))
        try:
            await until(lambda: sim.get("Pod", "default", "b") is None)
            await more_syncs(agent, 3)
        finally:
            await stop(agent, api)
    [path] = timeline_files(tmp_path)
    timeline = read_timeline(path)
    assert [(e.pod, e.result) for e in timeline.evictions] == [
        ("default/a", "evicted"),
        ("default/b", "evicted"),
    ]
    for e in timeline.evictions:
        assert e.reaction_seconds is not None and 0 <= e.reaction_seconds < 5
        assert e.message.startswith("The node was low on resource: memory.")
    assert timeline.reason == "agent stopped"
    first = timeline.samples[0]
    assert first.pods["default/a"] == 300 * MI  # every sync reads the pods, lead-in included
    assert {t.signal for t in first.thresholds} >= {"memory.available"}
    assert {"default/a", "default/b"}.isdisjoint(timeline.samples[-1].pods)

"""``examples/plot_timeline.py``: an incident timeline drawn as a PNG, one marker per eviction.

The file is written by ``agent.timeline.TimelineRecorder`` (the agent's own writer) on a fake
clock, so what is drawn is exactly what an agent writes; the demo's ``--plot`` goes through the
same ``plot`` (tests/e2e/test_demo.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.eviction import Observation, Threshold, ThresholdValue
from agent.timeline import TimelineRecorder, read_timeline, timeline_files
from examples.plot_timeline import EVICTION_GID, plot
from tests.support.eviction import PodUsage, summary

ROOT = Path(__file__).resolve().parents[2]
MI = 1 << 20
HARD = Threshold("memory.available", "LessThan", ThresholdValue(quantity=200 * MI))


def incident(directory: Path) -> Path:
    """A climb to the threshold, two evictions and a failed attempt, then recovery."""
    now = [1_700_000_000.0]
    rec = TimelineRecorder(directory, node="node-1", clock=lambda: now[0])
    pods = {"a": 50, "b": 80, "c": 40}
    attempts = 0
    for _ in range(40):
        for name in pods:
            pods[name] += 10 if name != "c" else 1
        used = sum(pods.values()) * MI
        available = 640 * MI - used
        rec.record_sync(
            at=now[0],
            observations={"memory.available": Observation(available, 640 * MI, now[0])},
            thresholds=[HARD],
            met=["memory.available"] if available < 200 * MI else [],
            summary=summary(
                mem_available=available,
                mem_working_set=used,
                pods=[PodUsage(n, memory=v * MI) for n, v in pods.items()],
            ),
        )
        if available < 200 * MI:
            victim = max((n for n in pods if pods[n]), key=pods.__getitem__)
            attempts += 1
            result = "failed" if attempts == 1 else "evicted"  # the API server was away once
            rec.record_eviction(
                at=now[0] + 0.02,
                pod=f"default/{victim}",
                signal="memory.available",
                result=result,
                reaction_seconds=0.02,
                message="The node was low on resource: memory.",
            )
            if result == "evicted":
                pods[victim] = 0
        now[0] += 0.5
    rec.close()
    [path] = timeline_files(directory)
    return path


def test_every_eviction_is_marked_once(tmp_path: Path) -> None:
    timeline = read_timeline(incident(tmp_path))
    assert len(timeline.evictions) >= 3
    assert {e.result for e in timeline.evictions} == {"evicted", "failed"}
    png = tmp_path / "incident.png"
    fig = plot(timeline, png)
    markers = fig.findobj(lambda artist: artist.get_gid() == EVICTION_GID)
    assert len(markers) == len(timeline.evictions)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = fig.get_size_inches() * fig.dpi
    assert (width, height) == (1100, 650)
    notes = [t.get_text() for t in fig.axes[0].texts]
    assert any(n.startswith("default/") and "reaction 20 ms" in n for n in notes)


def test_the_command_draws_a_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    path = incident(tmp_path)
    script = str(ROOT / "examples" / "plot_timeline.py")
    done = subprocess.run(
        [sys.executable, script, str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    png = path.with_name(path.name.removesuffix(".timeline.jsonl") + ".png")
    assert png.stat().st_size > 10_000
    bad = tmp_path / "bad.timeline.jsonl"
    bad.write_text('{"type": "sample"}\n')
    done = subprocess.run(
        [sys.executable, script, str(bad)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not an incident timeline" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("missing", ["samples", "memory"])
def test_a_timeline_without_memory_samples_is_refused(tmp_path: Path, missing: str) -> None:
    rec = TimelineRecorder(tmp_path, node="node-1", clock=lambda: 1.0)
    if missing == "memory":
        rec.record_sync(
            at=1.0,
            observations={"pid.available": Observation(100, 4096, 1.0)},
            thresholds=[],
            met=["pid.available"],
            summary=None,
        )
    else:
        rec.record_held_back(at=1.0, pod="default/a", signal="memory.available")
    rec.close()
    [path] = timeline_files(tmp_path)
    with pytest.raises(
        ValueError, match=f"no {'memory signal' if missing == 'memory' else 'samples'}"
    ):
        plot(read_timeline(path), tmp_path / "x.png")

"""Draw an incident timeline as a PNG: the node's available memory against each threshold, every
eviction marked with its pod and the agent's reaction time, and the pods' working sets stacked.

The file is what ``eviction-agent run --timeline-dir DIR`` writes per pressure incident on a real
node (``agent.timeline``), and what the demo's agent writes: ``examples/demo.py --plot`` calls
``plot`` below on it, so the demo's picture and an operator's come from one code path. Needs
matplotlib (``pip install 'node-pressure-evictor[plot]'``); the agent itself never imports it.
"""

from __future__ import annotations

import bisect
import io
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python examples/plot_timeline.py` from a fresh clone

from agent.timeline import Timeline, TimelineError, read_timeline  # noqa: E402
from kube.cliutil import (  # noqa: E402
    CONTEXT_SETTINGS,
    EXIT_CODES,
    BadInput,
    Failure,
    common_options,
    run,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIB = 1 << 20
MEMORY_SIGNALS = ("memory.available", "allocatableMemory.available")
TOP_PODS = 8  # pods drawn one by one; the others are stacked as one band
EVICTION_GID = "eviction"


def _before(times: list[float], values: list[float], t: float) -> float:
    """The last reading at or before ``t``: what the sync that decided an eviction saw."""
    return values[max(bisect.bisect_right(times, t) - 1, 0)]


def _reaction(seconds: float | None) -> str:
    """The agent's own reaction time, as the timeline records it: from the first sync that saw
    the threshold met to the eviction request."""
    if seconds is None:
        return "reaction n/a"
    return f"reaction {seconds * 1000:.0f} ms" if seconds < 1 else f"reaction {seconds:.1f} s"


def plot(timeline: Timeline, out: Path, *, title: str | None = None) -> Figure:
    """Write the PNG; returns the figure (each eviction marker has gid ``eviction``)."""
    from matplotlib.figure import Figure

    samples = timeline.samples
    if not samples:
        raise ValueError("the timeline has no samples to draw")
    start = samples[0].time
    times = [s.time - start for s in samples]
    # the memory signals with a threshold (memory.available alone if none has one)
    signals = [
        s
        for s in MEMORY_SIGNALS
        if any(t.signal == s for x in samples for t in x.thresholds)
        and any(s in x.signals for x in samples)
    ] or [s for s in MEMORY_SIGNALS[:1] if any(s in x.signals for x in samples)]
    if not signals:
        raise ValueError("the timeline has no memory signal to draw")

    fig = Figure(figsize=(11, 6.5), dpi=100, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))

    colors = {"memory.available": "tab:blue", "allocatableMemory.available": "tab:purple"}
    available: dict[str, list[float]] = {}
    for signal in signals:
        values = [
            s.signals[signal][0] / MIB if signal in s.signals else float("nan") for s in samples
        ]
        available[signal] = values
        top.plot(times, values, color=colors[signal], lw=1.8, label=f"{signal}")
        kinds = sorted({t.kind for s in samples for t in s.thresholds if t.signal == signal})
        for kind in kinds:
            line = [
                next(
                    (t.value / MIB for t in s.thresholds if t.signal == signal and t.kind == kind),
                    float("nan"),
                )
                for s in samples
            ]
            top.step(
                times,
                line,
                where="post",
                color="tab:red" if kind == "hard" else "tab:orange",
                ls="--",
                lw=1.2,
                label=f"{signal} {kind} threshold ({line[-1]:.0f}Mi)",
            )
    capacity = [s.signals[signals[0]][1] / MIB for s in samples if signals[0] in s.signals]
    if capacity:
        most = max(capacity)
        top.axhline(most, color="grey", ls=":", lw=1, label=f"capacity ({most:.0f}Mi)")

    main = available[signals[0]]
    for i, e in enumerate(timeline.evictions):
        x = e.time - start
        y = _before(times, main, x)
        done = e.result in ("evicted", "already_gone")
        marker = top.plot(
            [x],
            [y],
            marker="v" if done else "X",
            ms=11 if done else 9,
            color="black" if done else "tab:red",
            ls="none",
        )[0]
        marker.set_gid(EVICTION_GID)
        for ax in (top, bottom):
            ax.axvline(x, color="black" if done else "tab:gray", lw=0.6, ls=":")
        note = f"{e.pod}\n{_reaction(e.reaction_seconds)}"
        if not done:
            note += f"\n({e.result})"
        top.annotate(
            note,
            (x, y),
            xytext=(6, 14 + 34 * (i % 3)),  # staggered: evictions a second apart stay legible
            textcoords="offset points",
            fontsize=8,
            ha="left",
            va="bottom",
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7", "alpha": 0.9},
            arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6},
        )
    if timeline.held:
        held_x = sorted({h.time - start for h in timeline.held})
        top.plot(
            held_x,
            [0.0] * len(held_x),
            marker="|",
            ms=8,
            color="tab:orange",
            ls="none",
            label="held back by the brake",
        )
    top.set_ylabel("MiB")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)

    pods = sorted({p for s in samples for p in s.pods})
    peak = {p: max(s.pods.get(p, 0) for s in samples) for p in pods}
    shown = sorted(pods, key=lambda p: -peak[p])[:TOP_PODS]
    shown.sort()
    rows = [[s.pods.get(p, 0) / MIB for s in samples] for p in shown]
    labels = list(shown)
    rest = [p for p in pods if p not in shown]
    if rest:
        rows.append([sum(s.pods.get(p, 0) for p in rest) / MIB for s in samples])
        labels.append(f"{len(rest)} other pods")
    if rows:
        bottom.stackplot(times, rows, labels=labels, alpha=0.8)
    if "memory.available" in signals:
        used = [
            (s.signals["memory.available"][1] - s.signals["memory.available"][0]) / MIB
            if "memory.available" in s.signals
            else float("nan")
            for s in samples
        ]
        bottom.plot(times, used, color="black", lw=1, label="node working set")
    bottom.set_ylabel("working set, MiB")
    bottom.set_xlabel(
        f"seconds since {datetime.fromtimestamp(start, UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC"
    )
    bottom.set_ylim(bottom=0)
    bottom.grid(alpha=0.3)
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)

    evicted = sum(1 for e in timeline.evictions if e.result in ("evicted", "already_gone"))
    fig.suptitle(
        title
        or f"{timeline.node}: {evicted} eviction{'s' if evicted != 1 else ''} in "
        f"{times[-1]:.0f} s ({len(samples)} syncs"
        + (", samples truncated" if timeline.truncated else "")
        + "); reaction: from the first sync that saw the threshold met to the eviction request",
        fontsize=11,
    )
    _save(fig, out)
    return fig


def _save(fig: Figure, out: Path) -> None:
    """A PNG of 64 colours: a chart has few, and the file is a third of matplotlib's RGBA."""
    from PIL import Image  # matplotlib's own dependency

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    buffer.seek(0)
    with Image.open(buffer) as image:
        chart = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
        chart.save(out, format="PNG", optimize=True)


@click.command(context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@common_options("plot_timeline")
@click.argument("timeline_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The PNG to write (default: the timeline's name with .png).",
)
@click.option("--title", help="The picture's title (default: node, evictions, duration).")
def main(timeline_file: Path, output: Path | None, title: str | None) -> int:
    """Draw an incident timeline (eviction-agent --timeline-dir) as a PNG."""
    try:
        timeline = read_timeline(timeline_file)
    except TimelineError as exc:
        raise BadInput(str(exc)) from None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise Failure(
            "matplotlib is not installed: pip install 'node-pressure-evictor[plot]'"
        ) from None
    out = output or timeline_file.with_name(
        timeline_file.name.removesuffix(".jsonl").removesuffix(".timeline") + ".png"
    )
    try:
        plot(timeline, out, title=title)
    except ValueError as exc:
        raise BadInput(f"{timeline_file}: {exc}") from None
    except OSError as exc:
        raise Failure(f"{out}: {exc.strerror or exc}") from None
    click.echo(f"{out}: {len(timeline.evictions)} eviction(s), {len(timeline.samples)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(run(main, None, prog_name="examples/plot_timeline.py"))

"""The command line: ``python bench/scheduler_perf [CONFIG…] [--workload REGEX]
[--label-filter LABELS] [--through scheduler|kubesim|both]``.

Without configs, the repository's copies beside this package; without a filter, the workloads
with a floor (``config.DEFAULT_TABLE``). One JSON line per workload (``both``: the library's line
with the kubesim figure and their ratio added). Exit 2 for a bad config or filter, 1 when a
workload fails (pods left unscheduled, timeout); 128 + the signal's number when SIGTERM, SIGINT
or SIGHUP stops it, after the workload's ``finally`` has stopped what it started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Final

from .config import DEFAULT_CONFIGS, load_config, select
from .errors import ConfigError, WorkloadFailed
from .executor import DEFAULT_TIMEOUT, run_workload

__all__ = ["Stopped", "main"]

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal, raised in the main thread so every ``finally`` on the way out runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM (what ``timeout`` sends), SIGINT and SIGHUP raise ``Stopped`` once; a second
    signal while the workload cleans up is ignored, so the cleanup finishes. Python's default
    SIGTERM ends the process at once, without running ``finally``: the ``kubesim serve``
    child (a session of its own) would outlive the runner."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run scheduler_perf workloads (upstream's YAML) against scheduler or kubesim."
    )
    parser.add_argument(
        "configs",
        nargs="*",
        type=Path,
        help="performance-config.yaml files (default: the copies in bench/scheduler_perf/)",
    )
    parser.add_argument(
        "--workload",
        metavar="REGEX",
        help="run the workloads whose TestCase/Workload name matches (default: those with a floor)",
    )
    parser.add_argument(
        "--label-filter",
        metavar="LABELS",
        help="comma-separated labels a workload must have (label or +label) or not have (-label),"
        " as upstream's -perf-scheduling-label-filter",
    )
    parser.add_argument(
        "--through",
        choices=("scheduler", "kubesim", "both"),
        default="scheduler",
        help="run through the scheduler library (default), kubesim's API and scheduler loop, or"
        " both (then each line has the kubesim figure and its ratio to the library's)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for names and sampled preemption")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds to wait for an op's pods before failing (upstream: 600)",
    )
    parser.add_argument("--list", action="store_true", help="list the selected workloads and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    try:
        if args.workload:
            re.compile(args.workload)
        cases = [tc for path in (args.configs or DEFAULT_CONFIGS) for tc in load_config(path)]
        chosen = select(cases, args.workload, args.label_filter)
        if not chosen:
            raise ConfigError("no workload matches the filter")
    except (ConfigError, re.error) as exc:
        print(f"scheduler_perf: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for tc, w in chosen:
            print(tc.full_name(w))
        return 0
    try:
        with _stop_on_signals():
            return _run(args, chosen)
    except Stopped as exc:
        print(f"scheduler_perf: stopped by {exc}", file=sys.stderr)
        return 128 + exc.signum


def _run(args: argparse.Namespace, chosen: Sequence[tuple[Any, Any]]) -> int:
    status = 0
    for tc, w in chosen:
        try:
            if args.through == "both":
                line = run_workload(tc, w, seed=args.seed, timeout=args.timeout)
                sim = run_workload(tc, w, through="kubesim", seed=args.seed, timeout=args.timeout)
                line["kubesim"] = sim.get("value")
                line["kubesim_overall"] = sim.get("overall")
                if sim.get("value") and line.get("value"):
                    line["kubesim_ratio"] = round(sim["value"] / line["value"], 3)
            else:
                line = run_workload(
                    tc, w, through=args.through, seed=args.seed, timeout=args.timeout
                )
        except ConfigError as exc:
            if args.debug:
                raise
            print(f"scheduler_perf: {exc}", file=sys.stderr)
            return 2
        except WorkloadFailed as exc:
            if args.debug:
                raise
            print(f"scheduler_perf: {tc.full_name(w)}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(json.dumps(line), flush=True)
    return status

"""The command line: ``python bench/scheduler_perf [CONFIG…] [--workload REGEX]
[--label-filter LABELS] [--through scheduler|kubesim|both]``.

Without configs, the repository's copies beside this package; without a filter, the workloads
with a floor (``config.DEFAULT_TABLE``). One JSON line per workload (``both``: the library's line
with the kubesim figure and their ratio added). Exit 2 for a bad config or filter, 1 when a
workload fails (pods left unscheduled, timeout).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .config import DEFAULT_CONFIGS, load_config, select
from .errors import ConfigError, WorkloadFailed
from .executor import DEFAULT_TIMEOUT, run_workload

__all__ = ["main"]


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

"""``kubesim serve``: run the embedded API server from the command line.

Bad ``--state`` or ``--faults`` files are reported (file, document, field) and the command exits
with status 2 before anything is served, like a usage error. Otherwise it prints the URL and
the kubeconfig path, and serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from kubesim.faults.file import FaultError, load_faults
from kubesim.sim import Simulator, StateError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubesim", description="An embedded kube-apiserver.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the Kubernetes API until interrupted")
    s.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="FILE.yaml",
        help="manifests to load (repeatable; multi-document or kind: List)",
    )
    s.add_argument("--faults", metavar="FILE.yaml", help="fault injection file")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="0 picks a free port")
    s.add_argument("--kubeconfig-out", metavar="PATH", help="where to write the kubeconfig")
    s.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiplies every grace period and delay (0.01 = 100x faster)",
    )
    return p


async def _serve(args: argparse.Namespace, sim: Simulator) -> None:
    await sim.start()
    print(f"kubesim: serving on {sim.url}", flush=True)
    print(f"kubesim: kubeconfig {sim.kubeconfig_path}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await sim.stop()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.time_scale < 0:
        print("kubesim: error: --time-scale must not be negative", file=sys.stderr)
        return 2
    try:
        faults = load_faults(args.faults) if args.faults else None
        sim = Simulator(
            state=[Path(s) for s in args.state],
            faults=faults,
            time_scale=args.time_scale,
            host=args.host,
            port=args.port,
            kubeconfig_path=args.kubeconfig_out,
        )
    except (StateError, FaultError) as exc:
        kind = "faults" if isinstance(exc, FaultError) else "state"
        print(f"kubesim: error: bad {kind} file {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(args, sim))
    return 0


if __name__ == "__main__":
    sys.exit(main())

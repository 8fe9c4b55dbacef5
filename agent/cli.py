"""``eviction-agent``: the node-pressure eviction agent's command line.

``run`` is the daemon; ``rank`` shows, once, what the agent sees and whom it would evict and why;
``check-config`` validates a configuration without running anything. The eviction flags are the
kubelet's (same names, syntax and defaults) and ``--config`` takes KubeletConfiguration field names,
so an operator's existing settings carry over. Imports of the API client and the decision core
happen inside the commands: ``eviction-agent --help`` stays instant.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from agent import DOMAIN
from kube.cliutil import CONTEXT_SETTINGS, PACKAGE

if TYPE_CHECKING:
    from agent.config import AgentConfig

EXIT_HELP = """\b
Exit status:
  0  success (run: stopped by SIGTERM/SIGINT)
  1  runtime failure (API server, port in use, unreadable stats)
  2  usage error or bad input (flags, configuration; nothing was started)
"""

# click parameter name → configuration field (camelCase, as in the file).
_FIELD = {
    "eviction_hard": "evictionHard",
    "eviction_soft": "evictionSoft",
    "eviction_soft_grace_period": "evictionSoftGracePeriod",
    "eviction_minimum_reclaim": "evictionMinimumReclaim",
    "eviction_pressure_transition_period": "evictionPressureTransitionPeriod",
    "eviction_max_pod_grace_period": "evictionMaxPodGracePeriod",
    "merge_default_eviction_settings": "mergeDefaultEvictionSettings",
    "enforce_node_allocatable": "enforceNodeAllocatable",
    "housekeeping_interval": "housekeepingInterval",
    "node_name": "nodeName",
    "kubeconfig": "kubeconfig",
    "eviction_mode": "evictionMode",
    "dry_run": "dryRun",
    "node_conditions": "nodeConditions",
    "node_status_report_frequency": "nodeStatusReportFrequency",
    "node_taints": "nodeTaints",
    "kernel_memcg_notification": "kernelMemcgNotification",
    "listen": "listen",
    "proc_root": "procRoot",
    "cgroup_root": "cgroupRoot",
    "kubelet_root": "kubeletRoot",
    "runtime_root": "runtimeRoot",
    "memory_capacity": "memoryCapacity",
    "kubelet_summary_url": "kubeletSummaryUrl",
    "node_cgroup": "nodeCgroup",
    "eviction_preference_namespaces": "evictionPreferenceNamespaces",
    "kubelet_ca_file": "kubeletCAFile",
    "kubelet_token_file": "kubeletTokenFile",
    "max_evictions_per_minute": "maxEvictionsPerMinute",
    "timeline_dir": "timelineDir",
}
_LANGLE_MAPS = ("eviction_hard", "eviction_soft")
_EQ_MAPS = ("eviction_soft_grace_period", "eviction_minimum_reclaim")


@dataclass
class Globals:
    debug: bool = False


class ConfigUsageError(click.ClickException):
    """Bad configuration: ``error: <field>: <rule>``, exit 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _config_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            help="KubeletConfiguration YAML (evictionHard, evictionSoft, ...; agent fields "
            "too). Flags override it.",
        ),
        click.option(
            "--eviction-hard",
            multiple=True,
            metavar="SIGNAL<VALUE,...",
            help="Hard eviction thresholds, e.g. 'memory.available<100Mi,nodefs.available<10%'. "
            "Default: memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,"
            "imagefs.available<15%,imagefs.inodesFree<5%. Setting any entry drops the other "
            "defaults unless --merge-default-eviction-settings.",
        ),
        click.option(
            "--eviction-soft",
            multiple=True,
            metavar="SIGNAL<VALUE,...",
            help="Soft eviction thresholds; each needs --eviction-soft-grace-period.",
        ),
        click.option(
            "--eviction-soft-grace-period",
            multiple=True,
            metavar="SIGNAL=DURATION,...",
            help="Grace periods of the soft thresholds, e.g. 'memory.available=1m30s'.",
        ),
        click.option(
            "--eviction-minimum-reclaim",
            multiple=True,
            metavar="SIGNAL=VALUE,...",
            help="Minimum amount to reclaim once a threshold is active, e.g. "
            "'imagefs.available=2Gi'.",
        ),
        click.option(
            "--eviction-pressure-transition-period",
            metavar="DURATION",
            help="How long a pressure condition is held after the last crossing (default 5m; "
            "0 means 5m).",
        ),
        click.option(
            "--eviction-max-pod-grace-period",
            metavar="SECONDS",
            help="Grace period cap for soft evictions (default 0 = the pod's own grace; a "
            "negative value means 1 s, as in the kubelet).",
        ),
        click.option(
            "--merge-default-eviction-settings/--no-merge-default-eviction-settings",
            default=False,
            help="Fill unspecified evictionHard signals with the defaults (default off).",
        ),
        click.option(
            "--enforce-node-allocatable",
            metavar="LIST",
            help="Comma list of pods,system-reserved,kube-reserved or none (default pods: "
            "adds allocatableMemory.available thresholds).",
        ),
        click.option(
            "--housekeeping-interval",
            metavar="DURATION",
            help="Time between syncs (default 1s; the kubelet's loop is 10s).",
        ),
        click.option(
            "--node-name",
            envvar="NODE_NAME",
            help="This node's name (env NODE_NAME).",
        ),
        click.option(
            "--kubeconfig",
            type=click.Path(dir_okay=False),
            help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).",
        ),
        click.option(
            "--eviction-mode",
            type=click.Choice(["delete", "eviction-api"]),
            help="delete (default: the kubelet's semantics, PDBs ignored) or eviction-api (soft "
            "evictions respect PDBs; under a hard threshold a 429 falls back to delete).",
        ),
        click.option(
            "--dry-run/--no-dry-run",
            default=False,
            help="Log and count every decision, write nothing to the API.",
        ),
        click.option(
            "--node-conditions/--no-node-conditions",
            default=False,
            help="Report pressure as node conditions of the agent's own types "
            "(NodePressureAgentMemoryPressure, ...): written at once when they change, else "
            "every --node-status-report-frequency.",
        ),
        click.option(
            "--node-status-report-frequency",
            metavar="DURATION",
            help="How often unchanged node conditions are written again, as the kubelet's "
            "nodeStatusReportFrequency (default 5m; 0 means 5m; 10s to 1h).",
        ),
        click.option(
            "--kernel-memcg-notification/--no-kernel-memcg-notification",
            default=True,
            help="Have the kernel signal the moment memory crosses a memory threshold "
            "(cgroup v1 memory thresholds, as the kubelet's flag), and sync at once "
            "(default on; off: poll only).",
        ),
        click.option(
            "--node-taints/--no-node-taints",
            default=False,
            help="Taint the node NoSchedule while under pressure "
            f"({DOMAIN}/memory-pressure, /disk-pressure, /pid-pressure) "
            "and remove the taint after; needs patch on nodes.",
        ),
        click.option(
            "--listen",
            "--http-address",
            "listen",
            metavar="HOST:PORT",
            help="Address of /metrics, /healthz, /readyz (default 127.0.0.1:9808).",
        ),
        click.option("--proc-root", help="Where the host's /proc is mounted (default /proc)."),
        click.option(
            "--cgroup-root", help="Where the host's cgroup tree is (default /sys/fs/cgroup)."
        ),
        click.option(
            "--kubelet-root",
            help="The kubelet's root directory, nodefs (default /var/lib/kubelet).",
        ),
        click.option(
            "--runtime-root",
            help="The container runtime's root, imagefs (default /var/lib/containerd).",
        ),
        click.option(
            "--memory-capacity",
            metavar="QUANTITY",
            help="Node memory capacity (e.g. 512Mi); default the node cgroup's limit, else "
            "MemTotal.",
        ),
        click.option(
            "--node-cgroup",
            metavar="PATH",
            help="The node's cgroup below the cgroup root when the node is itself a cgroup (a "
            "kind/kwok node container, the kubesim demo node): node memory is read there and "
            "kubepods beneath it (default: the root).",
        ),
        click.option(
            "--max-evictions-per-minute",
            metavar="N",
            help="The brake: at most N evictions in any 60 s (default 10; 0 = no limit). "
            "Soft and local-storage evictions beyond it are held back (Event "
            "EvictionHeldBack); hard thresholds still proceed, one per sync.",
        ),
        click.option(
            "--eviction-preference-namespaces",
            metavar="NS,...",
            help=f"Namespaces whose pods may use the {DOMAIN}/eviction-preference "
            "annotation (never/avoid); '*' for all. Default: none — a pod cannot exempt itself "
            "and ranking is the kubelet's.",
        ),
        click.option(
            "--kubelet-summary-url",
            metavar="URL",
            help="The kubelet's /stats/summary, for per-pod disk usage (the DaemonSet sets "
            "https://[$(NODE_IP)]:10250/stats/summary). Must be https; http only with "
            "--kubelet-token-file='' (no credential sent). An IPv4 host may be bracketed like "
            "an IPv6 one, so one manifest serves both.",
        ),
        click.option(
            "--kubelet-ca-file",
            metavar="FILE",
            help="CA bundle that verifies the kubelet's serving certificate (default: the "
            "ServiceAccount CA; a missing file fails the fetch, never the system CAs instead).",
        ),
        click.option(
            "--kubelet-token-file",
            metavar="FILE",
            help="Bearer token sent to the kubelet (default: the ServiceAccount token; '' "
            "sends none).",
        ),
        click.option(
            "--timeline-dir",
            metavar="DIR",
            help="Write a timeline file per pressure incident here (an existing, writable "
            "directory): the signals, thresholds and pods' working sets of every sync, and each "
            "eviction with its reaction time; examples/plot_timeline.py draws one. Default: "
            "none.",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _flags(ctx: click.Context, params: dict[str, Any]) -> dict[str, Any]:
    from agent.config import parse_langle_map, parse_map

    out: dict[str, Any] = {}
    for name, field in _FIELD.items():
        value = params.get(name)
        source = ctx.get_parameter_source(name)
        if source in (None, ParameterSource.DEFAULT) or value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name in _LANGLE_MAPS or name in _EQ_MAPS:
            if not value:
                continue
            parse = parse_langle_map if name in _LANGLE_MAPS else parse_map
            merged: dict[str, str] = {}
            for item in value:
                try:
                    merged.update(parse(item))
                except ValueError as exc:
                    raise ConfigUsageError(f"{flag}: {exc}") from None
            value = merged
        out[field] = value
    return out


def _load(ctx: click.Context, params: dict[str, Any]) -> AgentConfig:
    from agent.config import ConfigError, load_config, read_config_file

    try:
        file_data = None
        source = "defaults and flags"
        if params.get("config_file"):
            file_data = read_config_file(params["config_file"])
            source = str(params["config_file"])
        return load_config(file_data, _flags(ctx, params), source=source)
    except ConfigError as exc:
        raise ConfigUsageError(str(exc)) from None


def _fail(glob: Globals, exc: BaseException) -> None:
    if glob.debug:
        traceback.print_exc()
    click.echo(f"error: {' '.join(str(exc).split()) or type(exc).__name__}", err=True)
    sys.exit(1)


async def _api_client(kubeconfig: str | None) -> Any:
    """The agent's API client (``evictor.api.connect``, shared with ``evict``: credentials
    that refresh, in-cluster when there is no kubeconfig, the proxy rule)."""
    from evictor.api.connect import ConfigError, NoSuchKubeconfig, NotInCluster, connect

    try:
        conn = await connect(kubeconfig=kubeconfig, prog="eviction-agent")
    except NoSuchKubeconfig as exc:
        raise ConfigUsageError(f"kubeconfig (--kubeconfig): {exc}") from None
    except NotInCluster as exc:
        raise ConfigUsageError(str(exc)) from None
    except ConfigError as exc:
        raise ConfigUsageError(f"kubeconfig (--kubeconfig): {exc}") from None
    return conn.api_client


@click.group(epilog=EXIT_HELP, context_settings=CONTEXT_SETTINGS)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.version_option(
    package_name=PACKAGE,
    prog_name="eviction-agent",
    message="%(prog)s %(version)s",
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Node-pressure eviction agent: the kubelet's eviction decisions, within a second."""
    ctx.obj = Globals(debug=debug)


@cli.command(epilog=EXIT_HELP)
@_config_options
@click.pass_context
def run(ctx: click.Context, /, **params: Any) -> None:
    """Run the agent on this node (the daemon)."""
    glob: Globals = ctx.obj
    cfg = _load(ctx, params)
    if not cfg.node_name:
        raise ConfigUsageError("nodeName (--node-name): required (or set NODE_NAME)")
    from agent.logs import setup_logging

    setup_logging(debug=glob.debug)
    try:
        asyncio.run(_run(cfg))
    except ConfigUsageError:
        raise
    except Exception as exc:
        _fail(glob, exc)


async def _run(cfg: AgentConfig) -> None:
    from agent.daemon import Agent

    api = await _api_client(cfg.kubeconfig)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        async with Agent(cfg, api_client=api):
            await stop.wait()
    finally:
        await api.close()


@cli.command(epilog=EXIT_HELP)
@_config_options
@click.option(
    "--signal",
    "signal_name",
    help="Rank for this signal (default: the first met threshold, else memory.available).",
)
@click.option(
    "--stats-file",
    type=click.Path(dir_okay=False, exists=True),
    help="Read a Summary (kubelet /stats/summary JSON) instead of this node's cgroups.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", help="Format.")
@click.pass_context
def rank(
    ctx: click.Context,
    /,
    signal_name: str | None,
    stats_file: str | None,
    output: str,
    **params: Any,
) -> None:
    """Show the observations, thresholds and the ranked pods with the reason for each position."""
    glob: Globals = ctx.obj
    cfg = _load(ctx, params)
    from agent.eviction import SIGNALS

    if signal_name is not None and signal_name not in SIGNALS:
        raise click.BadParameter(
            f"{signal_name!r}: must be one of {', '.join(SIGNALS)}", param_hint="--signal"
        )
    try:
        report = asyncio.run(_rank(cfg, signal_name, stats_file))
    except ConfigUsageError:
        raise
    except Exception as exc:
        _fail(glob, exc)
        return
    if output == "json":
        click.echo(json.dumps(report, indent=2, default=str))
        return
    _print_rank(report)


async def _rank(cfg: AgentConfig, signal_name: str | None, stats_file: str | None) -> Any:
    from agent.daemon import WallClock
    from agent.eviction import EvictionManager, Summary, SummaryError
    from agent.rank import explain
    from kube.objects import Pod

    if stats_file is not None:
        try:
            with open(stats_file) as fh:
                raw = json.load(fh)
            summary = Summary.from_dict(raw)
        except RecursionError:
            raise ConfigUsageError(
                f"--stats-file: {stats_file}: JSON nested too deeply to be a stats Summary"
            ) from None
        except (OSError, ValueError, SummaryError) as exc:
            # ValueError includes Python's limit on integer digits (a 5000-digit number)
            detail = " ".join(str(exc).split())
            raise ConfigUsageError(f"--stats-file: {stats_file}: {detail}") from None
    else:
        from agent.sources import Roots, SourceConfig, SummaryCollector

        collector = SummaryCollector(
            SourceConfig(
                roots=Roots.from_strings(
                    proc_root=cfg.proc_root,
                    cgroup_root=cfg.cgroup_root,
                    kubelet_root=cfg.kubelet_root,
                    runtime_root=cfg.runtime_root,
                ),
                node_name=cfg.node_name,
                kubepods_parent=cfg.node_cgroup,
                node_cgroup=cfg.node_cgroup,
                memory_capacity=cfg.memory_capacity,
            )
        )
        summary = collector.collect()
    pods: list[Pod] = []
    source = "summary podRefs (no API: requests and priorities unknown)"
    if cfg.node_name and (cfg.kubeconfig or os.environ.get("KUBECONFIG") or _has_default_kube()):
        api = await _api_client(cfg.kubeconfig)
        try:
            from agent.informer import PodInformer, is_active

            informer = PodInformer(api, cfg.node_name)
            await informer.list_once()
            pods = [e.pod for e in informer.pods.values() if is_active(e.pod)]
            source = f"API, pods bound to {cfg.node_name}"
        finally:
            await api.close()
    else:
        for ps in summary.pods:
            ref = ps.pod_ref
            pods.append(Pod(name=ref.name, namespace=ref.namespace, uid=ref.uid))
    manager = EvictionManager(cfg.manager_config(), WallClock())
    report = explain(manager, summary, pods, signal_name)
    report["podSource"] = source
    return report


def _has_default_kube() -> bool:
    return os.path.isfile(os.path.expanduser("~/.kube/config"))


def _print_rank(report: dict[str, Any]) -> None:
    click.echo(f"signal: {report['signal']}    pods from: {report['podSource']}")
    click.echo("observations:")
    for sig, o in sorted(report["observations"].items()):
        click.echo(f"  {sig:32} available {o['available']:>16}  capacity {o['capacity']:>16}")
    click.echo("thresholds:")
    for t in report["thresholds"]:
        met = "MET" if t["met"] else "-"
        click.echo(
            f"  {t['signal']:32} {t['kind']:4} <{t['value']:10} = {t['quantity']!s:>16}  {met}"
        )
    click.echo("ranking (most evictable first):")
    for row in report["pods"]:
        pod = row["pod"]
        skip = f"  [{row['skipped']}]" if row.get("skipped") else ""
        click.echo(
            f"  {row['rank']:>3}. {pod['namespace']}/{pod['name']}  priority {row['priority']}"
            f"  — {row['reason']}{skip}"
        )


@cli.command("check-config", epilog=EXIT_HELP)
@_config_options
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", help="Format.")
@click.pass_context
def check_config(ctx: click.Context, /, output: str, **params: Any) -> None:
    """Validate the configuration and print the effective settings and thresholds."""
    cfg = _load(ctx, params)
    effective = cfg.summary()
    effective["thresholds"] = [
        {
            "signal": t.signal,
            "kind": "soft" if t.grace_period else "hard",
            "value": t.value.text,
            "gracePeriodSeconds": t.grace_period,
            "minimumReclaim": (None if t.min_reclaim is None else t.min_reclaim.text),
        }
        for t in cfg.thresholds
    ]
    if output == "json":
        click.echo(json.dumps(effective, indent=2))
    else:
        import yaml

        click.echo(yaml.safe_dump(effective, sort_keys=False).rstrip())
    click.echo(f"configuration OK ({cfg.source})", err=True)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="eviction-agent", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

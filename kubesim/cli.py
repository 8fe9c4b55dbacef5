"""``kubesim``: run the embedded API server from the command line (``serve``, ``wait``,
``certificate``).

A script never reads a kubeconfig whose server is not answering: ``serve`` writes it atomically
only once the port answers and removes it when it stops; ``serve --background`` returns once the
server is ready; ``wait`` blocks until it answers ``/readyz``. Bad files or flags exit 2 before
anything is served, naming the file, document, object and field; a port in use exits 1. The
heavy modules are imported only when a command runs, so ``--help`` stays instant.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import click

from kube.cgroups import CgroupDriver
from kube.cliutil import (
    CONTEXT_SETTINGS,
    EXIT_CODES,
    BadInput,
    Failure,
    common_options,
    parse_feature_gates,
    run,
)
from kube.strict import Validation
from kubesim.controllers import CONTROLLER_NAMES
from scheduler.cli import SCHEDULER_CONFIG_HELP, validate_option
from scheduler.features import FEATURE_GATES, SCHEDULER_QUEUEING_HINTS

if TYPE_CHECKING:
    from kubesim.faults.file import FaultSet
    from kubesim.sim import Simulator
    from scheduler.config import KubeSchedulerConfiguration

__all__ = ["cli", "main"]

PROG: Final = "kubesim"


@click.group(context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@common_options(PROG)
def cli() -> None:
    """An embedded kube-apiserver for tests and demos; real kubectl works against it."""


def _directory_of(path: str | None, option: str) -> None:
    """Fail early (exit 2) on an output path whose directory is missing."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise BadInput(f"{option} {path}: is a directory")
    if not target.parent.is_dir():
        raise BadInput(f"{option} {path}: directory {target.parent} does not exist")


# The modules of the ``kubesim`` extra (tokens, certificates, CEL): the agent and evict do not
# need them, so a plain install leaves them out (and out of the agent's image).
SERVER_EXTRA: Final = {
    "jwt": "PyJWT",
    "cryptography": "cryptography",
    "cel": "common-expression-language",
}


def require_server_extra() -> None:
    """Exit 1 with the install command when the server's own dependencies are missing."""
    import importlib.util

    missing = [
        dist for module, dist in SERVER_EXTRA.items() if not importlib.util.find_spec(module)
    ]
    if missing:
        raise Failure(
            f"kubesim serve needs {', '.join(missing)}:"
            " pip install 'node-pressure-evictor[kubesim]'"
        )


# ``kubesim.sim.AUTHORIZATION_MODES``'s names, spelled out: importing it would load aiohttp.
AUTHORIZATION_CHOICES: Final = ("always-allow", "rbac")


@dataclass(frozen=True)
class Living:
    """The living-cluster flags of ``serve``; None leaves the state file's setting (or 0)."""

    ready_after: float | None = None
    reaction_delay: float | None = None
    job_duration: float | None = None
    disabled: frozenset[str] = frozenset()
    disabled_admission: frozenset[str] = frozenset()
    eviction_subresource: bool = True
    authorization: str = AUTHORIZATION_CHOICES[0]


def serves_tls(authorization: str, tls: bool | None) -> bool:
    """``--tls``/``--no-tls`` as given, else TLS exactly when requests are authorized.

    kubectl (client-go) sends a kubeconfig's bearer token only over HTTPS, so an authorizing
    server on http would meet kubectl as ``system:anonymous`` (kubectl then prints ``Error from
    server (Forbidden): unknown``); over TLS the kubeconfig carries kubeadm's admin client
    certificate, which kubectl sends. ``always-allow`` has nothing to protect and stays on http.
    Credentials never travel in clear: a non-loopback ``--host`` with ``--no-tls`` is refused
    once requests are authorized (exit 2, ``kubesim.sim.check_clear_text``).
    """
    if tls is not None:
        return tls
    return authorization != AUTHORIZATION_CHOICES[0]


def _controller_names(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """``--disable-controller``: each name must be a built-in controller (exit 2 otherwise)."""
    for name in value:
        if name not in CONTROLLER_NAMES:
            raise click.BadParameter(
                f"unknown controller {name!r}; known: {', '.join(CONTROLLER_NAMES)}",
                ctx=ctx,
                param=param,
            )
    return value


def _admission_plugins(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """``--disable-admission-plugins``: comma-separated (repeatable), each one kubesim can
    leave out (exit 2 otherwise)."""
    from kubesim.plugins.admission import DISABLEABLE_PLUGINS

    names = tuple(n.strip() for v in value for n in v.split(",") if n.strip())
    for name in names:
        if name not in DISABLEABLE_PLUGINS:
            raise click.BadParameter(
                f"admission plugin {name!r} cannot be disabled; kubesim can leave out: "
                + ", ".join(DISABLEABLE_PLUGINS),
                ctx=ctx,
                param=param,
            )
    return names


def _feature_gates(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> dict[str, bool]:
    """``--feature-gates``: kube's ``Name=bool`` pairs, each gate one the scheduler models
    (exit 2 with kube's message otherwise)."""
    try:
        return parse_feature_gates(value, FEATURE_GATES)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _gates_help() -> str:
    return ", ".join(
        f"{name}=true|false (default={str(on).lower()})" for name, on in FEATURE_GATES.items()
    )


def _load_faults(path: str) -> FaultSet:
    from kube.strict import ManifestError, parse_yaml, read_text
    from kubesim.faults.file import FaultError, FaultSet, parse_faults

    out = FaultSet()
    try:
        docs, _ = parse_yaml(read_text(path), source=path)
        for n, doc in enumerate(docs, 1):
            if doc is not None:
                out.extend(parse_faults(doc, source=path, document=n))
    except ManifestError as exc:
        raise BadInput(f"bad faults file: {exc}") from None
    except FaultError as exc:
        raise BadInput(f"bad faults file: {exc}") from None
    return out


@cli.command(epilog=EXIT_CODES)
@click.option(
    "--state",
    multiple=True,
    metavar="FILE.yaml",
    help="Manifests to load before serving, statuses included (repeatable; multi-document "
    "or kind: List).",
)
@click.option(
    "--faults",
    metavar="FILE.yaml",
    help="Fault injection file (see examples/kubesim-faults.yaml).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to listen on; 0 picks a free one.",
)
@click.option(
    "--kubeconfig-out",
    metavar="PATH",
    help="Where to write the kubeconfig (once the port answers; removed on exit). "
    "Default: a temporary file, printed.",
)
@click.option(
    "--time-scale",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Multiplies every grace period and delay (0.01 = 100x faster).",
)
@validate_option()
@click.option(
    "--scheduler-config",
    "scheduler_config",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help=SCHEDULER_CONFIG_HELP + " The scheduler loop runs every profile.",
)
@click.option(
    "--feature-gates",
    "feature_gates",
    multiple=True,
    metavar="NAME=BOOL,...",
    callback=_feature_gates,
    help="Feature gates of the scheduler loop, as kube-scheduler's flag (comma-separated, "
    "repeatable): " + _gates_help() + ".",
)
@click.option(
    "--preemption-mode",
    type=click.Choice(["sampled", "exhaustive"]),
    default="sampled",
    show_default=True,
    help="How the scheduler loop searches for a node to preempt on: sampled is "
    "kube-scheduler's DefaultPreemption (a sample of the nodes from a random offset, seeded); "
    "exhaustive weighs every node and breaks ties by node order, as scheduler simulate does.",
)
@click.option(
    "--background",
    is_flag=True,
    help="Detach: return once the server answers, printing its PID, kubeconfig and log file.",
)
@click.option(
    "--log-file",
    metavar="PATH",
    help="With --background: where the server's output goes (default: a temporary file).",
)
@click.option(
    "--pid-file",
    metavar="PATH",
    help="Write the server's PID here once it is ready; removed on exit.",
)
@click.option(
    "--ready-timeout",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="With --background: seconds to wait for the server before giving up.",
)
@click.option(
    "--ready-after",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Seconds from a pod's start on its node to Ready, × --time-scale (default 0, or the "
    "state's ClusterSettings readyAfter); the pod annotation kubesim.io/ready-after wins.",
)
@click.option(
    "--reaction-delay",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Seconds a controller waits after a change before it acts, × --time-scale "
    "(default 0, or the state's ClusterSettings reactionDelay).",
)
@click.option(
    "--job-duration",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Seconds a Job's pod runs before it Succeeds, × --time-scale (default 5, or the "
    "state's ClusterSettings jobDuration); the annotation kubesim.io/run-for wins.",
)
@click.option(
    "--disable-controller",
    "disabled",
    multiple=True,
    metavar="NAME",
    callback=_controller_names,
    help="Do not run this built-in controller (repeatable): " + ", ".join(CONTROLLER_NAMES) + ".",
)
@click.option(
    "--disable-admission-plugins",
    "disabled_admission",
    multiple=True,
    metavar="NAMES",
    callback=_admission_plugins,
    help="Admission plugins to leave out, comma-separated, as kube-apiserver's flag: Priority "
    "(pods may then set spec.priority without a class, as on kube's integration-test "
    "servers), ValidatingAdmissionPolicy.",
)
@click.option(
    "--no-scheduler",
    is_flag=True,
    help="Run no scheduler (same as --disable-controller scheduler): unbound pods stay Pending.",
)
@click.option(
    "--no-eviction-subresource",
    is_flag=True,
    help="Serve no pods/eviction subresource (hidden from discovery; 404), as on a server "
    "without it, so clients fall back to DELETE.",
)
@click.option(
    "--authorization",
    type=click.Choice(AUTHORIZATION_CHOICES),
    default=AUTHORIZATION_CHOICES[0],
    show_default=True,
    help="always-allow: every request is allowed (the kubeconfig carries no credentials); "
    "rbac: requests are authorized with Roles, ClusterRoles and their bindings as "
    "kube-apiserver's RBAC mode does (403 otherwise), over TLS unless --no-tls; the "
    "kubeconfig carries the admin's system:masters client certificate (its token with "
    "--no-tls).",
)
@click.option(
    "--process-node",
    "process_nodes",
    multiple=True,
    metavar="NODE",
    help="Run the commands of this node's pods as real processes in kubepods memory cgroups "
    "(repeatable; other nodes stay simulated). A ProcessNode document in the state does the "
    "same and gives the node its memory, its disk and kubelet settings.",
)
@click.option(
    "--cgroup-root",
    default="/sys/fs/cgroup",
    show_default=True,
    metavar="PATH",
    help="With --process-node: where the cgroup filesystem is mounted (without a writable "
    "memory cgroup, processes are measured with psutil).",
)
@click.option(
    "--memory-capacity",
    metavar="QUANTITY",
    help="With --process-node: the node's memory capacity (e.g. 1Gi), the limit of its "
    "kubepods cgroup; default the machine's memory.",
)
@click.option(
    "--cgroup-driver",
    type=click.Choice([d.value for d in CgroupDriver]),
    default=CgroupDriver.CGROUPFS.value,
    show_default=True,
    help="With --process-node: how pod cgroups are named, as the kubelet's --cgroup-driver: "
    "cgroupfs (kubepods/burstable/pod<uid>/<id>) or systemd (kubepods.slice/"
    "kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope).",
)
@click.option(
    "--kubepods-at-root",
    is_flag=True,
    help="With one --process-node: kubepods directly under --cgroup-root, as a kubelet with "
    "--cgroup-root=/ makes it on a machine of its own (a VM). Default: under a cgroup of "
    "this run (kubesim-<pid>-<id>), so that runs and a real kubelet can share a host.",
)
@click.option(
    "--tls/--no-tls",
    default=None,
    help="Serve HTTPS with a certificate authority generated at start: the kubeconfig gets "
    "its CA and a client certificate for kubernetes-admin (system:masters); client "
    "certificates it signs authenticate (see kubesim certificate). Default: on with "
    "--authorization rbac (kubectl sends no credentials over http), off with always-allow; "
    "--no-tls keeps rbac on http for clients that send tokens there (Python clients).",
)
@click.option(
    "--stop-on-stdin-eof",
    is_flag=True,
    help="Stop (as on SIGTERM) when standard input reaches its end: a program that starts "
    "kubesim with a pipe on its stdin takes it down however that program ends, SIGKILL "
    "included (the kernel closes the pipe).",
)
@click.option("--ready-fd", type=int, hidden=True)
def serve(  # noqa: PLR0917 - click passes options positionally
    state: tuple[str, ...],
    faults: str | None,
    host: str,
    port: int,
    kubeconfig_out: str | None,
    time_scale: float,
    validation: Validation,
    scheduler_config: str | None,
    feature_gates: dict[str, bool],
    preemption_mode: Literal["sampled", "exhaustive"],
    background: bool,
    log_file: str | None,
    pid_file: str | None,
    ready_timeout: float,
    ready_after: float | None,
    reaction_delay: float | None,
    job_duration: float | None,
    disabled: tuple[str, ...],
    disabled_admission: tuple[str, ...],
    no_scheduler: bool,
    no_eviction_subresource: bool,
    authorization: str,
    process_nodes: tuple[str, ...],
    cgroup_root: str,
    memory_capacity: str | None,
    cgroup_driver: str,
    kubepods_at_root: bool,
    tls: bool | None,
    stop_on_stdin_eof: bool,
    ready_fd: int | None,
) -> int:
    """Serve the Kubernetes API until interrupted (SIGINT or SIGTERM: exit 0).

    Prints "kubesim: serving on URL" and "kubesim: kubeconfig PATH" once the port answers.
    Use it with KUBECONFIG=PATH kubectl ….
    """
    # Absolute, so that the printed paths work from any directory.
    kubeconfig_out, pid_file, log_file = (
        os.path.abspath(p) if p else None for p in (kubeconfig_out, pid_file, log_file)
    )
    _directory_of(kubeconfig_out, "--kubeconfig-out")
    _directory_of(pid_file, "--pid-file")
    _directory_of(log_file, "--log-file")
    capacity = parse_memory_capacity(memory_capacity)
    if kubepods_at_root and len(set(process_nodes)) != 1:
        raise BadInput("--kubepods-at-root: needs exactly one --process-node")
    tls = serves_tls(authorization, tls)
    config = None
    if scheduler_config is not None:
        from scheduler.cli import read_scheduler_config

        scheduler_config = os.path.abspath(scheduler_config)
        config = read_scheduler_config(scheduler_config)
    if stop_on_stdin_eof and background:
        raise BadInput("--stop-on-stdin-eof: not with --background (nothing to follow)")
    if background:
        args = ["serve", "--host", host, "--port", str(port), "--time-scale", str(time_scale)]
        args += ["--validate", validation]
        if scheduler_config:
            args += ["--scheduler-config", scheduler_config]
        gates = ",".join(f"{name}={str(on).lower()}" for name, on in feature_gates.items())
        args += ["--feature-gates", gates, "--preemption-mode", preemption_mode]
        for s in state:
            args += ["--state", s]
        if faults:
            args += ["--faults", faults]
        if kubeconfig_out:
            args += ["--kubeconfig-out", kubeconfig_out]
        if pid_file:
            args += ["--pid-file", pid_file]
        for flag, seconds in (
            ("--ready-after", ready_after),
            ("--reaction-delay", reaction_delay),
            ("--job-duration", job_duration),
        ):
            if seconds is not None:
                args += [flag, repr(seconds)]
        for name in disabled:
            args += ["--disable-controller", name]
        if disabled_admission:
            args += ["--disable-admission-plugins", ",".join(disabled_admission)]
        if no_scheduler:
            args.append("--no-scheduler")
        if no_eviction_subresource:
            args.append("--no-eviction-subresource")
        args += ["--authorization", authorization]
        for node in process_nodes:
            args += ["--process-node", node]
        args += ["--cgroup-root", cgroup_root]
        if memory_capacity:
            args += ["--memory-capacity", memory_capacity]
        args += ["--cgroup-driver", cgroup_driver]
        if kubepods_at_root:
            args.append("--kubepods-at-root")
        args.append("--tls" if tls else "--no-tls")
        return _background(args, log_file=log_file, timeout=ready_timeout)
    living = Living(
        ready_after=ready_after,
        reaction_delay=reaction_delay,
        job_duration=job_duration,
        disabled=frozenset(disabled) | ({"scheduler"} if no_scheduler else set()),
        disabled_admission=frozenset(disabled_admission),
        eviction_subresource=not no_eviction_subresource,
        authorization=authorization,
    )
    sim = _simulator(
        state,
        faults,
        host,
        port,
        kubeconfig_out,
        time_scale,
        validation,
        living,
        process_nodes=process_nodes,
        cgroup_root=cgroup_root,
        memory_capacity=capacity,
        cgroup_driver=cgroup_driver,
        kubepods_at_root=kubepods_at_root,
        tls=tls,
        scheduler_config=config,
        queueing_hints=feature_gates[SCHEDULER_QUEUEING_HINTS],
        preemption_mode=preemption_mode,
    )
    for warning in sim.state_warnings:
        click.echo(f"Warning: {warning}", err=True)
    if authorization != AUTHORIZATION_CHOICES[0] and not tls:
        click.echo(
            f"Warning: --authorization {authorization} --no-tls: kubectl sends no bearer token"
            " over http, so the kubeconfig's token serves other clients only; drop --no-tls"
            " for kubectl",
            err=True,
        )
    asyncio.run(
        _serve(sim, pid_file=pid_file, ready_fd=ready_fd, stop_on_stdin_eof=stop_on_stdin_eof)
    )
    return 0


def _simulator(  # noqa: PLR0917
    state: tuple[str, ...],
    faults: str | None,
    host: str,
    port: int,
    kubeconfig_out: str | None,
    time_scale: float,
    validation: Validation,
    living: Living | None = None,
    *,
    process_nodes: Sequence[str] = (),
    cgroup_root: str = "/sys/fs/cgroup",
    memory_capacity: int | None = None,
    cgroup_driver: str = "cgroupfs",
    kubepods_at_root: bool = False,
    tls: bool = False,
    scheduler_config: KubeSchedulerConfiguration | None = None,
    queueing_hints: bool | None = None,
    preemption_mode: Literal["sampled", "exhaustive"] | None = None,
) -> Simulator:
    require_server_extra()
    from kubesim.sim import InsecureServing, Simulator, StateError

    fault_set = _load_faults(faults) if faults else None
    living = living or Living()
    try:
        return Simulator(
            state=[Path(s) for s in state],
            faults=fault_set,
            time_scale=time_scale,
            host=host,
            port=port,
            kubeconfig_path=kubeconfig_out,
            validation=validation,
            ready_after=living.ready_after,
            reaction_delay=living.reaction_delay,
            job_duration=living.job_duration,
            disabled_controllers=living.disabled,
            disabled_admission_plugins=living.disabled_admission,
            eviction_subresource=living.eviction_subresource,
            authorization=living.authorization,
            process_nodes=process_nodes,
            cgroup_root=cgroup_root,
            memory_capacity=memory_capacity,
            cgroup_driver=cgroup_driver,
            kubepods_at_root=kubepods_at_root,
            tls=tls,
            scheduler_config=scheduler_config,
            queueing_hints=queueing_hints,
            preemption_mode=preemption_mode,
        )
    except InsecureServing as exc:
        raise BadInput(str(exc)) from None
    except StateError as exc:
        raise BadInput(f"bad state file: {exc}") from None


def parse_memory_capacity(text: str | None, option: str = "--memory-capacity") -> int | None:
    """A positive memory quantity in bytes; BadInput (exit 2) naming the option otherwise."""
    if text is None:
        return None
    from kube.quantity import QuantityError, quantity_value

    try:
        value = quantity_value(text)
    except (QuantityError, ValueError) as exc:
        raise BadInput(f"{option} {text}: not a quantity: {exc}") from None
    if value <= 0:
        raise BadInput(f"{option} {text}: must be a positive quantity")
    return value


def _listen_error(exc: OSError, host: str, port: int) -> click.ClickException:
    where = f"{host}:{port}"
    if isinstance(exc, socket.gaierror):
        return BadInput(f"--host {host}: cannot resolve: {exc.strerror or exc}")
    if exc.errno == errno.EADDRINUSE:
        return Failure(f"cannot listen on {where}: address already in use")
    if exc.errno == errno.EADDRNOTAVAIL:
        return BadInput(f"--host {host}: not an address of this machine")
    return Failure(f"cannot listen on {where}: {exc.strerror or exc}")


async def _serve(
    sim: Simulator,
    *,
    pid_file: str | None,
    ready_fd: int | None,
    stop_on_stdin_eof: bool = False,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    if stop_on_stdin_eof:
        _follow_stdin(loop, stop)
    from kubesim.sim import tune_collector_for_server

    tune_collector_for_server()
    try:
        await sim.start()
    except OSError as exc:
        await sim.stop()
        raise _listen_error(exc, sim.host, sim.port) from None
    try:
        if pid_file:
            Path(pid_file).write_text(f"{os.getpid()}\n", encoding="utf-8")
        click.echo(f"kubesim: serving on {sim.url}")
        click.echo(f"kubesim: kubeconfig {sim.kubeconfig_path}")
        sys.stdout.flush()
        if ready_fd is not None:
            with os.fdopen(ready_fd, "w") as ready:
                ready.write(f"{sim.url}\n{sim.kubeconfig_path}\n")
        await stop.wait()
    finally:
        await sim.stop()
        if pid_file:
            _remove_pid_file(pid_file)


def _follow_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """``--stop-on-stdin-eof``: set ``stop`` once standard input ends (what it carries is
    read and dropped)."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()

    try:
        loop.add_reader(fd, readable)
    except (OSError, ValueError):  # a regular file (epoll refuses it): read it to its end now
        while os.read(fd, 65536):
            pass
        stop.set()


def _remove_pid_file(path: str) -> None:
    """Remove the PID file if it is still ours: a server started on the same path while this
    one was stopping must keep its file (as the kubeconfig, removed only if it names us)."""
    with contextlib.suppress(OSError, ValueError):
        if int(Path(path).read_text(encoding="utf-8").strip()) == os.getpid():
            os.unlink(path)


def _background(args: list[str], *, log_file: str | None, timeout: float) -> int:
    """Start ``kubesim serve`` detached and return once it answers (or failed)."""
    if log_file is None:
        fd, log_file = tempfile.mkstemp(prefix="kubesim-", suffix=".log")
        os.close(fd)
    read_end, write_end = os.pipe()
    try:
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kubesim", *args, "--ready-fd", str(write_end)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
                start_new_session=True,  # Ctrl-C in this terminal must not reach it
            )
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        raise Failure(f"cannot start kubesim: {exc.strerror or exc}") from None
    os.close(write_end)
    message, closed = _read_ready(read_end, timeout)
    if not message:
        code: int | None = None
        if closed:  # the server exited (or is exiting) before it was ready
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(10)
        if code is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
            raise Failure(f"kubesim did not answer within {timeout:g}s; see its log {log_file}")
        last = _last_line(log_file)
        click.echo(last or f"kubesim exited with status {code}; see its log {log_file}", err=True)
        return code if code in (1, 2) else 1
    url, kubeconfig = [*message.splitlines(), "", ""][:2]
    click.echo(f"kubesim: serving on {url}")
    click.echo(f"kubesim: kubeconfig {kubeconfig}")
    click.echo(f"kubesim: pid {proc.pid} (stop it with: kill {proc.pid})")
    click.echo(f"kubesim: log {log_file}")
    return 0


def _read_ready(fd: int, timeout: float) -> tuple[str, bool]:
    """What the server wrote on its readiness pipe, and whether the pipe was closed."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            data = os.read(fd, 4096)
            if not data:
                return b"".join(chunks).decode(), True
            chunks.append(data)
        return "", False
    finally:
        os.close(fd)


def _last_line(path: str) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@cli.command(epilog=EXIT_CODES)
@click.argument("kubeconfig", metavar="KUBECONFIG")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds to wait before giving up (exit 1).",
)
def wait(kubeconfig: str, timeout: float) -> int:
    """Wait until the server KUBECONFIG names answers /readyz (for scripts).

    The kubeconfig may not exist yet: kubesim serve writes it once the port answers.
    """
    from kubesim.kubeconfig import KubeconfigError, probe_ready, server_of, tls_context_of

    deadline = time.monotonic() + timeout
    reason = "the file does not exist"
    while True:
        if Path(kubeconfig).is_file():
            try:
                url = server_of(kubeconfig)
            except KubeconfigError as exc:
                raise BadInput(str(exc)) from None
            except OSError as exc:
                reason = exc.strerror or str(exc)
            else:
                try:
                    context = tls_context_of(kubeconfig)
                except KubeconfigError as exc:
                    raise BadInput(str(exc)) from None
                problem = probe_ready(url, context=context)
                if problem is None:
                    click.echo(f"kubesim: {url} is ready")
                    return 0
                reason = f"{url}: {problem}"
        elif Path(kubeconfig).is_dir():
            raise BadInput(f"{kubeconfig}: is a directory")
        if time.monotonic() >= deadline:
            raise Failure(f"{kubeconfig}: not ready after {timeout:g}s: {reason}")
        time.sleep(0.05)


@cli.command(epilog=EXIT_CODES)
@click.argument("user", metavar="USER")
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="A group of the user (the certificate's O; repeatable).",
)
@click.option(
    "--kubeconfig",
    "admin_kubeconfig",
    required=True,
    metavar="ADMIN_KUBECONFIG",
    help="The admin kubeconfig kubesim serve --tls wrote (a system:masters client "
    "certificate): it names the server whose CA signs.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the new kubeconfig here (mode 0600) instead of standard output.",
)
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=365,
    show_default=True,
    help="Days the certificate is valid.",
)
def certificate(
    user: str, groups: tuple[str, ...], admin_kubeconfig: str, output: str | None, days: int
) -> int:
    """Issue a client certificate for USER from a running kubesim serve --tls and write a
    kubeconfig like a real cluster's (server, CA, client certificate and key).

    The server signs with its CA and answers over TLS to system:masters only, so the key
    never crosses the network in clear.
    """
    from kubesim.kubeconfig import KubeconfigError, request_certificate, write_kubeconfig

    if output is not None:
        output = os.path.abspath(output)
        _directory_of(output, "-o")
    if not user.strip():
        raise BadInput("USER: must not be empty")
    for group in groups:
        if not group.strip():
            raise BadInput("--group: must not be empty")
    try:
        issued = request_certificate(admin_kubeconfig, user, list(groups), days=days)
    except KubeconfigError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:
        raise Failure(str(exc)) from None
    creds = {
        "client-certificate-data": issued.certificate_data,
        "client-key-data": issued.key_data,
    }
    if output is None:
        import yaml

        from kubesim.kubeconfig import kubeconfig_dict

        config = kubeconfig_dict(
            issued.server, user=creds, certificate_authority=issued.certificate_authority
        )
        click.echo(yaml.safe_dump(config, sort_keys=False), nl=False)
        return 0
    write_kubeconfig(
        output, issued.server, user=creds, certificate_authority=issued.certificate_authority
    )
    click.echo(f"kubesim: kubeconfig for {user} written to {output}", err=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``kubesim`` command; returns the exit status."""
    return run(cli, argv, prog_name=PROG)


if __name__ == "__main__":
    sys.exit(main())

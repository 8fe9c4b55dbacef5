"""One guest VM and its command channel: boot, run commands in the guest, always tear down.

The host has no usable KVM (its /dev/kvm is a PVM hypervisor that boots only PVM kernels), so
the guest runs under TCG, where Python is some 27 times slower than on the host: boot once per
test session, keep the guest's Python work small, and start expensive things once (``Guest``).

    python -m tests.node.vm -- sh -c 'cat /sys/fs/cgroup/cgroup.controllers'

boots a guest, runs the command in it and exits with its status (1 if the guest failed).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import dataclasses
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from tests.node import image

PORT_NAME = "harness.0"
DEFAULT_CACHE = Path(
    os.environ.get("NODE_GUEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "node-guest"
)
KEEP_CONSOLE_LOGS = 10
# Grace the host allows beyond a command's own timeout before it calls the guest hung.
HUNG_GRACE = 60.0


class GuestError(RuntimeError):
    """The guest failed to boot, died or stopped answering; the message ends with its console."""


@dataclasses.dataclass(frozen=True)
class GuestResult:
    """What one command in the guest did."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        status = "timed out" if self.timed_out else f"exit status {self.returncode}"
        return (
            f"guest command {shlex.join(self.argv)}: {status} after {self.seconds:.1f} s\n"
            f"--- stdout\n{self.stdout[-4000:]}--- stderr\n{self.stderr[-4000:]}"
        )

    def check(self) -> GuestResult:
        """self if the command succeeded; otherwise an AssertionError that shows its output."""
        if not self.ok:
            raise AssertionError(self.describe())
        return self


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclasses.dataclass
class GuestConfig:
    memory_mib: int = 2048
    cpus: int = 2
    boot_timeout: float = 600.0
    session_timeout: float = 20 * 60.0
    cache: Path = DEFAULT_CACHE
    extra_cmdline: tuple[str, ...] = ()


class Guest:
    """A booted guest: `run`, `python`, `put`, `get`, `journal`; `close` powers it off.

    The VM has no network device (`-nic none`): the command channel is a virtio-serial port
    whose host end is a Unix socket this process listens on before QEMU starts, so nothing
    races the connection. The guest's end is guest_runner.py, started by a unit of the
    harness's own target; its first message is a hello, which is the boot figure
    (`boot_seconds`). The console (kernel, systemd status, the journal forwarded) goes to a
    file kept for failures.

    Every wait is bounded: the boot, each command (the runner kills its process group at the
    timeout; the host gives it a grace period more and then declares the guest hung), the
    whole session (a timer kills QEMU), and QEMU itself dies with this process
    (PR_SET_PDEATHSIG). A dead or hung guest fails every later call at once with the reason
    and the console's tail.
    """

    def __init__(self, config: GuestConfig | None = None) -> None:
        self.config = config or GuestConfig()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"node-guest-{os.getpid()}-"))
        logs = self.config.cache / "logs"
        self.console_log = logs / f"console-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        self.boot_seconds = float("nan")
        self.guest_uptime_at_hello = float("nan")
        self._qemu: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._pending_lock = threading.Lock()
        self._next_id = 0
        self._dead: str | None = None
        self._hello: Future[dict[str, Any]] = Future()
        self._killer: threading.Timer | None = None

    # --- life cycle ---------------------------------------------------------------------------

    def qemu_argv(self, initramfs: Path, kernel: image.Kernel, overlay: Path) -> list[str]:
        cmdline = [
            "console=ttyS0",
            "panic=-1",
            "loglevel=4",
            "random.trust_cpu=on",
            # under TCG on a loaded host the IO-APIC timer check can miss its window and panic
            "no_timer_check",
            f"harness.overlay={overlay}",
            f"harness.repo={image.REPO}",
            f"systemd.unit={image.TARGET}",
            "systemd.unified_cgroup_hierarchy=1",
            "cgroup_no_v1=all",
            "fstab=no",
            "systemd.gpt_auto=0",
            "systemd.firstboot=0",
            "systemd.show_status=1",
            "systemd.journald.forward_to_console=1",
            *self.config.extra_cmdline,
        ]
        return [
            image.QEMU,
            "-accel", "tcg",
            "-cpu", "max",
            "-smp", str(self.config.cpus),
            "-m", f"{self.config.memory_mib}M",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-nic", "none",
            "-kernel", str(kernel.image),
            "-initrd", str(initramfs),
            "-append", " ".join(cmdline),
            "-chardev", f"file,id=console,path={self.console_log}",
            "-serial", "chardev:console",
            "-virtfs",
            "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-serial-pci,id=vser",
            "-chardev", f"socket,id=channel,path={self.workdir / 'channel.sock'}",
            "-device", f"virtserialport,bus=vser.0,chardev=channel,name={PORT_NAME}",
        ]  # fmt: skip

    def start(self) -> Guest:
        """Boot, wait for the runner's hello; on any failure the VM is gone, GuestError says why."""
        missing = image.missing_packages()
        if missing:
            raise GuestError(image.install_hint(missing))
        kernel = image.find_kernel()
        assert kernel is not None
        self.config.cache.mkdir(parents=True, exist_ok=True)
        initramfs = image.build_initramfs(self.config.cache, kernel)
        overlay = self.workdir / "overlay"
        image.write_overlay_tree(overlay)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.workdir / "channel.sock"))
        listener.listen(1)
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        for old in sorted(self.console_log.parent.glob("console-*.log"))[:-KEEP_CONSOLE_LOGS]:
            old.unlink(missing_ok=True)
        started = time.monotonic()
        try:
            self._qemu = subprocess.Popen(
                self.qemu_argv(initramfs, kernel, overlay),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, before exec
            )
            self._killer = threading.Timer(
                self.config.session_timeout,
                self._kill,
                args=(f"session exceeded {self.config.session_timeout:.0f} s",),
            )
            self._killer.daemon = True
            self._killer.start()
            listener.settimeout(1.0)
            while self._sock is None:
                self._check_boot(started)
                with contextlib.suppress(TimeoutError):
                    self._sock, _ = listener.accept()
            threading.Thread(target=self._reader, daemon=True, name="guest-channel").start()
            while True:
                self._check_boot(started)
                try:
                    hello = self._hello.result(timeout=1.0)
                    break
                except FutureTimeout:
                    continue
        except BaseException:
            self._kill("boot failed")
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            listener.close()
        self.boot_seconds = time.monotonic() - started
        self.guest_uptime_at_hello = float(hello["uptime"])
        return self

    def _check_boot(self, started: float) -> None:
        assert self._qemu is not None
        if self._dead is not None:
            raise GuestError(self._failure(self._dead))
        if self._qemu.poll() is not None:
            output = self._qemu.stdout.read().decode(errors="replace") if self._qemu.stdout else ""
            self._kill(f"QEMU exited with status {self._qemu.returncode} during boot")
            raise GuestError(self._failure(self._dead or "", qemu_output=output))
        if time.monotonic() - started > self.config.boot_timeout:
            self._kill(f"no hello from the guest within {self.config.boot_timeout:.0f} s")
            raise GuestError(self._failure(self._dead or ""))

    def _kill(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        if self._qemu is not None and self._qemu.poll() is None:
            self._qemu.kill()
            self._qemu.wait()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._fail_pending()

    def _fail_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(GuestError(self._failure(self._dead or "channel closed")))

    def close(self, timeout: float = 120.0) -> int | None:
        """Power the guest off (killed if it takes longer than `timeout`); QEMU's exit status."""
        if self._qemu is None:
            return None
        if self._dead is None and self._qemu.poll() is None:
            with contextlib.suppress(GuestError):
                self._call({"op": "poweroff"}, timeout=30.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._qemu.wait(timeout)
        self._kill("closed")
        if self._killer is not None:
            self._killer.cancel()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self._qemu.returncode

    def __enter__(self) -> Guest:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self._dead is None and self._qemu is not None and self._qemu.poll() is None

    def console_tail(self, lines: int = 80) -> str:
        try:
            text = self.console_log.read_text(errors="replace")
        except OSError:
            return "(no console log)"
        return "\n".join(text.splitlines()[-lines:])

    def _failure(self, reason: str, qemu_output: str = "") -> str:
        extra = f"\n--- QEMU said\n{qemu_output.strip()}" if qemu_output.strip() else ""
        return (
            f"guest VM: {reason} (console log: {self.console_log}){extra}\n"
            f"--- console tail\n{self.console_tail()}"
        )

    # --- channel ------------------------------------------------------------------------------

    def _reader(self) -> None:
        assert self._sock is not None
        buffer = b""
        while True:
            try:
                chunk = self._sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    self._kill(f"the guest's runner sent a garbled line: {line[:200]!r}")
                    return
                self._dispatch(message)
        if self._dead is None:
            self._dead = "the command channel closed (guest powered off or crashed)"
        self._fail_pending()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "hello" in message:
            if not self._hello.done():
                self._hello.set_result(message["hello"])
            return
        with self._pending_lock:
            future = self._pending.pop(message.get("id", -1), None)
        if future is not None and not future.done():
            future.set_result(message)

    def _call(self, request: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        if self._dead is not None or self._sock is None:
            raise GuestError(self._failure(self._dead or "not started"))
        future: Future[dict[str, Any]] = Future()
        with self._pending_lock:
            self._next_id += 1
            request = {**request, "id": self._next_id}
            self._pending[self._next_id] = future
        data = (json.dumps(request) + "\n").encode()
        with self._send_lock:
            try:
                self._sock.sendall(data)
            except OSError as error:
                self._kill(f"command channel write failed: {error}")
        try:
            answer = future.result(timeout=timeout + HUNG_GRACE)
        except FutureTimeout:
            self._kill(f"no answer to {request.get('op')} within {timeout + HUNG_GRACE:.0f} s")
            raise GuestError(self._failure(self._dead or "")) from None
        if "error" in answer:
            raise GuestError(f"guest runner: {answer['error']}")
        return answer

    # --- API for tests --------------------------------------------------------------------------

    def run(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float = 120.0,
        input: bytes | str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        check: bool = False,
    ) -> GuestResult:
        """Run argv (or a /bin/sh line, given a str) in the guest as root; killed at `timeout`."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        request: dict[str, Any] = {"op": "run", "argv": argv, "timeout": timeout}
        if input is not None:
            raw = input.encode() if isinstance(input, str) else input
            request["input"] = base64.b64encode(raw).decode()
        if env:
            request["env"] = dict(env)
        if cwd:
            request["cwd"] = cwd
        answer = self._call(request, timeout=timeout)
        result = GuestResult(
            argv=argv,
            returncode=int(answer["rc"]),
            stdout=base64.b64decode(answer["out"]).decode(errors="replace"),
            stderr=base64.b64decode(answer["err"]).decode(errors="replace"),
            seconds=float(answer["seconds"]),
            timed_out=bool(answer.get("timed_out")),
        )
        return result.check() if check else result

    def python(self, code: str, *, timeout: float = 300.0, check: bool = False) -> GuestResult:
        """Run Python code in the guest with the project's venv (imports cost ~27x the host's)."""
        return self.run(
            [f"{image.GUEST_VENV}/bin/python", "-c", code], timeout=timeout, check=check
        )

    def put(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Write a file in the guest (its parents created)."""
        raw = data.encode() if isinstance(data, str) else data
        self._call(
            {"op": "put", "path": path, "data": base64.b64encode(raw).decode(), "mode": mode},
            timeout=60.0,
        )

    def get(self, path: str) -> bytes:
        """A file's bytes from the guest."""
        return base64.b64decode(self._call({"op": "get", "path": path}, timeout=60.0)["data"])

    def journal(self, *units: str, lines: int = 300) -> str:
        """The guest's journal (of `units`, or all of it), oldest first, monotonic timestamps."""
        argv = ["journalctl", "--no-pager", "-o", "short-monotonic", "-n", str(lines)]
        for unit in units:
            argv += ["-u", unit]
        return self.run(argv, timeout=60.0).stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.node.vm",
        description="Boot the harness's guest, run one command in it, exit with its status.",
    )
    parser.add_argument("--memory", type=int, default=GuestConfig.memory_mib, help="guest MiB")
    parser.add_argument("--cpus", type=int, default=GuestConfig.cpus, help="guest vCPUs")
    parser.add_argument("--timeout", type=float, default=600.0, help="command timeout, seconds")
    parser.add_argument("command", nargs="+", help="argv to run in the guest (one word: a sh line)")
    args = parser.parse_args(argv)
    config = GuestConfig(memory_mib=args.memory, cpus=args.cpus)
    guest = Guest(config)
    try:
        guest.start()
        print(f"# guest up in {guest.boot_seconds:.1f} s", file=sys.stderr)
        cmd = args.command[0] if len(args.command) == 1 else args.command
        result = guest.run(cmd, timeout=args.timeout)
    except GuestError as error:
        print(error, file=sys.stderr)
        return 1
    finally:
        guest.close()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return 124 if result.timed_out else result.returncode


if __name__ == "__main__":
    sys.exit(main())

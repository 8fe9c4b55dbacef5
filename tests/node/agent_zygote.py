"""Runs in the guest: the agent's modules imported once, an agent forked per scenario.

Under TCG the agent's imports (aiohttp, kubernetes_asyncio, prometheus_client, its own
packages) take a minute or more; each eviction scenario needs the agent started afresh with its
own flags, as a kubelet restarts with a scenario's configuration. So this process imports what
``eviction-agent run`` imports, then waits for commands on a FIFO, one JSON object per line:

    {"op": "start", "name": NAME, "args": [FLAG, ...]}   fork; the child runs
                                                          ``eviction-agent run FLAG...``
    {"op": "stop", "name": NAME}                          SIGTERM, SIGKILL after 30 s

A child is the agent's own command line (``agent.cli.main``) in a session of its own, its
output in ``DIR/agent-NAME.log``; its pid is written to ``DIR/agent-NAME.pid`` once it runs,
and ``DIR/agent-NAME.exit`` holds its exit status once it is reaped (stopped, or died).

    python zygote.py DIR        (DIR/zygote.fifo is made; DIR/zygote.ready once imported)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

# what `eviction-agent run` imports, before the first fork
import agent.cli
import agent.daemon
import agent.http
import evictor.api.connect  # noqa: F401 - imported for the children

STOP_GRACE = 30.0


class Zygote:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.children: dict[str, int] = {}

    def _file(self, name: str, suffix: str) -> Path:
        return self.dir / f"agent-{name}.{suffix}"

    def start(self, name: str, args: list[str]) -> None:
        for suffix in ("pid", "exit"):
            with contextlib.suppress(FileNotFoundError):
                self._file(name, suffix).unlink()
        pid = os.fork()
        if pid == 0:  # the agent
            code = 1
            try:
                os.setsid()
                fd = os.open(self._file(name, "log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.close(fd)
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(sig, signal.SIG_DFL)
                code = agent.cli.main(["run", *args])
            finally:
                os._exit(code)
        self.children[name] = pid
        tmp = self._file(name, "pid.tmp")
        tmp.write_text(f"{pid}\n")
        tmp.replace(self._file(name, "pid"))

    def stop(self, name: str) -> None:
        pid = self.children.get(name)
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while name in self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.1)
        if name in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self._exited(name, -signal.SIGKILL)

    def reap(self) -> None:
        for name, pid in list(self.children.items()):
            with contextlib.suppress(ChildProcessError):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    self._exited(name, os.waitstatus_to_exitcode(status))

    def _exited(self, name: str, code: int) -> None:
        self.children.pop(name, None)
        self._file(name, "exit").write_text(f"{code}\n")

    def handle(self, command: dict[str, Any]) -> None:
        op, name = command.get("op"), str(command.get("name", ""))
        if op == "start":
            self.start(name, [str(a) for a in command.get("args", [])])
        elif op == "stop":
            self.stop(name)

    def serve(self) -> None:
        fifo = self.dir / "zygote.fifo"
        with contextlib.suppress(FileNotFoundError):
            fifo.unlink()
        os.mkfifo(fifo)
        (self.dir / "zygote.ready").write_text(f"{os.getpid()}\n")
        while True:
            with open(fifo) as commands:  # blocks until a writer opens it
                for line in commands:
                    self.reap()
                    if line.strip():
                        try:
                            self.handle(json.loads(line))
                        except Exception as exc:  # one bad command must not end the zygote
                            print(f"zygote: {line.strip()}: {exc}", file=sys.stderr, flush=True)
            self.reap()


def main() -> int:
    directory = Path(sys.argv[1])
    directory.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    zygote = Zygote(directory)
    try:
        zygote.serve()
    finally:
        for name in list(zygote.children):
            zygote.stop(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

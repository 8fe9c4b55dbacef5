"""The guest's end of the harness's command channel (runs inside the VM, stdlib only).

Started by harness-runner.service, a unit of the harness's own target, with `python -I -S`:
under TCG every import costs (aiohttp and kubernetes_asyncio took 23 s), so this imports only
what the standard library must. It talks JSON lines over a virtio-serial port (the guest has no
network device): the host sends requests, this answers each by id, every request in a thread
of its own so that a long command does not hold up a quick one.

Requests (`op`): `run` (argv or a shell line, optional stdin, env, cwd and a timeout after which
the command's whole process group is killed and the answer says so), `put` / `get` (a file's
bytes), `poweroff`. Answers carry the exit status, stdout and stderr (base64) and the seconds
taken. The first line sent is a hello with the guest's uptime: the host's boot figure.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

PORT_NAME = "harness.0"
SYSFS_PORTS = "/sys/class/virtio-ports"


def find_port() -> str:
    for entry in sorted(os.listdir(SYSFS_PORTS)):
        with open(os.path.join(SYSFS_PORTS, entry, "name")) as f:
            if f.read().strip() == PORT_NAME:
                return os.path.join("/dev", entry)
    raise SystemExit(f"harness-runner: no virtio-serial port named {PORT_NAME}")


class Channel:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR)
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]

    def lines(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                if line.strip():
                    yield json.loads(line)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(request: dict[str, Any]) -> dict[str, Any]:
    argv = request.get("argv")
    if argv is None:
        argv = ["/bin/sh", "-c", request["sh"]]
    env = dict(os.environ)
    env.update(request.get("env") or {})
    stdin = base64.b64decode(request["input"]) if request.get("input") else None
    timeout = request.get("timeout")
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=request.get("cwd") or "/",
            start_new_session=True,
        )
    except OSError as error:
        return {"rc": 127, "out": "", "err": b64(f"{argv[0]}: {error}\n".encode()), "seconds": 0.0}
    timed_out = False
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    return {
        "rc": process.returncode,
        "out": b64(out),
        "err": b64(err),
        "timed_out": timed_out,
        "seconds": time.monotonic() - started,
    }


def put(request: dict[str, Any]) -> dict[str, Any]:
    path = request["path"]
    os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(request["data"]))
    os.chmod(path, request.get("mode", 0o644))
    return {}


def get(request: dict[str, Any]) -> dict[str, Any]:
    with open(request["path"], "rb") as f:
        return {"data": b64(f.read())}


def poweroff(_request: dict[str, Any]) -> dict[str, Any]:
    subprocess.Popen(["systemctl", "poweroff", "--no-block"], start_new_session=True)
    return {}


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "run": run,
    "put": put,
    "get": get,
    "poweroff": poweroff,
}


def serve(channel: Channel, request: dict[str, Any]) -> None:
    try:
        answer = OPS[request["op"]](request)
    except Exception as error:  # the host gets every failure as an answer, never silence
        answer = {"error": f"{type(error).__name__}: {error}"}
    answer["id"] = request.get("id")
    channel.send(answer)


def main() -> None:
    channel = Channel(find_port())
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    channel.send({"hello": {"uptime": uptime, "pid": os.getpid(), "python": sys.version}})
    for request in channel.lines():
        threading.Thread(target=serve, args=(channel, request), daemon=True).start()


if __name__ == "__main__":
    main()

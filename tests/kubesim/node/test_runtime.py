"""The demo node's process runtime: real processes in kubepods memory cgroups, or psutil without.

Real-cgroup tests run wherever a writable memory cgroup (v1 or v2) exists and are skipped, saying
why, only where none does. Each runtime lives under its own ``kubesimtest-<pid>-<id>`` sub-root
and is closed in a ``finally``, so nothing is left behind even when an assertion fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kube.cgroups import CgroupDriver, CgroupNames
from kubesim.node.memory_grower import PAGE, MemoryGrower, run, target_bytes
from kubesim.node.memory_grower import main as grower_main
from kubesim.node.runtime import (
    ContainerStatus,
    PodSpecError,
    ProcessRuntime,
    RuntimeMode,
    expand_references,
    pod_memory_limit,
    pod_qos_class,
)
from tests.support.wait import until

MIB = 1 << 20
PREFIX = "kubesimtest"

# Touch every page of N MiB, say so, then wait to be stopped.
ALLOC = (
    "import signal, sys\n"
    "b = bytearray(int(sys.argv[1]) << 20)\n"
    "b[::4096] = b'\\x01' * len(range(0, len(b), 4096))\n"
    "print('ready', flush=True)\n"
    "signal.pause()\n"
)


def make_pod(
    *containers: dict[str, Any], name: str = "p", namespace: str = "default"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {"nodeName": "node-1", "containers": list(containers)},
    }


def ctr(
    name: str,
    command: list[str] | None = None,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "busybox", **extra}
    if command is not None:
        c["command"] = command
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    if res:
        c["resources"] = res
    return c


def alloc_cmd(mib: int) -> list[str]:
    return ["python", "-c", ALLOC, str(mib)]


def alive(pid: int) -> bool:
    """Running, not merely an unreaped zombie (orphans are reaped by pid 1 when it gets to it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def process_count(rt: ProcessRuntime, uid: str) -> int:
    usage = rt.usage(uid)
    return usage.process_count if usage is not None else -1


def log_text(status: ContainerStatus) -> str:
    assert status.log_path is not None
    return status.log_path.read_text() if status.log_path.exists() else ""


@pytest.fixture
async def cg_runtime(tmp_path: Path) -> AsyncIterator[ProcessRuntime]:
    rt = ProcessRuntime(
        prefix=PREFIX, state_dir=tmp_path, memory_capacity=2048 * MIB, minimum_grace_seconds=0
    )
    try:
        if rt.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {rt.mode_reason}")
        yield rt
    finally:
        await rt.close()


@pytest.fixture
async def proc_runtime(tmp_path: Path) -> AsyncIterator[ProcessRuntime]:
    rt = ProcessRuntime(
        prefix=PREFIX, state_dir=tmp_path, use_cgroups=False, minimum_grace_seconds=0
    )
    try:
        yield rt
    finally:
        await rt.close()


def proc_cgroup(pid: int) -> str:
    """The process's memory cgroup path relative to the hierarchy root (v1 or v2 line)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    v1 = [ln.split(":", 2)[2] for ln in lines if ln.split(":", 2)[1] == "memory"]
    return v1[0] if v1 else next(ln.split(":", 2)[2] for ln in lines if ln.startswith("0::"))


# --- pure helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([ctr("a")], "BestEffort"),
        ([ctr("a", requests={"memory": "64Mi"})], "Burstable"),
        ([ctr("a", limits={"cpu": "1", "memory": "64Mi"})], "Guaranteed"),  # requests defaulted
        (
            [
                ctr(
                    "a",
                    requests={"cpu": "1000m", "memory": "1Gi"},
                    limits={"cpu": 1, "memory": "1024Mi"},
                )
            ],
            "Guaranteed",
        ),
        ([ctr("a", limits={"cpu": "1", "memory": "1Gi"}), ctr("b")], "Burstable"),
        (
            [
                ctr(
                    "a",
                    requests={"cpu": "1", "memory": "1Gi"},
                    limits={"cpu": "2", "memory": "1Gi"},
                )
            ],
            "Burstable",
        ),
        ([ctr("a", requests={"cpu": "0", "memory": "0"})], "BestEffort"),  # zero is not a request
        ([ctr("a", requests={"ephemeral-storage": "1Gi"})], "BestEffort"),
    ],
)
def test_pod_qos_class_follows_get_pod_qos(containers: list[dict[str, Any]], expected: str) -> None:
    assert pod_qos_class(make_pod(*containers)) == expected


def test_pod_qos_class_prefers_the_persisted_status() -> None:
    pod = make_pod(ctr("a"))
    pod["status"] = {"qosClass": "Burstable"}
    assert pod_qos_class(pod) == "Burstable"


def test_pod_memory_limit_needs_every_container_limited() -> None:
    a = ctr("a", limits={"memory": "100Mi"})
    b = ctr("b", limits={"memory": "28Mi"})
    assert pod_memory_limit(make_pod(a, b)) == 128 * MIB
    assert pod_memory_limit(make_pod(a, ctr("c"))) is None
    pod = make_pod(a)
    pod["spec"]["initContainers"] = [ctr("init", limits={"memory": "1Gi"})]
    assert pod_memory_limit(pod) == 1024 * MIB


def test_bad_quantity_names_the_field() -> None:
    with pytest.raises(PodSpecError, match=r"spec\.containers\[0\]\.resources\.limits\.memory"):
        pod_qos_class(make_pod(ctr("a", limits={"memory": "lots"})))


@given(st.lists(st.tuples(st.integers(1, 4000), st.integers(1, 1 << 34)), min_size=1, max_size=4))
def test_equal_requests_and_limits_for_cpu_and_memory_is_guaranteed(
    sizes: list[tuple[int, int]],
) -> None:
    containers = [
        ctr(
            f"c{i}",
            requests={"cpu": f"{m}m", "memory": str(b)},
            limits={"cpu": f"{m}m", "memory": str(b)},
        )
        for i, (m, b) in enumerate(sizes)
    ]
    assert pod_qos_class(make_pod(*containers)) == "Guaranteed"
    # Dropping one container's cpu limit makes any such pod Burstable.
    del containers[0]["resources"]["limits"]["cpu"]
    assert pod_qos_class(make_pod(*containers)) == "Burstable"


def test_expand_references() -> None:
    env = {"A": "x", "B": "$(A)"}
    assert expand_references("$(A)-$(B)-$(C)", env) == "x-$(A)-$(C)"
    assert expand_references("$$(A) $$ $a $(A", env) == "$(A) $ $a $(A"


_REFERENCE = re.compile(r"\$(\$|\(([^)]*)\)|\([^)]*\Z)")


def _expand_by_pattern(text: str, env: dict[str, str]) -> str:
    """The rules once more, as one pattern: ``$$``, ``$(NAME)``, an unclosed ``$(``."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$"
        name = m.group(2)
        return env[name] if name is not None and name in env else m.group(0)

    return _REFERENCE.sub(one, text)


@given(
    st.text(alphabet="$()AB x"),
    st.dictionaries(st.text(alphabet="$(AB x", max_size=3), st.text(alphabet="$()AB", max_size=3)),
)
def test_expand_references_reads_as_the_pattern(text: str, env: dict[str, str]) -> None:
    assert expand_references(text, env) == _expand_by_pattern(text, env)


@given(
    st.text(alphabet=st.characters(blacklist_characters="$")), st.dictionaries(st.text(), st.text())
)
def test_expand_references_leaves_text_without_dollar_alone(text: str, env: dict[str, str]) -> None:
    assert expand_references(text, env) == text


@given(st.floats(0, 1000), st.floats(0, 1000), st.floats(1, 1e9), st.integers(1, 1 << 32))
def test_target_bytes_is_monotonic_bounded_and_page_aligned(
    t1: float, t2: float, rate: float, max_bytes: int
) -> None:
    lo, hi = sorted((t1, t2))
    a = target_bytes(lo, rate_bytes_per_s=rate, max_bytes=max_bytes)
    b = target_bytes(hi, rate_bytes_per_s=rate, max_bytes=max_bytes)
    assert 0 <= a <= b <= max_bytes
    assert b % PAGE == 0 or b == max_bytes


def test_memory_grower_grows_at_the_rate_then_holds() -> None:
    now = [0.0]
    held: list[int] = []
    seen: list[str] = []
    alloc = MemoryGrower()

    def sleep(s: float) -> None:
        now[0] += s
        held.append(alloc.held)

    result = run(
        rate_bytes_per_s=10 * MIB,
        max_bytes=4 * MIB,
        step_s=0.1,
        hold_s=0.5,
        clock=lambda: now[0],
        sleep=sleep,
        say=seen.append,
        alloc=alloc,
    )
    assert result is alloc
    assert result.held == 4 * MIB
    assert held[:4] == [0, 1 * MIB // PAGE * PAGE, 2 * MIB // PAGE * PAGE, 3 * MIB // PAGE * PAGE]
    assert all(h == 4 * MIB for h in held[4:])
    assert len(seen) == 1 and seen[0].startswith("holding 4.0 MiB")
    # Every page of every chunk is touched (resident), not just reserved.
    assert all(c[::PAGE].count(1) == len(c[::PAGE]) for c in result.chunks)


def test_memory_grower_cli_rejects_bad_flags() -> None:
    result = CliRunner().invoke(grower_main, ["--max-mib", "-1"])
    assert result.exit_code == 2
    assert "--max-mib" in result.output and result.exception is not None
    assert isinstance(result.exception, SystemExit)


# --- fallback: plain processes measured with psutil ------------------------------------------


async def test_process_mode_runs_measures_and_kills(proc_runtime: ProcessRuntime) -> None:
    rt = proc_runtime
    assert rt.mode is RuntimeMode.PROCESS and "cgroups disabled" in rt.mode_reason
    pod = make_pod(
        ctr("mem", alloc_cmd(40)),
        ctr("pause"),  # no command: not run, not reported
        ctr(
            "env",
            ["sh", "-c", "echo $POD_NAMESPACE/$POD_NAME/$POD_UID $(GREETING) $GREETING; sleep 60"],
            env=[
                {"name": "GREETING", "value": "hi-$(POD_NAME)"},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            ],
        ),
        name="web",
        namespace="prod",
    )
    uid = pod["metadata"]["uid"]
    statuses = await rt.start(pod)
    assert [s.name for s in statuses] == ["mem", "env"]
    assert all(s.state == "running" and s.pid and s.cgroup is None for s in statuses)
    mem, env = statuses
    await until(lambda: "ready" in log_text(mem) and "hi" in log_text(env))
    assert log_text(env).strip() == f"prod/web/{uid} hi-web hi-web"
    assert os.getpgid(mem.pid or 0) == mem.pid  # own process group (own session)
    usage = rt.usage(uid)
    assert usage is not None
    assert 40 * MIB <= usage.containers["mem"] <= 40 * MIB + 64 * MIB
    assert usage.process_count >= 3  # python, sh, sleep
    assert usage.working_set_bytes == sum(usage.containers.values())
    pids = [p.pid for s in statuses for p in psutil.Process(s.pid).children(recursive=True)]
    pids += [s.pid for s in statuses if s.pid]
    final = await rt.kill(uid, 30)
    assert final is not None and all(s.state == "exited" for s in final)
    assert {s.exit_code for s in final} == {128 + signal.SIGTERM}
    assert {s.reason for s in final} == {"Error"}
    # the group's children die with it; the kernel may take a moment to reap them under load
    await until(lambda: not [p for p in pids if alive(p)])
    assert rt.status(uid) is None and rt.usage(uid) is None and await rt.kill(uid, 1) is None


async def test_process_mode_kills_the_group_after_its_leader_exited(
    proc_runtime: ProcessRuntime,
) -> None:
    pod = make_pod(ctr("orphan", ["sh", "-c", "sleep 60 & echo $!"]))
    (s,) = await proc_runtime.start(pod)
    await until(lambda: log_text(s).strip().isdigit())
    child = int(log_text(s))
    await until(lambda: (proc_runtime.status(pod["metadata"]["uid"]) or [s])[0].state == "exited")
    assert alive(child)
    await proc_runtime.kill(pod["metadata"]["uid"], 5)
    await until(lambda: not alive(child), timeout=5)


async def test_exit_codes_and_start_errors(proc_runtime: ProcessRuntime) -> None:
    rt = proc_runtime
    exits: list[tuple[str, str]] = []
    rt.on_exit = lambda uid, s: exits.append((s.name, s.reason or ""))
    pod = make_pod(
        ctr("ok", ["sh", "-c", "exit 0"]),
        ctr("bad", ["sh", "-c", "exit 3"]),
        ctr("missing", ["/nonexistent/binary"]),
    )
    uid = pod["metadata"]["uid"]
    first = await rt.start(pod)
    assert first[2].state == "exited" and first[2].reason == "StartError"
    assert first[2].exit_code == 128 and "/nonexistent/binary" in (first[2].message or "")
    assert await rt.start(pod) == rt.status(uid)  # idempotent per UID
    await until(lambda: len(exits) == 2)
    status = {s.name: s for s in rt.status(uid) or []}
    assert (status["ok"].exit_code, status["ok"].reason) == (0, "Completed")
    assert (status["bad"].exit_code, status["bad"].reason) == (3, "Error")
    k8s = status["bad"].to_k8s(image="busybox")
    assert k8s["state"]["terminated"]["exitCode"] == 3
    assert k8s["containerID"].startswith("kubesim://") and len(k8s["containerID"]) == 10 + 64
    assert k8s["ready"] is False and k8s["restartCount"] == 0


async def test_sigkill_after_grace_for_a_process_ignoring_sigterm(
    proc_runtime: ProcessRuntime,
) -> None:
    rt = proc_runtime
    pod = make_pod(
        ctr("stubborn", ["sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done"])
    )
    uid = pod["metadata"]["uid"]
    (s,) = await rt.start(pod)
    await until(lambda: "up" in log_text(s))
    t0 = time.monotonic()
    (final,) = await rt.kill(uid, 0.3) or []
    assert time.monotonic() - t0 >= 0.3
    assert final.exit_code == 128 + signal.SIGKILL and final.signal == signal.SIGKILL


async def test_kill_honours_the_kubelet_minimum_grace(tmp_path: Path) -> None:
    rt = ProcessRuntime(
        prefix=PREFIX, state_dir=tmp_path, use_cgroups=False, minimum_grace_seconds=0.4
    )
    try:
        pod = make_pod(
            ctr("stubborn", ["sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done"])
        )
        (s,) = await rt.start(pod)
        await until(lambda: "up" in log_text(s))
        t0 = time.monotonic()
        await rt.kill(pod["metadata"]["uid"], 0)
        assert time.monotonic() - t0 >= 0.4
    finally:
        await rt.close()


async def test_grace_period_override_skips_the_floor(tmp_path: Path) -> None:
    rt = ProcessRuntime(
        prefix=PREFIX, state_dir=tmp_path, use_cgroups=False, minimum_grace_seconds=5
    )
    try:
        pod = make_pod(
            ctr("stubborn", ["sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done"])
        )
        (s,) = await rt.start(pod)
        await until(lambda: "up" in log_text(s))
        t0 = time.monotonic()
        (final,) = await rt.kill(pod["metadata"]["uid"], 0.1, override=True) or []
        assert time.monotonic() - t0 < 2
        assert final.signal == signal.SIGKILL
    finally:
        await rt.close()


async def test_malformed_pods_are_refused_with_the_field(proc_runtime: ProcessRuntime) -> None:
    with pytest.raises(PodSpecError, match=r"metadata\.uid"):
        await proc_runtime.start({"metadata": {"name": "x"}, "spec": {}})
    pod = make_pod(ctr("a", ["sleep", 5]))  # type: ignore[list-item]
    with pytest.raises(PodSpecError, match=r"^pod default/p: spec\.containers\[0\]\.command"):
        await proc_runtime.start(pod)
    bad_uid = make_pod(ctr("a", ["true"]))
    bad_uid["metadata"]["uid"] = "../../etc"
    with pytest.raises(PodSpecError, match=r"metadata\.uid"):
        await proc_runtime.start(bad_uid)
    assert proc_runtime.pods() == []


# --- real cgroups ---------------------------------------------------------------------------


async def test_cgroup_layout_limits_and_node_capacity(cg_runtime: ProcessRuntime) -> None:
    rt = cg_runtime
    assert rt.sub_root is not None and rt.kubepods == rt.sub_root / "kubepods"
    assert rt.sub_root.name.startswith(f"{PREFIX}-{os.getpid()}-")
    assert rt.memory_capacity == 2048 * MIB
    v1 = rt.mode is RuntimeMode.CGROUP_V1
    limit_file = "memory.limit_in_bytes" if v1 else "memory.max"
    assert int((rt.kubepods / limit_file).read_text()) == 2048 * MIB

    guaranteed = make_pod(
        ctr("g", ["sleep", "30"], limits={"cpu": "100m", "memory": "64Mi"}),
        ctr("h", ["sleep", "30"], limits={"cpu": "100m", "memory": "32Mi"}),
    )
    burstable = make_pod(ctr("b", ["sleep", "30"], requests={"memory": "10Mi"}))
    besteffort = make_pod(ctr("e", ["sleep", "30"]))
    for pod, parent in (
        (guaranteed, rt.kubepods),
        (burstable, rt.kubepods / "burstable"),
        (besteffort, rt.kubepods / "besteffort"),
    ):
        uid = pod["metadata"]["uid"]
        statuses = await rt.start(pod)
        pod_dir = parent / f"pod{uid}"
        assert rt.pod_cgroup(uid) == pod_dir and pod_dir.is_dir()
        for s in statuses:
            assert s.cgroup == pod_dir / s.container_id.removeprefix("kubesim://")
            assert s.cgroup.is_dir() and s.pid in [
                int(x) for x in (s.cgroup / "cgroup.procs").read_text().split()
            ]
            assert proc_cgroup(s.pid or 0) == "/" + str(s.cgroup.relative_to(rt.sub_root.parent))
    g_dir = rt.pod_cgroup(guaranteed["metadata"]["uid"])
    assert g_dir is not None
    assert int((g_dir / limit_file).read_text()) == 96 * MIB  # sum of the containers' limits
    g_status = rt.status(guaranteed["metadata"]["uid"]) or []
    assert [int((s.cgroup / limit_file).read_text()) for s in g_status if s.cgroup] == [
        64 * MIB,
        32 * MIB,
    ]
    b_dir = rt.pod_cgroup(burstable["metadata"]["uid"])
    assert b_dir is not None and int((b_dir / limit_file).read_text()) > 1 << 40  # unlimited
    assert rt.node_usage().process_count == 4


async def test_usage_reports_the_working_set(cg_runtime: ProcessRuntime) -> None:
    rt = cg_runtime
    pod = make_pod(ctr("mem", alloc_cmd(50), requests={"memory": "64Mi"}))
    uid = pod["metadata"]["uid"]
    (s,) = await rt.start(pod)
    await until(lambda: "ready" in log_text(s))
    usage = rt.usage(uid)
    assert usage is not None
    rss = psutil.Process(s.pid).memory_info().rss
    # The cgroup charges the 50 MiB plus the interpreter; the process's own RSS agrees.
    assert 50 * MIB <= usage.working_set_bytes <= 50 * MIB + 48 * MIB
    assert abs(usage.working_set_bytes - rss) <= 24 * MIB
    assert usage.usage_bytes >= usage.working_set_bytes
    assert usage.containers["mem"] <= usage.working_set_bytes
    assert usage.process_count == 1
    # the node's figure holds the pod's 50 MiB; read a moment later, the pod's working set
    # may have moved by a few pages (seen: 96 KiB less on a loaded machine)
    assert rt.node_usage().working_set_bytes >= usage.working_set_bytes - MIB


async def test_oom_kill_is_reported(cg_runtime: ProcessRuntime) -> None:
    rt = cg_runtime
    exits: list[ContainerStatus] = []
    rt.on_exit = lambda uid, s: exits.append(s)
    pod = make_pod(ctr("hog", alloc_cmd(80), limits={"memory": "32Mi"}))
    uid = pod["metadata"]["uid"]
    await rt.start(pod)
    await until(lambda: bool(exits))
    (s,) = rt.status(uid) or []
    assert (s.state, s.reason, s.exit_code) == ("exited", "OOMKilled", 128 + signal.SIGKILL)
    assert exits[0].reason == "OOMKilled"
    assert s.to_k8s()["state"]["terminated"]["reason"] == "OOMKilled"


async def test_node_capacity_is_the_kubepods_limit(tmp_path: Path) -> None:
    exits: list[tuple[str, ContainerStatus]] = []
    rt = ProcessRuntime(
        prefix=PREFIX,
        state_dir=tmp_path,
        memory_capacity=100 * MIB,
        minimum_grace_seconds=0,
        on_exit=lambda uid, s: exits.append((uid, s)),
    )
    try:
        if rt.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {rt.mode_reason}")
        assert rt.memory_capacity == 100 * MIB
        small, big = make_pod(ctr("c", alloc_cmd(40))), make_pod(ctr("c", alloc_cmd(80)))
        (s,) = await rt.start(small)
        await until(lambda: "ready" in log_text(s))
        await rt.start(big)  # no limit of its own: the node's cgroup OOM-kills it
        await until(lambda: bool(exits))
        assert [(uid, st.reason) for uid, st in exits] == [(big["metadata"]["uid"], "OOMKilled")]
        assert (rt.status(small["metadata"]["uid"]) or [])[0].state == "running"
        assert rt.node_usage().working_set_bytes <= 100 * MIB
    finally:
        await rt.close()


async def test_kill_removes_process_group_and_cgroups(cg_runtime: ProcessRuntime) -> None:
    rt = cg_runtime
    # The child leaves the process group (setsid); the cgroup still catches it.
    pod = make_pod(
        ctr(
            "tree",
            ["sh", "-c", "sleep 60 & setsid sleep 61 & echo up; wait"],
            requests={"memory": "1Mi"},
        )
    )
    uid = pod["metadata"]["uid"]
    (s,) = await rt.start(pod)
    await until(lambda: "up" in log_text(s) and process_count(rt, uid) == 3)
    assert s.cgroup is not None
    pids = [int(x) for x in (s.cgroup / "cgroup.procs").read_text().split()]
    pod_dir = rt.pod_cgroup(uid)
    final = await rt.kill(uid, 5)
    assert final is not None and final[0].state == "exited"
    assert pod_dir is not None and not pod_dir.exists()
    assert not [p for p in pids if alive(p)]
    assert rt.pods() == []


async def test_demo_memory_grower_runs_and_stops_promptly_on_sigterm(
    cg_runtime: ProcessRuntime,
) -> None:
    rt = cg_runtime
    pod = make_pod(
        ctr(
            "alloc",
            ["python", "-m", "kubesim.node.memory_grower"],
            args=["--rate-mib-per-s", "400", "--max-mib", "$(SIZE)", "--step-ms", "20"],
            env=[{"name": "SIZE", "value": "40"}],
        )
    )
    uid = pod["metadata"]["uid"]
    (s,) = await rt.start(pod)
    assert psutil.Process(s.pid).exe() == os.path.realpath(sys.executable)
    await until(lambda: "holding 40.0 MiB" in log_text(s), timeout=20)
    usage = rt.usage(uid)
    assert usage is not None and usage.working_set_bytes >= 40 * MIB
    t0 = time.monotonic()
    (final,) = await rt.kill(uid, 30) or []
    assert time.monotonic() - t0 < 5  # SIGTERM ends it; the grace period is not waited out
    assert (final.exit_code, final.reason) == (0, "Completed")


async def test_close_removes_everything(tmp_path: Path) -> None:
    rt = ProcessRuntime(prefix=PREFIX, state_dir=tmp_path, minimum_grace_seconds=0)
    try:
        if rt.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {rt.mode_reason}")
        (s,) = await rt.start(make_pod(ctr("a", ["sleep", "60"])))
        sub_root = rt.sub_root
    finally:
        await rt.close()
    assert sub_root is not None and not sub_root.exists()
    assert s.pid is not None and not alive(s.pid)


async def test_stale_sub_roots_of_dead_runtimes_are_removed(tmp_path: Path) -> None:
    probe = ProcessRuntime(prefix=PREFIX, state_dir=tmp_path / "probe")
    try:
        if probe.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {probe.mode_reason}")
        assert probe.sub_root is not None
        base = probe.sub_root.parent
    finally:
        await probe.close()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = base / f"{PREFIX}-{dead.pid}-dead01"
    (stale / "kubepods" / "besteffort" / "podx").mkdir(parents=True)
    alive = base / f"{PREFIX}-{os.getpid()}-live01"  # a live runtime's empty tree: kept
    alive.mkdir()
    rt = ProcessRuntime(prefix=PREFIX, state_dir=tmp_path / "rt")
    try:
        rt.open()
        assert not stale.exists()
        assert alive.exists()
    finally:
        await rt.close()
        for p in (
            stale / "kubepods" / "besteffort" / "podx",
            stale / "kubepods" / "besteffort",
            stale / "kubepods",
            stale,
            alive,
        ):
            if p.exists():
                p.rmdir()


CRASHING_KUBELET = """
import asyncio, os, sys
from kubesim.node.runtime import ProcessRuntime

async def main():
    rt = ProcessRuntime(prefix=sys.argv[1], state_dir=sys.argv[2])
    pod = {"metadata": {"name": "c", "namespace": "d", "uid": "crash-1"},
           "spec": {"containers": [{"name": "c", "command": ["sleep", "60"]}]}}
    (s,) = await rt.start(pod)
    print(rt.mode, rt.sub_root, s.pid, flush=True)
    os._exit(3)  # no close(): a crash

asyncio.run(main())
"""


async def test_a_crashed_runtime_leaves_nothing_running_and_its_cgroups_go_next_start(
    tmp_path: Path,
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CRASHING_KUBELET, PREFIX, str(tmp_path / "crashed")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 3, out.stderr
    mode, sub_root, pid = out.stdout.split()
    await until(lambda: not alive(int(pid)), timeout=5)  # PR_SET_PDEATHSIG
    rt = ProcessRuntime(prefix=PREFIX, state_dir=tmp_path / "next")
    try:
        rt.open()
        if mode != RuntimeMode.PROCESS:  # the crashed runtime had cgroups: they are gone now
            assert not Path(sub_root).exists()
    finally:
        await rt.close()


# --- the kubelet's names per cgroup driver --------------------------------------------------


@given(
    st.uuids().map(str) | st.text("0123456789abcdef", min_size=32, max_size=32),
    st.sampled_from([None, "burstable", "besteffort"]),
    st.sampled_from(list(CgroupDriver)),
    st.text("0123456789abcdef", min_size=64, max_size=64),
)
def test_the_names_are_what_the_agent_parses(
    uid: str, level: str | None, driver: CgroupDriver, cid: str
) -> None:
    """kubesim's node names its cgroups so that the agent, which reads a kubelet's node, finds
    the pod's UID (an API UUID or a static pod's hash) and the container's ID in them."""
    from agent.sources.cgroups import parse_container_id, parse_pod_uid

    names = CgroupNames(driver)
    pod = names.pod(level, uid)
    assert parse_pod_uid(pod) == uid
    assert parse_container_id(names.container(cid)) == cid
    if driver is CgroupDriver.SYSTEMD:
        # a slice nested in its parent's name; the UID's dashes escaped (the slice separator)
        parent = names.kubepods if level is None else names.qos(level)
        assert pod.startswith(parent.removesuffix(".slice") + "-pod") and pod.endswith(".slice")
        assert "-" not in pod.removesuffix(".slice").rsplit("-pod", 1)[1]
    else:
        assert pod == f"pod{uid}" and (level is None or names.qos(level) == level)


async def test_the_systemd_driver_lays_out_kubepods_slice(tmp_path: Path) -> None:
    rt = ProcessRuntime(
        prefix=PREFIX,
        state_dir=tmp_path,
        memory_capacity=512 * MIB,
        minimum_grace_seconds=0,
        cgroup_driver="systemd",
    )
    try:
        if rt.mode is RuntimeMode.PROCESS:
            pytest.skip(f"no writable memory cgroup on this machine: {rt.mode_reason}")
        assert rt.sub_root is not None and rt.kubepods == rt.sub_root / "kubepods.slice"
        guaranteed = make_pod(ctr("g", ["sleep", "30"], limits={"cpu": "100m", "memory": "64Mi"}))
        burstable = make_pod(ctr("b", ["sleep", "30"], requests={"memory": "10Mi"}))
        for pod, parent, slice_prefix in (
            (guaranteed, rt.kubepods, "kubepods-pod"),
            (burstable, rt.kubepods / "kubepods-burstable.slice", "kubepods-burstable-pod"),
        ):
            uid = pod["metadata"]["uid"]
            (status,) = await rt.start(pod)
            pod_dir = parent / f"{slice_prefix}{uid.replace('-', '_')}.slice"
            assert rt.pod_cgroup(uid) == pod_dir and pod_dir.is_dir()
            cid = status.container_id.removeprefix("kubesim://")
            assert status.cgroup == pod_dir / f"cri-containerd-{cid}.scope"
            assert status.pid in [
                int(x) for x in (status.cgroup / "cgroup.procs").read_text().split()
            ]
        assert (rt.kubepods / "kubepods-besteffort.slice").is_dir()
    finally:
        await rt.close()


def test_an_unknown_cgroup_driver_is_refused() -> None:
    with pytest.raises(
        ValueError, match="cgroup_driver 'docker': must be one of cgroupfs, systemd"
    ):
        ProcessRuntime(prefix=PREFIX, cgroup_driver="docker")


# --- cgroup v2 files on a fixture tree (this code path where the machine has only v1) -------


async def test_kubepods_at_the_root_of_a_node_of_its_own(tmp_path: Path) -> None:
    """A whole node (the guest VM): kubepods.slice directly under the cgroup root, as a kubelet
    with --cgroup-root=/ makes it; a leftover without processes is replaced, and close removes
    it."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "kubepods.slice" / "kubepods-besteffort.slice" / "stale").mkdir(parents=True)
    rt = ProcessRuntime(
        cgroup_root=root,
        prefix=PREFIX,
        state_dir=tmp_path / "state",
        memory_capacity=512 * MIB,
        cgroup_driver=CgroupDriver.SYSTEMD,
        kubepods_at_root=True,
    )
    assert rt.mode is RuntimeMode.CGROUP_V2, rt.mode_reason
    assert rt.sub_root is None and rt.kubepods == root / "kubepods.slice"
    assert "systemd driver" in rt.mode_reason
    assert not (root / "kubepods.slice" / "kubepods-besteffort.slice" / "stale").exists()
    assert (rt.kubepods / "memory.max").read_text() == str(512 * MIB)
    for level in ("kubepods-burstable.slice", "kubepods-besteffort.slice"):
        assert (rt.kubepods / level).is_dir()
    # on cgroupfs a cgroup's files go with it; on the fixture tree they must go first
    for f in (root / "kubepods.slice").rglob("*"):
        if f.is_file():
            f.unlink()
    await rt.close()
    assert not (root / "kubepods.slice").exists()


def test_v2_layout_on_a_fixture_tree(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "memory.max").write_text("max\n")
    rt = ProcessRuntime(
        cgroup_root=root, prefix=PREFIX, state_dir=tmp_path / "state", memory_capacity=512 * MIB
    )
    assert rt.mode is RuntimeMode.CGROUP_V2 and str(root) in rt.mode_reason
    assert rt.kubepods is not None and rt.sub_root is not None
    # +pids where the parent offers it, as the kubelet enables both down the tree
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (rt.kubepods / "cgroup.subtree_control").read_text() == "+memory"
    assert (rt.kubepods / "burstable" / "cgroup.subtree_control").read_text() == "+memory"
    assert (rt.kubepods / "memory.max").read_text() == str(512 * MIB)
    (rt.sub_root / "memory.max").write_text("max\n")
    for d in (rt.kubepods / "burstable", rt.kubepods / "besteffort"):
        (d / "memory.max").write_text("max\n")
    assert rt.memory_capacity == 512 * MIB
    (rt.kubepods / "memory.current").write_text("300000000\n")
    (rt.kubepods / "memory.stat").write_text("anon 1\ninactive_file 100000000\nactive_file 5\n")
    usage = rt.node_usage()
    assert (usage.usage_bytes, usage.working_set_bytes) == (300_000_000, 200_000_000)


def test_detection_without_a_memory_controller(tmp_path: Path) -> None:
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    rt = ProcessRuntime(cgroup_root=tmp_path, prefix=PREFIX, state_dir=tmp_path / "state")
    assert rt.mode is RuntimeMode.PROCESS
    assert "no memory controller" in rt.mode_reason
    empty = ProcessRuntime(
        cgroup_root=tmp_path / "nothing", prefix=PREFIX, state_dir=tmp_path / "s2"
    )
    assert empty.mode is RuntimeMode.PROCESS and "no memory cgroup" in empty.mode_reason


def test_unwritable_cgroups_fall_back_to_processes(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("memory\n")
    (root / "cgroup.subtree_control").mkdir()  # any write fails, as on a read-only mount
    rt = ProcessRuntime(cgroup_root=root, prefix=PREFIX, state_dir=tmp_path / "state")
    assert rt.mode is RuntimeMode.PROCESS
    assert rt.mode_reason.startswith("no writable memory cgroup: ")
    assert "psutil" in rt.mode_reason
    assert rt.sub_root is None and not list(root.glob(f"{PREFIX}-*"))

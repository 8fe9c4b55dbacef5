"""The guest itself: what the harness promises every scenario, and the agent's reader on v2.

These run first (the file sorts first) and are the cheapest proof that the guest is the node
the issue asks for: Debian's kernel on the unified cgroup hierarchy with systemd as PID 1, the
loopback up, nothing of the host's boot, and the channel's timeouts enforced. The last test is
the agent's own `SummaryCollector` against cgroups laid out as the kubelet's systemd driver
lays them out on a real cgroup v2 kernel (no fixture files: the kernel's counters).
"""

from __future__ import annotations

import json
import uuid

from tests.node import image
from tests.node.vm import Guest

GUEST_PYTHON = f"{image.GUEST_PYTHON_PREFIX}/bin/python3"


def test_systemd_is_pid1_on_the_unified_cgroup_hierarchy(guest: Guest) -> None:
    out = guest.run(
        "cat /proc/1/comm; stat -fc %T /sys/fs/cgroup; cat /sys/fs/cgroup/cgroup.controllers;"
        " systemctl is-active harness.target systemd-journald.service;"
        " test -f /sys/fs/cgroup/system.slice/memory.pressure && echo psi",
        check=True,
    ).stdout.split("\n")
    assert out[0] == "systemd"
    assert out[1] == "cgroup2fs"
    assert {"memory", "pids", "io", "cpu"} <= set(out[2].split())
    assert out[3:6] == ["active", "active", "psi"]


def test_loopback_is_up_and_no_other_interface(guest: Guest) -> None:
    listen = (
        "import socket; s = socket.create_server(('127.0.0.1', 0));"
        "c = socket.create_connection(s.getsockname(), timeout=5); print('ok')"
    )
    assert guest.run([GUEST_PYTHON, "-I", "-S", "-c", listen], check=True).stdout == "ok\n"
    assert guest.run("ls /sys/class/net", check=True).stdout.split() == ["lo"]


def test_the_shared_tree_is_not_walked_and_tmp_is_the_guests(guest: Guest) -> None:
    states = guest.run(
        "systemctl is-enabled systemd-tmpfiles-setup.service; stat -fc %T /tmp /var/tmp",
        check=False,
    ).stdout.split()
    assert states == ["masked", "tmpfs", "tmpfs"]


def test_a_command_past_its_timeout_is_killed_with_its_process_group(guest: Guest) -> None:
    marker = f"harness-timeout-{uuid.uuid4().hex[:8]}"
    result = guest.run(f"sleep 300 & exec -a {marker} sleep 300", timeout=2)
    assert result.timed_out and not result.ok
    # [h]: pgrep -f must not match the shell that runs it
    left = guest.run(f"pgrep -f '[h]{marker[1:]}'; pgrep -c -x sleep", check=False)
    assert left.stdout.split() == ["0"]


def test_files_go_in_and_out_over_the_channel(guest: Guest) -> None:
    data = bytes(range(256)) * 1000
    guest.put("/run/harness-test/blob", data, mode=0o600)
    assert guest.get("/run/harness-test/blob") == data
    assert guest.run("stat -c %a /run/harness-test/blob", check=True).stdout == "600\n"


# The kubelet's systemd cgroup driver: QoS slices under kubepods.slice, the pod UID's dashes
# escaped to underscores, a Guaranteed pod directly under kubepods.slice, containers as scopes.
BURSTABLE_UID = "6c0e1d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6"
GUARANTEED_UID = "0f1e2d3c-4b5a-4968-8776-655443322110"
# No quotes: it goes inside a sh -c '...' line. bytes * n writes every page (charged at once).
HOLD = "b = bytes([120]) * ({mib} << 20); import signal; signal.pause()"


def systemd_pod_slice(qos: str | None, uid: str) -> str:
    """The pod cgroup the kubelet's systemd driver names (relative to the cgroup root)."""
    uid_ = uid.replace("-", "_")
    if qos is None:
        return f"kubepods.slice/kubepods-pod{uid_}.slice"
    return f"kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid_}.slice"


def start_in_scope(pod_slice: str, container: str, *, limit: str, argv: str) -> str:
    """A sh line: the container's scope with a memory.max, `argv` started inside it, detached."""
    pod_dir = f"/sys/fs/cgroup/{pod_slice}"
    scope = f"{pod_dir}/cri-containerd-{container}.scope"
    return (
        f"mkdir -p {scope} && echo '+memory +pids' > {pod_dir}/cgroup.subtree_control"
        f" && echo {limit} > {scope}/memory.max"
        f" && setsid sh -c 'echo $$ > {scope}/cgroup.procs && exec {argv}'"
        " </dev/null >/dev/null 2>&1 &"
    )


def holder(mib: int) -> str:
    return f'{GUEST_PYTHON} -I -S -c "{HOLD.format(mib=mib)}"'


def test_the_agents_collector_reads_kubelet_systemd_cgroups_on_v2(guest: Guest) -> None:
    burstable_ctr = "b" * 64
    guaranteed_ctr = "a" * 64
    setup = " && ".join(
        [
            "mkdir -p /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice",
            "echo '+memory +pids' > /sys/fs/cgroup/cgroup.subtree_control",
            "echo '+memory +pids' > /sys/fs/cgroup/kubepods.slice/cgroup.subtree_control",
            "echo '+memory +pids' > "
            "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cgroup.subtree_control",
            start_in_scope(
                systemd_pod_slice("burstable", BURSTABLE_UID),
                burstable_ctr,
                limit="300M",
                argv=holder(200),
            ),
        ]
    )
    guest.run(setup, check=True)
    guaranteed = start_in_scope(
        systemd_pod_slice(None, GUARANTEED_UID), guaranteed_ctr, limit="64M", argv=holder(20)
    )
    guest.run(guaranteed, check=True)
    code = (
        "import json\n"
        "from agent.sources.summary import SourceConfig, SummaryCollector\n"
        "c = SummaryCollector(SourceConfig(node_name='guest'))\n"
        "s = c.collect()\n"
        "print(json.dumps({'layout': [c.layout.version.value, c.layout.driver.value],"
        " 'pods': {p['podRef']['uid']: p for p in s['pods']}}))\n"
    )
    wait = (
        f"for i in $(seq 300); do test $(cat /sys/fs/cgroup/kubepods.slice/memory.current)"
        f" -gt {210 << 20} && exit 0; sleep 0.2; done; exit 1"
    )
    guest.run(wait, timeout=120, check=True)
    result = json.loads(guest.python(code, check=True).stdout)
    assert result["layout"] == ["v2", "systemd"]
    pods = result["pods"]
    assert set(pods) == {BURSTABLE_UID, GUARANTEED_UID}
    assert pods[BURSTABLE_UID]["memory"]["workingSetBytes"] >= 200 << 20
    assert pods[GUARANTEED_UID]["memory"]["workingSetBytes"] >= 20 << 20
    assert pods[BURSTABLE_UID]["process_stats"]["process_count"] == 1

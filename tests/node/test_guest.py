"""The guest itself: what the harness promises every scenario, and the agent's reader on v2.

These run first (the file sorts first) and are the cheapest proof that the guest is the node
the suite needs: Debian's kernel on the unified cgroup hierarchy with systemd as PID 1, the
loopback up, nothing of the host's boot, and the channel's timeouts enforced. The last test is
the agent's own `SummaryCollector` against cgroups laid out as the kubelet's systemd driver
lays them out on a real cgroup v2 kernel (no fixture files: the kernel's counters).
"""

from __future__ import annotations

import json
import uuid

from tests.node import kubelet_cgroups as kc
from tests.node.vm import Guest


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
    assert guest.run([kc.GUEST_PYTHON, "-I", "-S", "-c", listen], check=True).stdout == "ok\n"
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


BURSTABLE_UID = "6c0e1d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6"
GUARANTEED_UID = "0f1e2d3c-4b5a-4968-8776-655443322110"


def test_the_agents_collector_reads_kubelet_systemd_cgroups_on_v2(guest: Guest) -> None:
    burstable = kc.container_scope(kc.pod_slice("burstable", BURSTABLE_UID), "b" * 64)
    guaranteed = kc.container_scope(kc.pod_slice(None, GUARANTEED_UID), "a" * 64)
    try:
        guest.run(
            " && ".join(
                [
                    kc.make_kubepods(),
                    kc.start_in_scope(burstable, kc.holder(200), memory_max="300M"),
                    kc.start_in_scope(guaranteed, kc.holder(20), memory_max="64M"),
                ]
            ),
            check=True,
        )
        for scope, mib in ((burstable, 200), (guaranteed, 20)):
            guest.run(kc.wait_for_usage(scope, mib << 20), timeout=150, check=True)
        code = (
            "import json\n"
            "from agent.sources.collector import SourceConfig, SummaryCollector\n"
            "c = SummaryCollector(SourceConfig(node_name='guest'))\n"
            "s = c.collect()\n"
            "print(json.dumps({'layout': [c.layout.version.value, c.layout.driver.value],"
            " 'pods': {p.pod_ref.uid: [getattr(p.memory, 'working_set_bytes', None),"
            " getattr(p.process_stats, 'process_count', None)] for p in s.pods}}))\n"
        )
        result = json.loads(guest.python(code, check=True).stdout)
    finally:
        for scope in (burstable, guaranteed):
            guest.run(kc.remove_tree(scope.rsplit("/", 1)[0]), timeout=60, check=True)
    assert result["layout"] == ["v2", "systemd"]
    pods = result["pods"]  # and those of kubesim's node-1, if a test left one there
    assert {BURSTABLE_UID, GUARANTEED_UID} <= set(pods)
    assert pods[BURSTABLE_UID][0] >= 200 << 20  # the working set
    assert pods[GUARANTEED_UID][0] >= 20 << 20
    assert pods[BURSTABLE_UID][1] == 1  # the process count

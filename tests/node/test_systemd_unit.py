"""The shipped systemd unit under a real systemd (252, PID 1, cgroup v2) in the guest.

systemd/eviction-agent.service is installed unchanged; a drop-in changes only ExecStart's path
(the guest's venv instead of /usr/local/bin), keeping its arguments; the kubeconfig goes where
the unit's LoadCredential= reads it (/etc/eviction-agent/kubeconfig, 0600) and the settings in
/etc/eviction-agent/config.yaml, as the README's install steps say. Then, in order, sharing one
agent: `systemctl start` returns once the agent sent READY=1 (Type=notify); it evicts a pod of
kubesim's process node (kubepods.slice at the root, the systemd driver's names) under memory
pressure, with its lines in the journal; SIGSTOP makes the watchdog fire (WatchdogSec=30s) and
systemd restart it; and an agent started before kubepods exists follows kubepods once it
appears (the usage watch, read-only: the unit grants no write to cgroupfs), so the first
crossing after wakes it (kubesim's node moves to a cgroup of its own for that one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.node import image
from tests.node import kubelet_cgroups as kc
from tests.node.cluster import GuestCluster, pod_object
from tests.node.vm import Guest

UNIT = "eviction-agent.service"
SHIPPED_UNIT = Path(__file__).resolve().parents[2] / "systemd" / UNIT
DROP_IN = f"/etc/systemd/system/{UNIT}.d/harness.conf"
CONFIG = "/etc/eviction-agent/config.yaml"
METRICS = "http://127.0.0.1:9808/metrics"
# WatchdogSec=30s in the unit; the pings stop with the process, the deadline counts from the
# last one, so the kill comes at most 30 s after SIGSTOP (plus systemd's and TCG's latency).
WATCHDOG_SEC = 30.0


def shipped_exec_start() -> str:
    for line in SHIPPED_UNIT.read_text().splitlines():
        if line.startswith("ExecStart="):
            return line.removeprefix("ExecStart=")
    raise AssertionError(f"{SHIPPED_UNIT} has no ExecStart=")


def drop_in() -> str:
    """ExecStart with only its executable's path changed: the guest's venv. A checkout under
    /tmp (the guest keeps it there, tests/node/guest_init.sh) is bound into the unit's view:
    its PrivateTmp= would hide the venv's packages, which the installed agent does not need."""
    argv0, _, args = shipped_exec_start().partition(" ")
    assert argv0 == "/usr/local/bin/eviction-agent", argv0
    text = f"[Service]\nExecStart=\nExecStart={image.GUEST_VENV}/bin/eviction-agent {args}\n"
    if image.REPO.is_relative_to("/tmp") or image.REPO.is_relative_to("/var/tmp"):
        text += f"BindReadOnlyPaths={image.REPO}\n"
    return text


def metrics(guest: Guest) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    code = f"import urllib.request as u; print(u.urlopen({METRICS!r}, timeout=20).read().decode())"
    text = guest.run([kc.GUEST_PYTHON, "-I", "-S", "-c", code], timeout=60, check=True).stdout
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


# What can wake a sync between intervals (agent.loop, agent.memwatch): the fast memory check,
# the usage watch, memory.events(.local), PSI.
WAKES = ("memory", "usage", "memcg", "psi")


def woken_syncs(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return sum(samples.get(("eviction_agent_syncs_total", (("trigger", t),)), 0.0) for t in WAKES)


def wake_targets(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> set[str]:
    return {
        f"{dict(labels)['source']} {dict(labels)['target']}: {dict(labels)['mode']}"
        for (name, labels), value in samples.items()
        if name == "eviction_agent_wake_source" and value == 1
    }


class AgentUnit:
    def __init__(self, guest: Guest) -> None:
        self.guest = guest

    def configure(self, settings: dict[str, Any]) -> None:
        self.guest.put(CONFIG, yaml.safe_dump(settings), mode=0o644)

    def start(self, timeout: float = 600.0) -> None:
        """`systemctl start`: returns when the agent sent READY=1 (Type=notify), or fails."""
        result = self.guest.run(["systemctl", "start", UNIT], timeout=timeout)
        assert result.ok, result.describe() + "\n" + self.journal()

    def stop(self) -> None:
        self.guest.run(["systemctl", "stop", UNIT], timeout=120, check=True)

    def show(self, *props: str) -> dict[str, str]:
        out = self.guest.run(
            ["systemctl", "show", UNIT, *(f"--property={p}" for p in props)], check=True
        ).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, lines: int = 200) -> str:
        return self.guest.journal(UNIT, lines=lines)


@pytest.fixture(scope="module")
def unit(guest: Guest, cluster: GuestCluster) -> Iterator[AgentUnit]:
    guest.put(f"/etc/systemd/system/{UNIT}", SHIPPED_UNIT.read_text())
    guest.put(DROP_IN, drop_in())
    guest.run(
        "mkdir -p /etc/eviction-agent && cp /run/harness/kubeconfig /etc/eviction-agent/",
        check=True,
    )
    guest.run("chmod 0600 /etc/eviction-agent/kubeconfig && systemctl daemon-reload", check=True)
    agent = AgentUnit(guest)
    try:
        yield agent
    finally:
        if guest.alive:
            guest.run(["systemctl", "stop", UNIT], timeout=120)
            guest.run(f"rm -rf {DROP_IN} /etc/systemd/system/{UNIT} && systemctl daemon-reload")


def test_systemctl_start_returns_when_the_agent_is_ready(
    guest: Guest, cluster: GuestCluster, unit: AgentUnit, figure: Callable[[str], None]
) -> None:
    # the node as a kubelet's: kubepods.slice at the root, limited to the node's 1Gi; the
    # allocatable threshold (enforceNodeAllocatable: pods) is met at 424 MiB in kubepods
    cluster.require(kubepods_at_root=True)
    unit.configure({"nodeName": cluster.node, "evictionHard": {"memory.available": "600Mi"}})
    unit.start()
    shown = unit.show(
        "ActiveState", "MainPID", "ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic"
    )
    assert shown["ActiveState"] == "active"
    ready = (
        int(shown["ActiveEnterTimestampMonotonic"]) - int(shown["ExecMainStartTimestampMonotonic"])
    ) / 1e6
    figure(f"systemd unit: exec to READY=1 (active) {ready:.1f} s in the guest")
    # DynamicUser=yes: a transient uid, never root
    uid = int(guest.run(f"stat -c %u /proc/{shown['MainPID']}", check=True).stdout)
    assert uid >= 61184, uid  # systemd's dynamic range
    # only ExecStart changed: systemd merged the drop-in over the shipped unit
    cat = guest.run(["systemctl", "cat", UNIT], check=True).stdout
    assert SHIPPED_UNIT.read_text().strip() in cat and drop_in().strip() in cat
    assert "agent ready" in unit.journal()


def test_the_unit_evicts_under_memory_pressure_with_its_lines_in_the_journal(
    guest: Guest, cluster: GuestCluster, unit: AgentUnit
) -> None:
    pause = ["python", "-I", "-S", "-c", "import signal; signal.pause()"]
    innocent = pod_object("innocent", pause, node=cluster.node, memory="64Mi")
    grow = [
        "python",
        "-m",
        "kubesim.node.memory_grower",
        "--rate-mib-per-s",
        "40",
        "--max-mib",
        "700",
    ]
    hog = pod_object("hog", grow, node=cluster.node)
    cluster.create(innocent)
    cluster.create(hog)
    try:
        gone = cluster.api(
            "GET",
            "/api/v1/namespaces/default/pods/hog",
            until="o is None",
            timeout=400,
            check=False,
        )
        assert gone is None, f"hog not evicted:\n{json.dumps(gone)[:2000]}\n{unit.journal()}"
        events = cluster.api("GET", "/apis/events.k8s.io/v1/namespaces/default/events")["items"]
        evicted = [
            e
            for e in events
            if e["reason"] == "Evicted" and e["regarding"]["name"] in ("hog", "innocent")
        ]
        assert [e["regarding"]["name"] for e in evicted] == ["hog"]
        assert evicted[0]["note"].startswith("The node was low on resource: memory.")
        still = cluster.api("GET", "/api/v1/namespaces/default/pods/innocent")
        assert still["status"]["phase"] == "Running"
        journal = unit.journal()
        assert re.search(r"evict.*hog|hog.*evict", journal, re.IGNORECASE), journal
    finally:
        for name in ("hog", "innocent"):
            cluster.api("DELETE", f"/api/v1/namespaces/default/pods/{name}", check=False)
        cluster.api("GET", "/api/v1/namespaces/default/pods", until="not o['items']", timeout=120)


def test_the_watchdog_restarts_a_stopped_agent(
    guest: Guest, unit: AgentUnit, figure: Callable[[str], None]
) -> None:
    before = unit.show("MainPID", "NRestarts")
    pid = before["MainPID"]
    assert pid != "0"
    # Stop it, note the guest's monotonic clock, then wait for a new main process to be ready.
    script = (
        f"t0=$(cut -d' ' -f1 /proc/uptime); kill -STOP {pid}; echo $t0;"
        f' until [ "$(systemctl show -P MainPID {UNIT})" != {pid} ]'
        f" && systemctl is-active -q {UNIT}; do sleep 0.2; done; cut -d' ' -f1 /proc/uptime"
    )
    result = guest.run(script, timeout=600, check=True)
    stopped, active_again = (float(x) for x in result.stdout.split())
    journal = guest.run(
        ["journalctl", "-o", "short-monotonic", "--no-pager", "-u", UNIT, "--since=-15min"],
        check=True,
    ).stdout
    fired = re.search(r"^\[\s*([\d.]+)\].*Watchdog timeout", journal, re.MULTILINE)
    assert fired, journal[-4000:]
    restarted = re.search(r"^\[\s*([\d.]+)\].*Scheduled restart job", journal, re.MULTILINE)
    assert restarted, journal[-4000:]
    watchdog = float(fired.group(1)) - stopped
    restart = float(restarted.group(1)) - stopped
    figure(
        f"watchdog: SIGSTOP -> watchdog timeout {watchdog:.1f} s, -> restart scheduled "
        f"{restart:.1f} s, -> active again (READY=1) {active_again - stopped:.1f} s"
    )
    assert 0 < watchdog <= WATCHDOG_SEC + 5
    after = unit.show("NRestarts")
    assert int(after["NRestarts"]) == int(before["NRestarts"]) + 1


def test_an_agent_started_before_kubepods_is_woken_once_kubepods_appears(
    guest: Guest, cluster: GuestCluster, unit: AgentUnit
) -> None:
    unit.stop()
    # the root's kubepods.slice is this test's: kubesim's node moves to a cgroup of its own
    cluster.require(kubepods_at_root=False)
    guest.run(f"! test -e {kc.KUBEPODS}", check=True)
    unit.configure(
        {
            "nodeName": cluster.node,
            "evictionHard": {"memory.available": "100Mi"},
            "enforceNodeAllocatable": ["pods"],
            # the kubelet's 10 s: the agent re-reads the layout at its full syncs, and a sync
            # right after the crossing is then one woken by something else
            "housekeepingInterval": "10s",
        }
    )
    unit.start()
    before = metrics(guest)
    assert not any("kubepods.slice" in t for t in wake_targets(before)), wake_targets(before)
    scope = kc.container_scope(
        kc.pod_slice("besteffort", "7a1b2c3d-0000-4000-8000-00000000beef"), "c" * 64
    )
    try:
        guest.run(kc.make_kubepods(memory_max="400M"), check=True)
        # the agent follows kubepods: its wake sources name it (bounded wait, in the guest)
        code = (
            "import time, urllib.request as u\n"
            "end = time.monotonic() + 120\n"
            "while time.monotonic() < end:\n"
            f"    text = u.urlopen({METRICS!r}, timeout=20).read().decode()\n"
            "    if 'kubepods.slice/memory.current' in text:\n"
            "        raise SystemExit(0)\n"
            "    time.sleep(0.2)\n"
            "raise SystemExit(1)\n"
        )
        guest.run([kc.GUEST_PYTHON, "-I", "-S", "-c", code], timeout=180, check=True)
        followed = metrics(guest)
        sources = wake_targets(followed)
        kubepods = {t for t in sources if "kubepods.slice" in t}
        assert kubepods and not any(t.endswith(("refused", "unavailable")) for t in kubepods), (
            sources
        )
        # allocatable is kubepods' 400M: 100Mi available is crossed at ~300 MiB in kubepods
        guest.run(kc.start_in_scope(scope, kc.holder(330)), check=True)
        guest.run(kc.wait_for_usage(kc.KUBEPODS, 320 << 20), timeout=150, check=True)
        woke = woken_syncs(followed)
        for _ in range(20):  # each read is a guest Python start, a second or more
            woken = metrics(guest)
            if woken_syncs(woken) > woke:
                break
        else:
            syncs = {k: v for k, v in woken.items() if k[0] == "eviction_agent_syncs_total"}
            raise AssertionError(f"no sync woken: {syncs}\n{wake_targets(woken)}\n{unit.journal()}")
    finally:
        guest.run(kc.remove_tree(kc.KUBEPODS), timeout=60, check=True)
    assert "wake sources" in unit.journal()

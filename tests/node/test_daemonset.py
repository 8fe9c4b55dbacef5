"""The agent as deploy/daemonset.yaml runs it, in the guest (cgroup v2, Linux 6.1).

A container is emulated with the kernel's own means, each one what the manifest asks for:
uid/gid 65534 with no capabilities and no_new_privs (`runAsUser`, `capabilities.drop: [ALL]`,
`allowPrivilegeEscalation: false`), a PID namespace of its own with its own /proc
(`hostPID: false`), a cgroup namespace (as containerd gives on v2), the host's
/sys/fs/cgroup, /var/lib/kubelet and /var/lib/containerd bind-mounted read-only under /host,
and the root file system read-only (`readOnlyRootFilesystem`). The agent's arguments and
environment are the manifest's, `$(NODE_NAME)`/`$(NODE_IP)` filled in, plus the test's
thresholds and a kubeconfig (the in-cluster ServiceAccount credentials are not emulated).
Not emulated either: seccomp's RuntimeDefault profile and the pod's own cgroup and limits.

The pods live on kubesim's simulated node-2; their cgroups are made by hand under
kubepods.slice with the pods' UIDs (tests/node/kubelet_cgroups.py), so the checks control
exactly what the kubelet would have built:

- PID ranking (finding 1): read from another PID namespace, a cgroup's process list hides the
  processes the reader cannot see (v2 prints 0 for each); a container of three processes must
  still count three, and under PID pressure the pod with more processes goes first;
- static pods (finding 3): a pod cgroup named by a static pod's 32-hex UID is read, and found
  to be the mirror pod that carries that UID in `kubernetes.io/config.mirror`;
- what the agent arms and what it polls is logged once ("wake sources").
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.node import image
from tests.node import kubelet_cgroups as kc
from tests.node.cluster import KUBECONFIG, GuestCluster, pod_object
from tests.node.vm import Guest

DAEMONSET = Path(__file__).resolve().parents[2] / "deploy" / "daemonset.yaml"
EXEC = "/run/harness/daemonset-exec"
DS_KUBECONFIG = "/run/harness/daemonset-kubeconfig"
DS_UNIT = "harness-daemonset.service"
NODE = "node-2"
NODE_IP = "127.0.0.1"
STATIC_UID = "0123456789abcdef0123456789abcdef"
PAUSE = f'{kc.GUEST_PYTHON} -I -S -c "import signal; signal.pause()"'

# The container: namespaces, read-only mounts under /host, then uid 65534 without capabilities.
EXEC_SCRIPT = """\
#!/bin/sh
# daemonset-exec ARGV...: run ARGV as deploy/daemonset.yaml's container runs (tests/node)
set -e
for d in sys/fs/cgroup var/lib/kubelet var/lib/containerd; do mkdir -p /$d /host/$d; done
exec unshare --pid --fork --mount-proc --mount --cgroup --propagation private /bin/sh -ec '
for d in sys/fs/cgroup var/lib/kubelet var/lib/containerd; do
    mount --rbind /$d /host/$d
    mount -o remount,bind,ro /host/$d
done
for d in / /tmp /var/tmp /run; do mount -o remount,bind,ro $d; done
exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs \\
    --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
' daemonset-exec "$@"
"""


def manifest_container() -> dict[str, Any]:
    for doc in yaml.safe_load_all(DAEMONSET.read_text()):
        if doc and doc.get("kind") == "DaemonSet":
            [container] = doc["spec"]["template"]["spec"]["containers"]
            return dict(container)
    raise AssertionError(f"{DAEMONSET}: no DaemonSet")


def manifest_argv(extra: list[str]) -> tuple[list[str], dict[str, str]]:
    """The container's command and args with the kubelet's $(VAR) expansion, and its env."""
    container = manifest_container()
    env = {"NODE_NAME": NODE, "NODE_IP": NODE_IP}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]

    def expand(arg: str) -> str:
        return re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), arg)

    [command] = container["command"]
    assert command == "eviction-agent", command
    args = [expand(a) for a in container["args"]]
    return [f"{image.GUEST_VENV}/bin/eviction-agent", *args, *extra], env


def agent_log(journal: str) -> list[dict[str, Any]]:
    """The agent's JSON log lines from `journalctl -o short-monotonic` output."""
    entries = []
    for line in journal.splitlines():
        start = line.find("{")
        if start >= 0:
            try:
                entries.append(json.loads(line[start:]))
            except json.JSONDecodeError:
                continue
    return entries


class DaemonSetPods:
    """Pods of node-2 in the API, their cgroups made by hand with the pods' UIDs."""

    def __init__(self, guest: Guest, cluster: GuestCluster) -> None:
        self.guest = guest
        self.cluster = cluster
        self.uids: dict[str, str] = {}

    def add(self, name: str, *, annotations: dict[str, str] | None = None) -> str:
        created = self.cluster.create(
            pod_object(name, ["sleep", "infinity"], node=NODE, annotations=annotations)
        )
        uid = created["metadata"]["uid"]
        self.uids[name] = uid
        return uid

    def run_in_cgroup(self, uid: str, processes: int) -> None:
        scope = kc.container_scope(kc.pod_slice("besteffort", uid), uuid.uuid4().hex * 2)
        self.guest.run(kc.start_in_scope(scope, PAUSE, copies=processes), check=True)


@pytest.fixture(scope="module")
def node2(guest: Guest, cluster: GuestCluster) -> Iterator[DaemonSetPods]:
    guest.run(kc.remove_tree(), timeout=60, check=True)
    guest.put(EXEC, EXEC_SCRIPT, mode=0o755)
    # readable by uid 65534 (the kubeconfig carries no credential: kubesim allows all)
    guest.run(f"cp {KUBECONFIG} {DS_KUBECONFIG} && chmod 0644 {DS_KUBECONFIG}", check=True)
    guest.run(kc.make_kubepods(), check=True)
    pods = DaemonSetPods(guest, cluster)
    # created in this order, so that a tie in the ranking keeps "few" first
    pods.run_in_cgroup(pods.add("few"), 1)
    pods.run_in_cgroup(pods.add("many"), 3)
    mirror = {"kubernetes.io/config.mirror": STATIC_UID, "kubernetes.io/config.source": "file"}
    pods.add("static-web-node-2", annotations=mirror)
    pods.run_in_cgroup(STATIC_UID, 2)
    try:
        yield pods
    finally:
        if guest.alive:
            guest.run(["systemctl", "stop", DS_UNIT], timeout=120)
            guest.run(kc.remove_tree(), timeout=60)
            for name in pods.uids:
                cluster.api("DELETE", f"/api/v1/namespaces/default/pods/{name}", check=False)


def test_in_its_own_pid_namespace_the_collector_counts_every_process_and_finds_static_pods(
    guest: Guest, node2: DaemonSetPods
) -> None:
    code = (
        "import json, os\n"
        "from pathlib import Path\n"
        "from agent.sources import Roots, SourceConfig, SummaryCollector\n"
        "c = SummaryCollector(SourceConfig(node_name='node-2',"
        " roots=Roots(cgroup_root=Path('/host/sys/fs/cgroup'))))\n"
        "pods = {p['podRef']['uid']: p['process_stats']['process_count']"
        " for p in c.collect()['pods']}\n"
        "print(json.dumps({'uid': os.getuid(), 'pid': os.getpid(), 'pods': pods}))\n"
    )
    result = guest.run(
        [EXEC, f"{image.GUEST_VENV}/bin/python", "-c", code],
        env={"LD_LIBRARY_PATH": f"{image.GUEST_PYTHON_PREFIX}/lib"},
        timeout=300,
    )
    assert result.ok, result.describe()
    seen = json.loads(result.stdout)
    assert seen["uid"] == 65534
    assert seen["pid"] < 10, "not in a PID namespace of its own"
    assert seen["pods"] == {
        node2.uids["few"]: 1,
        node2.uids["many"]: 3,
        STATIC_UID: 2,
    }


def test_as_the_daemonset_runs_pid_pressure_evicts_the_pod_with_more_processes_first(
    guest: Guest, cluster: GuestCluster, node2: DaemonSetPods, figure: Callable[[str], None]
) -> None:
    # PID pressure now: fewer PIDs available than pid_max minus a few, the kubelet's signal
    pid_max = int(guest.run("cat /proc/sys/kernel/pid_max", check=True).stdout)
    argv, env = manifest_argv(
        [f"--kubeconfig={DS_KUBECONFIG}", f"--eviction-hard=pid.available<{pid_max - 20}"]
    )
    setenv = [f"--setenv={k}={v}" for k, v in env.items()]
    setenv.append(f"--setenv=LD_LIBRARY_PATH={image.GUEST_PYTHON_PREFIX}/lib")
    guest.run(["systemd-run", f"--unit={DS_UNIT}", *setenv, EXEC, *argv], check=True)
    # few and many are BestEffort at priority 0: the kubelet ranks PID pressure by priority,
    # then by process count; the static pod is critical and never goes
    gone = cluster.api(
        "GET",
        "/api/v1/namespaces/default/pods",
        until="not {'few', 'many'} & {p['metadata']['name'] for p in o['items']}",
        timeout=600,
        check=False,
    )
    journal = guest.journal(DS_UNIT, lines=5000)
    assert gone is not None and not {"few", "many"} & {
        p["metadata"]["name"] for p in gone["items"]
    }, journal
    events = cluster.api("GET", "/apis/events.k8s.io/v1/namespaces/default/events")["items"]
    evicted = {e["regarding"]["name"] for e in events if e["reason"] == "Evicted"}
    assert {"few", "many"} <= evicted, events
    # the agent's order, from its own log lines (one JSON object each)
    order = [
        entry["pod"]["name"]
        for entry in agent_log(journal)
        if entry.get("msg") == "eviction result" and entry.get("result") == "evicted"
    ]
    assert order == ["many", "few"], journal
    assert "static-web-node-2" in {p["metadata"]["name"] for p in gone["items"]}
    # what it arms and what it polls: one line, nothing changed since the start
    [wake] = [e for e in agent_log(journal) if e.get("msg") == "wake sources"]
    modes = {source.split(": ")[1].split(" ")[0] for source in wake["sources"]}
    assert modes <= {"announced", "polled", "refused", "unavailable"}, wake
    figure("DaemonSet wake sources: " + "; ".join(wake["sources"]))

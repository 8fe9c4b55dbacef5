"""The agent as deploy/daemonset.yaml runs it, in the guest (cgroup v2, Linux 6.1).

The container is emulated with the kernel's own means (``daemonset``), the pods live on
kubesim's simulated node-2 with cgroups made by hand (``DaemonSetPods``), so the checks control
exactly what the kubelet would have built: PID ranking from another PID namespace, static pods
found by their cgroup, per-pod disk figures as installed, and what the agent arms and polls
logged once ("wake sources").
"""

from __future__ import annotations

import contextlib
import datetime
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
KUBELET_UNIT = "harness-kubelet.service"
KUBELET_DIR = "/run/harness/kubelet"
SA_DIR = "/run/harness/serviceaccount"
MIB = 1 << 20
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
# the pod'"'"'s ServiceAccount volume: its token and CA (the kubelet is verified against it)
mkdir -p /run/secrets/kubernetes.io/serviceaccount
mount --bind -o ro /run/harness/serviceaccount /run/secrets/kubernetes.io/serviceaccount
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


def kubelet_summary(scratch_uid: str, *, used: int) -> dict[str, Any]:
    """node-2's summary as its kubelet reports it: scratch's emptyDir `tmp` holds `used` bytes."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "node": {"nodeName": NODE, "startTime": now},
        "pods": [
            {
                "podRef": {"name": "scratch", "namespace": "default", "uid": scratch_uid},
                "startTime": now,
                "volume": [{"name": "tmp", "usedBytes": used, "time": now}],
            }
        ],
    }


def start_kubelet(guest: Guest, summary: dict[str, Any]) -> None:
    """node-2's kubelet port (guest_kubelet.py) with a serving certificate of a CA made here,
    and the pod's ServiceAccount volume the DaemonSet mounts: a token and that CA."""
    from kubesim.plugins.authentication.pki import CertificateAuthority

    ca = CertificateAuthority(common_name="node-2-kubelet-ca")
    serving = ca.issue_server(["127.0.0.1"])
    token = uuid.uuid4().hex
    for path, data in (
        (f"{KUBELET_DIR}/tls.crt", serving.certificate),
        (f"{KUBELET_DIR}/tls.key", serving.key),
        (f"{KUBELET_DIR}/summary.json", json.dumps(summary).encode()),
        (f"{SA_DIR}/ca.crt", ca.certificate_pem),
        (f"{SA_DIR}/token", token.encode()),
        (f"{SA_DIR}/namespace", b"kube-system"),
    ):
        guest.put(path, data, mode=0o600 if path.endswith(".key") else 0o644)
    guest.run(["systemctl", "reset-failed", KUBELET_UNIT], timeout=60)
    guest.run(
        [
            "systemd-run",
            f"--unit={KUBELET_UNIT}",
            kc.GUEST_PYTHON,
            "-I",
            "-S",
            f"{image.GUEST_OPT}/kubelet.py",
            f"--cert={KUBELET_DIR}/tls.crt",
            f"--key={KUBELET_DIR}/tls.key",
            f"--token-file={SA_DIR}/token",
            f"--summary={KUBELET_DIR}/summary.json",
        ],
        check=True,
    )


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
    """Pods of node-2 in the API, their cgroups made by hand under kubepods.slice with the pods'
    UIDs (tests/node/kubelet_cgroups.py)."""

    def __init__(self, guest: Guest, cluster: GuestCluster) -> None:
        self.guest = guest
        self.cluster = cluster
        self.uids: dict[str, str] = {}
        self.pod_cgroups: list[str] = []

    def add(self, name: str, *, annotations: dict[str, str] | None = None) -> str:
        created = self.cluster.create(
            pod_object(name, ["sleep", "infinity"], node=NODE, annotations=annotations)
        )
        uid = str(created["metadata"]["uid"])
        self.uids[name] = uid
        return uid

    def run_in_cgroup(self, uid: str, processes: int) -> None:
        pod = kc.pod_slice("besteffort", uid)
        self.pod_cgroups.append(pod)
        scope = kc.container_scope(pod, uuid.uuid4().hex * 2)
        self.guest.run(kc.start_in_scope(scope, PAUSE, copies=processes), check=True)


@pytest.fixture(scope="module")
def node2(guest: Guest, cluster: GuestCluster) -> Iterator[DaemonSetPods]:
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
    # an emptyDir over its sizeLimit by the kubelet's figures: the DaemonSet evicts it only if
    # it reads them (no cgroup: its disk use is all the kubelet knows of it)
    scratch = pod_object("scratch", ["sleep", "infinity"], node=NODE)
    scratch["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {"sizeLimit": "1Mi"}}]
    pods.uids["scratch"] = cluster.create(scratch)["metadata"]["uid"]
    start_kubelet(guest, kubelet_summary(pods.uids["scratch"], used=5 * MIB))
    try:
        yield pods
    finally:
        if guest.alive:
            guest.run(["systemctl", "stop", KUBELET_UNIT], timeout=120)
            for pod in pods.pod_cgroups:
                guest.run(kc.remove_tree(pod), timeout=60)
            for name in pods.uids:
                cluster.api("DELETE", f"/api/v1/namespaces/default/pods/{name}", check=False)


def test_in_its_own_pid_namespace_the_collector_counts_every_process_and_finds_static_pods(
    guest: Guest, node2: DaemonSetPods
) -> None:
    """Read from another PID namespace, a cgroup's process list hides the processes the reader
    cannot see (v2 prints 0 for each): a container of three processes must still count three.
    A pod cgroup named by a static pod's 32-hex UID is read, and found to be the mirror pod
    that carries that UID in `kubernetes.io/config.mirror`."""
    code = (
        "import json, os\n"
        "from pathlib import Path\n"
        "from agent.sources import Roots, SourceConfig, SummaryCollector\n"
        "c = SummaryCollector(SourceConfig(node_name='node-2',"
        " roots=Roots(cgroup_root=Path('/host/sys/fs/cgroup'))))\n"
        "pods = {p.pod_ref.uid: p.process_stats.process_count"
        " for p in c.collect().pods}\n"
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


@contextlib.contextmanager
def daemonset(guest: Guest, name: str, extra: list[str]) -> Iterator[str]:
    """The agent started as the DaemonSet runs it (a transient unit of its own, so that its
    journal is this run's), the manifest's args plus `extra`; its unit name. Stopped on the way
    out.

    Each part of the container is what the manifest asks for: uid/gid 65534 with no
    capabilities and no_new_privs (`runAsUser`, `capabilities.drop: [ALL]`,
    `allowPrivilegeEscalation: false`), a PID namespace of its own with its own /proc
    (`hostPID: false`), a cgroup namespace (as containerd gives on v2), the host's
    /sys/fs/cgroup, /var/lib/kubelet and /var/lib/containerd bind-mounted read-only under /host,
    and the root file system read-only (`readOnlyRootFilesystem`). The agent's arguments and
    environment are the manifest's, `$(NODE_NAME)`/`$(NODE_IP)` filled in, plus `extra` and a
    kubeconfig for the API (the pod's ServiceAccount volume is mounted, with a token the
    guest's kubelet port accepts, but the API server is reached with the kubeconfig). Not
    emulated: seccomp's RuntimeDefault profile, the pod's own cgroup, limits and network
    namespace."""
    unit = f"harness-daemonset-{name}.service"
    argv, env = manifest_argv([f"--kubeconfig={DS_KUBECONFIG}", *extra])
    setenv = [f"--setenv={k}={v}" for k, v in env.items()]
    setenv.append(f"--setenv=LD_LIBRARY_PATH={image.GUEST_PYTHON_PREFIX}/lib")
    guest.run(["systemctl", "reset-failed", unit], timeout=60)
    guest.run(["systemd-run", f"--unit={unit}", *setenv, EXEC, *argv], check=True)
    try:
        yield unit
    finally:
        guest.run(["systemctl", "stop", unit], timeout=120)


def test_as_installed_the_daemonset_reads_per_pod_disk_figures_from_the_kubelet(
    guest: Guest, cluster: GuestCluster, node2: DaemonSetPods
) -> None:
    """Exactly as installed (the manifest's args, no threshold of the test's), the
    agent gets the kubelet's per-pod disk figures through --kubelet-summary-url with its
    ServiceAccount token and CA, and acts on them: the emptyDir over its sizeLimit is evicted
    with the kubelet's message, and no other pod (the node is under no pressure)."""
    with daemonset(guest, "as-installed", []) as unit:
        gone = cluster.api(
            "GET",
            "/api/v1/namespaces/default/pods/scratch",
            until="o is None",
            timeout=600,
            check=False,
        )
        journal = guest.journal(unit, lines=5000)
    assert gone is None, journal
    events = cluster.api("GET", "/apis/events.k8s.io/v1/namespaces/default/events")["items"]
    [note] = [
        e["note"]
        for e in events
        if e["reason"] == "Evicted" and e["regarding"]["name"] == "scratch"
    ]
    assert note.startswith('Usage of EmptyDir volume "tmp" exceeds the limit "1Mi".'), note
    assert not [e for e in agent_log(journal) if "kubelet summary unavailable" in e.get("msg", "")]
    left = {p["metadata"]["name"] for p in cluster.pods()}
    assert {"few", "many", "static-web-node-2"} <= left, left


def test_as_the_daemonset_runs_pid_pressure_evicts_the_pod_with_more_processes_first(
    guest: Guest,
    cluster: GuestCluster,
    node2: DaemonSetPods,
    figure: Callable[[str], None],
) -> None:
    # few and many are BestEffort at priority 0: the kubelet ranks PID pressure by priority,
    # then by process count; the static pod is critical and never goes. Pressure from the
    # start: fewer PIDs available than pid_max minus a few.
    pid_max = int(guest.run("cat /proc/sys/kernel/pid_max", check=True).stdout)
    with daemonset(guest, "pid", [f"--eviction-hard=pid.available<{pid_max - 20}"]) as unit:
        gone = cluster.api(
            "GET",
            "/api/v1/namespaces/default/pods",
            until="not {'few', 'many'} & {p['metadata']['name'] for p in o['items']}",
            timeout=600,
            check=False,
        )
        journal = guest.journal(unit, lines=5000)
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
        if entry.get("msg") == "eviction result"
        and entry.get("result") == "evicted"
        and entry["pod"]["name"] in ("few", "many")
    ]
    assert order == ["many", "few"], journal
    assert "static-web-node-2" in {p["metadata"]["name"] for p in gone["items"]}
    # what it arms and what it polls: one line, nothing changed since the start
    [wake] = [e for e in agent_log(journal) if e.get("msg") == "wake sources"]
    modes = {source.split(": ")[1].split(" ")[0] for source in wake["sources"]}
    assert modes <= {"announced", "polled", "refused", "unavailable"}, wake
    figure("DaemonSet wake sources: " + "; ".join(wake["sources"]))

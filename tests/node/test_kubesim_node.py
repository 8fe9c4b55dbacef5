"""kubesim's process node on cgroup v2, laid out as a kubelet with the systemd driver lays it out.

The session's node-1 (`kubesim serve --process-node node-1 --cgroup-driver=systemd
--kubepods-at-root --memory-capacity=1Gi`) runs its pods as processes in the guest's unified
hierarchy; this checks the layout the agent relies on, on the real kernel: kubepods.slice at
the root limited to the node's capacity, a Guaranteed pod directly under it, a Burstable one
under kubepods-burstable.slice, the UID's dashes escaped, containers in cri-containerd-<id>.scope,
`memory.max` from the limits, `+memory +pids` enabled in every parent, the agent's collector
finding both pods by UID, and the cgroups gone with the pods.
"""

from __future__ import annotations

import json

from tests.node import kubelet_cgroups as kc
from tests.node.cluster import GuestCluster, pod_object
from tests.node.vm import Guest

MIB = 1 << 20
PAUSE = ["python", "-I", "-S", "-c", "import signal; signal.pause()"]


def test_pods_run_in_the_kubelets_systemd_cgroups_with_their_limits(
    guest: Guest, cluster: GuestCluster
) -> None:
    cluster.require(kubepods_at_root=True)
    names = ("v2-guaranteed", "v2-burstable")
    cluster.create(pod_object(names[0], PAUSE, node=cluster.node, memory="48Mi"))
    cluster.create(pod_object(names[1], PAUSE, node=cluster.node, memory="16Mi", limited=False))
    try:
        uids = {}
        for name in names:
            running = cluster.api(
                "GET",
                f"/api/v1/namespaces/default/pods/{name}",
                until="o and o['status'].get('phase') == 'Running'",
                timeout=300,
            )
            uids[name] = running["metadata"]["uid"]
        guaranteed = kc.pod_slice(None, uids["v2-guaranteed"])
        burstable = kc.pod_slice("burstable", uids["v2-burstable"])
        script = (
            f"cat {kc.KUBEPODS}/memory.max;"
            f" for d in {guaranteed} {burstable}; do"
            "   cat $d/memory.max; for s in $d/cri-containerd-*.scope; do"
            "     basename $s; cat $s/memory.max; wc -l < $s/cgroup.procs; done; done;"
            f" for d in {kc.CGROUP} {kc.KUBEPODS} {kc.KUBEPODS}/kubepods-burstable.slice"
            f" {guaranteed} {burstable}; do cat $d/cgroup.subtree_control; done"
        )
        out = guest.run(script, check=True).stdout.split("\n")
        assert int(out[0]) == 1 << 30  # the node's capacity
        g_pod, g_scope, g_scope_max, g_procs = out[1:5]
        b_pod, b_scope, b_scope_max, b_procs = out[5:9]
        assert int(g_pod) == int(g_scope_max) == 48 * MIB  # the limits, pod and container
        assert b_pod == b_scope_max == "max"  # requests only: no limit
        for scope, procs in ((g_scope, g_procs), (b_scope, b_procs)):
            assert scope.startswith("cri-containerd-") and scope.endswith(".scope")
            assert len(scope) == len("cri-containerd-.scope") + 64 and procs == "1"
        for controllers in out[9:14]:
            assert {"memory", "pids"} <= set(controllers.split()), out[9:14]
        code = (
            "import json\n"
            "from agent.sources.collector import SourceConfig, SummaryCollector\n"
            "c = SummaryCollector(SourceConfig(node_name='node-1'))\n"
            "print(json.dumps({p.pod_ref.uid: p.process_stats.process_count"
            " for p in c.collect().pods}))\n"
        )
        seen = json.loads(guest.python(code, check=True).stdout)
        assert {seen.get(uid) for uid in uids.values()} == {1}, seen
    finally:
        for name in names:
            cluster.api("DELETE", f"/api/v1/namespaces/default/pods/{name}", check=False)
    for name in names:
        cluster.api(
            "GET", f"/api/v1/namespaces/default/pods/{name}", until="o is None", timeout=120
        )
    gone = guest.run(f"test -e {guaranteed} || test -e {burstable} || echo gone")
    assert gone.stdout.strip() == "gone"

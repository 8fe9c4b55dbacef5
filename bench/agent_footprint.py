"""Benchmark: the agent's own footprint on a full node of realistic pods.

``eviction-agent run`` at its default 1 s interval on 110 ``realistic_pod``s (the kubelet's
default ``maxPods``): CPU over a steady state as a share of one core, and peak RSS through a
relist under load (``bench``). Targets, and anchors: ≤ 1 % of a core and ≤ 60 MiB (the kubelet's
eviction manager cannot be measured apart from the kubelet). ``--oversized``: what tenants can
put in their pods instead (``oversized_pods``), against the DaemonSet's memory limit (88 MiB).
Run: ``.venv/bin/python bench/agent_footprint.py [--seconds 60] [--pods 110] [--oversized]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped, unused-ignore]
from aiohttp import web

import kubesim
from kubesim.kubeconfig import write_kubeconfig


def _reaction_module() -> Any:
    # the fake node cgroup is shared with agent_reaction.py (bench/ is not a package)
    path = Path(__file__).resolve().parent / "agent_reaction.py"
    spec = importlib.util.spec_from_file_location("agent_reaction", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_R = _reaction_module()
NODE, FakeNodeCgroup = _R.NODE, _R.FakeNodeCgroup

MIB = 1 << 20


def anon_rss(pid: int) -> int:
    """Resident anonymous memory: what a memory limit cannot reclaim (file pages it can)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


async def sample_anon(pid: int, peak: list[int]) -> None:
    """The highest ``anon_rss`` seen, every 20 ms, into ``peak[0]``."""
    with contextlib.suppress(OSError):
        while True:
            peak[0] = max(peak[0], anon_rss(pid))
            await asyncio.sleep(0.02)


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return int(psutil.Process(pid).memory_info().rss)


STAMP = "2026-01-01T00:00:00Z"


def _fields_v1(obj: Any) -> Any:
    """The ``fieldsV1`` trie of an object, in the API server's shape (``f:``/``k:`` keys)."""
    if isinstance(obj, dict):
        return {f"f:{k}": _fields_v1(v) for k, v in obj.items()}
    if isinstance(obj, list):
        out: dict[str, Any] = {}
        for item in obj:
            if isinstance(item, dict) and "name" in item:
                key = "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))
                out[key] = {".": {}, **_fields_v1(item)}
            elif isinstance(item, dict) and "type" in item:
                key = "k:" + json.dumps({"type": item["type"]}, separators=(",", ":"))
                out[key] = {".": {}, **_fields_v1(item)}
            else:
                out["v:" + json.dumps(item, separators=(",", ":"))] = {}
        return out
    return {}


def realistic_pod(name: str, i: int, *, churn: int = 0) -> dict[str, Any]:
    """A pod as a real API server serves it, about 30 KB of JSON: ``managedFields`` of three
    managers, a ``last-applied-configuration`` annotation, two containers with environment,
    probes and mounts, projected/configMap/secret/emptyDir volumes, status with conditions and
    container statuses."""
    app = f"svc-{i % 12}"
    labels = {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": f"{app}-prod",
        "app.kubernetes.io/version": f"1.{i % 7}.3",
        "app.kubernetes.io/component": "backend",
        "app.kubernetes.io/part-of": "shop",
        "app.kubernetes.io/managed-by": "helm",
        "pod-template-hash": f"{i * 7919 % 99999:05d}abcd",
        "team": "payments",
        "tier": "web",
    }

    def container(cname: str) -> dict[str, Any]:
        return {
            "name": cname,
            "image": f"registry.example.com/shop/{app}-{cname}:1.{i % 7}.3@sha256:{'ab' * 32}",
            "imagePullPolicy": "IfNotPresent",
            "args": ["--config=/etc/app/config.yaml", "--log-format=json", f"--shard={i}"],
            "env": [
                {"name": f"APP_SETTING_{k}", "value": f"value-{k}-" + "x" * 24} for k in range(24)
            ]
            + [
                {
                    "name": "POD_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                },
                {
                    "name": "DB_PASSWORD",
                    "valueFrom": {"secretKeyRef": {"name": f"{app}-db", "key": "password"}},
                },
            ],
            "ports": [
                {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
            ],
            "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"memory": "256Mi"},
            },
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                "initialDelaySeconds": 10,
                "timeoutSeconds": 1,
                "periodSeconds": 10,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "readinessProbe": {
                "httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"},
                "timeoutSeconds": 1,
                "periodSeconds": 5,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app", "readOnly": True},
                {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
                {"name": "scratch", "mountPath": "/tmp"},
                {
                    "name": "kube-api-access",
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "readOnly": True,
                },
            ],
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }

    spec: dict[str, Any] = {
        "containers": [container("app"), container("proxy")],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {"name": "tls", "secret": {"secretName": f"{app}-tls", "defaultMode": 420}},
            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                },
            },
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": app,
        "securityContext": {"fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    applied = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": spec,
    }
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        ]
        + [{"type": "PodScheduled", "status": "True", "lastTransitionTime": STAMP}],
        "hostIP": "10.0.0.10",
        "hostIPs": [{"ip": "10.0.0.10"}],
        "podIP": f"10.244.{i // 250}.{i % 250 + 2}",
        "podIPs": [{"ip": f"10.244.{i // 250}.{i % 250 + 2}"}],
        "startTime": STAMP,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": c,
                "state": {"running": {"startedAt": STAMP}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": f"registry.example.com/shop/{app}-{c}:1.{i % 7}.3",
                "imageID": f"registry.example.com/shop/{app}-{c}@sha256:{'cd' * 32}",
                "containerID": f"containerd://{(f'{i:04d}{c}' * 16)[:64]}",
                "started": True,
            }
            for c in ("app", "proxy")
        ],
    }
    spec_and_node = {**spec, "nodeName": "bench-node"}
    return {
        **applied,
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied),
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "bench/churn": str(churn),
            },
            # no ownerReferences: kubesim's garbage collector would delete pods whose
            # ReplicaSet does not exist (and a real ReplicaSet would manage the pods)
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": STAMP,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": _fields_v1({"metadata": applied["metadata"], "spec": spec}),
                },
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": STAMP,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": _fields_v1({"metadata": {"annotations": {"a": 1}}}),
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": STAMP,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": _fields_v1({"status": status}),
                    "subresource": "status",
                },
            ],
        },
        "spec": spec_and_node,
        "status": status,
    }


OVERSIZED_PODS = 40
ARGS_BYTES = 1_400_000
EMPTY_DIRS = 40_000
DAEMONSET_LIMIT_MIB = 88  # deploy/daemonset.yaml
ISSUE_BEFORE_MIB = 209


def oversized_pods() -> list[dict[str, Any]]:
    """40 pods of ~1.4 MB of short ``args`` and one with 40,000 emptyDirs.

    The arguments are short (``--flag-000123=abc``): the most Python objects per byte an
    ``args`` list can make; kube-apiserver accepts such a pod, up to etcd's 1.5 MiB. With them,
    the kubelet's ``/stats/summary`` (``kubelet_summary``, served by a stub at
    ``--kubelet-summary-url``: one volume entry per emptyDir, ~7 MB). The figure is peak RSS
    with the peak of its anonymous part (sampled every 20 ms): file pages (the interpreter's
    and the libraries' code) are what a memory limit reclaims before it kills, anonymous ones
    are not. Before the reads were bounded, the agent reached 209 MiB on such a node."""
    args = [f"--flag-{j:06d}=abc" for j in range(ARGS_BYTES // 20)]
    out = []
    for i in range(OVERSIZED_PODS):
        manifest = realistic_pod(f"big-{i}", i)
        manifest["spec"]["containers"][0]["args"] = args
        del manifest["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        out.append(manifest)
    volumes = realistic_pod("volumes", OVERSIZED_PODS)
    volumes["spec"]["volumes"] = [
        {"name": f"scratch-{i}", "emptyDir": {}} for i in range(EMPTY_DIRS)
    ]
    del volumes["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    out.append(volumes)
    return out


def kubelet_summary(pods: list[dict[str, Any]]) -> bytes:
    """What a kubelet's ``/stats/summary`` says of these pods: per container its writable layer
    and logs, per pod its ephemeral storage and one entry per emptyDir volume."""

    def fs(used: int) -> dict[str, Any]:
        return {
            "time": STAMP,
            "availableBytes": 50 << 30,
            "capacityBytes": 100 << 30,
            "usedBytes": used,
            "inodesFree": 1 << 20,
            "inodes": 2 << 20,
            "inodesUsed": used // 4096 + 1,
        }

    entries = []
    for p in pods:
        volumes = [{**fs(4096), "name": v["name"]} for v in p["spec"]["volumes"] if "emptyDir" in v]
        entries.append(
            {
                "podRef": {
                    "name": p["metadata"]["name"],
                    "namespace": p["metadata"]["namespace"],
                    "uid": p["metadata"]["uid"],
                },
                "startTime": STAMP,
                "containers": [
                    {
                        "name": c["name"],
                        "startTime": STAMP,
                        "rootfs": fs(1 << 20),
                        "logs": fs(64 << 10),
                        "memory": {"time": STAMP, "workingSetBytes": 8 << 20},
                    }
                    for c in p["spec"]["containers"]
                ],
                "volume": volumes,
                "ephemeral-storage": fs((1 << 20) + 4096 * len(volumes)),
            }
        )
    node = {"nodeName": "bench-node", "startTime": STAMP, "fs": fs(10 << 30)}
    return json.dumps({"node": node, "pods": entries}).encode()


async def serve_summary(body: bytes) -> tuple[web.AppRunner, int]:
    async def summary(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/stats/summary", summary)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, int(runner.addresses[0][1])


class CuttableProxy:
    """A TCP proxy in front of the API whose connections can be cut at once (a network blip)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.handlers: set[asyncio.Task[Any]] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if (task := asyncio.current_task()) is not None:
            self.handlers.add(task)
            task.add_done_callback(self.handlers.discard)
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.port)
        pair = (writer, up_w)
        self.pairs.add(pair)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except ConnectionError:
                pass
            finally:
                w.close()

        try:
            await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))
        finally:
            self.pairs.discard(pair)

    def cut(self) -> None:
        for a, b in list(self.pairs):
            a.transport.abort()
            b.transport.abort()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
        # the cut connections' handlers end on their own; left to the loop's shutdown, they
        # would be cancelled, which Python 3.11's stream callback reports as an error
        await asyncio.gather(*self.handlers, return_exceptions=True)


RELISTS = 3


async def bench(
    seconds: float,
    pods: int,
    agent_log: str | None = None,
    extra: tuple[str, ...] = (),
    *,
    oversized: bool = False,
) -> dict[str, Any]:
    """The agent (with the fast memory check and the PSI monitor) against an in-process
    kubesim, each pod bound to the node with its pod cgroup under a fake node's ``kubepods``
    tree (as ``agent_reaction.py``), so every sync reads the pod cgroups as on a real node.

    Two phases: after a warm-up, CPU time over ``seconds`` of steady state; then a relist under
    load — the agent's connections to the API are cut (``CuttableProxy``) while 20 pods a
    second are modified, and the next watches answer ``410 Gone`` three times in a row, so the
    informer lists every pod three times while events stream. Peak RSS is the process's
    high-water mark (``VmHWM``, imports included) at the end, so it covers both phases."""
    node = FakeNodeCgroup(1024 * MIB)
    agent: subprocess.Popen[bytes] | None = None
    tmp = Path(tempfile.mkdtemp(prefix="agent-footprint-"))
    proxy: CuttableProxy | None = None
    kubelet: web.AppRunner | None = None
    try:
        async with kubesim.serve(state=[NODE], time_scale=0.01) as sim:
            manifests = (
                oversized_pods() if oversized else [realistic_pod(f"p-{i}", i) for i in range(pods)]
            )
            created_pods = []
            for manifest in manifests:
                created = sim.apply(manifest)[0]
                node.pod_cgroup(created["metadata"]["uid"])
                created_pods.append(created)
            first = created_pods[0]["metadata"]["name"]
            served = sim.get("Pod", "default", first) or {}
            pod_bytes = len(json.dumps(served))
            assert served["metadata"].get("managedFields"), "kubesim dropped managedFields"
            if oversized:
                body = kubelet_summary(created_pods)
                summary_bytes = len(body)
                kubelet, port = await serve_summary(body)
                extra = (
                    *extra,
                    f"--kubelet-summary-url=http://127.0.0.1:{port}/stats/summary",
                    "--kubelet-token-file=",
                )
            del created_pods
            proxy = CuttableProxy(int(sim.url.rsplit(":", 1)[1]))
            kubeconfig = write_kubeconfig(
                tmp / "kubeconfig", f"http://127.0.0.1:{await proxy.start()}"
            )
            # after the cut, the next watches answer 410 Gone: the informer relists each time
            sim.add_faults(
                {
                    "faults": [
                        {
                            "match": {
                                "verb": "watch",
                                "resource": "pods",
                                "calls": f"2-{1 + RELISTS}",
                            },
                            "respond": {
                                "code": 410,
                                "reason": "Expired",
                                "message": "too old resource version",
                            },
                        }
                    ]
                }
            )
            agent = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent",
                    "run",
                    "--node-name=bench-node",
                    f"--kubeconfig={kubeconfig}",
                    "--memory-capacity=1Gi",
                    f"--cgroup-root={node.agent_root}",
                    f"--kubelet-root={node.tmp}",
                    f"--runtime-root={node.tmp}",
                    "--listen=127.0.0.1:0",
                    *extra,
                ],
                stdout=subprocess.DEVNULL,
                stderr=open(agent_log, "wb") if agent_log else subprocess.DEVNULL,  # noqa: SIM115
            )
            proc = psutil.Process(agent.pid)
            anon_peak = [0]
            sampler = asyncio.create_task(sample_anon(agent.pid, anon_peak))
            await asyncio.sleep(5.0)  # imports, list, first syncs
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited with {agent.returncode}")
            steady_rss = int(proc.memory_info().rss)
            t0 = time.monotonic()
            c0 = proc.cpu_times()
            await asyncio.sleep(seconds)
            c1 = proc.cpu_times()
            elapsed = time.monotonic() - t0
            cpu = (c1.user - c0.user) + (c1.system - c0.system)

            # relist under load: 20 pod changes a second while the informer lists three times
            def started_lists() -> int:  # the first page of each list (later pages continue)
                return sum(
                    1
                    for r in sim.requests.filter(verb="list", resource="pods")
                    if "continue" not in r.query
                )

            def churn(i: int, n: int) -> dict[str, Any]:
                if not oversized:
                    return realistic_pod(f"p-{i}", i, churn=n)
                changed = manifests[i]  # an annotation changes, as anything may
                changed["metadata"]["annotations"]["bench/churn"] = str(n)
                return changed

            lists_before = started_lists()
            rng = random.Random(1)
            proxy.cut()
            deadline = time.monotonic() + 30
            churned = 0
            while time.monotonic() < deadline:
                i = rng.randrange(len(manifests))
                churned += 1
                sim.apply(churn(i, churned))
                await asyncio.sleep(0.05)
                lists = started_lists() - lists_before
                if lists >= RELISTS and churned >= 60:
                    break
            relists = started_lists() - lists_before
            await asyncio.sleep(1.0)
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited with {agent.returncode}")
            sampler.cancel()
            return {
                "cpu_share": cpu / elapsed,
                "peak_rss": peak_rss(agent.pid),
                "peak_anon": anon_peak[0],
                "steady_rss": steady_rss,
                "pod_bytes": pod_bytes,
                "pods": len(manifests),
                "summary_bytes": summary_bytes if oversized else 0,
                "relists": relists,
                "changes": churned,
            }
    finally:
        if kubelet is not None:
            await kubelet.cleanup()
        if proxy is not None:
            await proxy.close()
        if agent is not None and agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                agent.wait(10)
            if agent.poll() is None:
                agent.kill()
        node.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--pods", type=int, default=110)
    parser.add_argument("--agent-log", help="write the agent's log (stderr) to this file")
    parser.add_argument(
        "--oversized",
        action="store_true",
        help="40 pods of ~1.4 MB of args, one with 40,000 emptyDirs and the kubelet's summary "
        "of them, instead of --pods realistic pods",
    )
    parser.add_argument(
        "--agent-arg",
        action="append",
        default=[],
        help="extra flag for the agent (e.g. --agent-arg=--no-kernel-memcg-notification: what a "
        "cgroup v2 node or a read-only install gets, the usage watch polling)",
    )
    args = parser.parse_args()
    try:
        r = asyncio.run(
            bench(
                args.seconds,
                args.pods,
                args.agent_log,
                tuple(args.agent_arg),
                oversized=args.oversized,
            )
        )
    except OSError as exc:
        print(json.dumps({"bench": "agent_footprint", "skipped": f"no writable cgroup: {exc}"}))
        return 0
    if args.oversized:
        rss = r["peak_rss"] / MIB
        print(
            json.dumps(
                {
                    "bench": "agent_footprint_oversized_peak_rss",
                    "value": round(rss, 1),
                    "unit": "MiB",
                    "anchor": {
                        "name": "DaemonSet memory limit",
                        "value": DAEMONSET_LIMIT_MIB,
                        "unit": "MiB",
                    },
                    "ratio": round(rss / DAEMONSET_LIMIT_MIB, 3),
                    "before_bounded_reads_mib": ISSUE_BEFORE_MIB,
                    "peak_anon_mib": round(r["peak_anon"] / MIB, 1),
                    "steady_rss_mib": round(r["steady_rss"] / MIB, 1),
                    "cpu_share_pct": round(r["cpu_share"] * 100, 3),
                    "pods": r["pods"],
                    "pod_kib": round(r["pod_bytes"] / 1024, 1),
                    "summary_mib": round(r["summary_bytes"] / MIB, 1),
                    "relists": r["relists"],
                    "changes_during_relist": r["changes"],
                    "seconds": args.seconds,
                    "agent_args": args.agent_arg,
                }
            ),
            flush=True,
        )
        return 0
    common = {
        "pods": args.pods,
        "pod_kib": round(r["pod_bytes"] / 1024, 1),
        "seconds": args.seconds,
        "interval": "1s",
        "agent_args": args.agent_arg,
    }
    share = r["cpu_share"]
    print(
        json.dumps(
            {
                "bench": "agent_footprint_cpu",
                "value": round(share * 100, 3),
                "unit": "% of one core",
                "anchor": {"name": "target", "value": 1.0, "unit": "%"},
                "ratio": round(share * 100 / 1.0, 3),
                **common,
            }
        ),
        flush=True,
    )
    rss = r["peak_rss"]
    print(
        json.dumps(
            {
                "bench": "agent_footprint_peak_rss",
                "value": round(rss / MIB, 1),
                "unit": "MiB",
                "anchor": {"name": "target", "value": 60, "unit": "MiB"},
                "ratio": round(rss / MIB / 60, 3),
                "steady_rss_mib": round(r["steady_rss"] / MIB, 1),
                "relists": r["relists"],
                "changes_during_relist": r["changes"],
                **common,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

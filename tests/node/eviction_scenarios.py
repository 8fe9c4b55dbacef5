"""The kubelet's node e2e eviction suite (``test/e2e_node/eviction_test.go``), as data.

Each ``Scenario`` is one of upstream's ``SIGDescribe`` blocks, sized for the machine
(``Scale``). Here the eviction agent is the evictor and kubesim's process node runs the pods,
so the kubelet configuration a test sets becomes the agent's flags and the node's
``ProcessNode`` document (``process_node_document``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

MIB: Final = 1 << 20
SHELL: Final = ("busybox", "sh", "-c")
NAMESPACE: Final = "eviction-e2e"
HIGH_PRIORITY_CLASS: Final = "eviction-e2e-high-priority"
HIGH_PRIORITY: Final = 999999999
VOLUME_MOUNT_PATH: Final = "test-mnt"
VOLUME_NAME: Final = "test-volume"
LOTS_OF_DISK_MB: Final = 10240
LOTS_OF_FILES: Final = 1000000000
AGENT_CONDITION_PREFIX: Final = "NodePressureAgent"
AGENT_CONTROLLER: Final = "node-pressure-evictor.io/eviction-agent"
MEMORY_PRESSURE: Final = "MemoryPressure"
DISK_PRESSURE: Final = "DiskPressure"
PID_PRESSURE: Final = "PIDPressure"

JSONDict = dict[str, Any]


@dataclass(frozen=True)
class Scale:
    """The sizes and times of one machine (upstream's in the comments).

    Upstream consumes 4 GiB of disk, 600 MiB of memory, 10 000 PIDs and 200 000 inodes on a
    cloud VM; the host and the guest of these tests use MiB and hundreds, with the same
    relations (a hog alone crosses the threshold; the guaranteed pod stays under its request).
    Upstream's time constants shrink likewise (soft grace 1 min, pressure transition 5 min, the
    post-test watch 1 min). One relation must not shrink: disk and inode pressure builds over
    minutes upstream, long after the per-pod disk figures the evictor ranks with (the kubelet's
    summary, fetched every 10 s) include every pod. Filled in seconds, the ranking would see
    pods with no figures yet — ranked first, then by priority alone: the guaranteed pod could
    go first. So the pods that fill the disk toward a threshold start filling ``fill_delay_s``
    after they start (one summary period and its fetch), then at upstream's pace.
    """

    name: str
    node_memory_mib: int  # the nodes' memory capacity
    node_disk_mib: int  # the nodes' disk (tmpfs)
    node_inodes: int
    disk_consumed_mib: int  # LocalStorage*: 4Gi, by one hog
    ordering_disk_consumed_mib: int  # PriorityLocalStorage: 4Gi, by two hogs
    disk_write_sleep: str  # between the disk pods' 1 MB writes: .1 (s)
    disk_source: str  # what they write: /dev/urandom
    limit_mib: int  # LocalStorageCapacityIsolation*: 100Mi
    allocatable_pods_mib: int  # MemoryAllocatable: the pods cgroup, 300Mi
    memory_hard_mib: int  # the default memory.available<100Mi
    memory_consumed_mib: int  # PriorityMemory: 600Mi
    guaranteed_memory_mib: int  # PriorityMemory: 300Mi
    hog_rate_mib_s: float  # memhog: 12Mi every 10 s
    pids_consumed: int  # PriorityPid: 10000
    processes: int  # PriorityPid: 30000
    inodes_consumed: int  # InodeEviction: 200000
    soft_grace_s: int  # LocalStorageSoftEviction: 1m
    transition_period_s: int  # evictionPressureTransitionPeriod: 5m
    watch_after_s: int  # postTestConditionMonitoringPeriod: 1m
    timeout_s: int  # pressureTimeout: 10-20 min
    fill_delay_s: int = 15  # before a disk or inode hog starts filling (see above)


HOST: Final = Scale(
    name="host",
    node_memory_mib=2048,
    node_disk_mib=512,
    node_inodes=40000,
    disk_consumed_mib=64,
    ordering_disk_consumed_mib=128,
    disk_write_sleep=".1",
    disk_source="/dev/urandom",
    limit_mib=100,
    allocatable_pods_mib=300,
    memory_hard_mib=100,
    memory_consumed_mib=300,
    guaranteed_memory_mib=128,
    hog_rate_mib_s=60.0,
    pids_consumed=1000,
    processes=2000,
    inodes_consumed=5000,
    soft_grace_s=5,
    transition_period_s=5,
    watch_after_s=5,
    timeout_s=180,
)

GUEST: Final = Scale(
    name="guest",
    node_memory_mib=1024,
    node_disk_mib=256,
    node_inodes=8000,
    disk_consumed_mib=16,
    ordering_disk_consumed_mib=32,
    disk_write_sleep=".1",
    # /dev/urandom costs ~0.5 s of CPU per MiB under TCG; tmpfs neither compresses nor
    # deduplicates, so zeros take the same blocks
    disk_source="/dev/zero",
    limit_mib=10,
    allocatable_pods_mib=160,
    memory_hard_mib=64,
    memory_consumed_mib=160,
    guaranteed_memory_mib=64,
    hog_rate_mib_s=10.0,
    pids_consumed=150,
    processes=250,
    inodes_consumed=200,
    soft_grace_s=10,
    transition_period_s=5,
    watch_after_s=5,
    timeout_s=300,
)


@dataclass(frozen=True)
class PodEvictSpec:
    """``podEvictSpec``: a pod and when it may go (0: never; N before N-1)."""

    eviction_priority: int
    pod: JSONDict

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])


@dataclass(frozen=True)
class NodeFigures:
    """The node's figures the thresholds are placed against (``eventuallyGetSummary``)."""

    memory_available: int
    nodefs_available: int
    nodefs_inodes_free: int
    pids_available: int

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> NodeFigures:
        node = summary["node"]
        rlimit = node["rlimit"]
        return cls(
            memory_available=int(node["memory"]["availableBytes"]),
            nodefs_available=int(node["fs"]["availableBytes"]),
            nodefs_inodes_free=int(node["fs"]["inodesFree"]),
            pids_available=int(rlimit["maxpid"]) - int(rlimit["curproc"]),
        )


@dataclass(frozen=True)
class Scenario:
    """One ``SIGDescribe`` of eviction_test.go.

    The pods it creates (the same builders: ``innocentPod``, ``diskConsumingPod``,
    ``inodeConsumingPod``, ``pidConsumingPod``, ``getMemhogPod``), each with its
    ``evictionPriority`` (0: must never be evicted; a pod of priority N must not go while one
    of priority N+1 still runs), the node condition that must be seen, the starved resource the
    ``Evicted`` events must name, and the kubelet configuration the test sets — thresholds
    placed relative to the node's current figures read from its ``/stats/summary``
    (``available − consumed``), as ``tempSetCurrentKubeletConfig`` places them.

    Two things differ from a kubelet's node, by design of the agent: it evicts through the API
    (delete with a grace period), so an evicted pod is identified by the agent's ``Evicted``
    event (``events.k8s.io``, reporting controller
    ``node-pressure-evictor.io/eviction-agent``) rather than a lingering ``Failed`` pod, and the
    node condition it writes is ``NodePressureAgent<condition>``.
    """

    name: str
    node: str  # the process node it runs on (one per scenario, configured for it)
    specs: tuple[PodEvictSpec, ...]
    condition: str | None  # the pressure condition to see; None: noPressure
    starved_resource: str | None  # what the Evicted events must name; None: not checked
    # the agent's threshold flags, placed against the node's figures
    thresholds: Callable[[NodeFigures], list[str]]
    node_config: JSONDict = field(default_factory=dict)  # ProcessNode fields
    # a scenario evicting on a soft threshold: no eviction before this long under pressure
    soft_grace_s: int | None = None

    @property
    def agent_condition(self) -> str | None:
        return f"{AGENT_CONDITION_PREFIX}{self.condition}" if self.condition else None

    def expected_evicted(self) -> list[str]:
        return [s.name for s in self.specs if s.eviction_priority > 0]

    def innocent(self) -> list[str]:
        return [s.name for s in self.specs if s.eviction_priority == 0]


# --- the pods (eviction_test.go's builders) ----------------------------------------------------


def _pod(
    name: str,
    container: JSONDict,
    *,
    volumes: list[JSONDict] | None = None,
    priority_class: str | None = None,
) -> JSONDict:
    spec: JSONDict = {
        "restartPolicy": "Never",
        # #115819: a hard eviction once gave 0, the pod's default 30 s; 1 keeps the test short
        "terminationGracePeriodSeconds": 1,
        "containers": [container],
    }
    if volumes:
        spec["volumes"] = volumes
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def innocent_pod() -> JSONDict:
    """A pod that uses nothing, with requests so it never counts as over them."""
    amounts = {"ephemeral-storage": "50Mi", "memory": "50Mi"}
    return _pod(
        "innocent-pod",
        {
            "name": "innocent-container",
            "image": "busybox",
            "command": [*SHELL, "while true; do sleep 5; done"],
            "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        },
    )


def pod_with_command(
    name: str,
    iterations: int,
    command: str,
    *,
    volume_source: JSONDict | None = None,
    resources: JSONDict | None = None,
    priority_class: str | None = None,
    delay_s: int = 0,
) -> JSONDict:
    """``podWithCommand``: `command` `iterations` times (after ``delay_s``), then idle.

    kubesim runs commands, not images: the pods call busybox's shell, the shell of upstream's
    busybox image (the machine's static busybox: under TCG a dynamically linked ``sh`` and
    ``touch`` per file cost a second each), and address their files relative to their working
    directory (no mount namespace: ``kubesim.node.volumes``)."""
    wait = f"sleep {delay_s}; " if delay_s else ""
    container: JSONDict = {
        "name": f"{name}-container",
        "image": "busybox",
        "command": [
            *SHELL,
            f"{wait}i=0; while [ $i -lt {iterations} ]; do {command} i=$(($i+1)); done;"
            " while true; do sleep 5; done",
        ],
    }
    if resources:
        container["resources"] = resources
    volumes = None
    if volume_source is not None:
        container["volumeMounts"] = [{"name": VOLUME_NAME, "mountPath": f"/{VOLUME_MOUNT_PATH}"}]
        volumes = [{"name": VOLUME_NAME, **volume_source}]
    return _pod(f"{name}-pod", container, volumes=volumes, priority_class=priority_class)


def _in_volume(volume_source: JSONDict | None, file: str) -> str:
    return f"{VOLUME_MOUNT_PATH}/{file}" if volume_source is not None else file


def disk_consuming_pod(
    name: str,
    mb: int,
    volume_source: JSONDict | None,
    resources: JSONDict | None = None,
    *,
    scale: Scale,
    priority_class: str | None = None,
    fills: bool = False,
) -> JSONDict:
    """``diskConsumingPod``: 1 MB per iteration (``scale.disk_source``), `mb` iterations; a
    pod that ``fills`` the disk toward a threshold starts after ``scale.fill_delay_s``."""
    target = _in_volume(volume_source, "file")
    return pod_with_command(
        name,
        mb,
        f"dd if={scale.disk_source} of={target}${{i}} bs=1048576 count=1 2>/dev/null;"
        f" sleep {scale.disk_write_sleep};",
        volume_source=volume_source,
        resources=resources,
        priority_class=priority_class,
        delay_s=scale.fill_delay_s if fills else 0,
    )


def inode_consuming_pod(
    name: str, files: int, volume_source: JSONDict | None, *, scale: Scale
) -> JSONDict:
    """``inodeConsumingPod``: one empty file per iteration, after ``scale.fill_delay_s``."""
    target = _in_volume(volume_source, "file")
    return pod_with_command(
        name,
        files,
        f"touch {target}${{i}}.txt;",
        volume_source=volume_source,
        delay_s=scale.fill_delay_s,
    )


def pid_consuming_pod(name: str, processes: int, *, priority_class: str | None = None) -> JSONDict:
    """``pidConsumingPod``: a process that stays, every 10 ms."""
    return pod_with_command(
        name,
        processes,
        "sleep 0.01; (sleep 3600)&",
        priority_class=priority_class,
    )


def memhog_pod(
    name: str,
    container: str,
    resources: JSONDict | None,
    *,
    rate_mib_s: float,
    priority_class: str | None = None,
) -> JSONDict:
    """``getMemhogPod``: allocates up to its memory limit as the downward API gives it — 80 %
    of its own limit, else the node's allocatable memory — at a steady rate, then holds it."""
    limit = ((resources or {}).get("limits") or {}).get("memory")
    total = f"{_mib(limit) * MIB * 4 // 5}" if limit is not None else "$(MEMORY_LIMIT)"
    spec: JSONDict = {
        "name": container,
        "image": "registry.k8s.io/e2e-test-images/agnhost",
        "env": [
            {
                "name": "MEMORY_LIMIT",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}},
            }
        ],
        "command": ["python", "-m", "kubesim.node.memory_grower"],
        "args": ["--rate-mib-per-s", f"{rate_mib_s:g}", "--step-ms", "50", "--max-bytes", total],
    }
    if resources:
        spec["resources"] = resources
    return _pod(name, spec, priority_class=priority_class)


def _mib(quantity: str) -> int:
    assert quantity.endswith("Mi"), quantity
    return int(quantity[:-2])


def _empty_dir(**source: Any) -> JSONDict:
    return {"emptyDir": dict(source)}


# --- the scenarios ------------------------------------------------------------------------------


def _mi(n: int) -> str:
    return f"{n}Mi"


def scenarios(scale: Scale) -> list[Scenario]:
    """Every scenario of the suite, sized for ``scale``."""
    s = scale
    ephemeral = {"ephemeral-storage": _mi(s.limit_mib)}
    over, under = s.limit_mib + 1, s.limit_mib - 1
    consumed_disk = s.disk_consumed_mib * MIB
    guaranteed_disk = {
        "requests": {"ephemeral-storage": _mi(30)},
        "limits": {"ephemeral-storage": _mi(30)},
    }
    guaranteed_memory = {
        "requests": {"memory": _mi(s.guaranteed_memory_mib)},
        "limits": {"memory": _mi(s.guaranteed_memory_mib)},
    }
    # The memory-ordering node's allocatable follows its hard threshold (capacity less the
    # memory consumed), as the kubelet's does after tempSetCurrentKubeletConfig.
    ordering_hard = s.node_memory_mib - s.memory_consumed_mib
    out = [
        Scenario(
            name="MemoryAllocatableEviction",
            node="memory-allocatable",
            specs=(
                PodEvictSpec(
                    1, memhog_pod("memory-hog-pod", "memory-hog", None, rate_mib_s=s.hog_rate_mib_s)
                ),
                PodEvictSpec(0, innocent_pod()),
            ),
            condition=MEMORY_PRESSURE,
            starved_resource="memory",
            # the default memory.available<100Mi; enforceNodeAllocatable [pods] copies it
            thresholds=lambda f: [f"--eviction-hard=memory.available<{_mi(s.memory_hard_mib)}"],
            node_config={
                "kubelet": {
                    "kubeReserved": {"memory": _mi(s.node_memory_mib - s.allocatable_pods_mib)},
                    "enforceNodeAllocatable": ["pods"],
                    "evictionHard": {"memory.available": _mi(s.memory_hard_mib)},
                }
            },
        ),
        Scenario(
            name="LocalStorageEviction",
            node="local-storage",
            specs=(
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "container-disk-hog",
                        LOTS_OF_DISK_MB,
                        _empty_dir(),
                        scale=s,
                        fills=True,
                    ),
                ),
                PodEvictSpec(0, innocent_pod()),
            ),
            condition=DISK_PRESSURE,
            starved_resource="ephemeral-storage",
            thresholds=lambda f: [
                f"--eviction-hard=nodefs.available<{f.nodefs_available - consumed_disk}"
            ],
        ),
        Scenario(
            name="LocalStorageSoftEviction",
            node="local-storage-soft",
            specs=(
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "container-disk-hog",
                        LOTS_OF_DISK_MB,
                        _empty_dir(),
                        scale=s,
                        fills=True,
                    ),
                ),
                PodEvictSpec(0, innocent_pod()),
            ),
            condition=DISK_PRESSURE,
            starved_resource="ephemeral-storage",
            thresholds=lambda f: [
                f"--eviction-soft=nodefs.available<{f.nodefs_available - consumed_disk}",
                f"--eviction-soft-grace-period=nodefs.available={s.soft_grace_s}s",
                "--eviction-max-pod-grace-period=30",
                "--eviction-hard=memory.available<0%",
            ],
            soft_grace_s=s.soft_grace_s,
        ),
        Scenario(
            name="LocalStorageCapacityIsolationEviction",
            node="capacity-isolation",
            specs=(
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "emptydir-disk-sizelimit",
                        over,
                        _empty_dir(sizeLimit=_mi(s.limit_mib)),
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "container-disk-limit", over, None, {"limits": ephemeral}, scale=s
                    ),
                ),
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "container-emptydir-disk-limit",
                        over,
                        _empty_dir(),
                        {"limits": ephemeral},
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    0,
                    disk_consuming_pod(
                        "emptydir-memory-sizelimit",
                        over,
                        _empty_dir(medium="Memory", sizeLimit=_mi(s.limit_mib)),
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    0,
                    disk_consuming_pod(
                        "emptydir-disk-below-sizelimit",
                        under,
                        _empty_dir(sizeLimit=_mi(s.limit_mib)),
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    0,
                    disk_consuming_pod(
                        "container-disk-below-sizelimit",
                        under,
                        None,
                        {"limits": ephemeral},
                        scale=s,
                    ),
                ),
            ),
            condition=None,
            starved_resource=None,
            thresholds=lambda f: ["--eviction-hard=memory.available<0%"],
        ),
        Scenario(
            name="LocalStorageCapacityIsolationMemoryBackedVolumeEviction",
            node="memory-backed-volume",
            specs=(
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "emptydir-memory-over-volume-sizelimit",
                        2 * s.limit_mib,
                        _empty_dir(medium="Memory", sizeLimit=_mi(s.limit_mib)),
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    0,
                    disk_consuming_pod(
                        "emptydir-memory-over-container-sizelimit",
                        2 * s.limit_mib,
                        _empty_dir(medium="Memory"),
                        {"limits": ephemeral},
                        scale=s,
                    ),
                ),
                PodEvictSpec(
                    0,
                    disk_consuming_pod(
                        "emptydir-memory-innocent",
                        s.limit_mib * 4 // 5,
                        _empty_dir(medium="Memory", sizeLimit=_mi(s.limit_mib)),
                        scale=s,
                    ),
                ),
            ),
            condition=None,
            starved_resource=None,
            thresholds=lambda f: ["--eviction-hard=memory.available<0%"],
            node_config={"kubelet": {"featureGates": {"SizeMemoryBackedVolumes": False}}},
        ),
        Scenario(
            name="PriorityMemoryEvictionOrdering",
            node="priority-memory",
            specs=(
                PodEvictSpec(
                    2,
                    memhog_pod("memory-hog-pod", "memory-hog", None, rate_mib_s=s.hog_rate_mib_s),
                ),
                PodEvictSpec(
                    1,
                    memhog_pod(
                        "high-priority-memory-hog-pod",
                        "high-priority-memory-hog",
                        None,
                        rate_mib_s=s.hog_rate_mib_s,
                        priority_class=HIGH_PRIORITY_CLASS,
                    ),
                ),
                PodEvictSpec(
                    0,
                    memhog_pod(
                        "guaranteed-pod",
                        "guaranteed-pod",
                        guaranteed_memory,
                        rate_mib_s=s.hog_rate_mib_s,
                    ),
                ),
            ),
            condition=MEMORY_PRESSURE,
            starved_resource="memory",
            thresholds=lambda f: [
                "--eviction-hard=memory.available<"
                f"{f.memory_available - s.memory_consumed_mib * MIB}"
            ],
            node_config={"kubelet": {"evictionHard": {"memory.available": _mi(ordering_hard)}}},
        ),
        Scenario(
            name="PriorityLocalStorageEvictionOrdering",
            node="priority-disk",
            specs=(
                PodEvictSpec(
                    2,
                    disk_consuming_pod(
                        "best-effort-disk", LOTS_OF_DISK_MB, _empty_dir(), scale=s, fills=True
                    ),
                ),
                PodEvictSpec(
                    1,
                    disk_consuming_pod(
                        "high-priority-disk",
                        LOTS_OF_DISK_MB,
                        _empty_dir(),
                        priority_class=HIGH_PRIORITY_CLASS,
                        scale=s,
                        fills=True,
                    ),
                ),
                PodEvictSpec(
                    0,
                    # 99 % of its request: a file's own blocks must not tip it over
                    disk_consuming_pod(
                        "guaranteed-disk", 29, _empty_dir(), guaranteed_disk, scale=s
                    ),
                ),
            ),
            condition=DISK_PRESSURE,
            starved_resource="ephemeral-storage",
            thresholds=lambda f: [
                "--eviction-hard=nodefs.available<"
                f"{f.nodefs_available - s.ordering_disk_consumed_mib * MIB}"
            ],
        ),
        Scenario(
            name="PriorityPidEvictionOrdering",
            node="priority-pid",
            specs=(
                PodEvictSpec(
                    2, pid_consuming_pod("fork-bomb-container-with-low-priority", s.processes)
                ),
                PodEvictSpec(0, _with_priority_class(innocent_pod(), HIGH_PRIORITY_CLASS)),
                PodEvictSpec(
                    1,
                    pid_consuming_pod(
                        "fork-bomb-container-with-high-priority",
                        s.processes,
                        priority_class=HIGH_PRIORITY_CLASS,
                    ),
                ),
            ),
            condition=PID_PRESSURE,
            starved_resource=None,
            thresholds=lambda f: [
                f"--eviction-hard=pid.available<{f.pids_available - s.pids_consumed}"
            ],
        ),
        Scenario(
            name="InodeEviction",
            node="inode",
            specs=(
                PodEvictSpec(
                    1, inode_consuming_pod("volume-inode-hog", LOTS_OF_FILES, _empty_dir(), scale=s)
                ),
                PodEvictSpec(0, innocent_pod()),
            ),
            condition=DISK_PRESSURE,
            starved_resource="inodes",
            thresholds=lambda f: [
                f"--eviction-hard=nodefs.inodesFree<{f.nodefs_inodes_free - s.inodes_consumed}"
            ],
        ),
    ]
    return out


def _with_priority_class(pod: JSONDict, name: str) -> JSONDict:
    pod["spec"]["priorityClassName"] = name
    return pod


def process_node_document(scenario: Scenario, scale: Scale, *, disk_path: str) -> JSONDict:
    """The scenario's node as a kubesim ``ProcessNode``: its memory, a tmpfs disk at
    ``disk_path``, and the kubelet settings the scenario sets."""
    doc: JSONDict = {
        "apiVersion": "kubesim.io/v1alpha1",
        "kind": "ProcessNode",
        "metadata": {"name": scenario.node},
        "memoryCapacity": _mi(scale.node_memory_mib),
        "filesystem": {
            "path": disk_path,
            "size": _mi(scale.node_disk_mib),
            "inodes": scale.node_inodes,
        },
    }
    doc.update(scenario.node_config)
    return doc


def node_object(name: str) -> JSONDict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }

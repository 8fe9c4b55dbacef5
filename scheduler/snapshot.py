"""The cluster as the scheduler sees it: ``NodeInfo`` per node and a ``Snapshot`` of them all.

kube-scheduler's cache and snapshot (``pkg/scheduler/framework/types.go``,
``pkg/scheduler/backend/cache``), changed in place as pods come and go so that repeated
decisions rebuild nothing; ``ResourceColumns`` and the change log are indexes of our own for
whole-cluster answers. An owned NodeInfo's totals change only through ``add_pod`` /
``remove_pod`` / ``set_node``, which keep every index true.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from typing import Any, Final, Protocol, TypeVar

from kube.objects import (
    KubeObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    Taint,
    pod_updated,
)

__all__ = [
    "COLUMN_RESOURCES",
    "NodeInfo",
    "NodeWindow",
    "PodObserver",
    "ResourceColumns",
    "Snapshot",
    "label_values",
    "node_values",
]

T = TypeVar("T")

_generation: Final = itertools.count(1)


_MAX_RESOURCE_CLASSES: Final = 65536
_CHANGE_LOG_MIN: Final = 4096  # the pod-change log keeps at least this many entries
# NodeInfo's search for a pod looks among its last _LAST_PODS (a pod assumed moments ago),
# then its last _RECENT_PODS, before the rest.
_LAST_PODS: Final = 16
_RECENT_PODS: Final = 1024

COLUMN_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")
"""The resources ``ResourceColumns`` keeps (plus pod slots); scalar resources have none."""


def next_generation() -> int:
    return next(_generation)


def _has_affinity(pod: Pod) -> bool:
    a = pod.affinity
    return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)


def _has_required_anti_affinity(pod: Pod) -> bool:
    a = pod.affinity
    return a is not None and a.pod_anti_affinity is not None and bool(a.pod_anti_affinity.required)


class PodObserver(Protocol):
    """An index a plugin keeps over a snapshot's bound pods (``Snapshot.add_pod_observer``):
    told of every pod an owned NodeInfo gains or loses, with that NodeInfo."""

    def pod_added(self, ni: NodeInfo, pod: Pod) -> None: ...
    def pod_removed(self, ni: NodeInfo, pod: Pod) -> None: ...


class NodeInfo:
    """One node and the pods bound to it, with running totals.

    The per-node aggregates kube-scheduler keeps (``Requested``, ``NonZeroRequested``, pods
    with affinity / required anti-affinity, host ports), updated incrementally as pods are
    added and removed, so no decision re-sums a node's pods. ``requested`` sums the pods'
    effective requests (cpu in millicores); the pod count is ``len(pods)`` and is checked
    against ``allocatable["pods"]``. Every change bumps ``generation`` (a process-wide
    counter, as in kube) so callers can cache per-node results and know when they are stale.

    ``resource_class`` numbers the node's resource amounts (allocatable, requested, non-zero
    requested): two owned nodes share a class only when those are equal (and nearly always
    when they are). The resource scorers compute one score per class and spread it to the
    nodes at C level, since on a big cluster most nodes look alike; clones have no class (-1)
    and are scored one by one.
    """

    __slots__ = (
        "allocatable",
        "generation",
        "memo",
        "name",
        "node",
        "non_zero_requested",
        "owner",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "position",
        "requested",
        "resource_class",
        "used_ports",
    )

    def __init__(self, node: Node | None, pods: Iterable[Pod] = ()) -> None:
        self.node = node
        self.name = node.name if node is not None else ""  # read per node per decision
        self.allocatable: dict[str, int] = dict(node.allocatable) if node else {}
        self.pods: list[Pod] = []
        self.requested: dict[str, int] = {}
        self.non_zero_requested: dict[str, int] = {"cpu": 0, "memory": 0}
        self.pods_with_affinity: list[Pod] = []
        self.pods_with_required_anti_affinity: list[Pod] = []
        self.used_ports: dict[tuple[str, str, int], int] = {}
        self.generation = next_generation()
        # The Snapshot that lists this node in its affinity indexes (clones have none), and
        # the node's index in its ``node_info_list`` (None when it has no owner).
        self.owner: Snapshot | None = None
        self.position: int | None = None
        # Results plugins derived from this node, keyed by plugin and pod shape; emptied on
        # every change, so an entry is always about the node as it is now.
        self.memo: dict[Hashable, Any] = {}
        # Set by the owning Snapshot: equal for nodes with equal allocatable, requested and
        # non-zero requested amounts (-1: not known, as for clones).
        self.resource_class = -1
        for pod in pods:
            self.add_pod(pod)

    def set_node(self, node: Node) -> None:
        old = self.node
        self.node = node
        self.name = node.name
        self.allocatable = dict(node.allocatable)
        self.generation = next_generation()
        self.memo.clear()
        if self.owner is not None:
            self.owner.layout_generation += 1
            self.owner.count_node_traits(old, -1)
            self.owner.count_node_traits(node, 1)
            self.owner.node_resources_changed(self)
            self.owner.relabel(self)

    def add_pod(self, pod: Pod) -> None:
        self.pods.append(pod)
        req = self.requested
        for k, v in pod.requests.items():
            req[k] = req.get(k, 0) + v
        nz = self.non_zero_requested
        nz["cpu"] += pod.non_zero_requests["cpu"]
        nz["memory"] += pod.non_zero_requests["memory"]
        if pod.affinity is not None:
            if _has_affinity(pod):
                self.pods_with_affinity.append(pod)
            if _has_required_anti_affinity(pod):
                self.pods_with_required_anti_affinity.append(pod)
            if self.owner is not None:
                self.owner.reindex_affinity(self)
        for port in host_ports(pod):
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        self.generation = next_generation()
        if self.memo:
            self.memo.clear()
        owner = self.owner
        if owner is not None:
            owner.node_resources_changed(self)
            for observer in owner.pod_observers:
                observer.pod_added(self, pod)

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with ``pod.key``; False when it is not on this node. Given the
        stored object itself, it is found at C speed (a node may hold thousands of pods),
        looking first among the last pods added: the pod a binding replaces was assumed
        moments ago, and a scan from the front made each bind O(pods on the node)."""
        key = pod.key
        i = _position(self.pods, pod)
        if i < 0:
            return False
        p = self.pods[i]
        del self.pods[i]
        req = self.requested
        for k, v in p.requests.items():
            req[k] = req.get(k, 0) - v
        nz = self.non_zero_requested
        nz["cpu"] -= p.non_zero_requests["cpu"]
        nz["memory"] -= p.non_zero_requests["memory"]
        if p.affinity is not None:
            self.pods_with_affinity = [x for x in self.pods_with_affinity if x.key != key]
            self.pods_with_required_anti_affinity = [
                x for x in self.pods_with_required_anti_affinity if x.key != key
            ]
            if self.owner is not None:
                self.owner.reindex_affinity(self)
        for port in host_ports(p):
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        self.generation = next_generation()
        if self.memo:
            self.memo.clear()
        owner = self.owner
        if owner is not None:
            owner.node_resources_changed(self)
            for observer in owner.pod_observers:
                observer.pod_removed(self, p)
        return True

    def replace_pod(self, old: Pod, new: Pod) -> bool:
        """Put ``new`` where the stored ``old`` is, when nothing the node keeps per pod can
        differ between them (``same_footprint``): no total, port, affinity list or observer
        changes, so none is recomputed. False (nothing done) when ``old`` is not stored here."""
        i = _position(self.pods, old)
        if i < 0 or self.pods[i] is not old:
            return False
        self.pods[i] = new
        self.generation = next_generation()
        if self.memo:
            self.memo.clear()
        return True

    def clone(self) -> NodeInfo:
        """An independent copy (``NodeInfo.Snapshot``): pods are shared, lists are not."""
        out = NodeInfo.__new__(NodeInfo)
        out.node = self.node
        out.name = self.name
        out.allocatable = self.allocatable
        out.pods = list(self.pods)
        out.requested = dict(self.requested)
        out.non_zero_requested = dict(self.non_zero_requested)
        out.pods_with_affinity = list(self.pods_with_affinity)
        out.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        out.used_ports = dict(self.used_ports)
        out.generation = self.generation
        out.owner = None
        out.position = None
        out.memo = {}
        out.resource_class = -1
        return out

    def __repr__(self) -> str:
        return f"<NodeInfo {self.name} pods={len(self.pods)} requested={self.requested}>"


class NodeWindow(list[NodeInfo]):
    """Consecutive nodes of a snapshot: ``self[j]`` is ``owner.node_info_list[start + j]``.

    The filter walk hands its chunks over in this form, so a batch filter can slice the
    snapshot's per-node columns (``Snapshot.label_column``) instead of visiting each node. A
    slice of it is a plain list; do not change one in place.
    """

    __slots__ = ("owner", "start")

    def __init__(self, owner: Snapshot, start: int, count: int) -> None:
        super().__init__()
        self.extend(owner.node_info_list[start : start + count])  # faster than __init__'s copy
        self.owner = owner
        self.start = start

    def column(self, full: list[T]) -> list[T]:
        """This window's part of one of the owner's per-node columns."""
        return full[self.start : self.start + len(self)]


def node_values(
    node_infos: list[NodeInfo],
    column: Callable[[Snapshot], list[T]],
    value_of: Callable[[Node | None], T],
) -> list[T]:
    """``value_of(ni.node)`` for each node, read from the owning snapshot's ``column`` when the
    nodes have one (a ``NodeWindow``, or nodes that know their position): a walk reads one
    list instead of chasing each node's objects, a cache miss per hop on large clusters."""
    if isinstance(node_infos, NodeWindow):
        return node_infos.column(column(node_infos.owner))
    owner = node_infos[0].owner if node_infos else None
    if owner is not None:
        full = column(owner)
        with contextlib.suppress(TypeError):  # a node without a position: None is no index
            return [
                full[ni.position] if ni.owner is owner else value_of(ni.node)  # type: ignore[index]
                for ni in node_infos
            ]
    return [value_of(ni.node) for ni in node_infos]


def label_values(node_infos: list[NodeInfo], key: str) -> list[str | None]:
    """Each node's value of label ``key`` (None: no such label); see ``node_values``."""
    return node_values(node_infos, lambda s: s.label_column(key), _label_of(key))


def _label_of(key: str) -> Callable[[Node | None], str | None]:
    def value(node: Node | None) -> str | None:
        return node.labels.get(key) if node is not None else None

    return value


def _position(pods: list[Pod], pod: Pod) -> int:
    """Where ``pod`` (the stored object, else a pod with its key) is in ``pods``; -1 if absent.
    Identity is compared in C, the last ``_LAST_PODS``, then the last ``_RECENT_PODS`` first:
    ``list.index`` scans forwards, and a node may hold thousands of pods."""
    end = len(pods)
    # Windows from the end backwards, each scanned once (Pods compare by identity).
    for back in (_LAST_PODS, _RECENT_PODS, end):
        start = max(0, len(pods) - back)
        try:
            return pods.index(pod, start, end)
        except ValueError:
            end = start
        if not end:
            break
    key = pod.key
    return next((i for i, p in enumerate(pods) if p.key == key), -1)


def same_footprint(a: Pod, b: Pod) -> bool:
    """Whether ``a`` and ``b`` count the same on a node: equal in everything but status and
    bookkeeping (``kube.objects.pod_updated``; labels, namespace, terminating, affinity terms,
    ports, volumes, claims, requests are what the node and the plugins' indexes keep), and no
    pod affinity terms (the node's affinity lists hold the pod itself)."""
    return not _has_affinity(a) and not pod_updated(a, b)


def _node_traits(node: Node) -> set[str]:
    traits = {t.effect for t in node.taints}
    if node.unschedulable:
        traits.add("unschedulable")
    return traits


def host_ports(pod: Pod) -> Iterator[tuple[str, str, int]]:
    """``schedutil.GetHostPorts``: sidecar (restartable init) containers first, then the app
    containers; ``(host_ip, protocol, host_port)`` with the defaults ``0.0.0.0`` and ``TCP``."""
    for c in pod.init_containers:
        if c.is_restartable_init:
            for port in c.ports:
                if port.host_port > 0:
                    yield (port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)
    for c in pod.containers:
        for port in c.ports:
            if port.host_port > 0:
                yield (port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)


class ResourceColumns:
    """The range of free and allocatable amounts over all nodes, kept incrementally.

    For each column — ``free:<r>`` (``allocatable[r] - requested[r]``) and
    ``allocatable:<r>`` for each of ``COLUMN_RESOURCES``, and ``free:pods`` (pod slots left)
    — a count of nodes per value, so ``span`` (smallest and largest value over all nodes)
    costs a scan of the distinct values rather than of the nodes. Missing entries count as 0,
    as ``fits_request`` reads them.

    It exists so NodeResourcesFit can answer for the whole cluster from the smallest and
    largest value ("no node has 3 CPU free") instead of a Python step per node; it must always
    equal what the NodeInfos hold (``of`` rebuilds it from them, and the tests compare the two
    after random changes).
    """

    __slots__ = ("counts", "rows")

    COLUMNS: Final = (
        *(f"free:{r}" for r in COLUMN_RESOURCES),
        *(f"allocatable:{r}" for r in COLUMN_RESOURCES),
        "free:pods",
    )

    def __init__(self) -> None:
        self.rows: dict[str, tuple[int, ...]] = {}  # node name -> its value per column
        self.counts: tuple[dict[int, int], ...] = tuple({} for _ in self.COLUMNS)

    @classmethod
    def of(cls, node_infos: Iterable[NodeInfo]) -> ResourceColumns:
        out = cls()
        for ni in node_infos:
            out.update(ni)
        return out

    @staticmethod
    def row(ni: NodeInfo) -> tuple[int, ...]:
        alloc, req = ni.allocatable, ni.requested
        return (
            *(alloc.get(r, 0) - req.get(r, 0) for r in COLUMN_RESOURCES),
            *(alloc.get(r, 0) for r in COLUMN_RESOURCES),
            alloc.get("pods", 0) - len(ni.pods),
        )

    def update(self, ni: NodeInfo) -> None:
        """Take the current totals of ``ni`` (added or changed)."""
        new = self.row(ni)
        old = self.rows.get(ni.name)
        if old == new:
            return
        self.rows[ni.name] = new
        for counts, before, after in zip(self.counts, old or new, new, strict=True):
            if old is not None:
                if before == after:
                    continue
                left = counts[before] - 1
                if left:
                    counts[before] = left
                else:
                    del counts[before]
            counts[after] = counts.get(after, 0) + 1

    def span(self, column: str) -> tuple[int, int] | None:
        """(smallest, largest) value of ``column`` over all nodes; None without nodes or for
        an unknown column."""
        try:
            counts = self.counts[self.COLUMNS.index(column)]
        except ValueError:
            return None
        if not counts:
            return None
        return min(counts), max(counts)


class Snapshot:
    """Nodes, bound and nominated pods, PDBs, PriorityClasses and Namespaces.

    Indexes nodes by name (and keeps their order: sampled preemption and the round-robin node
    walk depend on it), bound pods by ``namespace/name``, nominated pods by node (in insertion
    order, like the nominator), PDBs, PriorityClasses and Namespaces, and the Services,
    ReplicationControllers, ReplicaSets and StatefulSets whose selectors PodTopologySpread
    needs for its system default constraints (``helper.DefaultSelector``). It also counts, per
    image name of the nodes' ``status.images``, how many nodes hold it and its size (the
    scheduler cache's ``imageStates``, read by ImageLocality). Changed in place with
    ``add_pod`` / ``remove_pod`` / ``bind_pod``.

    ``layout_generation`` changes whenever a node is added, removed or replaced, and
    ``pod_changes`` lists the nodes whose pods changed since a cursor (a bounded log; a new
    version of a pod with the same footprint, such as a status write, changes nothing an index
    counts and is not listed), so an
    index over every node (PodTopologySpread's counts per topology domain) can be brought up to
    date by looking at those nodes only, and rebuilt when the layout changed or the log no
    longer reaches back.
    """

    __slots__ = (
        "__weakref__",  # lets callers keep derived indexes per snapshot (preemption's cache)
        "_bound",
        "_by_name",
        "_change_base",
        "_change_log",
        "_classes",
        "_columns",
        "_image_nodes",
        "_image_sizes",
        "_names",
        "_node_columns",
        "_node_traits",
        "_nominated",
        "_orphans",
        "_pending",
        "_positions",
        "_taint_sets",
        "_with_affinity",
        "_with_required_anti_affinity",
        "generation",
        "layout_generation",
        "namespaces",
        "node_info_list",
        "pdbs",
        "pod_observers",
        "priority_classes",
        "replica_sets",
        "replication_controllers",
        "services",
        "stateful_sets",
    )

    def __init__(self) -> None:
        self.node_info_list: list[NodeInfo] = []
        self._by_name: dict[str, NodeInfo] = {}
        self._bound: dict[str, Pod] = {}  # bound pod key -> the stored pod
        self._pending: dict[str, Pod] = {}  # unbound pods by key
        self._nominated: dict[str, dict[str, Pod]] = {}  # node -> {pod key: pod}, ordered
        self._orphans: dict[str, list[Pod]] = {}  # pods bound to nodes not (yet) known
        self.pdbs: list[PodDisruptionBudget] = []
        self.priority_classes: dict[str, PriorityClass] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.generation = 0
        self._with_affinity: dict[str, NodeInfo] = {}
        self._with_required_anti_affinity: dict[str, NodeInfo] = {}
        self._node_traits: dict[str, int] = {}
        self._image_nodes: dict[str, int] = {}  # image name -> nodes that have it
        self._image_sizes: dict[str, int] = {}  # image name -> size of the first one seen
        self.services: list[Service] = []
        self.replication_controllers: list[ReplicationController] = []
        self.replica_sets: list[ReplicaSet] = []
        self.stateful_sets: list[StatefulSet] = []
        self._columns: ResourceColumns | None = None  # built on first use
        self._classes: dict[Hashable, int] = {}  # resource amounts -> NodeInfo.resource_class
        self._names: list[str] | None = None
        self._positions: dict[str, int] | None = None
        # Per-node columns in node_info_list order, built on first use: name -> (how a
        # node's value is read, the values).
        self._node_columns: dict[Hashable, tuple[Callable[[Node | None], Any], list[Any]]] = {}
        self._taint_sets: dict[tuple[Taint, ...], tuple[Taint, ...]] = {}
        self.layout_generation = 0
        self._change_log: list[NodeInfo] = []  # nodes whose pods changed, oldest first
        self._change_base = 0  # the cursor of _change_log[0]
        self.pod_observers: list[PodObserver] = []

    @classmethod
    def from_objects(cls, objects: Iterable[KubeObject]) -> Snapshot:
        """Build from typed objects in any order (nodes first, then everything else)."""
        snap = cls()
        objs = list(objects)
        for o in objs:
            if isinstance(o, Node):
                snap.add_node(o)
        for o in objs:
            if isinstance(o, Pod):
                snap.add_pod(o)
            elif isinstance(o, PodDisruptionBudget):
                snap.add_pdb(o)
            elif isinstance(o, PriorityClass):
                snap.priority_classes[o.name] = o
            elif isinstance(o, Namespace):
                snap.namespaces[o.name] = o
            elif isinstance(o, Service):
                snap.services.append(o)
            elif isinstance(o, ReplicationController):
                snap.replication_controllers.append(o)
            elif isinstance(o, ReplicaSet):
                snap.replica_sets.append(o)
            elif isinstance(o, StatefulSet):
                snap.stateful_sets.append(o)
        return snap

    # --- nodes -------------------------------------------------------------------------------

    def add_node(self, node: Node) -> NodeInfo:
        self.layout_generation += 1
        existing = self._by_name.get(node.name)
        if existing is not None:
            existing.set_node(node)
            self.generation += 1
            return existing
        ni = NodeInfo(node, self._orphans.pop(node.name, ()))
        ni.owner = self
        for observer in self.pod_observers:
            for pod in ni.pods:
                observer.pod_added(ni, pod)
        self.node_resources_changed(ni)
        self.reindex_affinity(ni)
        self.count_node_traits(node, 1)
        ni.position = len(self.node_info_list)
        self.node_info_list.append(ni)
        for value_of, column in self._node_columns.values():
            column.append(value_of(node))
        self._by_name[node.name] = ni
        self._columns = None
        self._names = None
        self._positions = None
        self.generation += 1
        return ni

    def update_node(self, node: Node) -> NodeInfo:
        return self.add_node(node)

    def remove_node(self, name: str) -> None:
        ni = self._by_name.pop(name, None)
        if ni is None:
            return
        self.layout_generation += 1
        at = self.node_info_list.index(ni)
        del self.node_info_list[at]
        for _, column in self._node_columns.values():
            del column[at]
        for i in range(at, len(self.node_info_list)):
            self.node_info_list[i].position = i
        ni.position = None
        for observer in self.pod_observers:
            for pod in ni.pods:
                observer.pod_removed(ni, pod)
        ni.owner = None
        ni.resource_class = -1
        self.count_node_traits(ni.node, -1)
        self._with_affinity.pop(name, None)
        self._with_required_anti_affinity.pop(name, None)
        if ni.pods:
            self._orphans[name] = list(ni.pods)
        self._columns = None
        self._names = None
        self._positions = None
        self.generation += 1

    def node_info(self, name: str) -> NodeInfo:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f'node "{name}" not found in the snapshot') from None

    def get_node_info(self, name: str) -> NodeInfo | None:
        return self._by_name.get(name)

    def node_names(self) -> list[str]:
        """The node names in node order (shared: do not change it)."""
        if self._names is None:
            self._names = [ni.name for ni in self.node_info_list]
        return self._names

    def node_positions(self) -> Mapping[str, int]:
        """Node name -> its index in ``node_info_list`` (shared: do not change it)."""
        if self._positions is None:
            self._positions = {name: i for i, name in enumerate(self.node_names())}
        return self._positions

    def node_column(self, name: Hashable, value_of: Callable[[Node | None], T]) -> list[T]:
        """``value_of(ni.node)`` for each node in ``node_info_list`` order, kept as nodes come,
        go and change (shared: do not change it); ``name`` says which column. A NodeInfo's
        ``position`` is its index here."""
        entry = self._node_columns.get(name)
        if entry is None:
            entry = self._node_columns[name] = (
                value_of,
                [value_of(ni.node) for ni in self.node_info_list],
            )
        column: list[T] = entry[1]
        return column

    def label_column(self, key: str) -> list[str | None]:
        """Each node's value of label ``key`` (None: no such label), as ``node_column``."""
        return self.node_column(("label", key), _label_of(key))

    def taints_column(self) -> list[tuple[Taint, ...]]:
        """Each node's taints, equal ones as one object, as ``node_column``."""
        return self.node_column("taints", self._canonical_taints)

    def taint_sets(self) -> Collection[tuple[Taint, ...]]:
        """The distinct taints values ``taints_column`` holds, each the one object its entries
        share (a few on most clusters). Values of removed or retainted nodes may linger, at
        most about twice as many as there are nodes: then only the column's are kept."""
        return self._taint_sets.values()

    def _canonical_taints(self, node: Node | None) -> tuple[Taint, ...]:
        taints = node.taints if node is not None else ()
        sets = self._taint_sets
        found = sets.get(taints)
        if found is not None:
            return found
        entry = self._node_columns.get("taints")
        if entry is not None and len(sets) >= 2 * len(self.node_info_list) + 8:
            # A long-lived snapshot sees nodes come and go with taints of their own; keep
            # the sets the column still holds (the same objects: its entries stay in ``sets``).
            kept = {id(t): t for t in entry[1]}
            sets.clear()
            sets.update((t, t) for t in kept.values())
        return sets.setdefault(taints, taints)

    def relabel(self, ni: NodeInfo) -> None:
        """Called by an owned NodeInfo after its Node was replaced."""
        if ni.position is None:
            return
        for value_of, column in self._node_columns.values():
            column[ni.position] = value_of(ni.node)

    def resource_columns(self) -> ResourceColumns:
        """The columnar view of free capacity (shared: do not change it)."""
        if self._columns is None:
            self._columns = ResourceColumns.of(self.node_info_list)
        return self._columns

    def pod_changes(self, since: int) -> tuple[int, list[NodeInfo] | None]:
        """The cursor of now, and the nodes whose pods changed after cursor ``since`` (in
        order, repeats included); None instead of the nodes when the log no longer goes back
        that far. Node additions and replacements are not listed: they change
        ``layout_generation``."""
        end = self._change_base + len(self._change_log)
        if since < self._change_base or since > end:
            return end, None
        return end, self._change_log[since - self._change_base :]

    def node_resources_changed(self, ni: NodeInfo) -> None:
        """Called by an owned NodeInfo after its pods or its Node changed."""
        log = self._change_log
        log.append(ni)
        if len(log) > _CHANGE_LOG_MIN and len(log) > 4 * len(self.node_info_list):
            drop = len(log) // 2
            del log[:drop]
            self._change_base += drop
        if self._columns is not None:
            self._columns.update(ni)
        key = (
            tuple(sorted(ni.allocatable.items())),
            tuple(sorted(ni.requested.items())),
            ni.non_zero_requested["cpu"],
            ni.non_zero_requested["memory"],
        )
        classes = self._classes
        found = classes.get(key)
        if found is None:
            if len(classes) >= _MAX_RESOURCE_CLASSES:
                self._renumber_resource_classes()
            found = classes[key] = len(classes)
        ni.resource_class = found

    def _renumber_resource_classes(self) -> None:
        """Forget classes no node has any more (many distinct amounts over a long life)."""
        self._classes = {}
        for ni in self.node_info_list:
            if ni.resource_class >= 0:
                ni.resource_class = -1
                self.node_resources_changed(ni)

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        """``HavePodsWithAffinityList``: nodes hosting a pod with pod (anti-)affinity.

        Kept as an index (updated by the NodeInfos themselves) so InterPodAffinity does not
        scan every node for every pod. Order: when each node first qualified.
        """
        return list(self._with_affinity.values())

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        """``HavePodsWithRequiredAntiAffinityList``: nodes hosting a pod with required
        anti-affinity terms."""
        return list(self._with_required_anti_affinity.values())

    def count_node_traits(self, node: Node | None, delta: int) -> None:
        """Called by owned NodeInfos when their Node comes, goes or is replaced."""
        if node is None:
            return
        traits = self._node_traits
        for trait in _node_traits(node):
            left = traits.get(trait, 0) + delta
            if left:
                traits[trait] = left
            else:
                del traits[trait]
        if node.images:
            self._count_images(node, delta)

    def _count_images(self, node: Node, delta: int) -> None:
        counts, sizes = self._image_nodes, self._image_sizes
        # A name listed twice on one node still counts that node once.
        seen: dict[str, int] = {}
        for image in node.images:
            for name in image.names:
                seen.setdefault(name, image.size_bytes)
        for name, size in seen.items():
            left = counts.get(name, 0) + delta
            if left > 0:
                counts[name] = left
                sizes.setdefault(name, size)
            else:
                counts.pop(name, None)
                sizes.pop(name, None)

    def image_state(self, name: str) -> tuple[int, int] | None:
        """``ImageStateSummary`` of an image name: (size in bytes, number of nodes with it)."""
        num_nodes = self._image_nodes.get(name)
        if num_nodes is None:
            return None
        return self._image_sizes[name], num_nodes

    def has_images(self) -> bool:
        """Whether any node reports ``status.images``."""
        return bool(self._image_nodes)

    def has_unschedulable_nodes(self) -> bool:
        """Whether any node is cordoned (``spec.unschedulable``)."""
        return "unschedulable" in self._node_traits

    def has_nodes_with_taint_effect(self, effect: str) -> bool:
        """Whether any node has a taint with this effect.

        These counts let plugins answer Skip (or take a shortcut) when no node could make
        them reject or score differently, instead of looking at every node.
        """
        return effect in self._node_traits

    def add_pod_observer(self, observer: PodObserver) -> None:
        """Tell ``observer`` of every bound pod from now on (it has walked the ones there are:
        ``node_info_list``). A node that goes or comes takes its pods with it."""
        self.pod_observers.append(observer)

    def reindex_affinity(self, ni: NodeInfo) -> None:
        """Called by an owned NodeInfo after a pod with affinity was added or removed."""
        name = ni.name
        if ni.pods_with_affinity:
            self._with_affinity[name] = ni
        else:
            self._with_affinity.pop(name, None)
        if ni.pods_with_required_anti_affinity:
            self._with_required_anti_affinity[name] = ni
        else:
            self._with_required_anti_affinity.pop(name, None)

    def __len__(self) -> int:
        return len(self.node_info_list)

    # --- pods --------------------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """Add a bound pod to its node, or an unbound one to the pending (and nominated) set.

        A new version of a pod bound to the same node whose footprint is unchanged (a status
        write, the informer's view of a binding the scheduler assumed) takes the stored one's
        place: the node's totals, ports, affinity lists, columns and observers stay as they
        are, as they would be recomputed to the same values."""
        stored = self._bound.get(pod.key)
        if (
            stored is not None
            and pod.node_name
            and stored.node_name == pod.node_name
            and same_footprint(stored, pod)
        ):
            ni = self._by_name.get(pod.node_name)
            if ni is not None and ni.replace_pod(stored, pod):
                self._bound[pod.key] = pod
                self.generation += 1
                return
        self.remove_pod(pod)
        if pod.node_name:
            self._bound[pod.key] = pod
            ni = self._by_name.get(pod.node_name)
            if ni is None:
                self._orphans.setdefault(pod.node_name, []).append(pod)
            else:
                ni.add_pod(pod)
        else:
            self._pending[pod.key] = pod
            if pod.nominated_node_name:
                self._nominated.setdefault(pod.nominated_node_name, {})[pod.key] = pod
        self.generation += 1

    def update_pod(self, pod: Pod) -> None:
        self.add_pod(pod)

    def remove_pod(self, pod: Pod | str) -> Pod | None:
        """Remove the pod with this key (or ``pod.key``); returns the stored value."""
        key = pod if isinstance(pod, str) else pod.key
        stored = self._bound.pop(key, None)
        if stored is not None:
            node_name = stored.node_name
            self.generation += 1
            ni = self._by_name.get(node_name)
            if ni is not None:
                return stored if ni.remove_pod(stored) else None
            orphans = self._orphans.get(node_name, [])
            for i, p in enumerate(orphans):
                if p.key == key:
                    del orphans[i]
                    return p
            return None
        pending = self._pending.pop(key, None)
        if pending is not None:
            self.generation += 1
            if pending.nominated_node_name:
                nominated = self._nominated.get(pending.nominated_node_name)
                if nominated is not None:
                    nominated.pop(key, None)
                    if not nominated:
                        del self._nominated[pending.nominated_node_name]
        return pending

    def bind_pod(self, pod: Pod, node_name: str) -> Pod:
        """Place ``pod`` on ``node_name`` (clearing its nomination); returns the bound value."""
        self.remove_pod(pod)
        bound = pod.with_changes(node_name=node_name, nominated_node_name="")
        self.add_pod(bound)
        return bound

    def get_pod(self, key: str) -> Pod | None:
        stored = self._bound.get(key)
        return stored if stored is not None else self._pending.get(key)

    def bound_pods(self) -> Iterator[Pod]:
        for ni in self.node_info_list:
            yield from ni.pods

    def pending_pods(self) -> list[Pod]:
        return list(self._pending.values())

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        nominated = self._nominated.get(node_name)
        return list(nominated.values()) if nominated else []

    def nominated_node_names(self) -> list[str]:
        return list(self._nominated)

    # --- policy objects ----------------------------------------------------------------------

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        self.remove_pdb(pdb.key)
        self.pdbs.append(pdb)
        self.generation += 1

    def update_pdb(self, pdb: PodDisruptionBudget) -> None:
        for i, p in enumerate(self.pdbs):
            if p.key == pdb.key:
                self.pdbs[i] = pdb
                self.generation += 1
                return
        self.add_pdb(pdb)

    def remove_pdb(self, key: str) -> None:
        before = len(self.pdbs)
        self.pdbs = [p for p in self.pdbs if p.key != key]
        if len(self.pdbs) != before:
            self.generation += 1

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.namespaces.get(namespace)
        if ns is not None:
            return ns.labels
        return {"kubernetes.io/metadata.name": namespace}

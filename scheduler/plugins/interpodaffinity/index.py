"""What InterPodAffinity counts every cycle, kept per snapshot instead of recounted.

kube-scheduler's PreFilter and PreScore (``filtering.go``, ``scoring.go``) walk the cluster's
pods once per cycle, counting the existing pods' terms that match the incoming pod and the pods
that match the incoming pod's terms at each term's topology key. Go walks 10,000 pods in well
under a millisecond; Python does not, so ``AffinityIndex`` keeps the counts pod by pod. Every
answer must equal the walk (``filtering``'s reference counts, the scorer with
``use_index = False``); the property tests compare them on random clusters.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Final

from kube.objects import Namespace, Pod, PodAffinityTerm
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["MAX_MATCHERS", "AffinityIndex", "Counts", "affinity_index", "term_key"]

MAX_MATCHERS: Final = 64


def term_key(term: PodAffinityTerm) -> Hashable:
    """What decides which pods a term matches and where it counts (its selectors'
    requirements, namespaces and topology key); ``matchLabelKeys`` are already merged into the
    selector."""
    sel, ns_sel = term.label_selector, term.namespace_selector
    return (
        None if sel is None else sel.requirements,
        term.topology_key,
        term.namespaces,
        None if ns_sel is None else ns_sel.requirements,
    )


class Counts:
    """Pods (or terms) per node name, and per topology value of the keys asked for.

    The per-value counts (``values``) are cached until a node is added, removed or relabelled
    (``Snapshot.layout_generation``).
    """

    __slots__ = ("by_key", "layout", "nodes", "total")

    def __init__(self) -> None:
        self.nodes: dict[str, int] = {}
        self.total = 0
        self.by_key: dict[str, dict[str, int]] = {}
        self.layout = -1

    def add(self, ni: NodeInfo, n: int) -> None:
        name = ni.name
        left = self.nodes.get(name, 0) + n
        if left:
            self.nodes[name] = left
        else:
            self.nodes.pop(name, None)
        self.total += n
        if self.by_key:
            labels = ni.node.labels if ni.node is not None else {}
            for key, values in self.by_key.items():
                value = labels.get(key)
                if value is None:
                    continue
                count = values.get(value, 0) + n
                if count:
                    values[value] = count
                else:
                    del values[value]

    def values(self, key: str, snapshot: Snapshot) -> dict[str, int]:
        """Label value of ``key`` -> count, over the nodes that have the label (shared: do not
        change it)."""
        if self.layout != snapshot.layout_generation:
            self.by_key.clear()
            self.layout = snapshot.layout_generation
        values = self.by_key.get(key)
        if values is None:
            values = {}
            get = snapshot.get_node_info
            for name, count in self.nodes.items():
                ni = get(name)
                node = ni.node if ni is not None else None
                if node is None:
                    continue
                value = node.labels.get(key)
                if value is not None:
                    values[value] = values.get(value, 0) + count
            self.by_key[key] = values
        return values


class _Matcher:
    """The bound pods matching all of ``terms``. A matcher whose terms select namespaces by
    label remembers the Namespace objects it evaluated and is rebuilt when one of them changed
    (``current``)."""

    __slots__ = ("counts", "namespaces_seen", "terms", "track_namespaces")

    def __init__(self, terms: Sequence[PodAffinityTerm]) -> None:
        self.terms = tuple(terms)
        self.counts = Counts()
        self.track_namespaces = any(t.namespace_selector is not None for t in terms)
        self.namespaces_seen: dict[str, Namespace | None] = {}

    def matches(self, pod: Pod, snapshot: Snapshot) -> bool:
        ns = pod.namespace
        if self.track_namespaces and ns not in self.namespaces_seen:
            self.namespaces_seen[ns] = snapshot.namespaces.get(ns)
        labels = snapshot.namespace_labels(ns)
        return all(t.matches(pod, labels) for t in self.terms)

    def current(self, snapshot: Snapshot) -> bool:
        namespaces = snapshot.namespaces
        return all(namespaces.get(ns) is seen for ns, seen in self.namespaces_seen.items())


TermGroups = dict[Hashable, tuple[PodAffinityTerm, int, Counts]]  # key -> (term, weight, counts)


class AffinityIndex:
    """The existing pods' terms grouped, and the pods matching the incoming pods' terms.

    A snapshot's ``PodObserver``, told of every bound pod that comes or goes, it keeps:

    * the existing pods' terms, grouped by what a term matches (``term_key``): required
      anti-affinity, required affinity, and the weighted preferred terms, each group counting
      its terms per node — a cycle matches each distinct term once, not each pod's copy of it;
    * for the incoming pods' terms it was asked about (``matching``), the bound pods that match
      them, per node — kept up to date pod by pod, the most recently asked ``MAX_MATCHERS``.

    Either gives its counts per topology value of a key (``Counts.values``). The walks it
    replaces are ``filtering``'s ``existing_anti_affinity_counts`` and
    ``incoming_affinity_anti_affinity_counts``.
    """

    __slots__ = (
        "affinity_preferred",
        "affinity_required",
        "anti_preferred",
        "anti_required",
        "matchers",
    )

    def __init__(self, snapshot: Snapshot) -> None:
        self.anti_required: TermGroups = {}
        self.affinity_required: TermGroups = {}
        self.affinity_preferred: TermGroups = {}
        self.anti_preferred: TermGroups = {}
        self.matchers: dict[Hashable, _Matcher] = {}  # oldest use first
        for ni in snapshot.node_info_list:
            for pod in ni.pods:
                self.pod_added(ni, pod)

    # --- PodObserver -------------------------------------------------------------------------

    def pod_added(self, ni: NodeInfo, pod: Pod) -> None:
        if pod.affinity is not None:
            self._terms(ni, pod, 1)
        if self.matchers and ni.owner is not None:
            snapshot = ni.owner
            for m in self.matchers.values():
                if m.matches(pod, snapshot):
                    m.counts.add(ni, 1)

    def pod_removed(self, ni: NodeInfo, pod: Pod) -> None:
        if pod.affinity is not None:
            self._terms(ni, pod, -1)
        if self.matchers and ni.owner is not None:
            snapshot = ni.owner
            for m in self.matchers.values():
                if m.matches(pod, snapshot):
                    m.counts.add(ni, -1)

    def _terms(self, ni: NodeInfo, pod: Pod, n: int) -> None:
        a = pod.affinity
        assert a is not None
        if a.pod_affinity is not None:
            for t in a.pod_affinity.required:
                _bump(self.affinity_required, t, 0, ni, n)
            for w in a.pod_affinity.preferred:
                _bump(self.affinity_preferred, w.term, w.weight, ni, n)
        if a.pod_anti_affinity is not None:
            for t in a.pod_anti_affinity.required:
                _bump(self.anti_required, t, 0, ni, n)
            for w in a.pod_anti_affinity.preferred:
                _bump(self.anti_preferred, w.term, w.weight, ni, n)

    # --- questions ---------------------------------------------------------------------------

    def matching(self, terms: Sequence[PodAffinityTerm], snapshot: Snapshot) -> Counts:
        """The bound pods matching all of ``terms`` (namespace and labels), per node."""
        key = tuple(term_key(t) for t in terms)
        matchers = self.matchers
        m = matchers.pop(key, None)
        if m is None or (m.track_namespaces and not m.current(snapshot)):
            m = _Matcher(terms)
            counts = m.counts
            for ni in snapshot.node_info_list:
                if ni.node is None:
                    continue
                for pod in ni.pods:
                    if m.matches(pod, snapshot):
                        counts.add(ni, 1)
            if len(matchers) >= MAX_MATCHERS:
                del matchers[next(iter(matchers))]
        matchers[key] = m  # now the most recently used
        return m.counts


def _bump(groups: TermGroups, term: PodAffinityTerm, weight: int, ni: NodeInfo, n: int) -> None:
    key = (term_key(term), weight)
    entry = groups.get(key)
    if entry is None:
        if n < 0:
            return
        entry = groups[key] = (term, weight, Counts())
    counts = entry[2]
    counts.add(ni, n)
    if counts.total <= 0:
        del groups[key]


def affinity_index(snapshot: Snapshot) -> AffinityIndex:
    """The snapshot's index, made (one walk over its pods) and registered on first use."""
    for observer in snapshot.pod_observers:
        if isinstance(observer, AffinityIndex):
            return observer
    index = AffinityIndex(snapshot)
    snapshot.add_pod_observer(index)
    return index

"""What kube-scheduler's informers do to its cache and queue when a pod or a node comes or goes.

kube-scheduler wires these in pkg/scheduler/eventhandlers.go (addPodToCache, deletePodFromCache,
addPodToSchedulingQueue, deletePodFromSchedulingQueue, addNodeToCache, deleteNodeFromCache).
Every loop built on this library's ``Snapshot`` and ``SchedulingQueue`` — kubesim's scheduler
loop, bench/scheduler_perf's — must make the same moves, or the same pods wait for
different events; so the moves live here once.
"""

from __future__ import annotations

from kube.objects import Node, Pod
from scheduler.queue import SchedulingQueue
from scheduler.queue import events as qev
from scheduler.snapshot import Snapshot

__all__ = ["add_assigned_pod", "add_node", "add_pending_pod", "delete_node", "delete_pod"]


def add_assigned_pod(snapshot: Snapshot, queue: SchedulingQueue, pod: Pod) -> None:
    """A pod bound to a node appeared (addPodToCache): it goes into the snapshot and is
    announced as AssignedPodAdd (pods waiting for room, affinity or spread may move)."""
    snapshot.add_pod(pod)
    queue.assigned_pod_added(pod)


def add_pending_pod(
    snapshot: Snapshot, queue: SchedulingQueue, pod: Pod, old: Pod | None = None
) -> None:
    """A pod this scheduler is responsible for appeared unbound, or changed while unbound
    (``old``): addPodToSchedulingQueue / updatePodInSchedulingQueue. It is queued; it holds
    room in the snapshot only once it is schedulable (a gated pod's nomination reserves nothing,
    as the nominator holds only queued pods)."""
    if not pod.scheduling_gates:
        snapshot.add_pod(pod)
    elif old is not None:  # gated again: its room goes (a new pod holds none yet)
        snapshot.remove_pod(pod)
    if old is None:
        queue.add(pod)
    else:
        queue.update(old, pod)


def delete_pod(snapshot: Snapshot, queue: SchedulingQueue, pod: Pod) -> None:
    """A pod went away (deletePodFromCache / deletePodFromSchedulingQueue): it leaves the
    snapshot; an assigned pod's deletion is AssignedPodDelete, a pending pod leaves the queue,
    and if it was nominated its reservation on that node is gone (UnscheduledPodDelete)."""
    snapshot.remove_pod(pod)
    if pod.node_name:
        queue.move_all_to_active_or_backoff_queue(qev.AssignedPodDelete, old_obj=pod)
        return
    queue.delete(pod)
    if pod.nominated_node_name:
        # its reservation on that node is gone: others may fit now
        queue.move_all_to_active_or_backoff_queue(qev.UnscheduledPodDelete, old_obj=pod)


def add_node(snapshot: Snapshot, queue: SchedulingQueue, node: Node) -> None:
    """A node appeared (addNodeToCache): NodeAdd."""
    snapshot.add_node(node)
    queue.move_all_to_active_or_backoff_queue(qev.NodeAdd, new_obj=node)


def delete_node(snapshot: Snapshot, queue: SchedulingQueue, name: str) -> None:
    """A node went away (deleteNodeFromCache): NodeDelete."""
    snapshot.remove_node(name)
    queue.move_all_to_active_or_backoff_queue(qev.NodeDelete)

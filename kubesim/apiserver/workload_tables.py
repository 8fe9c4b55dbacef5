"""Table columns of the workload kinds, as kube-apiserver's printers give them to kubectl.

``kubectl get deployments`` asks the server for a ``Table``; the columns and cells are those
of ``pkg/printers/internalversion/printers.go`` (``printDeployment``, ``printReplicaSet``,
``printReplicationController``, ``printStatefulSet``, ``printDaemonSet``, ``printJob``,
``printLease``), wide columns at priority 1. ``kubesim.apiserver.tables`` merges these into its
printers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from scheduler.labels import LabelSelector, SelectorError
from scheduler.objects import parse_time

__all__ = ["WORKLOAD_PRINTERS"]

Row = Callable[[Mapping[str, Any], float], list[Any]]


def _col(name: str, type_: str = "string", *, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": "", "priority": priority}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _age(obj: Mapping[str, Any], now: float) -> str:
    from kubesim.apiserver.tables import human_duration

    try:
        return human_duration(now - parse_time(_meta(obj).get("creationTimestamp")))
    except ValueError:
        return "<unknown>"


def _int(status: Mapping[str, Any], key: str) -> int:
    return int(status.get(key) or 0)


def _containers(obj: Mapping[str, Any]) -> tuple[str, str]:
    tspec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    cs = [c for c in tspec.get("containers") or [] if isinstance(c, Mapping)]
    return ",".join(str(c.get("name", "")) for c in cs), ",".join(
        str(c.get("image", "")) for c in cs
    )


def _selector(obj: Mapping[str, Any]) -> str:
    raw = (obj.get("spec") or {}).get("selector")
    if obj.get("kind") == "ReplicationController":
        return ",".join(f"{k}={v}" for k, v in sorted(dict(raw or {}).items())) or "<none>"
    try:
        return str(LabelSelector.from_dict(raw)) or "<none>"
    except SelectorError:
        return "<invalid>"


def _replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


_NAME: Final = _col("Name", fmt="name")
_AGE: Final = _col("Age")
_WIDE: Final = [_col("Containers", priority=1), _col("Images", priority=1)]


def _deployment(obj: Mapping[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    return [
        _meta(obj).get("name", ""),
        f"{_int(status, 'readyReplicas')}/{_replicas(obj)}",
        _int(status, "updatedReplicas"),
        _int(status, "availableReplicas"),
        _age(obj, now),
        *_containers(obj),
        _selector(obj),
    ]


def _replicaset(obj: Mapping[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    return [
        _meta(obj).get("name", ""),
        _replicas(obj),
        _int(status, "replicas"),
        _int(status, "readyReplicas"),
        _age(obj, now),
        *_containers(obj),
        _selector(obj),
    ]


def _statefulset(obj: Mapping[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    return [
        _meta(obj).get("name", ""),
        f"{_int(status, 'readyReplicas')}/{_replicas(obj)}",
        _age(obj, now),
        *_containers(obj),
    ]


def _daemonset(obj: Mapping[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    tspec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    node_selector = tspec.get("nodeSelector") or {}
    return [
        _meta(obj).get("name", ""),
        _int(status, "desiredNumberScheduled"),
        _int(status, "currentNumberScheduled"),
        _int(status, "numberReady"),
        _int(status, "updatedNumberScheduled"),
        _int(status, "numberAvailable"),
        ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
        _age(obj, now),
        *_containers(obj),
        _selector(obj),
    ]


def _job(obj: Mapping[str, Any], now: float) -> list[Any]:
    from kubesim.apiserver.tables import human_duration

    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    conditions = {
        c.get("type"): c.get("status")
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    }
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif (obj.get("metadata") or {}).get("deletionTimestamp"):
        state = "Terminating"
    elif conditions.get("Suspended") == "True":
        state = "Suspended"
    else:
        state = "Running"
    completions = spec.get("completions")
    parallelism = spec.get("parallelism")
    if completions is not None:
        done = f"{_int(status, 'succeeded')}/{completions}"
    elif parallelism is not None and int(parallelism) > 1:
        done = f"{_int(status, 'succeeded')}/1 of {parallelism}"
    else:
        done = f"{_int(status, 'succeeded')}/1"
    duration = ""
    try:
        if status.get("startTime"):
            end = parse_time(status["completionTime"]) if status.get("completionTime") else now
            duration = human_duration(end - parse_time(status["startTime"]))
    except ValueError:
        duration = ""
    return [
        _meta(obj).get("name", ""),
        state,
        done,
        duration,
        _age(obj, now),
        *_containers(obj),
        _selector(obj),
    ]


def _lease(obj: Mapping[str, Any], now: float) -> list[Any]:
    holder = (obj.get("spec") or {}).get("holderIdentity") or ""
    return [_meta(obj).get("name", ""), holder, _age(obj, now)]


_SEL: Final = _col("Selector", priority=1)

WORKLOAD_PRINTERS: Final[dict[str, tuple[list[dict[str, Any]], Row]]] = {
    "Deployment": (
        [_NAME, _col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer"),
         _AGE, *_WIDE, _SEL],
        _deployment,
    ),
    "ReplicaSet": (
        [_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
         _AGE, *_WIDE, _SEL],
        _replicaset,
    ),
    "ReplicationController": (
        [_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
         _AGE, *_WIDE, _SEL],
        _replicaset,
    ),
    "StatefulSet": ([_NAME, _col("Ready"), _AGE, *_WIDE], _statefulset),
    "DaemonSet": (
        [_NAME, _col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer"),
         _col("Up-to-date", "integer"), _col("Available", "integer"), _col("Node Selector"),
         _AGE, *_WIDE, _SEL],
        _daemonset,
    ),
    "Job": (
        [_NAME, _col("Status"), _col("Completions"), _col("Duration"), _AGE, *_WIDE, _SEL],
        _job,
    ),
    "Lease": ([_NAME, _col("Holder"), _AGE], _lease),
}  # fmt: skip

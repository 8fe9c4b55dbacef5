"""Server-side printing: ``meta.k8s.io/v1`` Tables for ``kubectl get``.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the columns the
server chose (``pkg/printers/internalversion``). Kinds without a printer here get NAME and AGE.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from kube.times import parse_time
from kubesim.core.objects import meta_of, selector_string
from kubesim.core.scheme import ResourceType

__all__ = [
    "TABLE_MEDIA",
    "human_duration",
    "table_for_list",
    "table_row_object",
    "wants_table",
]

TABLE_MEDIA: Final = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=Table" in p and "g=meta.k8s.io" in p and ("v=v1;" in p + ";"):
            return True
    return False


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 - 365 * (hours // 24 // 365)
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _age(ts: Any, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        return human_duration(now - parse_time(ts))
    except ValueError:
        return "<unknown>"


def _col(
    name: str, type_: str = "string", *, fmt: str = "", priority: int = 0, description: str = ""
) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _col("Name", fmt="name", description="Name must be unique within a namespace.")
_AGE = _col(
    "Age",
    description="CreationTimestamp is a timestamp representing the server time"
    " when this object was created.",
)


def _pod_row(pod: Mapping[str, Any], now: float) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = meta_of(pod)
    total = len(spec.get("containers") or [])
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for cond in status.get("conditions") or []:
        # printPod: PodScheduled=False with reason SchedulingGated names the pod's state.
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    for c in statuses:
        state = c.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason"):
            reason = state["terminated"]["reason"]
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    ip = status.get("podIP") or "<none>"
    gates = spec.get("readinessGates") or []
    gate_text = "<none>"
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        ok = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gate_text = f"{ok}/{len(gates)}"
    return [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        str(restarts),
        _age(meta.get("creationTimestamp"), now),
        ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gate_text,
    ]


_POD_COLS: Final = [
    _NAME,
    _col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", description="The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        description="The number of times the containers in this pod have been"
        " restarted and when the last container in this pod has restarted.",
    ),
    _AGE,
    _col("IP", priority=1, description="IP address allocated to the pod."),
    _col("Node", priority=1, description="Name of the node this pod is scheduled on."),
    _col(
        "Nominated Node",
        priority=1,
        description="Name of the node this pod is nominated to run on.",
    ),
    _col("Readiness Gates", priority=1, description="Readiness gates for this pod."),
]


def _node_row(node: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(node)
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    ready = conds.get("Ready")
    state = "Ready" if ready == "True" else ("NotReady" if ready == "False" else "Unknown")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in (meta.get("labels") or {})
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]
    )
    info = status.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        meta.get("name", ""),
        state,
        ",".join(roles) or "<none>",
        _age(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLS: Final = [
    _NAME,
    _col("Status", description="The status of the node"),
    _col("Roles", description="The roles of the node"),
    _AGE,
    _col("Version", description="Kubelet Version reported by the node."),
    _col("Internal-IP", priority=1, description="List of internal IPs."),
    _col("External-IP", priority=1, description="List of external IPs."),
    _col("OS-Image", priority=1, description="OS Image reported by the node."),
    _col("Kernel-Version", priority=1, description="Kernel Version reported by the node."),
    _col(
        "Container-Runtime",
        priority=1,
        description="Container Runtime Version reported by the node.",
    ),
]


def _event_row(ev: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(ev)
    involved = ev.get("involvedObject") or ev.get("regarding") or {}
    last = (
        ev.get("lastTimestamp")
        or ev.get("deprecatedLastTimestamp")
        or (ev.get("series") or {}).get("lastObservedTime")
        or ev.get("eventTime")
        or meta.get("creationTimestamp")
    )
    first = ev.get("firstTimestamp") or ev.get("deprecatedFirstTimestamp") or ev.get("eventTime")
    source = ev.get("source") or ev.get("deprecatedSource") or {}
    src = (
        source.get("component")
        or ev.get("reportingComponent")
        or ev.get("reportingController")
        or ""
    )
    if source.get("host"):
        src = f"{src}, {source['host']}"
    count = (
        ev.get("count") or ev.get("deprecatedCount") or (ev.get("series") or {}).get("count") or 1
    )
    kind = str(involved.get("kind") or "").lower()
    return [
        _age(last, now),
        ev.get("type") or "",
        ev.get("reason") or "",
        f"{kind}/{involved.get('name', '')}",
        involved.get("fieldPath") or "",
        src,
        ev.get("message") or ev.get("note") or "",
        _age(first, now) if first else "<unknown>",
        int(count),
        meta.get("name", ""),
    ]


_EVENT_COLS: Final = [
    _col(
        "Last Seen",
        description="The time at which the most recent occurrence of this event was recorded.",
    ),
    _col(
        "Type",
        description="Type of this event (Normal, Warning), new types could be added in the future.",
    ),
    _col(
        "Reason",
        description="This should be a short, machine understandable string that"
        " gives the reason for the transition into the object's current status.",
    ),
    _col("Object", description="The object that this event is about."),
    _col("Subobject", priority=1, description="The object that this event is about."),
    _col("Source", priority=1, description="The component reporting this event."),
    _col("Message", description="A human-readable description of the status of this operation."),
    _col("First Seen", priority=1, description="The time at which the event was first recorded."),
    _col(
        "Count", "integer", priority=1, description="The number of times this event has occurred."
    ),
    _col("Name", priority=1, fmt="name", description="Name must be unique within a namespace."),
]


def _pdb_row(pdb: Mapping[str, Any], now: float) -> list[Any]:
    spec = pdb.get("spec") or {}
    status = pdb.get("status") or {}
    meta = meta_of(pdb)
    return [
        meta.get("name", ""),
        str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
        str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A",
        int(status.get("disruptionsAllowed") or 0),
        _age(meta.get("creationTimestamp"), now),
    ]


_PDB_COLS: Final = [
    _NAME,
    _col("Min Available", description="The minimum number of pods that must be available."),
    _col("Max Unavailable", description="The maximum number of pods that may be unavailable."),
    _col(
        "Allowed Disruptions",
        "integer",
        description="Calculated number of pods that may be disrupted at this time.",
    ),
    _AGE,
]


def _ns_row(ns: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(ns)
    return [
        meta.get("name", ""),
        (ns.get("status") or {}).get("phase") or "",
        _age(meta.get("creationTimestamp"), now),
    ]


_NS_COLS: Final = [_NAME, _col("Status", description="The status of the namespace"), _AGE]


_LEASE_COLS: Final = [_NAME, _col("Holder", description="The lease's holderIdentity."), _AGE]


def _lease_row(lease: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(lease)
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return [meta.get("name", ""), holder, _age(meta.get("creationTimestamp"), now)]


def _pc_row(pc: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(pc)
    return [
        meta.get("name", ""),
        int(pc.get("value") or 0),
        bool(pc.get("globalDefault")),
        _age(meta.get("creationTimestamp"), now),
        pc.get("preemptionPolicy") or "PreemptLowerPriority",
    ]


_PC_COLS: Final = [
    _NAME,
    _col("Value", "integer", description="The value of this priority class."),
    _col(
        "Global-Default",
        "boolean",
        description="globalDefault specifies whether this"
        " PriorityClass should be considered as the default priority.",
    ),
    _AGE,
    _col(
        "PreemptionPolicy",
        description="preemptionPolicy is the Policy for preempting pods with lower priority.",
    ),
]


# --- admission policies (printValidatingAdmissionPolicy, ...Binding) --------------------------


def _vap_row(policy: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(policy)
    spec = policy.get("spec") or {}
    kind = spec.get("paramKind")
    param_kind = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"
    validations = spec.get("validations") or []
    return [
        meta.get("name", ""),
        len(validations),
        param_kind,
        _age(meta.get("creationTimestamp"), now),
    ]


_VAP_COLS: Final = [
    _NAME,
    _col(
        "Validations",
        "integer",
        description="Validations indicates the number of validation rules defined in this"
        " configuration",
    ),
    _col(
        "ParamKind",
        description="ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    _AGE,
]


def _go_label_selector(selector: Mapping[str, Any]) -> str:
    """``metav1.LabelSelector.String()`` (the generated Go printer)."""
    labels = selector.get("matchLabels") or {}
    label_text = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    reqs = "".join(
        f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in r.get('values') or [])}],}},"
        for r in selector.get("matchExpressions") or []
        if isinstance(r, Mapping)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{label_text}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{reqs}}},}}"
    )


def _vapb_row(binding: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(binding)
    spec = binding.get("spec") or {}
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, Mapping):
        if ref.get("name"):
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), Mapping):
            param = _go_label_selector(ref["selector"])
    return [
        meta.get("name", ""),
        spec.get("policyName", ""),
        param,
        _age(meta.get("creationTimestamp"), now),
    ]


_VAPB_COLS: Final = [
    _NAME,
    _col(
        "PolicyName",
        description="PolicyName indicates the policy definition which the policy binding binded to",
    ),
    _col(
        "ParamRef",
        description="ParamRef indicates the param resource which sets the configration param",
    ),
    _AGE,
]


# --- workloads (printReplicationController, printReplicaSet, printDeployment, ...) -----------


def _containers(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``layoutContainerCells``: the template's container names and images."""
    template = (obj.get("spec") or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    names = [str(c.get("name", "")) for c in containers if isinstance(c, Mapping)]
    images = [str(c.get("image", "")) for c in containers if isinstance(c, Mapping)]
    return ",".join(names), ",".join(images)


def _selector(value: Any, *, plain_map: bool = False) -> str:
    return selector_string(value, plain_map=plain_map) or "<none>"


def _count(section: Mapping[str, Any], key: str) -> int:
    value = section.get(key)
    return int(value) if isinstance(value, int) else 0


_CONTAINERS = _col("Containers", priority=1, description="Names of the template's containers.")
_IMAGES = _col("Images", priority=1, description="Images of the template's containers.")
_SELECTOR = _col("Selector", priority=1, description="The label query over the pods managed.")


def _replicas_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        meta.get("name", ""),
        _count(spec, "replicas"),
        _count(status, "replicas"),
        _count(status, "readyReplicas"),
        _age(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector(spec.get("selector"), plain_map=obj.get("kind") == "ReplicationController"),
    ]


_REPLICAS_COLS: Final = [
    _NAME,
    _col("Desired", "integer", description="The number of pods wanted."),
    _col("Current", "integer", description="The number of pods that exist."),
    _col("Ready", "integer", description="The number of pods that are ready."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
]


def _deployment_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(obj)
    return [
        meta.get("name", ""),
        f"{_count(status, 'readyReplicas')}/{_count(spec, 'replicas')}",
        _count(status, "updatedReplicas"),
        _count(status, "availableReplicas"),
        _age(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


_DEPLOYMENT_COLS: Final = [
    _NAME,
    _col("Ready", description="Ready pods out of the desired replicas."),
    _col("Up-to-date", "integer", description="Pods running the newest template."),
    _col("Available", "integer", description="Pods available for at least minReadySeconds."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
]


def _statefulset_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    names, images = _containers(obj)
    ready = _count(obj.get("status") or {}, "readyReplicas")
    return [
        meta.get("name", ""),
        f"{ready}/{_count(obj.get('spec') or {}, 'replicas')}",
        _age(meta.get("creationTimestamp"), now),
        names,
        images,
    ]


_STATEFULSET_COLS: Final = [
    _NAME,
    _col("Ready", description="Ready pods out of the desired replicas."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
]


def _daemonset_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(obj)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [
        meta.get("name", ""),
        _count(status, "desiredNumberScheduled"),
        _count(status, "currentNumberScheduled"),
        _count(status, "numberReady"),
        _count(status, "updatedNumberScheduled"),
        _count(status, "numberAvailable"),
        _selector(node_selector, plain_map=True),
        _age(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


_DAEMONSET_COLS: Final = [
    _NAME,
    _col("Desired", "integer", description="Nodes that should run the daemon pod."),
    _col("Current", "integer", description="Nodes running at least one daemon pod."),
    _col("Ready", "integer", description="Nodes whose daemon pod is ready."),
    _col("Up-to-date", "integer", description="Nodes running the newest template."),
    _col("Available", "integer", description="Nodes whose daemon pod is available."),
    _col("Node Selector", description="The template's node selector."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
]


def _has_condition(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _job_status(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    if _has_condition(status, "Complete"):
        return "Complete"
    if _has_condition(status, "Failed"):
        return "Failed"
    if meta_of(obj).get("deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(status, kind):
            return kind
    return "Running"


def _job_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    succeeded = _count(status, "succeeded")
    if isinstance(spec.get("completions"), int):
        completions = f"{succeeded}/{spec['completions']}"
    elif _count(spec, "parallelism") > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    start, end = status.get("startTime"), status.get("completionTime")
    try:
        if start:
            duration = human_duration((parse_time(end) if end else now) - parse_time(start))
    except ValueError:
        duration = ""
    names, images = _containers(obj)
    return [
        meta.get("name", ""),
        _job_status(obj),
        completions,
        duration,
        _age(meta.get("creationTimestamp"), now),
        names,
        images,
        _selector(spec.get("selector")),
    ]


_JOB_COLS: Final = [
    _NAME,
    _col("Status", description="Complete, Failed, Running, Suspended or Terminating."),
    _col("Completions", description="Succeeded pods out of the wanted completions."),
    _col("Duration", description="Time the job took, or has been running."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _SELECTOR,
]


def _default_row(obj: Mapping[str, Any], now: float) -> list[Any]:
    meta = meta_of(obj)
    return [meta.get("name", ""), _age(meta.get("creationTimestamp"), now)]


_PRINTERS: Final[dict[str, tuple[list[dict[str, Any]], Callable[..., list[Any]]]]] = {
    "Pod": (_POD_COLS, _pod_row),
    "Node": (_NODE_COLS, _node_row),
    "Event": (_EVENT_COLS, _event_row),
    "PodDisruptionBudget": (_PDB_COLS, _pdb_row),
    "Namespace": (_NS_COLS, _ns_row),
    "PriorityClass": (_PC_COLS, _pc_row),
    "ReplicationController": (_REPLICAS_COLS, _replicas_row),
    "ReplicaSet": (_REPLICAS_COLS, _replicas_row),
    "Deployment": (_DEPLOYMENT_COLS, _deployment_row),
    "StatefulSet": (_STATEFULSET_COLS, _statefulset_row),
    "DaemonSet": (_DAEMONSET_COLS, _daemonset_row),
    "Job": (_JOB_COLS, _job_row),
    "Lease": (_LEASE_COLS, _lease_row),
    "ValidatingAdmissionPolicy": (_VAP_COLS, _vap_row),
    "ValidatingAdmissionPolicyBinding": (_VAPB_COLS, _vapb_row),
}


def _row(
    rt: ResourceType, obj: Mapping[str, Any], now: float, include_object: str | None
) -> dict[str, Any]:
    _, fn = _PRINTERS.get(rt.kind, ([_NAME, _AGE], _default_row))
    row: dict[str, Any] = {"cells": fn(obj, now)}
    mode = include_object or "Metadata"
    if mode == "Object":
        row["object"] = dict(obj)
    elif mode != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": dict(meta_of(obj)),
        }
    return row


def table_for_list(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    *,
    resource_version: str,
    include_object: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Table of a list, with the columns of ``pkg/printers/internalversion``.

    Pods show READY, STATUS, RESTARTS, AGE (IP, NODE, ... with ``-o wide``), nodes STATUS
    (``Ready,SchedulingDisabled`` when cordoned), ROLES, AGE, VERSION, events LAST SEEN, TYPE,
    REASON, OBJECT, MESSAGE, replication controllers and replica sets DESIRED, CURRENT, READY,
    deployments READY (``ready/desired``), UP-TO-DATE, AVAILABLE, jobs STATUS, COMPLETIONS,
    DURATION (``-o wide`` adds CONTAINERS, IMAGES, SELECTOR). Rows carry the object as
    ``PartialObjectMetadata`` unless ``includeObject=Object`` (or ``None``). Ages use
    ``duration.HumanDuration``.
    """
    cols, _ = _PRINTERS.get(rt.kind, ([_NAME, _AGE], _default_row))
    now = time.time()
    table_meta = dict(meta or {})
    if resource_version:
        table_meta["resourceVersion"] = resource_version
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": table_meta,
        "columnDefinitions": cols,
        "rows": [_row(rt, o, now, include_object) for o in objects],
    }


def table_row_object(
    rt: ResourceType, obj: dict[str, Any], *, include_object: str | None
) -> dict[str, Any]:
    """The object of one watch event when a Table was asked for: a one-row Table."""
    rv = str(meta_of(obj).get("resourceVersion", ""))
    return table_for_list(rt, [obj], resource_version=rv, include_object=include_object)

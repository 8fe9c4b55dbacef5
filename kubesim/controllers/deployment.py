"""The Deployment controller: one ReplicaSet per pod template, scaled to the Deployment.

Reproduces the parts of ``pkg/controller/deployment`` that scaling and ``kubectl rollout
status`` observe (``DeploymentController``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kube.times import format_time
from kubesim.controllers.base import (
    WorkloadController,
    labels_of,
    owner_reference,
    selector_of,
    set_condition,
)
from kubesim.controllers.replicaset import spec_replicas
from kubesim.core.errors import StatusError
from kubesim.core.names import safe_encode
from kubesim.core.objects import controller_ref, meta_of
from kubesim.core.store import Event, Key, clone

__all__ = ["POD_TEMPLATE_HASH", "DeploymentController", "pod_template_hash"]

POD_TEMPLATE_HASH: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
DESIRED: Final = "deployment.kubernetes.io/desired-replicas"
MAX: Final = "deployment.kubernetes.io/max-replicas"


def pod_template_hash(template: Mapping[str, Any], collision_count: int = 0) -> str:
    """A stable ``controller.ComputeHash`` of a pod template.

    ``ComputeHash``'s shape (a 32-bit hash of the template and ``collisionCount``, written
    with ``rand.SafeEncodeString``'s alphabet) over a canonical JSON encoding of the template
    rather than Go's ``spew`` dump, so names are stable but not byte-identical to a real
    cluster's."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":"))
    if collision_count:
        data += str(collision_count)
    value = int.from_bytes(hashlib.sha256(data.encode()).digest()[:4], "big")
    return safe_encode(str(value))


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = clone(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
        if not labels:
            out["metadata"].pop("labels")
    if isinstance(out.get("metadata"), dict) and not out["metadata"]:
        out.pop("metadata")
    return out


class DeploymentController(WorkloadController):
    """One ReplicaSet per pod template, named ``<deployment>-<pod-template-hash>``.

    The label ``pod-template-hash`` goes on the ReplicaSet, its selector and its template; the
    annotations ``deployment.kubernetes.io/revision``, ``desired-replicas`` and
    ``max-replicas`` as ``SetNewReplicaSetAnnotations`` writes them. A ReplicaSet is "new"
    when its template without ``pod-template-hash`` equals the Deployment's, and gets
    ``spec.replicas``. Rolling updates are not modelled: on a template change the new
    ReplicaSet gets every replica at once and older ones go to 0.
    """

    name = "deployment"
    component = "deployment-controller"
    storage = "deployments"
    watched = ("deployments", "replicasets")

    def keys_for(self, ev: Event) -> Iterable[Key]:
        if ev.storage == self.storage:
            return [ev.key]
        out: list[Key] = []
        for obj in (ev.obj, ev.prev):
            if obj is None:
                continue
            ref = controller_ref(obj)
            if ref is not None and ref.get("kind") == "Deployment":
                out.append((ev.key[0], str(ref.get("name", ""))))
        return out

    def _replica_sets(self, dep: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``ClaimReplicaSets``: controlled ReplicaSets plus orphans the selector matches (adopted
        and released by selector like pods)."""
        meta = meta_of(dep)
        namespace = str(meta.get("namespace", ""))
        uid = str(meta.get("uid", ""))
        sel = selector_of(dep)
        rs_type = self.cluster.scheme.for_storage("replicasets")
        out: list[dict[str, Any]] = []
        for rs in list(self.cluster.store.items("replicasets", namespace)):
            ref = controller_ref(rs)
            matches = sel is not None and not sel.is_empty() and sel.matches(labels_of(rs))
            if ref is not None:
                if str(ref.get("uid", "")) == uid:
                    out.append(rs)
                continue
            if matches and not meta.get("deletionTimestamp"):
                new = clone(rs)
                new["metadata"]["ownerReferences"] = [
                    *(new["metadata"].get("ownerReferences") or []),
                    owner_reference(dep),
                ]
                try:
                    adopted, _ = self.cluster.registry.update(
                        rs_type, namespace, str(meta_of(rs).get("name", "")), new
                    )
                except StatusError:
                    continue
                out.append(adopted)
        return out

    def sync(self, key: Key) -> None:
        dep = self.cluster.store.get(self.storage, key)
        if dep is None or meta_of(dep).get("deletionTimestamp"):
            return
        spec = dep.get("spec") or {}
        template = spec.get("template") or {}
        replicas = spec_replicas(dep)
        rss = self._replica_sets(dep)
        wanted = _without_hash(template)
        collision = int((dep.get("status") or {}).get("collisionCount") or 0)
        hash_ = pod_template_hash(wanted, collision)
        # FindNewReplicaSet: the one made from this template (defaulting may have changed the
        # stored copy, so the hash label decides, then an equal template).
        new_rs = next(
            (rs for rs in rss if _labels_of(rs).get(POD_TEMPLATE_HASH) == hash_),
            next((rs for rs in rss if _without_hash(_template(rs)) == wanted), None),
        )
        revisions = [_revision(rs) for rs in rss]
        created = False
        if new_rs is None:
            new_rs = self._create_replica_set(dep, max(revisions, default=0) + 1)
            if new_rs is None:
                return
            created = True
            rss.append(new_rs)
        rs_type = self.cluster.scheme.for_storage("replicasets")
        revision = _revision(new_rs) or max(revisions, default=0) + 1
        for rs in rss:
            is_new = rs is new_rs
            want = replicas if is_new else 0
            annotations = dict(meta_of(rs).get("annotations") or {})
            if is_new:
                annotations[REVISION] = str(revision)
                annotations[DESIRED] = str(replicas)
                annotations[MAX] = str(replicas)
            if spec_replicas(rs) == want and annotations == (meta_of(rs).get("annotations") or {}):
                continue
            new = clone(rs)
            new["spec"]["replicas"] = want
            new["metadata"]["annotations"] = annotations
            updated, _ = self.cluster.registry.update(
                rs_type, key[0], str(meta_of(rs).get("name", "")), new
            )
            old_count = spec_replicas(rs)
            if old_count != want:
                direction = "up" if want > old_count else "down"
                self.record(
                    dep,
                    "ScalingReplicaSet",
                    f"Scaled {direction} replica set {meta_of(rs).get('name', '')}"
                    f" from {old_count} to {want}",
                )
            if is_new:
                new_rs = updated
        dep = self.cluster.store.get(self.storage, key)
        if dep is None:
            return
        rss = [
            self.cluster.store.get("replicasets", (key[0], str(meta_of(rs).get("name", "")))) or rs
            for rs in rss
        ]
        new_name = str(meta_of(new_rs).get("name", ""))
        new_rs = next((rs for rs in rss if meta_of(rs).get("name") == new_name), new_rs)
        self._write_revision(dep, revision)
        dep = self.cluster.store.get(self.storage, key)
        if dep is not None:
            self.write_status(dep, self._status(dep, new_rs, rss, created=created))

    def _write_revision(self, dep: Mapping[str, Any], revision: int) -> None:
        annotations = dict(meta_of(dep).get("annotations") or {})
        if annotations.get(REVISION) == str(revision):
            return
        annotations[REVISION] = str(revision)
        new = clone(dict(dep))
        new["metadata"]["annotations"] = annotations
        meta = meta_of(dep)
        self.cluster.registry.update(
            self.owner_type(), str(meta.get("namespace", "")), str(meta.get("name", "")), new
        )

    def _create_replica_set(self, dep: Mapping[str, Any], revision: int) -> dict[str, Any] | None:
        meta = meta_of(dep)
        spec = dep.get("spec") or {}
        collision = int((dep.get("status") or {}).get("collisionCount") or 0)
        template: dict[str, Any] = clone(spec.get("template") or {})
        hash_ = pod_template_hash(_without_hash(template), collision)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), POD_TEMPLATE_HASH: hash_}
        selector: dict[str, Any] = clone(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: hash_}
        replicas = spec_replicas(dep)
        rs_spec: dict[str, Any] = {
            "replicas": replicas,
            "selector": selector,
            "template": template,
        }
        if spec.get("minReadySeconds"):
            rs_spec["minReadySeconds"] = spec["minReadySeconds"]
        manifest = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta.get('name', '')}-{hash_}",
                "namespace": meta.get("namespace", ""),
                "labels": dict(tmeta["labels"]),
                "annotations": {
                    REVISION: str(revision),
                    DESIRED: str(replicas),
                    MAX: str(replicas),
                },
                "ownerReferences": [owner_reference(dep)],
            },
            "spec": rs_spec,
        }
        rs_type = self.cluster.scheme.for_storage("replicasets")
        try:
            created = self.cluster.registry.create(
                rs_type, str(meta.get("namespace", "")), manifest
            )
            if replicas:
                self.record(
                    dep,
                    "ScalingReplicaSet",
                    f"Scaled up replica set {meta.get('name', '')}-{hash_} from 0 to {replicas}",
                )
            return created
        except StatusError as err:
            if err.code == 409:  # a hash collision with a ReplicaSet we do not own
                status = clone(dep.get("status") or {})
                status["collisionCount"] = collision + 1
                self.write_status(dep, status)
                self.enqueue((str(meta.get("namespace", "")), str(meta.get("name", ""))))
                return None
            raise

    def _status(
        self,
        dep: Mapping[str, Any],
        new_rs: Mapping[str, Any],
        rss: list[dict[str, Any]],
        *,
        created: bool,
    ) -> dict[str, Any]:
        """``calculateStatus`` plus the conditions ``syncRolloutStatus`` maintains:
        ``observedGeneration``, ``replicas``/``updatedReplicas``/``readyReplicas``/
        ``availableReplicas``/``unavailableReplicas`` summed from the ReplicaSets' statuses, and
        the ``Available`` (``MinimumReplicasAvailable``) and ``Progressing``
        (``NewReplicaSetCreated``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``) conditions
        with upstream's messages."""

        def total(field: str, sets: Iterable[Mapping[str, Any]]) -> int:
            return sum(int((rs.get("status") or {}).get(field) or 0) for rs in sets)

        replicas = spec_replicas(dep)
        available = total("availableReplicas", rss)
        status: dict[str, Any] = clone(dep.get("status") or {})
        generation = meta_of(dep).get("generation")
        if generation is not None:
            status["observedGeneration"] = int(generation)
        status["replicas"] = total("replicas", rss)
        status["updatedReplicas"] = total("replicas", [new_rs])
        status["readyReplicas"] = total("readyReplicas", rss)
        status["availableReplicas"] = available
        status["unavailableReplicas"] = max(replicas - available, 0)
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
            if not status[field]:
                del status[field]
        if not status["unavailableReplicas"]:
            del status["unavailableReplicas"]
        now = format_time(self.now())
        conditions: list[dict[str, Any]] = clone(status.get("conditions") or [])
        # maxUnavailable is 25% by default; without rolling updates every replica must be up.
        if available >= replicas:
            set_condition(
                conditions,
                type_="Available",
                status="True",
                reason="MinimumReplicasAvailable",
                message="Deployment has minimum availability.",
                now=now,
                with_update_time=True,
            )
        else:
            set_condition(
                conditions,
                type_="Available",
                status="False",
                reason="MinimumReplicasUnavailable",
                message="Deployment does not have minimum availability.",
                now=now,
                with_update_time=True,
            )
        rs_name = str(meta_of(new_rs).get("name", ""))
        rs_status = new_rs.get("status") or {}
        complete = (
            int(rs_status.get("replicas") or 0) == replicas
            and int(rs_status.get("availableReplicas") or 0) >= replicas
            and total("replicas", rss) == replicas
        )
        if complete:
            reason, message = (
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
            )
        elif created:
            reason, message = "NewReplicaSetCreated", f'Created new replica set "{rs_name}"'
        else:
            reason, message = "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.'
        set_condition(
            conditions,
            type_="Progressing",
            status="True",
            reason=reason,
            message=message,
            now=now,
            with_update_time=True,
        )
        # Conditions in upstream's order: Available first once it exists.
        conditions.sort(key=lambda c: {"Available": 0, "Progressing": 1}.get(c.get("type", ""), 2))
        status["conditions"] = conditions
        old = dep.get("status") or {}
        if _same_but_update_times(old, status):
            return dict(old)
        return status


def _template(rs: Mapping[str, Any]) -> Mapping[str, Any]:
    template = (rs.get("spec") or {}).get("template")
    return template if isinstance(template, Mapping) else {}


def _labels_of(rs: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = meta_of(rs).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _revision(rs: Mapping[str, Any]) -> int:
    raw = (meta_of(rs).get("annotations") or {}).get(REVISION)
    try:
        return int(str(raw))
    except (TypeError, ValueError):
        return 0


def _same_but_update_times(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    def strip(status: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in status.items() if k != "conditions"}
        out["conditions"] = [
            {k: v for k, v in c.items() if k not in ("lastUpdateTime", "lastTransitionTime")}
            for c in status.get("conditions") or []
            if isinstance(c, Mapping)
        ]
        return out

    return strip(old) == strip(new)

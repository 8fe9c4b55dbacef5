"""The Job controller: runs pods until enough of them Succeeded.

Reproduces the ``NonIndexed`` path of ``pkg/controller/job/job_controller.go``
(``JobController``). How long a pod runs is the kubelet's business (``kubesim.node.kubelet``):
the configured ``job_duration`` or the pod's ``kubesim.io/run-for`` annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError
from kube.times import format_time
from kubesim.controllers.base import (
    WorkloadController,
    is_pod_active,
    pod_from_template,
    pods_to_delete_order,
    set_condition,
)
from kubesim.core.conditions import is_pod_ready
from kubesim.core.objects import meta_of
from kubesim.core.store import Key, clone

__all__ = ["JobController"]

CONTROLLER_UID: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME: Final = "batch.kubernetes.io/job-name"
DEFAULT_BACKOFF_LIMIT: Final = 6


def _int(spec: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = spec.get(key)
    return default if value is None else int(value)


class JobController(WorkloadController):
    """The ``NonIndexed`` Job's sync:

    * the pods are those labelled ``batch.kubernetes.io/controller-uid=<uid>`` (the selector the
      apiserver generates for a Job without ``manualSelector``) or matched by ``spec.selector``,
      and controlled by the Job; they carry ``batch.kubernetes.io/job-name``/``job-name`` and
      ``batch.kubernetes.io/controller-uid``/``controller-uid`` labels;
    * ``completions`` and ``parallelism`` default to 1; while fewer than ``completions`` pods
      Succeeded, ``min(parallelism, completions - succeeded)`` are kept active; with
      ``completions`` unset (a work queue) the Job is done once any pod Succeeded and none is
      active;
    * more Failed pods than ``backoffLimit`` (default 6) fail the Job: conditions
      ``FailureTarget`` and ``Failed`` with reason ``BackoffLimitExceeded`` and the message
      ``Job has reached the specified backoff limit``, active pods deleted;
    * success sets ``completionTime`` and the conditions ``SuccessCriteriaMet`` then ``Complete``
      (the 1.31+ order) with ``status "True"``; ``startTime``, ``active``, ``ready``,
      ``succeeded``, ``failed`` and ``uncountedTerminatedPods`` are kept current. Counts never go
      down when finished pods are deleted (upstream tracks them with a finalizer).
    """

    name = "job"
    component = "job-controller"
    storage = "jobs"
    watched = ("jobs", "pods")

    def _selector(self, job: Mapping[str, Any]) -> LabelSelector:
        spec = job.get("spec") or {}
        uid = str(meta_of(job).get("uid", ""))
        try:
            if spec.get("selector") is not None:
                return LabelSelector.from_dict(spec["selector"])
        except SelectorError:
            pass
        return LabelSelector.from_labels({CONTROLLER_UID: uid})

    def sync(self, key: Key) -> None:
        job = self.cluster.store.get(self.storage, key)
        if job is None:
            return
        meta = meta_of(job)
        uid = str(meta.get("uid", ""))
        spec = job.get("spec") or {}
        sel = self._selector(job)
        pods = [
            p
            for p in self.controlled_pods(uid, key[0])
            if sel.matches(meta_of(p).get("labels") or {})
        ]
        status: dict[str, Any] = clone(job.get("status") or {})
        conditions: list[dict[str, Any]] = clone(status.get("conditions") or [])
        finished = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in conditions
        )
        now = format_time(self.now())
        active = [p for p in pods if is_pod_active(p)]
        succeeded = max(
            int(status.get("succeeded") or 0),
            sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"),
        )
        failed = max(
            int(status.get("failed") or 0),
            sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed"),
        )
        completions = _int(spec, "completions", None)
        parallelism = _int(spec, "parallelism", 1) or 0
        backoff = _int(spec, "backoffLimit", DEFAULT_BACKOFF_LIMIT) or 0
        suspended = bool(spec.get("suspend"))
        if not finished and not suspended:
            status.setdefault("startTime", now)
            if failed > backoff:
                message = "Job has reached the specified backoff limit"
                for type_ in ("FailureTarget", "Failed"):
                    set_condition(
                        conditions,
                        type_=type_,
                        status="True",
                        reason="BackoffLimitExceeded",
                        message=message,
                        now=now,
                        with_update_time=True,
                    )
                for pod in active:
                    self.delete_pod(pod, owner=job)
                active = []
                finished = True
                self.record(job, "BackoffLimitExceeded", message, warn=True)
            else:
                done = (
                    succeeded >= completions
                    if completions is not None
                    else succeeded > 0 and not active
                )
                if done:
                    for pod in active:
                        self.delete_pod(pod, owner=job)
                    active = []
                    for type_, reason in (
                        ("SuccessCriteriaMet", "CompletionsReached"),
                        ("Complete", "CompletionsReached"),
                    ):
                        set_condition(
                            conditions,
                            type_=type_,
                            status="True",
                            reason=reason,
                            message="Reached expected number of succeeded pods",
                            now=now,
                            with_update_time=True,
                        )
                    status["completionTime"] = now
                    finished = True
                    self.record(job, "Completed", "Job completed")
                else:
                    want = parallelism
                    if completions is not None:
                        want = min(parallelism, completions - succeeded)
                    elif succeeded > 0:
                        want = min(want, len(active))
                    self._manage(job, active, want)
                    active = [p for p in self.controlled_pods(uid, key[0]) if is_pod_active(p)]
        elif suspended and not finished:
            for pod in active:
                self.delete_pod(pod, owner=job)
            active = []
        status["terminating"] = sum(
            1
            for p in pods
            if meta_of(p).get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if is_pod_ready(p))
        status["succeeded"] = succeeded
        status["failed"] = failed
        status.setdefault("uncountedTerminatedPods", {})
        for field in ("active", "succeeded", "failed"):
            if not status[field]:
                del status[field]
        if conditions:
            status["conditions"] = conditions
        job = self.cluster.store.get(self.storage, key)
        if job is not None:
            self.write_status(job, status)

    def _manage(self, job: Mapping[str, Any], active: list[dict[str, Any]], want: int) -> None:
        diff = len(active) - max(want, 0)
        if diff > 0:
            for pod in pods_to_delete_order(active)[:diff]:
                self.delete_pod(pod, owner=job)
            return
        meta = meta_of(job)
        uid = str(meta.get("uid", ""))
        name = str(meta.get("name", ""))
        labels = {CONTROLLER_UID: uid, "controller-uid": uid, JOB_NAME: name, "job-name": name}
        template = (job.get("spec") or {}).get("template") or {}
        for _ in range(-diff):
            pod = pod_from_template(job, template, extra_labels=labels)
            pod["spec"].setdefault("restartPolicy", "Never")
            if self.create_pod(pod, owner=job) is None:
                break

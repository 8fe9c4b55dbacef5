"""The Priority admission plugin: the default class, PriorityClass writes, pods and raw manifests.

Messages are asserted word for word against kube-apiserver's (plugin/pkg/admission/priority).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.apierrors import (
    AdmissionError,
)
from kube.objects import InvalidObject, Pod, PriorityClass
from scheduler.priority import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    POD_RESOURCE,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_NODE_CRITICAL,
    PriorityAdmission,
    system_priority_classes,
)
from tests.support.priority import manifest, pc, pod

# --- PriorityAdmission: the default class ----------------------------------------------------

DEFAULT1 = pc("default1", 1000, global_default=True)
DEFAULT2 = pc("default2", 2000, global_default=True)
NONDEFAULT1 = pc("nondefault1", 2000, description="Just a test priority class")
NEVER_DEFAULT = pc("nopreemptionpolicy", 2000, global_default=True, preemption_policy="Never")
NEVER = pc("never", 3000, preemption_policy="Never")


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ([], ("", 0)),
        ([NONDEFAULT1], ("", 0)),
        ([DEFAULT1], ("default1", 1000)),
        ([NONDEFAULT1, DEFAULT1], ("default1", 1000)),
        ([DEFAULT2, DEFAULT1], ("default1", 1000)),
        ([DEFAULT1, DEFAULT2], ("default1", 1000)),
        (system_priority_classes(), ("", 0)),
    ],
)
def test_default_priority(classes: list[PriorityClass], expected: tuple[str, int]) -> None:
    admission = PriorityAdmission(classes)
    assert admission.default_priority() == expected
    dpc = admission.default_priority_class()
    assert (dpc.name if dpc else "", dpc.value if dpc else 0) == expected


def test_default_follows_cache_changes() -> None:
    admission = PriorityAdmission([DEFAULT1, DEFAULT2])
    assert admission.default_priority() == ("default1", 1000)
    assert admission.delete_class("default1") is DEFAULT1
    assert admission.default_priority() == ("default2", 2000)
    admission.set_class(DEFAULT2.with_changes(global_default=False))
    assert admission.default_priority() == ("", 0)
    admission.set_class(NONDEFAULT1)
    assert admission.default_priority() == ("", 0)
    admission.set_class(DEFAULT1)
    assert admission.default_priority() == ("default1", 1000)
    assert admission.delete_class("missing") is None


def test_classes_view_is_read_only_and_live() -> None:
    admission = PriorityAdmission([NONDEFAULT1])
    view = admission.classes
    assert dict(view) == {"nondefault1": NONDEFAULT1}
    with pytest.raises(TypeError):
        view["x"] = DEFAULT1  # type: ignore[index]
    admission.set_class(DEFAULT1)
    assert set(view) == {"nondefault1", "default1"}


def test_later_set_class_replaces_an_earlier_one_of_the_same_name() -> None:
    admission = PriorityAdmission([DEFAULT1, DEFAULT1.with_changes(value=5)])
    assert admission.default_priority() == ("default1", 5)


classes_strategy = st.lists(
    st.builds(
        PriorityClass,
        name=st.from_regex(r"[a-z]{1,6}", fullmatch=True),
        value=st.integers(-1000, 1000),
        global_default=st.booleans(),
        preemption_policy=st.sampled_from(["PreemptLowerPriority", "Never"]),
    ),
    max_size=8,
    unique_by=lambda c: c.name,
)


@given(classes=classes_strategy, data=st.data())
def test_default_priority_is_the_minimum_global_default_in_any_order(
    classes: list[PriorityClass], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(classes))
    defaults = [c for c in classes if c.global_default]
    expected = ("", 0)
    if defaults:
        best = min(defaults, key=lambda c: (c.value, c.name))
        expected = (best.name, best.value)
    assert PriorityAdmission(classes).default_priority() == expected
    assert PriorityAdmission(shuffled).default_priority() == expected
    if defaults:
        assert expected[1] == min(c.value for c in defaults)


# --- PriorityAdmission: PriorityClass validation ---------------------------------------------


ALREADY_DEFAULT = (
    'priorityclasses.scheduling.k8s.io "default2" is forbidden: PriorityClass default1 is'
    " already marked as default. Only one default can exist"
)


@pytest.mark.parametrize(
    ("existing", "new", "operation", "error"),
    [
        ([], DEFAULT1, "create", None),
        ([DEFAULT1], DEFAULT2, "create", ALREADY_DEFAULT),
        ([DEFAULT1], DEFAULT2, "CREATE", ALREADY_DEFAULT),
        ([DEFAULT1], NONDEFAULT1, "create", None),
        # Admission leaves the system prefix and the ceiling to validation.
        ([], pc("system-test", HIGHEST_USER_DEFINABLE_PRIORITY + 1), "create", None),
        ([], DEFAULT1, "update", None),
        ([DEFAULT1], DEFAULT2, "update", ALREADY_DEFAULT),
        ([DEFAULT1], DEFAULT1.with_changes(description="d"), "update", None),
        ([DEFAULT1], DEFAULT2, "delete", None),
        ([DEFAULT1], DEFAULT2, "connect", None),
    ],
)
def test_validate_class(
    existing: list[PriorityClass], new: PriorityClass, operation: str, error: str | None
) -> None:
    admission = PriorityAdmission(existing)
    if error is None:
        admission.validate_class(new, operation)
        return
    with pytest.raises(AdmissionError) as exc:
        admission.validate_class(new, operation)
    assert exc.value.message == error
    assert exc.value.code == 403
    assert exc.value.reason == "Forbidden"
    assert exc.value.detail == (
        "PriorityClass default1 is already marked as default. Only one default can exist"
    )


def test_validate_class_update_against_a_racing_lower_default() -> None:
    # Two defaults after a race: re-saving the higher one is refused, the lower one is fine.
    admission = PriorityAdmission([DEFAULT1, DEFAULT2])
    admission.validate_class(DEFAULT1, "update", old=DEFAULT1)
    with pytest.raises(AdmissionError, match=ALREADY_DEFAULT):
        admission.validate_class(DEFAULT2, "update", old=DEFAULT2)


def test_validate_class_ignores_subresources_and_rejects_unknown_operations() -> None:
    admission = PriorityAdmission([DEFAULT1])
    admission.validate_class(DEFAULT2, "create", subresource="status")
    with pytest.raises(ValueError, match="unknown admission operation 'patch'"):
        admission.validate_class(DEFAULT2, "patch")


# --- PriorityAdmission: pods -----------------------------------------------------------------


def fields(p: Pod) -> tuple[str, int | None, str | None]:
    return p.priority_class_name, p.spec_priority, p.preemption_policy


@pytest.mark.parametrize(
    ("classes", "given", "expected"),
    [
        (
            [DEFAULT1],
            pod(priority_class_name="default1"),
            ("default1", 1000, "PreemptLowerPriority"),
        ),
        ([DEFAULT1], pod(), ("default1", 1000, "PreemptLowerPriority")),
        ([], pod(), ("", 0, "PreemptLowerPriority")),
        ([NONDEFAULT1], pod(), ("", 0, "PreemptLowerPriority")),
        ([DEFAULT1, DEFAULT2], pod(), ("default1", 1000, "PreemptLowerPriority")),
        ([], pod(priority=0), ("", 0, "PreemptLowerPriority")),
        ([DEFAULT2], pod(priority=2000), ("default2", 2000, "PreemptLowerPriority")),
        (
            [DEFAULT1],
            pod(priority_class_name="default1", priority=1000),
            ("default1", 1000, "PreemptLowerPriority"),
        ),
        # System classes are ordinary objects, usable from any namespace.
        (
            system_priority_classes(),
            pod(ns="kube-system", priority_class_name=SYSTEM_CLUSTER_CRITICAL),
            (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, "PreemptLowerPriority"),
        ),
        (
            system_priority_classes(),
            pod(ns="non-system-namespace", priority_class_name=SYSTEM_NODE_CRITICAL),
            (SYSTEM_NODE_CRITICAL, 2_000_001_000, "PreemptLowerPriority"),
        ),
        (
            system_priority_classes(),
            pod(priority_class_name=SYSTEM_CLUSTER_CRITICAL, priority=2_000_000_000),
            (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, "PreemptLowerPriority"),
        ),
        ([NEVER], pod(priority_class_name="never"), ("never", 3000, "Never")),
        (
            [NEVER],
            pod(priority_class_name="never", preemption_policy="Never"),
            ("never", 3000, "Never"),
        ),
        ([NEVER_DEFAULT], pod(), ("nopreemptionpolicy", 2000, "Never")),
        (
            [NEVER_DEFAULT, pc("lower", 2000, preemption_policy="PreemptLowerPriority")],
            pod(priority_class_name="lower", preemption_policy="PreemptLowerPriority"),
            ("lower", 2000, "PreemptLowerPriority"),
        ),
    ],
)
def test_admit_pod_create(
    classes: list[PriorityClass], given: Pod, expected: tuple[str, int, str]
) -> None:
    admitted = PriorityAdmission(classes).admit_pod(given)
    assert fields(admitted) == expected
    assert admitted.priority == expected[1]
    assert admitted.key == given.key


@pytest.mark.parametrize(
    ("classes", "given", "detail"),
    [
        (
            [DEFAULT1],
            pod("pod-w-non-existing-priorityclass", priority_class_name="non-existing"),
            "no PriorityClass with name non-existing was found",
        ),
        (
            # The system classes exist only as objects: an empty cache knows none of them.
            [],
            pod("sys", priority_class_name=SYSTEM_NODE_CRITICAL),
            "no PriorityClass with name system-node-critical was found",
        ),
        (
            [DEFAULT1],
            pod("pod-w-integer-priority", priority_class_name="default1", priority=2000),
            "the integer value of priority (2000) must not be provided in pod spec; priority"
            " admission controller computed 1000 from the given PriorityClass name",
        ),
        (
            [],
            pod("pod-w-integer-priority", priority=2),
            "the integer value of priority (2) must not be provided in pod spec; priority"
            " admission controller computed 0 from the given PriorityClass name",
        ),
        (
            # Mirror pods get no special treatment.
            [DEFAULT1],
            pod(
                "mirror-pod-w-integer-priority",
                annotations={"kubernetes.io/config.mirror": ""},
                priority_class_name="default1",
                priority=1001,
            ),
            "the integer value of priority (1001) must not be provided in pod spec; priority"
            " admission controller computed 1000 from the given PriorityClass name",
        ),
        (
            [NEVER],
            pod("np", priority_class_name="never", preemption_policy="PreemptLowerPriority"),
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in"
            " pod spec; priority admission controller computed Never from the given"
            " PriorityClass name",
        ),
        (
            [NEVER_DEFAULT],
            pod("np", preemption_policy="PreemptLowerPriority"),
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in"
            " pod spec; priority admission controller computed Never from the given"
            " PriorityClass name",
        ),
        (
            [],
            pod("np", preemption_policy="Never"),
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec;"
            " priority admission controller computed PreemptLowerPriority from the given"
            " PriorityClass name",
        ),
    ],
)
def test_admit_pod_create_rejections(classes: list[PriorityClass], given: Pod, detail: str) -> None:
    with pytest.raises(AdmissionError) as exc:
        PriorityAdmission(classes).admit_pod(given)
    err = exc.value
    assert err.detail == detail
    assert err.message == f'pods "{given.name}" is forbidden: {detail}'
    assert (err.code, err.reason, err.resource, err.group, err.name) == (
        403,
        "Forbidden",
        POD_RESOURCE,
        "",
        given.name,
    )
    assert err.to_dict() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": err.message,
        "reason": "Forbidden",
        "details": {"name": given.name, "kind": "pods"},
        "code": 403,
    }


def test_priority_mismatch_is_checked_before_the_policy() -> None:
    given = pod("both", priority_class_name="never", priority=1, preemption_policy="X")
    with pytest.raises(AdmissionError, match=r"integer value of priority \(1\)"):
        PriorityAdmission([NEVER]).admit_pod(given)


def test_a_pod_without_a_name_is_reported_as_unknown() -> None:
    with pytest.raises(AdmissionError) as exc:
        PriorityAdmission().admit_pod(Pod(name="", priority_class_name="gone"))
    assert exc.value.message == (
        'pods "Unknown" is forbidden: no PriorityClass with name gone was found'
    )


def test_deleting_a_class_rejects_new_pods_but_not_admitted_ones() -> None:
    admission = PriorityAdmission([NONDEFAULT1])
    admitted = admission.admit_pod(pod(priority_class_name="nondefault1"))
    admission.delete_class("nondefault1")
    assert fields(admitted) == ("nondefault1", 2000, "PreemptLowerPriority")
    with pytest.raises(AdmissionError, match="no PriorityClass with name nondefault1 was found"):
        admission.admit_pod(pod(priority_class_name="nondefault1"))


def test_adding_a_default_class_does_not_touch_admitted_pods() -> None:
    admission = PriorityAdmission()
    admitted = admission.admit_pod(pod())
    admission.set_class(DEFAULT1)
    assert fields(admitted) == ("", 0, "PreemptLowerPriority")
    # Re-submitting the old spec now conflicts with the new default, as in kube.
    with pytest.raises(AdmissionError, match="computed 1000"):
        admission.admit_pod(pod(priority=0))


def test_admit_pod_update_keeps_stored_priority_and_policy() -> None:
    admission = PriorityAdmission([NEVER])
    old = admission.admit_pod(pod(priority_class_name="never"))
    new = pod(priority_class_name="never", labels={"changed": "yes"})
    updated = admission.admit_pod(new, "update", old)
    assert fields(updated) == ("never", 3000, "Never")
    assert updated.labels == {"changed": "yes"}


def test_admit_pod_update_does_not_resolve_or_check_the_class() -> None:
    # Validation, not this plugin, rejects changes on update; nothing is looked up here.
    admission = PriorityAdmission()
    old = pod(priority_class_name="gone", priority=7, preemption_policy="Never")
    new = pod(priority_class_name="gone", priority=9)
    assert fields(admission.admit_pod(new, "update", old)) == ("gone", 9, "Never")
    unchanged = pod(priority=9, preemption_policy="PreemptLowerPriority")
    assert admission.admit_pod(unchanged, "UPDATE", old) is unchanged


def test_admit_pod_update_without_old_object_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="an update needs the old object"):
        PriorityAdmission().admit_pod(pod(), "update")


@pytest.mark.parametrize(
    ("operation", "subresource"), [("delete", ""), ("connect", ""), ("create", "status")]
)
def test_admit_pod_ignores_other_operations_and_subresources(
    operation: str, subresource: str
) -> None:
    given = pod(priority_class_name="does-not-exist", priority=5)
    assert PriorityAdmission().admit_pod(given, operation, subresource=subresource) is given


def test_admit_pod_returns_the_same_object_when_nothing_changes() -> None:
    admission = PriorityAdmission([DEFAULT1])
    admitted = admission.admit_pod(pod())
    assert admission.admit_pod(admitted) is admitted


pods_strategy = st.builds(
    Pod,
    name=st.from_regex(r"[a-z]{1,6}", fullmatch=True),
    priority_class_name=st.one_of(st.just(""), st.from_regex(r"[a-z]{1,6}", fullmatch=True)),
    spec_priority=st.one_of(st.none(), st.integers(-1000, 1000)),
    preemption_policy=st.sampled_from([None, "PreemptLowerPriority", "Never"]),
)


@given(classes=classes_strategy, given_pod=pods_strategy)
def test_admit_pod_is_idempotent(classes: list[PriorityClass], given_pod: Pod) -> None:
    admission = PriorityAdmission(classes)
    try:
        admitted = admission.admit_pod(given_pod)
    except AdmissionError:
        return
    assert admission.admit_pod(admitted) is admitted
    name, priority, policy = fields(admitted)
    assert priority is not None
    assert policy is not None
    if name:
        assert admission.classes[name].value == priority
    else:
        assert admission.default_priority() == ("", 0)


@given(classes=classes_strategy, given_pod=pods_strategy)
def test_admitted_priority_comes_from_the_named_or_default_class(
    classes: list[PriorityClass], given_pod: Pod
) -> None:
    admission = PriorityAdmission(classes)
    expected = (
        admission.classes.get(given_pod.priority_class_name)
        if given_pod.priority_class_name
        else admission.default_priority_class()
    )
    try:
        admitted = admission.admit_pod(given_pod)
    except AdmissionError as err:
        if given_pod.priority_class_name and expected is None:
            assert err.detail.startswith("no PriorityClass with name")
        else:
            resolved = expected.value if expected else 0
            policy = expected.preemption_policy if expected else "PreemptLowerPriority"
            assert given_pod.spec_priority not in (None, resolved) or (
                given_pod.preemption_policy not in (None, policy)
            )
        return
    assert admitted.priority == (expected.value if expected else 0)


# --- PriorityAdmission: raw manifests --------------------------------------------------------


def test_admit_pod_manifest_mutates_in_place() -> None:
    m = manifest(containers=[{"name": "c"}])
    PriorityAdmission([DEFAULT1]).admit_pod_manifest(m)
    assert m["spec"] == {
        "containers": [{"name": "c"}],
        "priorityClassName": "default1",
        "priority": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def test_admit_pod_manifest_without_spec_gets_one() -> None:
    m: dict[str, Any] = {"metadata": {"name": "bare"}}
    PriorityAdmission().admit_pod_manifest(m)
    assert m["spec"] == {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}


@pytest.mark.parametrize(
    ("meta", "reported"),
    [
        ({"name": "web-0"}, "web-0"),
        ({"generateName": "web-"}, "web-"),
        ({"name": "", "generateName": "gen-"}, "gen-"),
        ({}, "Unknown"),
    ],
)
def test_admit_pod_manifest_names_the_pod_before_name_generation(
    meta: dict[str, str], reported: str
) -> None:
    m = {"metadata": meta, "spec": {"priorityClassName": "foo"}}
    before = copy.deepcopy(m)
    with pytest.raises(AdmissionError) as exc:
        PriorityAdmission().admit_pod_manifest(m)
    assert exc.value.message == (
        f'pods "{reported}" is forbidden: no PriorityClass with name foo was found'
    )
    assert m == before  # a rejected manifest is left as it was


def test_admit_pod_manifest_update_copies_missing_fields_from_old() -> None:
    admission = PriorityAdmission([NEVER])
    old = manifest(priorityClassName="never")
    admission.admit_pod_manifest(old)
    new = manifest(priorityClassName="never", nodeName="n1")
    admission.admit_pod_manifest(new, "update", old)
    assert new["spec"] == {
        "priorityClassName": "never",
        "nodeName": "n1",
        "priority": 3000,
        "preemptionPolicy": "Never",
    }
    with pytest.raises(ValueError, match="an update needs the old object"):
        admission.admit_pod_manifest(manifest(), "update")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"priority": "high"}, "spec.priority"),
        ({"priority": True}, "spec.priority"),
        ({"priorityClassName": 3}, "spec.priorityClassName"),
        ({"preemptionPolicy": ["Never"]}, "spec.preemptionPolicy"),
    ],
)
def test_admit_pod_manifest_rejects_ill_typed_fields(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObject) as exc:
        PriorityAdmission().admit_pod_manifest(manifest(**spec))
    assert exc.value.field == field
    assert exc.value.name == "web-0"


def test_admit_pod_manifest_rejects_a_non_object_spec() -> None:
    with pytest.raises(InvalidObject, match="spec: must be an object, not list"):
        PriorityAdmission().admit_pod_manifest({"metadata": {"name": "x"}, "spec": []})


@given(
    classes=classes_strategy,
    class_name=st.one_of(st.just(""), st.from_regex(r"[a-z]{1,6}", fullmatch=True)),
    priority=st.one_of(st.none(), st.integers(-1000, 1000)),
    policy=st.sampled_from([None, "PreemptLowerPriority", "Never"]),
)
def test_manifest_and_typed_pod_paths_agree(
    classes: list[PriorityClass], class_name: str, priority: int | None, policy: str | None
) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if class_name:
        spec["priorityClassName"] = class_name
    if priority is not None:
        spec["priority"] = priority
    if policy is not None:
        spec["preemptionPolicy"] = policy
    m = manifest(**spec)
    admission = PriorityAdmission(classes)
    typed_error = manifest_error = None
    typed: Pod | None = None
    try:
        typed = admission.admit_pod(Pod.from_dict(m))
    except AdmissionError as err:
        typed_error = err.message
    try:
        admission.admit_pod_manifest(m)
    except AdmissionError as err:
        manifest_error = err.message
    assert typed_error == manifest_error
    if typed is not None:
        assert fields(Pod.from_dict(m)) == fields(typed)

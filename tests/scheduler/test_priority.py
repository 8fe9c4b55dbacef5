"""PriorityClass validation, the Priority admission plugin and the kubelet's critical-pod test.

Messages are asserted word for word against kube-apiserver's (pkg/apis/scheduling/validation,
plugin/pkg/admission/priority, apimachinery field errors and StatusErrors).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.apierrors import (
    AdmissionError,
    ErrorType,
    FieldError,
    GoNamedString,
    aggregate_message,
    go_quote,
    new_forbidden,
    new_invalid,
)
from kube.objects import InvalidObject, Pod, PriorityClass
from scheduler.priority import (
    DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    POD_RESOURCE,
    PRIORITY_CLASS_KIND,
    PRIORITY_CLASS_RESOURCE,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_NODE_CRITICAL,
    SYSTEM_PRIORITY_CLASS_PREFIX,
    PriorityAdmission,
    is_critical_pod,
    is_critical_pod_based_on_priority,
    is_known_system_priority_class,
    is_mirror_pod,
    is_node_critical_pod,
    is_static_pod,
    preemptable,
    system_priority_classes,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)

DNS_RE = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
NAME_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or"
    " '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex"
    f" used for validation is '{DNS_RE}')"
)
RESERVED = "priority class names with 'system-' prefix are reserved for system use only. error: "
UNKNOWN_SYSTEM_FOO = (
    f"metadata.name: Forbidden: {RESERVED}system-foo is not a known system priority class"
)


def pc(name: str = "tier1", value: int = 100, **kw: Any) -> PriorityClass:
    return PriorityClass(name=name, value=value, **kw)


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


# --- constants and system classes ------------------------------------------------------------


def test_constants_match_pkg_apis_scheduling() -> None:
    assert DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS == 0
    assert HIGHEST_USER_DEFINABLE_PRIORITY == 1_000_000_000
    assert SYSTEM_CRITICAL_PRIORITY == 2_000_000_000
    assert SYSTEM_PRIORITY_CLASS_PREFIX == "system-"
    assert SYSTEM_CLUSTER_CRITICAL == "system-cluster-critical"
    assert SYSTEM_NODE_CRITICAL == "system-node-critical"


def test_system_priority_classes_are_the_bootstrap_objects() -> None:
    node, cluster = system_priority_classes()
    assert (node.name, node.value) == ("system-node-critical", 2_000_001_000)
    assert (cluster.name, cluster.value) == ("system-cluster-critical", 2_000_000_000)
    assert node.description == (
        "Used for system critical pods that must not be moved from their current node."
    )
    assert cluster.description == (
        "Used for system critical pods that must run in the cluster, but can be moved to"
        " another node if necessary."
    )
    for spc in (node, cluster):
        assert spc.global_default is False
        assert spc.preemption_policy == "PreemptLowerPriority"
        assert validate_priority_class(spc) == []
    # Fresh list each call: callers may not corrupt the bootstrap set.
    first = system_priority_classes()
    first.clear()
    assert len(system_priority_classes()) == 2


@pytest.mark.parametrize(
    ("name", "value", "global_default", "expected"),
    [
        ("system-node-critical", 2_000_001_000, False, (True, "")),
        ("system-cluster-critical", 2_000_000_000, False, (True, "")),
        (
            "system-node-critical",
            2_000_000_000,
            False,
            (False, "value of system-node-critical PriorityClass must be 2000001000"),
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            True,
            (False, "globalDefault of system-cluster-critical PriorityClass must be false"),
        ),
        ("system-other", 5, False, (False, "system-other is not a known system priority class")),
    ],
)
def test_is_known_system_priority_class(
    name: str, value: int, global_default: bool, expected: tuple[bool, str]
) -> None:
    assert is_known_system_priority_class(name, value, global_default) == expected


# --- field errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            FieldError.forbidden("value", "maximum allowed value of a user defined priority is 1"),
            "value: Forbidden: maximum allowed value of a user defined priority is 1",
        ),
        (FieldError.required("preemptionPolicy"), "preemptionPolicy: Required value"),
        (
            FieldError.required("metadata.name", "name or generateName is required"),
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            FieldError.invalid("metadata.name", "tier&1", "bad"),
            'metadata.name: Invalid value: "tier&1": bad',
        ),
        (FieldError.invalid("f", 5, "d"), "f: Invalid value: 5: d"),
        (FieldError.invalid("f", -7, ""), "f: Invalid value: -7"),
        (FieldError.invalid("f", True, "d"), "f: Invalid value: true: d"),
        (FieldError.invalid("f", None, "d"), "f: Invalid value: null: d"),
        (FieldError.invalid("f", 1.5, "d"), "f: Invalid value: 1.5: d"),
        (FieldError.invalid("f", 2.0, "d"), "f: Invalid value: 2: d"),
        (FieldError.invalid("f", 1e21, "d"), "f: Invalid value: 1e+21: d"),
        (FieldError.invalid("f", 1e-7, "d"), "f: Invalid value: 1e-07: d"),
        (FieldError.invalid("f", 0.0001, "d"), "f: Invalid value: 0.0001: d"),
        (
            FieldError.invalid("f", ["a", "<b>"], "d"),
            'f: Invalid value: ["a","\\u003cb\\u003e"]: d',
        ),
        (FieldError(ErrorType.Invalid, "f", "d"), "f: Invalid value: d"),
        (
            FieldError.not_supported("p", "Foo", ["PreemptLowerPriority", "Never"]),
            'p: Unsupported value: "Foo": supported values: "PreemptLowerPriority", "Never"',
        ),
        (FieldError.not_supported("p", "Foo", []), 'p: Unsupported value: "Foo"'),
        (
            FieldError.invalid("p", GoNamedString("<x>"), "d"),
            'p: Invalid value: "\\u003cx\\u003e": d',
        ),
        (FieldError.invalid("p", "<x>", "d"), 'p: Invalid value: "<x>": d'),
        (FieldError(ErrorType.NotFound, "f", value="x"), 'f: Not found: "x"'),
        (FieldError(ErrorType.TooLong, "f", "too", "xxxx"), "f: Too long: too"),
    ],
)
def test_field_error_renders_like_field_error_Error(error: FieldError, text: str) -> None:
    assert str(error) == text
    assert error.error_body() == text.split(": ", 1)[1]


def test_error_type_values_are_kube_cause_types() -> None:
    assert ErrorType.Forbidden == "FieldValueForbidden"
    assert str(ErrorType.Invalid) == "FieldValueInvalid"
    assert ErrorType.Required.value == "FieldValueRequired"
    assert ErrorType.NotSupported == "FieldValueNotSupported"
    assert ErrorType.Internal == "InternalError"
    assert ErrorType.NotSupported.display == "Unsupported value"
    assert ErrorType.TypeInvalid.display == "Invalid value"


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("tab\tnl\ncr\rbell\a", '"tab\\tnl\\ncr\\rbell\\a"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("café 😀", '"café 😀"'),
        ("zero\u200bwidth", '"zero\\u200bwidth"'),
        ("tag\U000e0001", '"tag\\U000e0001"'),
    ],
)
def test_go_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_aggregate_message_single_many_duplicates_and_empty() -> None:
    a = FieldError.forbidden("value", "x")
    b = FieldError.required("preemptionPolicy")
    assert aggregate_message([]) == ""
    assert aggregate_message([a]) == "value: Forbidden: x"
    assert aggregate_message([a, a]) == "value: Forbidden: x"
    assert aggregate_message([b, a, b]) == (
        "[preemptionPolicy: Required value, value: Forbidden: x]"
    )


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=8))
def test_aggregate_message_keeps_first_occurrence_order(details: list[str]) -> None:
    errors = [FieldError.forbidden("f", d) for d in details]
    unique = list(dict.fromkeys(f"f: Forbidden: {d}" for d in details))
    expected = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    assert aggregate_message(errors) == expected


@given(st.text(st.characters(codec="utf-8").filter(str.isprintable)))
def test_go_quote_of_printable_text_is_valid_json_for_the_same_text(text: str) -> None:
    assert json.loads(go_quote(text)) == text


# --- Status errors -----------------------------------------------------------------------------


def test_new_invalid_builds_kube_apiserver_422() -> None:
    errors = [
        FieldError.forbidden(
            "value", "maximum allowed value of a user defined priority is 1000000000"
        )
    ]
    err = new_invalid(PRIORITY_CLASS_KIND, "tier1", errors)
    assert err.code == 422
    assert err.reason == "Invalid"
    assert err.message == (
        'PriorityClass.scheduling.k8s.io "tier1" is invalid: value: Forbidden: maximum allowed'
        " value of a user defined priority is 1000000000"
    )
    assert str(err) == err.message
    assert err.to_dict() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": err.message,
        "reason": "Invalid",
        "details": {
            "name": "tier1",
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "causes": [
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: maximum allowed value of a user defined priority is"
                    " 1000000000",
                    "field": "value",
                }
            ],
        },
        "code": 422,
    }


def test_new_invalid_with_several_errors_brackets_the_message_and_lists_every_cause() -> None:
    errors = [
        FieldError.forbidden("metadata.namespace", "not allowed on this type"),
        FieldError.forbidden("metadata.namespace", "not allowed on this type"),
        FieldError.required("preemptionPolicy"),
    ]
    err = new_invalid(PRIORITY_CLASS_KIND, 'we"ird', errors)
    assert err.message == (
        'PriorityClass.scheduling.k8s.io "we\\"ird" is invalid: [metadata.namespace: Forbidden:'
        " not allowed on this type, preemptionPolicy: Required value]"
    )
    # causes keep duplicates: NewInvalid copies the list, only the message is de-duplicated.
    assert [c.field for c in err.causes] == [
        "metadata.namespace",
        "metadata.namespace",
        "preemptionPolicy",
    ]
    assert err.causes[2].to_dict() == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "preemptionPolicy",
    }


def test_new_invalid_without_errors_has_no_colon() -> None:
    err = new_invalid("Pod", "p", [])
    assert err.message == 'Pod "p" is invalid'
    assert err.to_dict()["details"] == {"name": "p", "kind": "Pod"}


@pytest.mark.parametrize(
    ("resource", "name", "message", "details"),
    [
        ("pods", "web-0", 'pods "web-0" is forbidden: boom', {"name": "web-0", "kind": "pods"}),
        (
            "priorityclasses.scheduling.k8s.io",
            "pc",
            'priorityclasses.scheduling.k8s.io "pc" is forbidden: boom',
            {"name": "pc", "group": "scheduling.k8s.io", "kind": "priorityclasses"},
        ),
        ("pods", "", "pods is forbidden: boom", {"kind": "pods"}),
        # NewForbidden always sets a (non-nil, here empty) Details, so Go writes "details": {}.
        ("", "", "forbidden: boom", {}),
    ],
)
def test_new_forbidden_message_shapes(
    resource: str, name: str, message: str, details: dict[str, str] | None
) -> None:
    err = new_forbidden(resource, name, "boom")
    assert isinstance(err, AdmissionError)
    assert (err.code, err.reason, err.message, err.detail) == (403, "Forbidden", message, "boom")
    status = err.to_dict()
    assert status["code"] == 403
    assert status["reason"] == "Forbidden"
    assert status["status"] == "Failure"
    assert status.get("details") == details


# --- ValidatePriorityClass -------------------------------------------------------------------


@pytest.mark.parametrize(
    "good",
    [
        pc(),
        pc(value=200, description="Used for the highest priority pods."),
        pc(value=HIGHEST_USER_DEFINABLE_PRIORITY),
        pc(value=-(2**31)),
        pc(global_default=True),
        pc(preemption_policy="Never"),
        pc(name="a.b-c.d1"),
        pc(labels={"example.com/tier": "gold", "plain": ""}),
        pc(annotations={"Example.COM/Note": "anything goes"}),
        pc(SYSTEM_NODE_CRITICAL, 2_000_001_000),
        pc(SYSTEM_CLUSTER_CRITICAL, 2_000_000_000),
        PriorityClass.from_dict({"metadata": {"name": "from-yaml"}, "value": 7}),
    ],
    ids=repr,
)
def test_valid_priority_classes(good: PriorityClass) -> None:
    assert validate_priority_class(good) == []


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (pc(namespace="foo"), ["metadata.namespace: Forbidden: not allowed on this type"]),
        (pc("tier&1"), [f'metadata.name: Invalid value: "tier&1": {NAME_MSG}']),
        (pc("Tier1"), [f'metadata.name: Invalid value: "Tier1": {NAME_MSG}']),
        (
            pc("a" * 254),
            [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
        ),
        (pc(""), ["metadata.name: Required value: name or generateName is required"]),
        (
            pc(value=HIGHEST_USER_DEFINABLE_PRIORITY + 1),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
        ),
        (
            pc("system-foo", 5),
            [UNKNOWN_SYSTEM_FOO],
        ),
        (
            # The prefix rule replaces the ceiling rule (else-if): one error, not two.
            pc("system-foo", HIGHEST_USER_DEFINABLE_PRIORITY + 1),
            [UNKNOWN_SYSTEM_FOO],
        ),
        (
            pc(SYSTEM_NODE_CRITICAL, 2_000_000_000),
            [
                f"metadata.name: Forbidden: {RESERVED}value of system-node-critical PriorityClass"
                " must be 2000001000"
            ],
        ),
        (
            pc(SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, global_default=True),
            [
                f"metadata.name: Forbidden: {RESERVED}globalDefault of system-cluster-critical"
                " PriorityClass must be false"
            ],
        ),
        (pc(preemption_policy=""), ["preemptionPolicy: Required value"]),
        (
            pc(preemption_policy="Sometimes"),
            [
                'preemptionPolicy: Unsupported value: "Sometimes": supported values:'
                ' "PreemptLowerPriority", "Never"'
            ],
        ),
        (
            pc(labels={"bad key!": "ok"}),
            [
                'metadata.labels: Invalid value: "bad key!": name part must consist of'
                " alphanumeric characters, '-', '_' or '.', and must start and end with an"
                " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex"
                " used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ],
        ),
        (
            pc(labels={"k": "-bad"}),
            [
                'metadata.labels: Invalid value: "-bad": a valid label must be an empty string'
                " or consist of alphanumeric characters, '-', '_' or '.', and must start and end"
                " with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345',"
                " regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ],
        ),
        (
            pc(annotations={"/x": "v"}),
            ['metadata.annotations: Invalid value: "/x": prefix part must be non-empty'],
        ),
        (
            # Several problems are reported in upstream order: metadata, name/value, policy.
            pc("tier1", HIGHEST_USER_DEFINABLE_PRIORITY + 5, namespace="ns", preemption_policy=""),
            [
                "metadata.namespace: Forbidden: not allowed on this type",
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                "preemptionPolicy: Required value",
            ],
        ),
    ],
    ids=lambda x: repr(x)[:60],
)
def test_invalid_priority_classes(bad: PriorityClass, expected: list[str]) -> None:
    assert messages(validate_priority_class(bad)) == expected


def test_invalid_error_types_are_kube_cause_types() -> None:
    errs = validate_priority_class(
        pc("x", HIGHEST_USER_DEFINABLE_PRIORITY + 1, preemption_policy="No")
    )
    assert [e.type for e in errs] == [ErrorType.Forbidden, ErrorType.NotSupported]
    assert [e.field for e in errs] == ["value", "preemptionPolicy"]


def test_full_422_for_an_oversized_user_class() -> None:
    bad = PriorityClass.from_dict({"metadata": {"name": "huge"}, "value": 1_500_000_000})
    err = new_invalid(PRIORITY_CLASS_KIND, bad.name, validate_priority_class(bad))
    assert err.message == (
        'PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed'
        " value of a user defined priority is 1000000000"
    )


user_names = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,12}[a-z0-9])?", fullmatch=True).filter(
    lambda n: not n.startswith(SYSTEM_PRIORITY_CLASS_PREFIX)
)


@given(
    name=user_names,
    value=st.integers(HIGHEST_USER_DEFINABLE_PRIORITY + 1, 2**31 - 1),
    global_default=st.booleans(),
    policy=st.sampled_from(["PreemptLowerPriority", "Never"]),
)
def test_any_user_class_above_one_billion_is_rejected(
    name: str, value: int, global_default: bool, policy: str
) -> None:
    errs = validate_priority_class(
        pc(name, value, global_default=global_default, preemption_policy=policy)
    )
    assert messages(errs) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    ]


@given(name=user_names, value=st.integers(-(2**31), HIGHEST_USER_DEFINABLE_PRIORITY))
def test_any_user_class_within_range_is_accepted(name: str, value: int) -> None:
    assert validate_priority_class(pc(name, value)) == []


@given(
    suffix=st.from_regex(r"[a-z0-9]{1,10}", fullmatch=True),
    value=st.integers(-(2**31), 2**31 - 1),
)
def test_unknown_system_prefixed_classes_are_rejected_whatever_the_value(
    suffix: str, value: int
) -> None:
    name = SYSTEM_PRIORITY_CLASS_PREFIX + suffix
    errs = validate_priority_class(pc(name, value))
    if name in (SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL):
        return
    assert messages(errs) == [
        f"metadata.name: Forbidden: {RESERVED}{name} is not a known system priority class"
    ]


# --- ValidatePriorityClassUpdate -------------------------------------------------------------

OLD = pc("tier1", 100, resource_version="1", uid="u-1")


@pytest.mark.parametrize(
    "new",
    [
        pc("tier1", 100, resource_version="2", description="Used for the highest priority pods."),
        pc("tier1", 100, resource_version="2", description="A different description."),
        pc("tier1", 100, resource_version="2"),
        pc("tier1", 100, resource_version="2", global_default=True),
        pc("tier1", 100, uid="u-1"),
        # An update without uid keeps the stored one (the registry fills it in).
        pc("tier1", 100, uid=""),
    ],
    ids=["no change", "change description", "remove description", "globalDefault", "uid", "no uid"],
)
def test_allowed_updates(new: PriorityClass) -> None:
    assert validate_priority_class_update(OLD, new) == []


@pytest.mark.parametrize(
    ("new", "expected", "error_type"),
    [
        (
            pc("tier1", 100, namespace="foo"),
            ['metadata.namespace: Invalid value: "foo": field is immutable'],
            ErrorType.Invalid,
        ),
        (
            pc("tier2", 100),
            ['metadata.name: Invalid value: "tier2": field is immutable'],
            ErrorType.Invalid,
        ),
        (
            pc("tier1", 0),
            ["value: Forbidden: may not be changed in an update."],
            ErrorType.Forbidden,
        ),
        (
            pc("tier1", 101),
            ["value: Forbidden: may not be changed in an update."],
            ErrorType.Forbidden,
        ),
        (
            pc("tier1", 100, preemption_policy="Never"),
            ['preemptionPolicy: Invalid value: "Never": field is immutable'],
            ErrorType.Invalid,
        ),
        (
            pc("tier1", 100, uid="u-2"),
            ['metadata.uid: Invalid value: "u-2": field is immutable'],
            ErrorType.Invalid,
        ),
    ],
    ids=["add namespace", "change name", "remove value", "change value", "policy", "uid"],
)
def test_forbidden_updates(new: PriorityClass, expected: list[str], error_type: ErrorType) -> None:
    errs = validate_priority_class_update(OLD, new)
    assert messages(errs) == expected
    assert {e.type for e in errs} == {error_type}


def test_update_reports_value_before_policy() -> None:
    new = pc("tier1", 5, preemption_policy="Never")
    assert messages(validate_priority_class_update(OLD, new)) == [
        "value: Forbidden: may not be changed in an update.",
        'preemptionPolicy: Invalid value: "Never": field is immutable',
    ]


@given(
    name=user_names,
    value=st.integers(-(2**31), HIGHEST_USER_DEFINABLE_PRIORITY),
    new_value=st.integers(-(2**31), HIGHEST_USER_DEFINABLE_PRIORITY),
    description=st.text(max_size=20),
    global_default=st.booleans(),
)
def test_update_only_ever_objects_to_the_value(
    name: str, value: int, new_value: int, description: str, global_default: bool
) -> None:
    old = pc(name, value)
    new = pc(name, new_value, description=description, global_default=global_default)
    errs = validate_priority_class_update(old, new)
    if value == new_value:
        assert errs == []
    else:
        assert messages(errs) == ["value: Forbidden: may not be changed in an update."]


# --- delete ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL])
def test_system_classes_cannot_be_deleted(name: str) -> None:
    with pytest.raises(AdmissionError) as exc:
        validate_priority_class_delete(name)
    assert exc.value.message == (
        f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system priority'
        " class and cannot be deleted"
    )
    assert exc.value.to_dict()["details"] == {
        "name": name,
        "group": "scheduling.k8s.io",
        "kind": "priorityclasses",
    }


def test_resource_and_kind_names() -> None:
    assert PRIORITY_CLASS_RESOURCE == "priorityclasses.scheduling.k8s.io"
    assert PRIORITY_CLASS_KIND == "PriorityClass.scheduling.k8s.io"
    assert POD_RESOURCE == "pods"


def test_user_classes_can_be_deleted() -> None:
    validate_priority_class_delete("tier1")
    validate_priority_class_delete("system-other")


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


def pod(name: str = "p", **kw: Any) -> Pod:
    return Pod(name=name, namespace=kw.pop("namespace", "namespace"), **kw)


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
        ([], pod(spec_priority=0), ("", 0, "PreemptLowerPriority")),
        ([DEFAULT2], pod(spec_priority=2000), ("default2", 2000, "PreemptLowerPriority")),
        (
            [DEFAULT1],
            pod(priority_class_name="default1", spec_priority=1000),
            ("default1", 1000, "PreemptLowerPriority"),
        ),
        # System classes are ordinary objects, usable from any namespace.
        (
            system_priority_classes(),
            pod(namespace="kube-system", priority_class_name=SYSTEM_CLUSTER_CRITICAL),
            (SYSTEM_CLUSTER_CRITICAL, 2_000_000_000, "PreemptLowerPriority"),
        ),
        (
            system_priority_classes(),
            pod(namespace="non-system-namespace", priority_class_name=SYSTEM_NODE_CRITICAL),
            (SYSTEM_NODE_CRITICAL, 2_000_001_000, "PreemptLowerPriority"),
        ),
        (
            system_priority_classes(),
            pod(priority_class_name=SYSTEM_CLUSTER_CRITICAL, spec_priority=2_000_000_000),
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
            pod("pod-w-integer-priority", priority_class_name="default1", spec_priority=2000),
            "the integer value of priority (2000) must not be provided in pod spec; priority"
            " admission controller computed 1000 from the given PriorityClass name",
        ),
        (
            [],
            pod("pod-w-integer-priority", spec_priority=2),
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
                spec_priority=1001,
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
    given = pod("both", priority_class_name="never", spec_priority=1, preemption_policy="X")
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
        admission.admit_pod(pod(spec_priority=0))


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
    old = pod(priority_class_name="gone", spec_priority=7, preemption_policy="Never")
    new = pod(priority_class_name="gone", spec_priority=9)
    assert fields(admission.admit_pod(new, "update", old)) == ("gone", 9, "Never")
    unchanged = pod(spec_priority=9, preemption_policy="PreemptLowerPriority")
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
    given = pod(priority_class_name="does-not-exist", spec_priority=5)
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


def manifest(name: str | None = "web-0", **spec: Any) -> dict[str, Any]:
    meta = {} if name is None else {"name": name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


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


# --- critical pods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "spec_priority", "static", "mirror", "critical"),
    [
        ({}, None, False, False, False),
        ({"kubernetes.io/config.source": "api"}, None, False, False, False),
        ({"kubernetes.io/config.source": "file"}, None, True, False, True),
        ({"kubernetes.io/config.source": "http"}, 0, True, False, True),
        ({"kubernetes.io/config.mirror": ""}, None, False, True, True),
        ({"kubernetes.io/config.mirror": "abc"}, -5, False, True, True),
        ({}, 2_000_000_000, False, False, True),
        ({}, 2_000_001_000, False, False, True),
        ({}, 1_999_999_999, False, False, False),
        ({"kubernetes.io/config.source": "api"}, 2_000_000_000, False, False, True),
    ],
)
def test_is_critical_pod(
    annotations: dict[str, str],
    spec_priority: int | None,
    static: bool,
    mirror: bool,
    critical: bool,
) -> None:
    p = pod(annotations=annotations, spec_priority=spec_priority)
    assert is_static_pod(p) is static
    assert is_mirror_pod(p) is mirror
    assert is_critical_pod(p) is critical


@given(st.integers(-(2**31), 2**31 - 1))
def test_is_critical_pod_based_on_priority(priority: int) -> None:
    assert is_critical_pod_based_on_priority(priority) is (priority >= 2_000_000_000)
    assert is_critical_pod(pod(spec_priority=priority)) is (priority >= 2_000_000_000)


def test_is_node_critical_pod() -> None:
    admission = PriorityAdmission(system_priority_classes())
    node = admission.admit_pod(pod(priority_class_name=SYSTEM_NODE_CRITICAL))
    cluster = admission.admit_pod(pod(priority_class_name=SYSTEM_CLUSTER_CRITICAL))
    assert is_node_critical_pod(node)
    assert not is_node_critical_pod(cluster)
    # The name alone is not enough: the pod must also be critical.
    assert not is_node_critical_pod(pod(priority_class_name=SYSTEM_NODE_CRITICAL))


@pytest.mark.parametrize(
    ("preemptor", "preemptee", "expected"),
    [
        (pod(spec_priority=2_000_000_000), pod(spec_priority=1_999_999_999), True),
        (pod(spec_priority=2_000_000_000), pod(spec_priority=2_000_000_000), False),
        (pod(annotations={"kubernetes.io/config.source": "file"}), pod(), True),
        (pod(spec_priority=10), pod(spec_priority=5), True),
        (pod(spec_priority=5), pod(spec_priority=5), False),
        (pod(spec_priority=10), pod(), False),
        (pod(), pod(spec_priority=-1), False),
    ],
)
def test_preemptable(preemptor: Pod, preemptee: Pod, expected: bool) -> None:
    assert preemptable(preemptor, preemptee) is expected


def test_end_to_end_like_kube_apiserver() -> None:
    """Bootstrap, create classes through validation then admission, then create pods."""
    admission = PriorityAdmission(system_priority_classes())
    docs = [
        {"metadata": {"name": "low"}, "value": -10, "globalDefault": True},
        {"metadata": {"name": "batch"}, "value": 100, "preemptionPolicy": "Never"},
        {"metadata": {"name": "other-default"}, "value": 5, "globalDefault": True},
    ]
    outcomes = []
    for doc in docs:
        new = PriorityClass.from_dict(doc)
        errs = validate_priority_class(new)
        assert errs == []
        try:
            admission.validate_class(new)
        except AdmissionError as err:
            outcomes.append(err.message)
            continue
        admission.set_class(new)
        outcomes.append("created")
    assert outcomes == [
        "created",
        "created",
        'priorityclasses.scheduling.k8s.io "other-default" is forbidden: PriorityClass low is'
        " already marked as default. Only one default can exist",
    ]
    pods = [
        manifest("a"),
        manifest("b", priorityClassName="batch"),
        manifest("c", priorityClassName=SYSTEM_NODE_CRITICAL),
    ]
    for m in pods:
        admission.admit_pod_manifest(m)
    assert [
        (m["spec"]["priorityClassName"], m["spec"]["priority"], m["spec"]["preemptionPolicy"])
        for m in pods
    ] == [
        ("low", -10, "PreemptLowerPriority"),
        ("batch", 100, "Never"),
        (SYSTEM_NODE_CRITICAL, 2_000_001_000, "PreemptLowerPriority"),
    ]
    assert [is_critical_pod(Pod.from_dict(m)) for m in pods] == [False, False, True]

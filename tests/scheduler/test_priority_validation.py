"""PriorityClass validation: the system classes, create, update and delete.

Messages are asserted word for word against kube-apiserver's (pkg/apis/scheduling/validation,
apimachinery field errors and StatusErrors).
"""

from __future__ import annotations

import json

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
from kube.objects import PriorityClass
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
    is_known_system_priority_class,
    system_priority_classes,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)
from tests.support.priority import NAME_MSG, RESERVED, UNKNOWN_SYSTEM_FOO, messages, pc

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

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.labels import (
    LabelSelector,
    Requirement,
    SelectorError,
    dns1123_subdomain_errors,
    label_value_errors,
    make_requirement,
    parse_field_selector,
    parse_label_selector,
    qualified_name_errors,
)


def test_match_labels_and_expressions_are_anded() -> None:
    sel = LabelSelector.from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches({"app": "web", "tier": "a"})
    assert not sel.matches({"app": "web", "tier": "c"})
    assert not sel.matches({"app": "web", "tier": "a", "canary": "1"})
    assert not sel.matches({"tier": "a"})


def test_empty_selector_matches_everything_and_notin_matches_missing_keys() -> None:
    assert LabelSelector.from_dict({}).matches({"x": "y"})
    assert LabelSelector.from_dict({}).is_empty()
    notin = LabelSelector.from_dict(
        {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}
    )
    assert notin.matches({})
    assert notin.matches({"env": "dev"})
    assert not notin.matches({"env": "prod"})


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (
            {"key": "a", "operator": "Gt", "values": ["1"]},
            '"Gt" is not a valid label selector operator',
        ),
        ({"key": "a", "operator": "In", "values": []}, "values set can't be empty"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "values set must be empty"),
        ({"key": "-a", "operator": "Exists"}, "name part must consist of alphanumeric"),
        ({"key": "a", "operator": "In", "values": ["bad value"]}, "a valid label must be"),
    ],
)
def test_structured_selector_errors(expr: dict[str, object], message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        LabelSelector.from_dict({"matchExpressions": [expr]})


def test_node_selector_operators_compare_integers() -> None:
    gt = make_requirement("cores", "Gt", ["4"])
    lt = make_requirement("cores", "Lt", ["4"])
    assert gt.matches({"cores": "8"})
    assert not gt.matches({"cores": "4"})
    assert not gt.matches({"cores": "many"})
    assert not gt.matches({})
    assert lt.matches({"cores": "2"})
    with pytest.raises(SelectorError, match="the value must be an integer"):
        make_requirement("cores", "Gt", ["x"])
    with pytest.raises(SelectorError, match="exactly one value is required"):
        make_requirement("cores", "Lt", ["1", "2"])


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web"}, True),
        ("app!=web", {"app": "web"}, False),
        ("app!=web", {}, True),
        ("app in (web, api)", {"app": "api"}, True),
        ("app notin (web,api)", {"app": "api"}, False),
        ("app", {"app": ""}, True),
        ("!app", {"app": ""}, False),
        ("!app", {}, True),
        ("a=1,b=2", {"a": "1", "b": "2"}, True),
        ("a=1,b=2", {"a": "1"}, False),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "4"}, False),
        ("a=", {"a": ""}, True),
        ("", {"x": "y"}, True),
    ],
)
def test_string_selectors(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text", ["a in b", "a in (b", "=a", "a=b,", "a b", "a=b c", "a in (x)y"])
def test_string_selector_errors(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_field_selectors() -> None:
    reqs = parse_field_selector("spec.nodeName=node-1,status.phase!=Failed,metadata.name==a\\,b")
    assert [(r.field, r.operator, r.value) for r in reqs] == [
        ("spec.nodeName", "=", "node-1"),
        ("status.phase", "!=", "Failed"),
        ("metadata.name", "=", "a,b"),
    ]
    assert reqs[1].matches("Running")
    assert not reqs[1].matches("Failed")
    assert parse_field_selector("") == ()
    with pytest.raises(SelectorError, match="can't understand"):
        parse_field_selector("spec.nodeName")


def test_name_rules() -> None:
    assert dns1123_subdomain_errors("my.class-1") == []
    assert dns1123_subdomain_errors("My_Class")[0].startswith("a lowercase RFC 1123 subdomain")
    assert dns1123_subdomain_errors("a" * 254)[0] == "must be no more than 253 characters"
    assert qualified_name_errors("example.com/my_key") == []
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("a" * 64) == ["name part must be no more than 63 characters"]
    assert label_value_errors("") == []
    assert label_value_errors("-x")[0].startswith("a valid label must be an empty string")


label_keys = st.sampled_from(["app", "tier", "env", "zone"])
label_values = st.sampled_from(["a", "b", "c"])


@given(
    st.dictionaries(label_keys, label_values),
    st.lists(
        st.tuples(
            label_keys,
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
            st.lists(label_values, min_size=1, max_size=3),
        ),
        max_size=4,
    ),
)
def test_string_form_round_trips_and_matches_the_same(
    labels: dict[str, str], exprs: list[tuple[str, str, list[str]]]
) -> None:
    sel = LabelSelector.from_dict(
        {
            "matchExpressions": [
                {"key": k, "operator": op, **({"values": v} if op in ("In", "NotIn") else {})}
                for k, op, v in exprs
            ]
        }
    )
    reparsed = parse_label_selector(str(sel))
    assert reparsed.matches(labels) == sel.matches(labels)
    expected = all(
        Requirement(r.key, r.operator, r.values).matches(labels) for r in sel.requirements
    )
    assert sel.matches(labels) == expected


def test_dns1123_label_rule() -> None:
    from kube.labels import dns1123_label_errors

    assert dns1123_label_errors("kube-system") == []
    assert dns1123_label_errors("a.b")[0].startswith("a lowercase RFC 1123 label must consist")
    assert dns1123_label_errors("a" * 64)[0] == "must be no more than 63 characters"

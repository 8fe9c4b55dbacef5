"""``parse_feature_gates``: kube's ``--feature-gates`` (component-base ``featuregate.Set``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.cliutil import parse_feature_gates

KNOWN = {"A": True, "B": False}


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ((), {"A": True, "B": False}),  # defaults
        (("A=false",), {"A": False, "B": False}),
        ((" A = f , B=T ",), {"A": False, "B": True}),  # spaces trimmed, Go's spellings
        (("A=0,,A=1", "B=TRUE"), {"A": True, "B": True}),  # empty items skipped, last wins
    ],
)
def test_pairs_set_gates_over_their_defaults(
    values: tuple[str, ...], want: dict[str, bool]
) -> None:
    assert parse_feature_gates(values, KNOWN) == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("A", "missing bool value for A"),
        ("A=yes", 'invalid value of A=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
        ("C=true", "unrecognized feature gate: C"),
        # every pair is read before a name is looked up, as kube's Set does
        ("C=true,A=on", 'invalid value of A=on, err: strconv.ParseBool: parsing "on": invalid'),
    ],
)
def test_bad_pairs_raise_kubes_message(value: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        parse_feature_gates([value], KNOWN)


@given(st.lists(st.tuples(st.sampled_from(sorted(KNOWN)), st.booleans())))
def test_the_last_setting_of_each_gate_wins(pairs: list[tuple[str, bool]]) -> None:
    text = ",".join(f"{name}={str(on).lower()}" for name, on in pairs)
    assert parse_feature_gates([text], KNOWN) == {**KNOWN, **dict(pairs)}

"""``kube.boundedjson``: the nesting read from the bytes is the parsed tree's, a text nested too
deeply is refused before it is parsed, and reading one member at a time gives what
``json.loads`` gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kube.boundedjson
from kube.boundedjson import MAX_DEPTH, Cursor, JSONTooDeep, loads, nesting_depth

# strings are where a byte scan can go wrong: brackets, quotes and backslashes inside them
TRICKY = st.text(alphabet=st.sampled_from('[]{}"\\ab\n\u00e9\U0001f600'), max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


@given(VALUES, st.booleans())
def test_the_depth_read_from_the_bytes_is_the_trees(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert nesting_depth(text) == depth(value)
    assert loads(text) == json.loads(text)


@given(st.integers(min_value=0, max_value=3 * MAX_DEPTH))
def test_deeper_than_the_bound_is_refused_before_parsing(levels: int) -> None:
    text = json.dumps(nested(levels)).encode()
    assert nesting_depth(text) == levels
    if levels > MAX_DEPTH:
        with pytest.raises(JSONTooDeep, match=f"nested deeper than {MAX_DEPTH} levels"):
            loads(text)
    else:
        assert loads(text) == nested(levels)


def test_what_would_exhaust_the_parsers_stack_is_a_value_error() -> None:
    for text in (b"[" * 200_000 + b"]" * 200_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):
        with pytest.raises(ValueError, match="nested deeper"):
            loads(text)
        buffer = bytearray(text)
        with pytest.raises(JSONTooDeep):
            Cursor.of(buffer)
        assert buffer == b""  # emptied whether or not the text is read
    # unbalanced: the parser says what is wrong
    with pytest.raises(ValueError):
        loads(b"[[[]")


def test_a_buffer_is_read_piece_by_piece_and_emptied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube.boundedjson, "_PIECE", 5)
    text = '{"a": "\u00e9\u00e9\u00e9", "n": 1234567890, "b": [true, null, 12.5e3]}'
    buffer = bytearray(text.encode())
    cursor = Cursor.of(buffer)
    assert read_all(cursor) == json.loads(text)
    cursor.end()
    assert buffer == b""
    with pytest.raises(UnicodeDecodeError):
        read_all(Cursor.of(bytearray(b'["ab", "\xff"]')))


def read_all(cursor: Cursor) -> Any:
    """A whole value through the cursor, one member or element at a time."""
    char = cursor.peek()
    if char == "{":
        return {key: read_all(cursor) for key in cursor.members()}
    if char == "[":
        return [read_all(cursor) for _ in cursor.elements()]
    return cursor.value()


@given(VALUES, st.sampled_from(["", " ", "\n\t "]), st.integers(min_value=1, max_value=9))
def test_the_cursor_reads_what_json_loads_reads(value: Any, space: str, piece: int) -> None:
    text = space + json.dumps(value, indent=len(space) or None).replace("\n", "\n" + space) + space
    cursor = Cursor(text)
    assert read_all(cursor) == value
    cursor.end()
    # from bytes, a few at a time: a value (a number above all) cut between two pieces
    saved = kube.boundedjson._PIECE
    kube.boundedjson._PIECE = piece
    try:
        cursor = Cursor.of(bytearray(text.encode()))
        assert read_all(cursor) == value
        cursor.end()
    finally:
        kube.boundedjson._PIECE = saved


def test_the_cursor_refuses_malformed_text_with_the_position() -> None:
    for text, message in (
        ('{"a" 1}', "Expecting ':' delimiter"),
        ('{"a": 1 "b": 2}', "Expecting ',' delimiter"),
        ("[1 2]", "Expecting ',' delimiter"),
        ("{1: 2}", "Expecting property name"),
        ('{"a": [1, 2]', "Expecting ',' delimiter"),
        ("[1] x", "Extra data"),
    ):
        with pytest.raises(json.JSONDecodeError, match=message):
            read_all(cursor := Cursor(text))
            cursor.end()


def test_a_member_left_unread_is_an_error_not_a_silent_skip() -> None:
    cursor = Cursor('{"a": {"b": 1}, "c": 2}')
    keys = cursor.members()
    assert next(keys) == "a"
    with pytest.raises(json.JSONDecodeError, match="Expecting ',' delimiter"):
        next(keys)

"""JSON read within bounds: a nesting depth, and one member or element at a time.

Every JSON text the agent reads — API lists and watch events, the kubelet's ``/stats/summary``
— carries values someone else wrote. Two things about CPython's ``json`` make that a risk:

* **Nesting.** The decoder recurses once per level, so a text nested a few thousand levels
  deep raises ``RecursionError`` (at the interpreter's recursion limit on 3.11, at a C stack
  bound from 3.12), and a tree nested a few hundred levels parses but breaks whatever walks it
  recursively later (``repr`` in an error message, a deep copy). Go's ``encoding/json``
  refuses nesting beyond 10000 levels (``maxNestingDepth``); no Kubernetes object comes near
  ``MAX_DEPTH`` (100): a pod's deepest path, through ``managedFields``' ``fieldsV1``, is about
  15 levels, a stats Summary's 5. So a text nested deeper is refused before it is parsed,
  with ``JSONTooDeep`` — a ``ValueError``, which callers already handle as malformed JSON.
  The check reads the encoded bytes with ``bytes`` methods only (escaped quotes, then
  everything but brackets and quotes, then strings dropped; matched pairs peeled), about a
  tenth of what parsing the same text costs, in time and in memory.
* **Size.** ``json.loads`` builds the whole tree before the caller sees any of it, and a tree
  takes 5–25 times its text's size in memory (a list of short strings or small objects is
  the worst). ``Cursor`` reads a text one object member or array element at a time, each
  with the C decoder (``JSONDecoder.raw_decode``), so a caller can trim every list item as it
  is parsed: a page of pods carrying megabytes of ``args`` each is never a page of parsed
  pods.

``decode`` takes the text from a ``bytearray`` and empties it, so a response's bytes are
gone before its text is parsed (the bytes, the text and the tree never coexist).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any, Final

__all__ = ["MAX_DEPTH", "Cursor", "JSONTooDeep", "decode", "loads", "nesting_depth"]

MAX_DEPTH: Final = 100


class JSONTooDeep(ValueError):
    """A JSON text nested deeper than the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


_STRING: Final = re.compile(rb'"[^"]*"')
_NOT_STRUCTURE: Final = bytes(c for c in range(256) if c not in b'"[]{}')
_SQUARE: Final = bytes.maketrans(b"{}", b"[]")
_SIGNED: Final = bytes.maketrans(b"[]", b"\x01\xff")
_PEEL_PASSES: Final = 16


def nesting_depth(data: bytes | bytearray) -> int:
    """How deeply the JSON text ``data`` (UTF-8) nests arrays and objects: 0 for a scalar.

    Exact for a well-formed text; for a malformed one some number the parser will refuse
    anyway. UTF-8 never uses the bytes of ``"``, ``\\``, brackets or braces inside another
    character, so the structure can be read from the bytes."""
    s = data
    if b"\\" in s:  # escapes pair up from the left, as replace() scans: only \" matters
        s = s.replace(b"\\\\", b"").replace(b'\\"', b"")
    s = s.translate(_SQUARE, _NOT_STRUCTURE)  # only brackets and quotes are left
    s = s.replace(b'""', b"")  # a string without brackets; quotes still alternate
    if b'"' in s:
        s = _STRING.sub(b"", s)  # strings that held brackets
    depth = 0
    # each pass removes the innermost pairs: one level of every tree
    while s and depth < _PEEL_PASSES:
        peeled = s.replace(b"[]", b"")
        if len(peeled) == len(s):
            break
        s = peeled
        depth += 1
    if s:  # deeper still (or unbalanced): count the rest in one pass
        depth += max(accumulate(memoryview(s.translate(_SIGNED)).cast("b")), default=0)
    return depth


def _check(data: bytes | bytearray, limit: int) -> None:
    if nesting_depth(data) > limit:
        raise JSONTooDeep(limit)


def decode(buffer: bytearray, *, limit: int = MAX_DEPTH) -> str:
    """The text of ``buffer`` (UTF-8), once its nesting is checked; the buffer is emptied.

    Raises ``JSONTooDeep``, or ``UnicodeDecodeError`` (a ``ValueError``) for bytes that are
    not UTF-8."""
    try:
        _check(buffer, limit)
        return buffer.decode("utf-8")
    finally:
        buffer.clear()


def loads(data: bytes | bytearray, *, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` for a text nested at most ``limit`` levels (else ``JSONTooDeep``)."""
    _check(data, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:  # the check makes it unreachable; never let it escape
        raise JSONTooDeep(limit) from None


_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = json.JSONDecoder()


class Cursor:
    """A JSON text read one object member or array element at a time.

    ``members()`` yields the keys of the object at the cursor and ``elements()`` steps through
    the array at the cursor; after each yield the caller reads that member's value or that
    element — ``value()`` decodes it whole, ``members()``/``elements()`` go into it — and must
    read it before the iteration continues. Malformed text raises ``json.JSONDecodeError``.
    The text's nesting is the caller's to check (``decode``)."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _error(self, message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, self.text, self.pos)

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end)."""
        match = _WHITESPACE.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()
        return self.text[self.pos : self.pos + 1]

    def _expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise self._error(f"Expecting {what}")
        self.pos += 1

    def value(self) -> Any:
        """The value at the cursor, decoded whole."""
        self.peek()
        try:
            value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        except RecursionError:
            raise JSONTooDeep(MAX_DEPTH) from None
        return value

    def members(self) -> Iterator[str]:
        """The keys of the object at the cursor, the cursor at each one's value."""
        self._expect("{", "'{'")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise self._error("Expecting property name enclosed in double quotes")
            key = self.value()
            self._expect(":", "':' delimiter")
            yield key
            char = self.peek()
            self.pos += 1
            if char == "}":
                return
            if char != ",":
                self.pos -= 1
                raise self._error("Expecting ',' delimiter")

    def elements(self) -> Iterator[None]:
        """Steps through the array at the cursor, the cursor at each element."""
        self._expect("[", "'['")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield None
            char = self.peek()
            self.pos += 1
            if char == "]":
                return
            if char != ",":
                self.pos -= 1
                raise self._error("Expecting ',' delimiter")

    def end(self) -> None:
        """Nothing but whitespace may follow the text's value."""
        if self.peek():
            raise self._error("Extra data")

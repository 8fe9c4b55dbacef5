"""JSON read within bounds: a nesting depth, and one member or element at a time.

Every JSON text the agent reads — API lists and watch events, the kubelet's ``/stats/summary``
— carries values someone else wrote, and CPython's ``json`` recurses once per level of nesting
and builds the whole tree before the caller sees any of it. ``loads`` refuses a text nested
deeper than ``MAX_DEPTH`` before parsing it; ``Cursor`` reads a text one member or element at
a time.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any, Final

__all__ = ["MAX_DEPTH", "Cursor", "JSONTooDeep", "loads", "nesting_depth"]

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


def loads(data: bytes | bytearray, *, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` for a text nested at most ``limit`` levels (else ``JSONTooDeep``).

    The decoder recurses once per level, so a text nested a few thousand levels deep raises
    ``RecursionError`` (at the interpreter's recursion limit on 3.11, at a C stack bound from
    3.12), and a tree nested a few hundred levels parses but breaks whatever walks it
    recursively later (``repr`` in an error message, a deep copy). Go's ``encoding/json``
    refuses nesting beyond 10000 levels (``maxNestingDepth``); no Kubernetes object comes near
    ``MAX_DEPTH`` (100): a pod's deepest path, through ``managedFields``' ``fieldsV1``, is
    about 15 levels, a stats Summary's 5. So a text nested deeper is refused before it is
    parsed, with ``JSONTooDeep`` — a ``ValueError``, which callers already handle as malformed
    JSON. The check (``nesting_depth``) reads the encoded bytes with ``bytes`` methods only,
    about a tenth of what parsing the same text costs, in time and in memory."""
    _check(data, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:  # the check makes it unreachable; never let it escape
        raise JSONTooDeep(limit) from None


_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL: Final = re.compile(r"[0-9.eE+-]*")
_DECODER: Final = json.JSONDecoder()
_PIECE: Final = 1 << 20  # bytes of a buffer decoded at a time


def _pieces(buffer: bytearray) -> Iterator[str]:
    """The text of ``buffer`` (UTF-8), a piece at a time, each piece's bytes dropped as it is
    decoded."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        while buffer:
            with memoryview(buffer)[:_PIECE] as view:
                text = decoder.decode(view, final=len(buffer) <= _PIECE)
            del buffer[:_PIECE]
            yield text
    finally:
        buffer.clear()


class Cursor:
    """A JSON text read one object member or array element at a time.

    ``members()`` yields the keys of the object at the cursor and ``elements()`` steps through
    the array at the cursor; after each yield the caller reads that member's value or that
    element — ``value()`` decodes it whole, ``members()``/``elements()`` go into it — and must
    read it before the iteration continues. Malformed text raises ``json.JSONDecodeError``.

    ``Cursor(text)`` reads a string whose nesting is the caller's to check;
    ``Cursor.of(buffer)`` checks a buffer's nesting, then reads its text in pieces of 1 MiB
    decoded as they are needed, the bytes and the text read so far dropped: reading a 7 MB
    body never holds its bytes and its text at once, nor the whole text.

    Why: ``json.loads`` builds the whole tree before the caller sees any of it, and a tree
    takes 5–25 times its text's size in memory (a list of short strings or small objects is
    the worst); the text it parses is a second copy of the bytes read, up to four times their
    size. Each member or element here is decoded by the C decoder
    (``JSONDecoder.raw_decode``), so a caller can trim every list item as it is parsed: a page
    of pods carrying megabytes of ``args`` each is never a page of parsed pods."""

    __slots__ = ("pending", "pos", "text")

    def __init__(self, text: str, pending: Iterator[str] | None = None) -> None:
        self.text = text
        self.pos = 0
        self.pending = pending

    @classmethod
    def of(cls, buffer: bytearray, *, limit: int = MAX_DEPTH) -> Cursor:
        """A cursor over the text in ``buffer`` (UTF-8; ``JSONTooDeep`` when nested deeper
        than ``limit``), which it empties as it reads; bytes that are not UTF-8 raise
        ``UnicodeDecodeError`` (a ``ValueError``) where they are read."""
        try:
            _check(buffer, limit)
        except JSONTooDeep:
            buffer.clear()
            raise
        return cls("", _pieces(buffer))

    def _more(self) -> bool:
        """The next piece after what is left unread; False at the end of the text."""
        piece = next(self.pending, None) if self.pending is not None else None
        if piece is None:
            return False
        self.text = self.text[self.pos :] + piece
        self.pos = 0
        return True

    def _error(self, message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, self.text, self.pos)

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end)."""
        while True:
            match = _WHITESPACE.match(self.text, self.pos)
            assert match is not None  # the pattern matches the empty string
            self.pos = match.end()
            if self.pos < len(self.text) or not self._more():
                return self.text[self.pos : self.pos + 1]

    def _expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise self._error(f"Expecting {what}")
        self.pos += 1

    def value(self) -> Any:
        """The value at the cursor, decoded whole."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                if self._more():
                    continue  # the value goes on in the next piece
                raise
            except RecursionError:
                raise JSONTooDeep(MAX_DEPTH) from None
            # a number cut at the end of a piece ("12", "0.") decodes too: what follows says
            if not _NUMBER_TAIL.fullmatch(self.text, end) or not self._more():
                self.pos = end
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
            if char == "}":
                self.pos += 1
                return
            if char != ",":
                raise self._error("Expecting ',' delimiter")
            self.pos += 1

    def elements(self) -> Iterator[None]:
        """Steps through the array at the cursor, the cursor at each element."""
        self._expect("[", "'['")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield None
            char = self.peek()
            if char == "]":
                self.pos += 1
                return
            if char != ",":
                raise self._error("Expecting ',' delimiter")
            self.pos += 1

    def end(self) -> None:
        """Nothing but whitespace may follow the text's value."""
        if self.peek():
            raise self._error("Extra data")

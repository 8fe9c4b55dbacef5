"""Label selectors, field selectors and the apimachinery name rules.

Also here, the well-known labels a kubelet puts on its node (``k8s.io/api/core/v1``'s
``well_known_labels.go``), which the scheduler's default spreading reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EXISTS",
    "GT",
    "IN",
    "LABEL_ARCH",
    "LABEL_HOSTNAME",
    "LABEL_OS",
    "LABEL_TOPOLOGY_ZONE",
    "LT",
    "NODE_SELECTOR_OPERATORS",
    "NOT_EQUALS",
    "NOT_IN",
    "SET_OPERATORS",
    "FieldRequirement",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "make_requirement",
    "parse_field_selector",
    "parse_label_selector",
    "qualified_name_errors",
]

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_OS: Final = "kubernetes.io/os"
LABEL_ARCH: Final = "kubernetes.io/arch"

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
GT: Final = "Gt"
LT: Final = "Lt"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="

SET_OPERATORS: Final = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NODE_SELECTOR_OPERATORS: Final = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT})


class SelectorError(ValueError):
    """A selector that Kubernetes would refuse; the message is apimachinery's."""


# --- apimachinery name rules (k8s.io/apimachinery/pkg/util/validation) -----------------------

_DNS1123_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL)
_DNS1123_SUBDOMAIN: Final = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN)
_QUALIFIED_NAME: Final = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE: Final = re.compile(_QUALIFIED_NAME)
_LABEL_VALUE: Final = r"(" + _QUALIFIED_NAME + r")?"
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE)


def dns1123_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label`` (namespace names): the error strings, empty when valid."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or"
            " '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or"
            f" '123-abc', regex used for validation is '{_DNS1123_LABEL}')"
        )
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: the error strings, empty when valid."""
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters,"
            " '-' or '.', and must start and end with an alphanumeric character (e.g."
            f" 'example.com', regex used for validation is '{_DNS1123_SUBDOMAIN}')"
        )
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName`` (label keys, annotation keys, taint keys)."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and"
            " must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',"
            f"  or '123-abc', regex used for validation is '{_QUALIFIED_NAME}') with an optional"
            " DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_RE.fullmatch(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start"
            " and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or"
            f" '123-abc', regex used for validation is '{_QUALIFIED_NAME}')"
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-',"
            " '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',"
            f"  or 'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')"
        )
    return errors


# --- requirements and selectors -------------------------------------------------------------


def _parse_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term; the operators are those of ``labels.Requirement``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            return self.key in labels and labels[self.key] in self.values
        if op == NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GT, LT):
            have = labels.get(self.key)
            if have is None:
                return False
            left = _parse_int(have)
            right = _parse_int(self.values[0])
            if left is None or right is None:
                return False
            return left > right if op == GT else left < right
        raise AssertionError(f"unvalidated operator {op!r}")  # pragma: no cover

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == IN and len(self.values) == 1:
            return f"{self.key}={self.values[0]}"
        if self.operator == NOT_IN and len(self.values) == 1:
            return f"{self.key}!={self.values[0]}"
        if self.operator == GT:
            return f"{self.key}>{self.values[0]}"
        if self.operator == LT:
            return f"{self.key}<{self.values[0]}"
        word = "in" if self.operator == IN else "notin"
        return f"{self.key} {word} ({','.join(self.values)})"


def make_requirement(
    key: str,
    operator: str,
    values: Iterable[str] = (),
    *,
    allowed: frozenset[str] = NODE_SELECTOR_OPERATORS,
) -> Requirement:
    """``labels.NewRequirement``: validate and build one requirement.

    ``values`` of In/NotIn are kept sorted, as ``labels.Requirement`` keeps them.
    """
    vals = [str(v) for v in values]
    for err in qualified_name_errors(key):
        raise SelectorError(f"key: Invalid value: {key!r}: {err}")
    if operator not in allowed:
        raise SelectorError(f'"{operator}" is not a valid label selector operator')
    if operator in (IN, NOT_IN):
        if not vals:
            raise SelectorError(
                "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            raise SelectorError(
                "values: Invalid value: "
                f"{vals}: values set must be empty for exists and does not exist"
            )
    elif operator in (GT, LT):
        if len(vals) != 1:
            raise SelectorError(
                f"values: Invalid value: {vals}: for 'Gt', 'Lt' operators, exactly one value"
                " is required"
            )
        if _parse_int(vals[0]) is None:
            raise SelectorError(
                f"values[0]: Invalid value: {vals[0]!r}: for 'Gt', 'Lt' operators, the value"
                " must be an integer"
            )
    if operator not in (GT, LT):
        for v in vals:
            for err in label_value_errors(v):
                raise SelectorError(f"values[0]: Invalid value: {v!r}: {err}")
    ordered = tuple(sorted(set(vals))) if operator in (IN, NOT_IN) else tuple(vals)
    return Requirement(key, operator, ordered)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A validated label selector: all requirements must match (AND).

    Both selector forms of Kubernetes become one: the structured ``metav1.LabelSelector``
    (``matchLabels`` + ``matchExpressions``) of PodDisruptionBudgets and affinity terms, converted
    with the rules of ``LabelSelectorAsSelector`` (operators In, NotIn, Exists, DoesNotExist only),
    and the string form of ``?labelSelector=`` and ``kubectl -l`` (``labels.Parse``), which also
    knows ``=``, ``==``, ``!=``, ``!key`` and the integer comparisons ``>`` / ``<``; so matching has
    one implementation. An empty selector matches everything. A ``None`` selector is not a
    ``LabelSelector``: callers decide what "no selector" means (nothing for PDBs in preemption,
    nothing for eviction in policy/v1), exactly as the Kubernetes call sites do.
    """

    requirements: tuple[Requirement, ...] = ()
    match_labels: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: object) -> LabelSelector:
        """``metav1.LabelSelectorAsSelector`` on a manifest's ``selector`` mapping."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise SelectorError(f"a label selector must be a mapping, not {data!r}")
        match_labels = data.get("matchLabels") or {}
        exprs = data.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping):
            raise SelectorError("matchLabels: must be a mapping of strings")
        if not isinstance(exprs, list):
            raise SelectorError("matchExpressions: must be a list")
        reqs: list[Requirement] = []
        labels_out: dict[str, str] = {}
        for key, value in match_labels.items():
            req = make_requirement(str(key), IN, [_label_str(value)], allowed=SET_OPERATORS)
            labels_out[str(key)] = req.values[0]
            reqs.append(req)
        for i, expr in enumerate(exprs):
            if not isinstance(expr, Mapping):
                raise SelectorError(f"matchExpressions[{i}]: must be a mapping")
            values = expr.get("values") or []
            if not isinstance(values, list):
                raise SelectorError(f"matchExpressions[{i}].values: must be a list")
            reqs.append(
                make_requirement(
                    str(expr.get("key", "")),
                    str(expr.get("operator", "")),
                    [_label_str(v) for v in values],
                    allowed=SET_OPERATORS,
                )
            )
        # labels.Selector sorts its requirements by key.
        reqs.sort(key=lambda r: r.key)
        return cls(tuple(reqs), labels_out)

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """``labels.SelectorFromSet``: every pair must be present."""
        return cls(
            tuple(sorted((Requirement(k, IN, (v,)) for k, v in labels.items()), key=_req_key)),
            dict(labels),
        )

    def is_empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _req_key(r: Requirement) -> str:
    return r.key


def _label_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


# --- the string grammar of labels.Parse ------------------------------------------------------

_TOKEN_RE: Final = re.compile(
    r"\s*(?:(?P<op>==|!=|=|>|<|!|\(|\)|,)|(?P<word>[^\s=!<>(),]+))",
)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise SelectorError(f"unable to parse requirement: unexpected character at {pos}")
        tokens.append(m.group("op") or m.group("word"))
        pos = m.end()
    return tokens


def parse_label_selector(text: str) -> LabelSelector:
    """``labels.Parse``: ``a=b,c!=d,e in (x,y),f notin (z),g,!h,i>1,j<2``."""
    tokens = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0

    def expect_value(at: int) -> tuple[str, int]:
        if at < len(tokens) and tokens[at] not in {"==", "!=", "=", ">", "<", "!", "(", ")", ","}:
            return tokens[at], at + 1
        return "", at

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens) or tokens[i + 1] in {",", "(", ")", "=", "==", "!="}:
                raise SelectorError(
                    "unable to parse requirement: found "
                    f"'{tokens[i + 1] if i + 1 < len(tokens) else ''}', expected: identifier"
                )
            reqs.append(make_requirement(tokens[i + 1], DOES_NOT_EXIST))
            i += 2
        elif tok in {"=", "==", "!=", ">", "<", "(", ")", ","}:
            raise SelectorError(f"unable to parse requirement: found '{tok}', expected: identifier")
        else:
            key = tok
            i += 1
            if i >= len(tokens) or tokens[i] == ",":
                reqs.append(make_requirement(key, EXISTS))
            else:
                op = tokens[i]
                i += 1
                if op in {"=", "=="}:
                    value, i = expect_value(i)
                    reqs.append(make_requirement(key, IN, [value]))
                elif op == "!=":
                    value, i = expect_value(i)
                    reqs.append(make_requirement(key, NOT_IN, [value]))
                elif op in {">", "<"}:
                    value, i = expect_value(i)
                    reqs.append(make_requirement(key, GT if op == ">" else LT, [value]))
                elif op in {"in", "notin"}:
                    if i >= len(tokens) or tokens[i] != "(":
                        raise SelectorError(
                            "unable to parse requirement: found "
                            f"'{tokens[i] if i < len(tokens) else ''}', expected: '('"
                        )
                    i += 1
                    values: list[str] = []
                    while True:
                        value, i = expect_value(i)
                        values.append(value)
                        if i < len(tokens) and tokens[i] == ",":
                            i += 1
                            continue
                        if i < len(tokens) and tokens[i] == ")":
                            i += 1
                            break
                        raise SelectorError(
                            "unable to parse requirement: found "
                            f"'{tokens[i] if i < len(tokens) else ''}', expected: ',' or ')'"
                        )
                    reqs.append(make_requirement(key, IN if op == "in" else NOT_IN, values))
                else:
                    raise SelectorError(
                        f"unable to parse requirement: found '{op}', expected:"
                        " in, notin, =, ==, !=, gt, lt"
                    )
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorError(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
            if i >= len(tokens):
                raise SelectorError("found '', expected: identifier after ','")
    reqs.sort(key=_req_key)
    return LabelSelector(tuple(reqs))


# --- field selectors (fields.ParseSelector) --------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    operator: str  # "=" or "!="
    value: str

    def matches(self, value: str) -> bool:
        return (value == self.value) if self.operator == EQUALS else (value != self.value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    buf: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            buf.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    if escaped:
        raise SelectorError(f"invalid field selector: {text!r}: trailing backslash")
    parts.append("".join(buf))
    return parts


def _unescape(value: str) -> str:
    out: list[str] = []
    it = iter(value)
    for ch in it:
        if ch == "\\":
            nxt = next(it, "")
            if nxt not in {"\\", ",", "="}:
                raise SelectorError(f"invalid field selector: invalid escape sequence '\\{nxt}'")
            out.append(nxt)
        else:
            out.append(ch)
    return "".join(out)


def parse_field_selector(text: str) -> tuple[FieldRequirement, ...]:
    """``fields.ParseSelector``: ``a=b``, ``a==b``, ``a!=b`` joined by ``,``."""
    reqs: list[FieldRequirement] = []
    if not text.strip():
        return ()
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op, norm in (("!=", NOT_EQUALS), ("==", EQUALS), ("=", EQUALS)):
            idx = part.find(op)
            if idx >= 0:
                reqs.append(
                    FieldRequirement(part[:idx].strip(), norm, _unescape(part[idx + len(op) :]))
                )
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return tuple(reqs)

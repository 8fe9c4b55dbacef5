"""``scheduler.labels`` is now ``kube.labels``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.labels``.
"""

from kube.labels import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GT,
    IN,
    LT,
    NODE_SELECTOR_OPERATORS,
    NOT_EQUALS,
    NOT_IN,
    SET_OPERATORS,
    FieldRequirement,
    LabelSelector,
    Requirement,
    SelectorError,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    make_requirement,
    parse_field_selector,
    parse_label_selector,
    qualified_name_errors,
)

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EXISTS",
    "GT",
    "IN",
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

"""``scheduler.apierrors`` is now ``kube.apierrors``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.apierrors``.
"""

from kube.apierrors import (
    OMIT,
    REASON_FOR_CODE,
    AdmissionError,
    Cause,
    ErrorType,
    FieldError,
    GoNamedString,
    InvalidError,
    StatusError,
    aggregate_message,
    go_bool,
    go_quote,
    new_forbidden,
    new_invalid,
)

__all__ = [
    "OMIT",
    "REASON_FOR_CODE",
    "AdmissionError",
    "Cause",
    "ErrorType",
    "FieldError",
    "GoNamedString",
    "InvalidError",
    "StatusError",
    "aggregate_message",
    "go_bool",
    "go_quote",
    "new_forbidden",
    "new_invalid",
]

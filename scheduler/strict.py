"""``scheduler.strict`` is now ``kube.strict``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.strict``.
"""

from kube.strict import (
    MAX_MANIFEST_BYTES,
    MAX_NODES,
    Document,
    ManifestError,
    Problems,
    Validation,
    canonicalize_quantities,
    check_object,
    decode_json,
    describe,
    drop_nulls,
    known_kinds,
    load_documents,
    model_for,
    parse_validation,
    parse_yaml,
    quantity_error,
    read_text,
    strict_message,
    validate_document,
)

__all__ = [
    "MAX_MANIFEST_BYTES",
    "MAX_NODES",
    "Document",
    "ManifestError",
    "Problems",
    "Validation",
    "canonicalize_quantities",
    "check_object",
    "decode_json",
    "describe",
    "drop_nulls",
    "known_kinds",
    "load_documents",
    "model_for",
    "parse_validation",
    "parse_yaml",
    "quantity_error",
    "read_text",
    "strict_message",
    "validate_document",
]

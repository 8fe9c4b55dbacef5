"""``scheduler.quantity`` is now ``kube.quantity``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.quantity``.
"""

from kube.quantity import (
    CPU,
    QuantityError,
    canonical_quantity,
    json_error,
    parse_quantity,
    quantity_value,
    resource_value,
)

__all__ = [
    "CPU",
    "QuantityError",
    "canonical_quantity",
    "json_error",
    "parse_quantity",
    "quantity_value",
    "resource_value",
]

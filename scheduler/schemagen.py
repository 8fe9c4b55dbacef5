"""``scheduler.schemagen`` is now ``kube.schemagen``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.schemagen``.
"""

from kube.schemagen import (
    KINDS,
    QUANTITY_FIELDS,
    SCHEMA_PATH,
    generate,
    main,
    render,
)

__all__ = [
    "KINDS",
    "QUANTITY_FIELDS",
    "SCHEMA_PATH",
    "generate",
    "main",
    "render",
]


if __name__ == "__main__":
    raise SystemExit(main())

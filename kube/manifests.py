"""Manifest files and text read into documents: YAML or JSON, several documents a file,
``kind: List`` flattened, each decoded strictly at kubectl's ``--validate`` level
(``kube.strict``), every failure naming the file, the document, the object and the field.

``load_manifests`` answers the documents as dicts; ``kube.objects.load_objects`` turns the
same documents into typed objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kube.reader import InvalidObject
from kube.strict import (
    Document,
    ManifestError,
    Validation,
    load_documents,
    model_for,
    read_text,
    validate_document,
)

__all__ = ["InvalidManifest", "load_manifests", "manifest_documents"]


class InvalidManifest(InvalidObject):
    """A manifest rejected while loading a file: names the file, document, object and field."""

    def __init__(
        self, error: ManifestError, *, kind: str = "", name: str = "", field_path: str = ""
    ) -> None:
        super().__init__(kind, name, field_path, error.detail)
        self.source = error.source
        self.document = error.document
        self.args = (str(error),)

    def __str__(self) -> str:
        return str(self.args[0])


def _documents(source: str | Path) -> list[Document]:
    # A one-line str is a path when it names a file or looks like a manifest's file name
    # (then a missing file is reported as such, not parsed as the YAML scalar it also is).
    if isinstance(source, Path) or (
        "\n" not in source
        and (Path(source).is_file() or source.endswith((".yaml", ".yml", ".json")))
    ):
        name = str(source)
        try:
            return load_documents(read_text(source), source=name)
        except ManifestError as exc:
            raise InvalidManifest(exc) from None
    try:
        return load_documents(source)
    except ManifestError as exc:
        raise InvalidManifest(exc) from None


def manifest_documents(
    source: str | Path,
    *,
    validation: Validation,
    on_warning: Callable[[str], None] | None = None,
) -> Iterator[Document]:
    """The documents of a path or YAML text, each checked at the ``validation`` level just
    before it is handed out (so an error is reported in the order of the file).

    A ``str`` that names an existing file is read from disk; anything else is YAML text. At
    ``ignore`` only a wrong type in a known kind fails; ``strict`` also fails on unknown kinds
    and fields, ``warn`` passes unknown fields to ``on_warning``. ``InvalidManifest`` for
    anything that fails.
    """
    for doc in _documents(source):
        _validate(doc, validation, on_warning)
        yield doc


def load_manifests(
    source: str | Path,
    *,
    validation: Validation = "ignore",
    on_warning: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Manifests from a path or YAML text: multi-document, ``kind: List`` flattened, each
    decoded as ``kube.strict`` does at the ``validation`` level (``manifest_documents``)."""
    return [
        doc.manifest
        for doc in manifest_documents(source, validation=validation, on_warning=on_warning)
    ]


def _validate(
    doc: Document, validation: Validation, on_warning: Callable[[str], None] | None
) -> None:
    # Lenient loading skips kinds it has no schema for (say, custom resources), but a wrong
    # type fails at every level, as it does on kube-apiserver.
    if (
        validation == "ignore"
        and model_for(doc.manifest.get("apiVersion"), doc.manifest.get("kind")) is None
    ):
        return
    try:
        warnings = validate_document(doc, validation=validation)
    except ManifestError as exc:
        raise InvalidManifest(exc, kind=str(doc.manifest.get("kind") or "")) from None
    for warning in warnings:
        if on_warning is not None:
            on_warning(warning)

"""Fuzzing every manifest loader and CLI with mutated manifests (hypothesis).

Mutations of the bundled examples:

* a field renamed (where the schema names fields, not in free-form maps) → exit 2, the message
  names the file and says ``unknown field``;
* a value replaced by one of an incompatible JSON type → exit 2 at every ``--validate`` level;
* the text truncated anywhere, a value nulled or emptied, or random bytes → exit 0 or 2,
  never a traceback, and a failure names the file.

The CLIs run in process through their ``main`` (what the console scripts call) so that
hypothesis can afford hundreds of examples; ``tests/test_cli_errors.py`` runs the real
processes for the cases where only a subprocess shows a traceback.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubesim.cli
import scheduler.cli
from kube.objects import InvalidObject, load_objects
from kube.strict import load_documents, model_for
from kubesim.core.scheme import default_scheme
from kubesim.sim import StateError, load_state

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {
    "scheduler": ROOT / "examples" / "preemption.yaml",
    "kubesim": ROOT / "examples" / "kubesim-state.yaml",
}
_TYPES: dict[str, dict[str, str]] = __import__("json").loads(
    (ROOT / "kube" / "data" / "schema.json").read_text()
)["types"]
_LIST = re.compile(r"list\[(.+)\]")

Site = tuple[dict[str, Any], str, str]  # (mapping, key, declared type of the value)


def _sites(value: Any, type_name: str, out: list[Site]) -> None:
    """Every (mapping, key, type) where the mapping is a schema object, not a free-form map."""
    if m := _LIST.fullmatch(type_name):
        if isinstance(value, list):
            for item in value:
                _sites(item, m[1], out)
        return
    if type_name not in _TYPES or not isinstance(value, dict):
        return
    fields = _TYPES[type_name]
    for key, item in value.items():
        if key in fields:
            out.append((value, key, fields[key]))
            _sites(item, fields[key], out)


def _documents(which: str) -> list[dict[str, Any]]:
    return [d.manifest for d in load_documents(EXAMPLES[which].read_text())]


def _wrong_value(type_name: str) -> Any | None:
    """A value of a JSON type the field cannot take, or None when it takes anything."""
    if type_name in ("object", "quantity", "dict(str, quantity)"):
        return None
    if type_name in ("int", "float"):
        return "not-a-number"
    if type_name == "bool":
        return "yes please"
    if type_name in ("str", "datetime", "date"):
        return [1, 2]
    if type_name.startswith("list["):
        return {"not": "a list"}
    return "not an object"


@st.composite
def renamed(draw: st.DrawFn, which: str) -> str:
    docs = _documents(which)
    sites: list[Site] = []
    for doc in docs:
        model = model_for(doc.get("apiVersion"), doc.get("kind"))
        assert model is not None
        _sites(doc, model, sites)
    # Renaming apiVersion or kind is a missing-kind error, tested elsewhere.
    sites = [s for s in sites if s[1] not in ("apiVersion", "kind")]
    parent, key, _ = draw(st.sampled_from(sites))
    how = draw(st.sampled_from(["drop-last", "double-first", "suffix", "case"]))
    new = {
        "drop-last": key[:-1],
        "double-first": key[0] + key,
        "suffix": key + draw(st.sampled_from(["s", "x", "_", "Name"])),
        "case": key[0].swapcase() + key[1:],
    }[how]
    if not new or new in parent or new in ("apiVersion", "kind"):
        new = key + "Typo"
    parent[new] = parent.pop(key)
    return yaml.safe_dump_all(docs, sort_keys=False)


@st.composite
def retyped(draw: st.DrawFn, which: str) -> str:
    docs = _documents(which)
    sites: list[Site] = []
    for doc in docs:
        model = model_for(doc.get("apiVersion"), doc.get("kind"))
        assert model is not None
        _sites(doc, model, sites)
    candidates = [
        s for s in sites if _wrong_value(s[2]) is not None and s[1] not in ("apiVersion", "kind")
    ]
    parent, key, type_name = draw(st.sampled_from(candidates))
    parent[key] = _wrong_value(type_name)
    return yaml.safe_dump_all(docs, sort_keys=False)


@st.composite
def emptied(draw: st.DrawFn, which: str) -> str:
    """A value replaced by null or an empty/zero value of any type (valid or not)."""
    docs = _documents(which)
    sites: list[Site] = []
    for doc in docs:
        model = model_for(doc.get("apiVersion"), doc.get("kind"))
        assert model is not None
        _sites(doc, model, sites)
    parent, key, _ = draw(st.sampled_from(sites))
    parent[key] = draw(st.sampled_from([None, [None], {}, [], "", 0]))
    return yaml.safe_dump_all(docs, sort_keys=False)


@st.composite
def truncated(draw: st.DrawFn, which: str) -> str:
    text = EXAMPLES[which].read_text()
    return text[: draw(st.integers(min_value=0, max_value=len(text)))]


@contextlib.contextmanager
def manifest_file(content: str | bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        yield path


def run_cli(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


async def _no_serve(*_: object, **__: object) -> None:
    """Stands in for serving: a valid state file must not block the fuzz test."""


def simulate(path: Path, *extra: str) -> tuple[int, str]:
    return run_cli(scheduler.cli.main, ["simulate", str(path), *extra])


def serve(path: Path, *extra: str) -> tuple[int, str]:
    with mock.patch.object(kubesim.cli, "_serve", _no_serve):
        return run_cli(kubesim.cli.main, ["serve", "--state", str(path), *extra])


CLIS = {"scheduler": simulate, "kubesim": serve}
FUZZ = settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow], deadline=None)


def assert_one_error_naming(err: str, path: Path) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: ") and str(path) in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("which", sorted(CLIS))
@FUZZ
@given(data=st.data())
def test_renamed_fields_exit_2_naming_file_and_field(which: str, data: st.DataObject) -> None:
    text = data.draw(renamed(which))
    with manifest_file(text) as path:
        code, err = CLIS[which](path)
        assert code == 2
        assert "unknown field" in assert_one_error_naming(err, path)
        # --validate=false keeps the lenient behaviour: no strict error.
        code, err = CLIS[which](path, "--validate=false")
        assert "strict decoding error" not in err


@pytest.mark.parametrize("which", sorted(CLIS))
@FUZZ
@given(data=st.data(), level=st.sampled_from(["strict", "warn", "false"]))
def test_wrong_types_exit_2_at_every_level(which: str, data: st.DataObject, level: str) -> None:
    text = data.draw(retyped(which))
    with manifest_file(text) as path:
        code, err = CLIS[which](path, f"--validate={level}")
        assert code == 2
        assert_one_error_naming(err, path)


@pytest.mark.parametrize("which", sorted(CLIS))
@FUZZ
@given(data=st.data())
def test_truncated_or_emptied_yaml_loads_or_exits_2(which: str, data: st.DataObject) -> None:
    text = data.draw(st.one_of(truncated(which), emptied(which)))
    with manifest_file(text) as path:
        code, err = CLIS[which](path)
        assert code in (0, 2), err
        if code == 2:
            assert_one_error_naming(err, path)


@pytest.mark.parametrize("which", sorted(CLIS))
@FUZZ
@given(content=st.binary(max_size=200))
def test_random_bytes_load_or_exit_2(which: str, content: bytes) -> None:
    with manifest_file(content) as path:
        code, err = CLIS[which](path)
        assert code in (0, 2), err
        if code == 2:
            assert_one_error_naming(err, path)


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(EXAMPLES)))
def test_loaders_raise_their_own_error_naming_the_file(data: st.DataObject, which: str) -> None:
    text = data.draw(st.one_of(renamed(which), retyped(which), truncated(which)))
    with manifest_file(text) as path:
        try:
            load_objects(path, ignore_unknown=True)
        except InvalidObject as exc:
            assert str(exc).startswith(f"{path}: ")
        try:
            load_state([path], default_scheme())
        except StateError as exc:
            assert str(exc).startswith(f"{path}: ")

"""Strict decoding of manifests (``kube.strict``) and its use by ``load_objects``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import InvalidObject, load_manifests, load_objects
from kube.strict import (
    MAX_NODES,
    AliasRefused,
    DuplicateKey,
    InvalidYaml,
    ManifestError,
    TooManyValues,
    check_object,
    decode_json,
    load_documents,
    parse_validation,
    parse_yaml,
    read_text,
    validate_document,
)

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  priorityClassName: high
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: 1, memory: 1Gi}
"""


def one(text: str, *, validation: str = "strict", source: str = "f.yaml") -> list[str]:
    [doc] = load_documents(text, source=source)
    return validate_document(doc, validation=parse_validation(validation))


def test_a_valid_manifest_passes_and_numbers_are_quantities() -> None:
    assert one(POD) == []


@pytest.mark.parametrize(
    ("typo", "path"),
    [
        ("requests: {cpu: 1", "spec.containers[0].resources.requets"),
        ("priorityClassName", "spec.priorityClasName"),
        ("namespace: shop", "metadata.namspace"),
        ("image: nginx", "spec.containers[0].imag"),
    ],
)
def test_misspelled_fields_are_rejected_with_kube_apiservers_wording(typo: str, path: str) -> None:
    wrong = path.rsplit(".", 1)[1]
    text = POD.replace(typo, wrong + typo[len(typo.split(":", maxsplit=1)[0]) :], 1)
    with pytest.raises(ManifestError) as err:
        one(text)
    who = "web" if "namespace" in typo else "shop/web"
    assert str(err.value) == (
        f'f.yaml: document 1: Pod "{who}": strict decoding error: unknown field "{path}"'
    )


def test_all_strict_problems_are_reported_joined_as_the_apiserver_joins_them() -> None:
    text = POD.replace("image: nginx", "image: nginx\n    imag: x\n    image: y")
    text = text.replace("spec:\n", "spec:\n  foo: 1\n")
    with pytest.raises(ManifestError, match="strict decoding error: ") as err:
        one(text)
    # Document order: a mapping's duplicates are found before its fields are walked.
    assert err.value.detail == (
        'strict decoding error: unknown field "spec.foo", duplicate field '
        '"spec.containers[0].image", unknown field "spec.containers[0].imag"'
    )


def test_duplicate_keys_are_found_in_yaml_and_json() -> None:
    with pytest.raises(ManifestError, match=r'duplicate field "metadata\.name"'):
        one(POD.replace("  name: web\n", "  name: web\n  name: web2\n"))
    data, dups = decode_json('{"apiVersion":"v1","kind":"Node","metadata":{"name":"a","name":"b"}}')
    problems = check_object(data, duplicates=dups)
    assert problems.strict == ['duplicate field "metadata.name"']
    assert data["metadata"]["name"] == "b"  # the last one wins, as in Go


def test_yaml_merge_keys_are_not_duplicates() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  labels: &l {a: b}\n  annotations:\n"
        "    <<: *l\n    a: c\n  name: n\n"
    )
    assert one(text) == []


def test_wrong_types_fail_at_every_level_with_gos_message() -> None:
    text = POD.replace("priorityClassName: high", "priority: high")
    for level in ("strict", "warn", "ignore"):
        with pytest.raises(ManifestError) as err:
            one(text, validation=level)
        assert err.value.detail == (
            "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int"
        )
    with pytest.raises(ManifestError, match="cannot unmarshal number into Go struct field"):
        one(POD.replace("image: nginx", "image: 3"))
    with pytest.raises(ManifestError, match=r"cannot unmarshal array .*of type v1\.PodSpec"):
        one("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: []\n")
    with pytest.raises(ManifestError, match=r"number 1\.5 into"):
        one(POD.replace("priorityClassName: high", "priority: 1.5"))
    # Integral floats are integers once YAML becomes JSON.
    assert one(POD.replace("priorityClassName: high", "priority: 10.0")) == []


def test_unknown_and_missing_kinds_are_errors() -> None:
    with pytest.raises(ManifestError, match='no matches for kind "Nod" in version "v1"'):
        one("apiVersion: v1\nkind: Nod\nmetadata: {name: n}\n")
    with pytest.raises(ManifestError, match='no matches for kind "Node" in version "v2"'):
        one("apiVersion: v2\nkind: Node\nmetadata: {name: n}\n")
    with pytest.raises(ManifestError, match="Object 'Kind' is missing"):
        one("apiVersion: v1\nmetadata: {name: n}\n")
    with pytest.raises(ManifestError, match="Object 'apiVersion' is missing"):
        one("kind: Node\nmetadata: {name: n}\n")


def test_warn_returns_the_problems_and_ignore_drops_them() -> None:
    text = POD.replace("image: nginx", "imag: nginx")
    assert one(text, validation="warn") == [
        'f.yaml: document 1: Pod "shop/web": unknown field "spec.containers[0].imag"'
    ]
    assert one(text, validation="false") == []


def test_validation_values_are_kubectls() -> None:
    assert [parse_validation(v) for v in ("strict", "true", "warn", "ignore", "false")] == [
        "strict",
        "strict",
        "warn",
        "ignore",
        "ignore",
    ]
    with pytest.raises(ValueError, match='invalid - validate option "maybe"'):
        parse_validation("maybe")


def test_list_items_are_checked_and_located() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\n"
        "items:\n- {apiVersion: v1, kind: Node, metadata: {name: b}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: c}, spek: {}}\n"
    )
    docs = load_documents(text, source="c.yaml")
    assert [(d.document, d.item) for d in docs] == [(1, ""), (2, "items[0]"), (2, "items[1]")]
    with pytest.raises(ManifestError) as err:
        validate_document(docs[2])
    assert str(err.value) == (
        'c.yaml: document 2 items[1]: Node "c": strict decoding error: unknown field "spek"'
    )


def test_yaml_errors_name_the_file_and_line_not_unicode_string() -> None:
    with pytest.raises(ManifestError) as err:
        load_documents("apiVersion: v1\nkind: Node\n---\nkind: [\n", source="s.yaml")
    message = str(err.value)
    assert message.startswith("s.yaml: document 2: invalid YAML: line 5, column 1:")
    assert "<unicode string>" not in message


def test_timestamps_stay_strings_as_in_kubes_yaml_to_json() -> None:
    [doc] = load_documents(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, creationTimestamp: 2024-05-01T10:00:00Z}"
    )
    assert doc.manifest["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"


def test_a_caller_refuses_duplicates_with_the_path_and_both_lines() -> None:
    text = "a:\n  b: 1\nl:\n- {k: 1, k: 2}\na:\n  c: 2\n"
    _, recorded = parse_yaml(text)
    assert sorted(keys for _, keys in recorded.values()) == [["a"], ["k"]]
    # refused: the outermost first, with both lines (one line when they share it)
    with pytest.raises(DuplicateKey) as info:
        parse_yaml(text, duplicates="refuse")
    assert (info.value.path, info.value.lines, info.value.where) == (
        ("a",),
        (1, 5),
        "lines 1 and 5",
    )
    with pytest.raises(DuplicateKey) as info:
        parse_yaml("l:\n- {k: 1, k: 2}\n", duplicates="refuse")
    assert (info.value.dotted, info.value.where) == ("l[0].k", "line 2")
    # keys compare as the values they load as; a merged key is overridden, not repeated
    with pytest.raises(DuplicateKey):
        parse_yaml("{1: a, 0x1: b}", duplicates="refuse")
    assert parse_yaml("{'1': a, 1: b, <<: {c: 1}, c: 2}", duplicates="refuse")[0] == [
        {"1": "a", 1: "b", "c": 2}
    ]


def test_a_caller_refuses_aliases_or_bounds_them() -> None:
    text = "a: &x [1]\nb: *x\n"
    assert parse_yaml(text)[0] == [{"a": [1], "b": [1]}]
    with pytest.raises(AliasRefused) as info:
        parse_yaml(text, aliases="refuse")
    assert (info.value.anchor, info.value.line) == ("x", 2)
    assert parse_yaml("a: &x [1]\n", aliases="refuse")[0] == [{"a": [1]}]  # an anchor alone
    with pytest.raises(TooManyValues):
        parse_yaml("a: &x [*x]\n")  # an alias inside its own anchor never ends
    with pytest.raises(TooManyValues) as bound:
        parse_yaml(text, max_values=2)
    assert bound.value.limit == 2
    assert parse_yaml(text, max_values=3)[0]  # the mapping and both lists


def test_timestamps_are_strings_unless_asked_and_a_scalar_python_cannot_hold_is_invalid() -> None:
    assert parse_yaml("t: 2024-05-01")[0] == [{"t": "2024-05-01"}]
    with pytest.raises(InvalidYaml, match="day is out of range"):
        parse_yaml("t: 2024-02-30", timestamps="dates")
    with pytest.raises(InvalidYaml, match="Exceeds the limit"):
        parse_yaml("n: " + "9" * 5000)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 20), min_size=1, max_size=4), max_size=6),
    st.integers(1, 300),
)
def test_the_alias_bound_counts_what_the_aliases_expand_to(
    picks: list[list[int]], limit: int
) -> None:
    # lists sharing earlier lists: the dumper writes each shared one once, with aliases
    pool: list[list[object]] = [["x"]]
    for pick in picks:
        pool.append([pool[i % len(pool)] for i in pick])
    text = yaml.safe_dump({"root": pool[-1]})

    def expanded(value: object) -> int:
        if isinstance(value, dict):
            return 1 + sum(expanded(v) for v in value.values())
        if isinstance(value, list):
            return 1 + sum(expanded(v) for v in value)
        return 0

    [doc], _ = parse_yaml(text)
    try:
        parse_yaml(text, max_values=limit)
    except TooManyValues:
        assert expanded(doc) > limit
    else:
        assert expanded(doc) <= limit


def test_hostile_documents_are_refused_not_expanded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    bomb = "apiVersion: v1\nkind: Node\nmetadata:\n  name: x\n  annotations: {}\n"
    bomb += "status:\n  nodeInfo: {}\n  images: []\n  config:\n" + "".join(
        f"    {line}\n" for line in lines
    )
    with pytest.raises(ManifestError, match=f"document 1: more than {MAX_NODES} nested values"):
        load_documents(bomb)
    # an object decoded elsewhere (kubesim's YAML bodies) is bounded by the check's walk
    shared: list[object] = ["x"] * 10
    for _ in range(7):
        shared = [shared] * 10
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x", "annotations": {}}}
    node["status"] = {"config": {"a": shared}}
    with pytest.raises(ManifestError, match=f"more than {MAX_NODES} nested values"):
        check_object(node)
    # and so are shared lists of typed objects (containers of ports), walked by their models
    ports = [{"containerPort": 80}] * 1000
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
    pod["spec"] = {"containers": [{"name": "c", "ports": ports}] * 1001}
    with pytest.raises(ManifestError, match=f"more than {MAX_NODES} nested values"):
        check_object(pod)
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_documents("a: " + "[" * 5000 + "]" * 5000)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00", "binary file (contains NUL bytes), not YAML or JSON"),
        (b"kind: \xff\xfe Node\n", "not UTF-8 text (byte 0xff at offset 6)"),
    ],
)
def test_binary_and_non_utf8_files_are_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(ManifestError) as err:
        read_text(path)
    assert str(err.value) == f"{path}: {message}"


def test_missing_huge_and_directory_files(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read: No such file or directory"):
        read_text(tmp_path / "absent.yaml")
    with pytest.raises(ManifestError, match="is a directory"):
        read_text(tmp_path)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(ManifestError, match=r"larger than 0 MiB"):
        read_text(big, limit=1024)


def test_load_objects_is_strict_by_default_and_names_file_document_object_field(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n"
        + POD.replace("priorityClassName", "priorityClasName")
    )
    with pytest.raises(InvalidObject) as err:
        load_objects(path)
    assert str(err.value) == (
        f'{path}: document 2: Pod "shop/web": strict decoding error:'
        ' unknown field "spec.priorityClasName"'
    )
    warnings: list[str] = []
    objs = load_objects(path, validation="warn", on_warning=warnings.append)
    assert [o.name for o in objs] == ["n", "web"]
    assert warnings == [
        f'{path}: document 2: Pod "shop/web": unknown field "spec.priorityClasName"'
    ]
    assert len(load_objects(path, validation="ignore")) == 2
    assert len(load_manifests(path)) == 2


def test_load_objects_rejects_a_misspelled_kind_even_when_ignoring_unknown_kinds() -> None:
    text = "apiVersion: v1\nkind: Nod\nmetadata: {name: n}\n"
    with pytest.raises(InvalidObject, match='no matches for kind "Nod"'):
        load_objects(text, ignore_unknown=True)
    assert load_objects(text, ignore_unknown=True, validation="ignore") == []


def test_object_errors_from_conversion_name_the_document(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
        "spec: {minAvailable: 1, maxUnavailable: 1}\n"
    )
    with pytest.raises(InvalidObject) as err:
        load_objects(path)
    assert str(err.value) == (
        f'{path}: document 1: PodDisruptionBudget "p": spec:'
        " minAvailable and maxUnavailable cannot be both set"
    )
    assert err.value.field == "spec"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_either_load_or_raise_one_error(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        for doc in load_documents(text, source="x.yaml"):
            validate_document(doc)
    except ManifestError as exc:
        assert str(exc).startswith("x.yaml: ")
        assert "\n" not in exc.detail or exc.detail.startswith("invalid YAML")


def test_a_missing_manifest_path_is_reported_as_missing() -> None:
    with pytest.raises(InvalidObject) as err:
        load_objects("no/such/cluster.yaml")
    assert str(err.value) == "no/such/cluster.yaml: cannot read: No such file or directory"


def test_fold_case_decodes_field_names_as_gos_encoding_json() -> None:
    """scheduler_perf's templates go through sigs.k8s.io/yaml into typed structs, where
    ``NodeTaintsPolicy`` is ``nodeTaintsPolicy``; kube-apiserver itself would refuse it."""
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "Image": "pause"}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "k",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "NodeTaintsPolicy": "Honor",
                }
            ],
        },
    }
    strict = check_object(json_copy(manifest))
    assert sorted(strict.strict) == [
        'unknown field "spec.containers[0].Image"',
        'unknown field "spec.topologySpreadConstraints[0].NodeTaintsPolicy"',
    ]
    folded = json_copy(manifest)
    assert check_object(folded, fold_case=True).strict == []
    assert folded["spec"]["topologySpreadConstraints"][0]["nodeTaintsPolicy"] == "Honor"
    assert folded["spec"]["containers"][0] == {"name": "c", "image": "pause"}
    folded["spec"]["Nope"] = 1
    assert check_object(folded, fold_case=True).strict == ['unknown field "spec.Nope"']


def json_copy(value: dict[str, object]) -> dict[str, object]:
    copied: dict[str, object] = json.loads(json.dumps(value))
    return copied

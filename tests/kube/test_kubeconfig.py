"""``kube.kubeconfig`` (client-go's loading rules, once for the API room and kubesim) and
``kube.net.is_loopback``."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.kubeconfig import (
    Impersonation,
    Kubeconfig,
    KubeconfigError,
    Overrides,
    load_kubeconfig,
)
from kube.net import is_loopback


def _write(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _config(name: str, server: str, **user: object) -> dict[str, object]:
    return {
        "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": dict(user)}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": f"{name}-ns"}}
        ],
    }


def test_first_file_wins(tmp_path: Path) -> None:
    first = _write(tmp_path / "a" / "config", _config("a", "https://a:6443", token="ta"))
    second_doc = _config("b", "https://b:6443", token="tb")
    second_doc["clusters"].append({"name": "a", "cluster": {"server": "https://other"}})  # type: ignore[attr-defined]
    second = _write(tmp_path / "b" / "config", second_doc)
    config = load_kubeconfig([first, second])
    assert config.current_context == "a"
    current = config.resolve()
    assert (current.name, current.server, current.namespace) == ("a", "https://a:6443", "a-ns")
    assert current.user == {"token": "ta"}
    other = config.resolve("b")
    assert (other.server, other.user) == ("https://b:6443", {"token": "tb"})
    # the first file set current-context: a later one does not move it
    assert load_kubeconfig([second, first]).current_context == "b"


def test_file_references_are_relative_to_their_file(tmp_path: Path) -> None:
    doc = _config(
        "k",
        "https://k",
        **{
            "client-certificate": "certs/tls.crt",
            "client-key": "/abs/tls.key",
            "tokenFile": "token",
            "exec": {"command": "./bin/plugin", "apiVersion": "v1"},
        },
    )
    doc["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"  # type: ignore[index]
    path = _write(tmp_path / "dir" / "config", doc)
    current = load_kubeconfig([path]).resolve()
    base = str(path.resolve().parent)
    assert current.cluster["certificate-authority"] == f"{base}/ca.crt"
    assert current.user["client-certificate"] == f"{base}/certs/tls.crt"
    assert current.user["client-key"] == "/abs/tls.key"
    assert current.user["tokenFile"] == f"{base}/token"
    assert current.user["exec"]["command"] == f"{base}/bin/plugin"
    # a bare command is looked up on PATH, not next to the file
    doc["users"][0]["user"]["exec"]["command"] = "gke-auth"  # type: ignore[index]
    _write(path, doc)
    assert load_kubeconfig([path]).resolve().user["exec"]["command"] == "gke-auth"


def test_missing_entries(tmp_path: Path) -> None:
    doc = {
        "current-context": "gone",
        "clusters": [{"name": "here", "cluster": {"server": "https://here"}}],
        "contexts": [
            {"name": "bare", "context": {"cluster": "nowhere"}},
            {"name": "nobody", "context": {"cluster": "here", "user": "ghost"}},
            {"name": "anonymous", "context": {"cluster": "here"}},
        ],
    }
    path = _write(tmp_path / "config", doc)
    config = load_kubeconfig([path])
    with pytest.raises(KubeconfigError, match=f'^{path}: context "gone" does not exist$'):
        config.resolve()
    with pytest.raises(KubeconfigError, match=f'^{path}: context "gone" does not exist$'):
        config.overridden(None, Overrides(token="t"))  # the flags do not make it exist
    # a context naming an entry no file defines is refused, naming the file: client-go would
    # carry on with an empty one (no credentials, or the in-cluster account) — another identity
    for context, message in (
        ("bare", 'cluster "nowhere" was not found for context "bare"'),
        ("nobody", 'user "ghost" was not found for context "nobody"'),
    ):
        with pytest.raises(KubeconfigError, match=f"^{path}: {message}$"):
            config.resolve(context)
        with pytest.raises(KubeconfigError, match=f"^{path}: {message}$"):
            config.overridden(context, Overrides(token="t"))
    # a context that names no user is anonymous, as the file says
    anonymous = config.resolve("anonymous")
    assert (anonymous.server, anonymous.user, anonymous.namespace) == ("https://here", {}, "")
    unset = _write(tmp_path / "unset", {"contexts": doc["contexts"]})
    with pytest.raises(KubeconfigError, match=f"^{unset}: no context chosen$"):
        load_kubeconfig([unset]).resolve()


def test_as_dict_has_the_file_shape(tmp_path: Path) -> None:
    doc = _config("k", "https://k", token="t")
    config = load_kubeconfig([_write(tmp_path / "config", doc)])
    assert config.as_dict() == doc


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- just\n- a list\n", "not a kubeconfig$"),
        ("clusters: [unclosed\n", "not a kubeconfig: invalid YAML: line 2, column 1: "),
        ("clusters: 3\n", "clusters: must be a list"),
        ("contexts: [{name: a, context: 3}]\n", "contexts 'a': not an object"),
        ("contexts: [3]\n", r"contexts\[0\]: not an object"),
        ("users: [{name: [u]}]\n", r"users\[0\]: name: must be a string"),
        ("users: [{name: u}, {name: u}]\n", "users: 'u' is named twice"),
        ("current-context: [a]\n", "current-context: must be a string, not a list"),
        # the JSON types of clientcmd's v1 structs: Go's decoder refuses the others
        ("users: [{name: u, user: {token: 5}}]\n", "users 'u': token: must be a string, not a"),
        ("users: [{name: u, user: {tokenFile: [t]}}]\n", "users 'u': tokenFile: must be a str"),
        ("users: [{name: u, user: {client-key-data: '%%%'}}]\n", "users 'u': client-key-data: not"),
        ("users: [{name: u, user: {exec: [sh]}}]\n", "users 'u': exec: must be an object, n"),
        ("users: [{name: u, user: {exec: {args: sh}}}]\n", "users 'u': exec: args: must be a"),
        ("users: [{name: u, user: {exec: {env: [{name: 1}]}}}]\n", r"users 'u': exec: env\[0\]"),
        ("users: [{name: u, user: {auth-provider: {config: {a: 1}}}}]\n", "users 'u': auth-prov"),
        ("clusters: [{name: c, cluster: {server: 6443}}]\n", "clusters 'c': server: must be"),
        (
            "clusters: [{name: c, cluster: {insecure-skip-tls-verify: 'no'}}]\n",
            "clusters 'c': insecure-skip-tls-verify: must be true or false, not a string",
        ),
        ("contexts: [{name: c, context: {namespace: 7}}]\n", "contexts 'c': namespace: must be"),
        # a key given twice: which token was meant?
        ("users: [{name: u, user: {token: a, token: b}}]\n", r"users\[0\].user.token: given tw"),
        # YAML aliases that make a 200-byte file a billion values
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e]\n"
            "g: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
            "more than 100000 values",
        ),
    ],
)
def test_not_a_kubeconfig(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KubeconfigError, match=f"^{path}: {message}"):
        load_kubeconfig([path])


def test_an_unused_entry_of_the_wrong_type_fails_the_load_too(tmp_path: Path) -> None:
    # Go decodes the whole file before choosing a context
    doc = _config("a", "https://a", token="t")
    doc["users"].append({"name": "other", "user": {"token": 5}})  # type: ignore[attr-defined]
    path = _write(tmp_path / "config", doc)
    with pytest.raises(KubeconfigError, match=f"^{path}: users 'other': token: must be"):
        load_kubeconfig([path])
    # in a second file as well, though the first one's entries win
    good = _write(tmp_path / "good", _config("a", "https://a", token="t"))
    with pytest.raises(KubeconfigError, match=f"^{path}: "):
        load_kubeconfig([good, path])
    # fields clientcmd does not know are ignored, as Go's decoder ignores them
    doc["users"][1]["user"] = {"token": "t", "future-field": 5}  # type: ignore[index]
    _write(path, doc)
    assert load_kubeconfig([path]).resolve().user == {"token": "t"}


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"token": "t", "username": "u", "password": "p"}, "more than one authentication"),
        ({"client-certificate-data": "eA=="}, "needs client-key or client-key-data"),
        ({"client-key": "k", "client-key-data": "eA==", "client-certificate": "c"}, "both set"),
        ({"exec": {"apiVersion": "v1"}}, "exec plugin for a: command must be set"),
        ({"exec": {"command": "x"}}, "exec plugin for a: apiVersion must be set"),
        ({"exec": {"command": "x", "apiVersion": "v1", "env": [{"value": "v"}]}}, "needs a name"),
        ({"exec": {"command": "x", "apiVersion": "v1", "interactiveMode": "Often"}}, "Often"),
        (
            {"exec": {"command": "x", "apiVersion": "v1"}, "auth-provider": {"name": "oidc"}},
            "an exec plugin and an auth-provider for a",
        ),
    ],
)
def test_the_user_a_context_uses_is_checked_as_client_go_checks_it(
    tmp_path: Path, user: dict[str, object], message: str
) -> None:
    path = _write(tmp_path / "config", _config("a", "https://a", **user))
    config = load_kubeconfig([path])
    with pytest.raises(KubeconfigError, match=f"^{path}: .*{message}"):
        config.resolve()


def test_binary_and_empty_files(tmp_path: Path) -> None:
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(KubeconfigError, match="not a kubeconfig"):
        load_kubeconfig([binary])
    empty = tmp_path / "empty"
    empty.write_text("", encoding="utf-8")
    assert load_kubeconfig([empty]).current_context == ""
    with pytest.raises(FileNotFoundError):  # the caller decides what a missing file means
        load_kubeconfig([tmp_path / "missing"])


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.200.3.4", True),
        ("::1", True),
        ("[::1]", True),
        ("10.0.0.1", False),
        ("::2", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@given(st.ip_addresses())
def test_is_loopback_agrees_with_the_address_class(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    assert is_loopback(str(address)) is address.is_loopback


def test_kubectls_global_flags_override_the_context(tmp_path: Path) -> None:
    doc = _config("a", "https://a:6443", tokenFile="t", **{"client-key-data": "eA=="})
    doc["clusters"][0]["cluster"].update(  # type: ignore[index]
        {"certificate-authority-data": "Y2E=", "tls-server-name": "a.internal"}
    )
    doc["users"].append({"name": "ops", "user": {"token": "ops-token"}})  # type: ignore[attr-defined]
    config = load_kubeconfig([_write(tmp_path / "config", doc)])
    # --user picks another entry; the context's cluster and namespace stay
    resolved = config.overridden(None, Overrides(user="ops")).resolve()
    assert resolved.user == {"token": "ops-token"}
    assert resolved.server == "https://a:6443" and resolved.namespace == "a-ns"
    # --server clears the TLS server name unless one is given; --insecure-skip-tls-verify the CA
    flags = Overrides(server="https://b:6443", insecure_skip_tls_verify=True, token="t2")
    resolved = config.overridden("a", flags).resolve()
    assert resolved.cluster == {"server": "https://b:6443", "insecure-skip-tls-verify": True}
    assert resolved.user == {"token": "t2", "client-key-data": "eA=="}  # instead of tokenFile
    resolved = config.overridden(None, Overrides(certificate_authority="/ca.crt")).resolve()
    assert "certificate-authority-data" not in resolved.cluster
    assert resolved.cluster["certificate-authority"] == "/ca.crt"
    resolved = config.overridden(None, Overrides(client_key="/k.pem")).resolve()
    assert resolved.user == {"tokenFile": str(tmp_path / "t"), "client-key": "/k.pem"}
    for flags, message in (
        (Overrides(user="nobody"), 'auth info "nobody" does not exist'),
        (Overrides(cluster="nowhere"), 'cluster "nowhere" does not exist'),
    ):
        with pytest.raises(KubeconfigError, match=message):
            config.overridden(None, flags)
    with pytest.raises(KubeconfigError, match='context "b" does not exist'):
        config.overridden("b", Overrides(token="x"))
    # no kubeconfig at all: --server makes the cluster, --token the user
    bare = Kubeconfig().overridden(None, Overrides(server="https://c", token="t")).resolve()
    assert (bare.server, bare.user) == ("https://c", {"token": "t"})
    assert not Overrides() and Overrides(insecure_skip_tls_verify=True)


IMPERSONATING = {
    "token": "t",
    "as": "bob",
    "as-uid": "u-1",
    "as-groups": ["dev", "ops"],
    "as-user-extra": {"example.com/scopes": ["a", "b"], "reason": ["upgrade"]},
}


def test_a_users_impersonation_is_read_as_client_go_reads_it(tmp_path: Path) -> None:
    doc = _config("a", "https://a:6443", **IMPERSONATING)
    doc["users"].append({"name": "plain", "user": {"token": "t"}})  # type: ignore[attr-defined]
    config = load_kubeconfig([_write(tmp_path / "config", doc)])
    assert config.resolve().impersonation() == Impersonation(
        "bob",
        uid="u-1",
        groups=("dev", "ops"),
        extra=(("example.com/scopes", ("a", "b")), ("reason", ("upgrade",))),
    )
    assert config.overridden(None, Overrides(user="plain")).resolve().impersonation() is None


@pytest.mark.parametrize(
    ("user", "message"),
    [
        # clientcmd's validateAuthInfo: whom would the groups, uid or extras belong to?
        (
            {"as-groups": ["dev"]},
            "^requesting uid, groups or user-extra for a without impersonating a user$",
        ),
        ({"as-uid": "u-1", "as": ""}, "for a without impersonating a user"),
        ({"as-user-extra": {"k": ["v"]}}, "for a without impersonating a user"),
        ({"as": "bob", "as-groups": "dev"}, '^user "a": as-groups: must be a list of strings$'),
        ({"as": ["bob"]}, '^user "a": as: must be a string$'),
        ({"as": "bob", "as-user-extra": ["k"]}, "as-user-extra: must be a map"),
        ({"as": "bob", "as-user-extra": {"k": "v"}}, "as-user-extra: k: must be a list"),
        ({"as": "bob\r\nX-Evil: 1"}, r'^user "a": as: "bob\\r\\nX-Evil: 1" holds a control'),
    ],
)
def test_an_impersonation_that_cannot_be_sent_is_refused(
    tmp_path: Path, user: dict[str, object], message: str
) -> None:
    config = load_kubeconfig([_write(tmp_path / "config", _config("a", "https://a", **user))])
    with pytest.raises(KubeconfigError, match=message):
        config.resolve().impersonation()
    with pytest.raises(KubeconfigError, match=message.lstrip("^")):
        config.overridden(None, Overrides(server="https://b"))  # checked with the flags too


def test_the_impersonation_flags_replace_the_users_fields(tmp_path: Path) -> None:
    doc = _config("a", "https://a:6443", **IMPERSONATING)
    doc["users"].append({"name": "plain", "user": {"token": "t"}})  # type: ignore[attr-defined]
    config = load_kubeconfig([_write(tmp_path / "config", doc)])

    def impersonation(context: str | None = None, **flags: object) -> Impersonation | None:
        return config.overridden(context, Overrides(**flags)).resolve().impersonation()  # type: ignore[arg-type]

    # --as alone: the user's uid, groups and extras stay (mergo fills only what the flags set)
    got = impersonation(impersonate="carol")
    assert got is not None and (got.user, got.uid, got.groups) == ("carol", "u-1", ("dev", "ops"))
    assert got.extra == (("example.com/scopes", ("a", "b")), ("reason", ("upgrade",)))
    # --as-group replaces the list (it does not add to it); --as-uid the uid
    got = impersonation(impersonate_groups=("qa",), impersonate_uid="u-2")
    assert got is not None and (got.user, got.uid, got.groups) == ("bob", "u-2", ("qa",))
    # a user without impersonation gets all of it from the flags
    got = impersonation(user="plain", impersonate="carol", impersonate_groups=("a", "b"))
    assert got == Impersonation("carol", groups=("a", "b"))
    # groups or a uid with nobody to act as: refused, naming the flags (kubectl's sentence)
    with pytest.raises(KubeconfigError, match=r"^--as-group needs --as: requesting uid, groups"):
        impersonation(user="plain", impersonate_groups=("a",))
    with pytest.raises(
        KubeconfigError,
        match=r"^--as-uid and --as-group need --as: .* for plain without impersonating a user$",
    ):
        impersonation(user="plain", impersonate_uid="u", impersonate_groups=("a",))
    with pytest.raises(KubeconfigError, match=r'^--as-group: "a\\nb" holds a control character'):
        impersonation(impersonate_groups=("a\nb",))
    # no kubeconfig at all: --server, --token and --as make the whole configuration
    bare = Kubeconfig().overridden(None, Overrides(server="https://c", impersonate="bob"))
    assert bare.resolve().impersonation() == Impersonation("bob")
    with pytest.raises(KubeconfigError, match=r"^--as-uid needs --as: .* user-extra without imp"):
        Kubeconfig().overridden(None, Overrides(server="https://c", impersonate_uid="u"))
    assert Overrides(impersonate="bob") and Overrides(impersonate_groups=("g",))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)
STRING_FIELDS = [
    ("clusters", "cluster", "server"),
    ("clusters", "cluster", "proxy-url"),
    ("users", "user", "token"),
    ("users", "user", "tokenFile"),
    ("users", "user", "client-key"),
    ("contexts", "context", "namespace"),
    ("contexts", "context", "user"),
]


@settings(max_examples=60)  # each example writes and reads a file
@given(field=st.sampled_from(STRING_FIELDS), value=JSON_VALUES)
def test_a_string_field_takes_a_string_or_null_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory, field: tuple[str, str, str], value: object
) -> None:
    section, inner, key = field
    path = tmp_path_factory.getbasetemp() / "string-field.yaml"
    _write(path, {section: [{"name": "e", inner: {key: value}}]})
    if value is None or isinstance(value, str):
        load_kubeconfig([path])
    else:
        with pytest.raises(KubeconfigError, match=f"^{path}: {section} 'e': {key}: must be a str"):
            load_kubeconfig([path])

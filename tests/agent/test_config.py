"""Configuration: the kubelet's flags, fields, defaults, merge rule and validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.config import (
    AGENT_FIELDS,
    KUBELET_FIELDS,
    ConfigError,
    load_config,
    parse_langle_map,
    parse_listen,
    parse_map,
    read_config_file,
)
from agent.eviction import Signal

DEFAULT_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}


def test_defaults_are_the_kubelets() -> None:
    cfg = load_config(env={})
    assert cfg.eviction.eviction_hard == DEFAULT_HARD
    assert cfg.eviction.eviction_pressure_transition_period == 300
    assert cfg.eviction.eviction_max_pod_grace_period == 0
    assert cfg.eviction.enforce_node_allocatable == ("pods",)
    assert cfg.housekeeping_interval == 1.0
    assert cfg.eviction_mode == "delete"
    assert cfg.listen == ("127.0.0.1", 9808)
    assert not cfg.dry_run
    signals = [t.signal for t in cfg.thresholds]
    # enforceNodeAllocatable=pods copies the hard memory threshold for allocatable memory
    assert Signal.ALLOCATABLE_MEMORY_AVAILABLE in signals
    assert all(t.grace_period == 0 for t in cfg.thresholds)


def test_setting_one_hard_entry_drops_the_other_defaults() -> None:
    cfg = load_config({"evictionHard": {"memory.available": "1Gi"}}, env={})
    assert cfg.eviction.eviction_hard == {"memory.available": "1Gi"}
    assert {t.signal for t in cfg.thresholds} == {
        Signal.MEMORY_AVAILABLE,
        Signal.ALLOCATABLE_MEMORY_AVAILABLE,
    }


def test_merge_default_eviction_settings_fills_unspecified_signals() -> None:
    cfg = load_config(
        {"evictionHard": {"memory.available": "1Gi"}, "mergeDefaultEvictionSettings": True},
        env={},
    )
    assert cfg.eviction.eviction_hard == {**DEFAULT_HARD, "memory.available": "1Gi"}


def test_zero_and_hundred_percent_disable_an_entry() -> None:
    cfg = load_config(
        {"evictionHard": {"memory.available": "0%", "nodefs.available": "100%"}}, env={}
    )
    assert cfg.thresholds == ()


def test_flags_override_file_and_env_gives_node_name() -> None:
    cfg = load_config(
        {"evictionHard": {"memory.available": "1Gi"}, "evictionMode": "eviction-api"},
        {"evictionHard": {"memory.available": "2Gi"}},
        env={"NODE_NAME": "n1"},
    )
    assert cfg.eviction.eviction_hard == {"memory.available": "2Gi"}
    assert cfg.eviction_mode == "eviction-api"
    assert cfg.node_name == "n1"


def test_transition_period_zero_means_five_minutes() -> None:
    cfg = load_config({"evictionPressureTransitionPeriod": "0s"}, env={})
    assert cfg.eviction.eviction_pressure_transition_period == 300
    assert cfg.manager_config().pressure_transition_period_seconds == 300


def test_node_status_report_frequency_is_the_kubelets_five_minutes_and_zero_means_it() -> None:
    assert load_config({}, env={}).node_status_report_frequency == 300
    zero = load_config({"nodeStatusReportFrequency": "0s"}, env={})
    assert zero.node_status_report_frequency == 300
    cfg = load_config({"nodeStatusReportFrequency": "1m"}, env={})
    assert cfg.node_status_report_frequency == 60
    assert cfg.summary()["nodeStatusReportFrequency"] == "60s"
    for bound in ("10s", "1h"):
        load_config({"nodeStatusReportFrequency": bound}, env={})


def test_soft_thresholds_with_grace_and_min_reclaim() -> None:
    cfg = load_config(
        {
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "evictionMinimumReclaim": {"memory.available": "500Mi"},
        },
        env={},
    )
    soft = [t for t in cfg.thresholds if t.grace_period]
    assert len(soft) == 1 and soft[0].grace_period == 90
    assert soft[0].min_reclaim is not None and soft[0].min_reclaim.quantity == 500 * 2**20


@pytest.mark.parametrize(
    ("fields", "field", "rule"),
    [
        ({"evictionHard": {"memory.avail": "1Gi"}}, "evictionHard", "unsupported eviction signal"),
        ({"evictionHard": {"memory.available": "0"}}, "evictionHard", "must be positive"),
        ({"evictionHard": {"nodefs.available": "101%"}}, "evictionHard", "must be <= 100%"),
        ({"evictionHard": {"memory.available": "lots"}}, "evictionHard", "lots"),
        (
            {"evictionSoft": {"memory.available": "1Gi"}},
            "evictionSoft",
            "grace period must be specified",
        ),
        (
            {"evictionSoftGracePeriod": {"memory.available": "-1s"}},
            "evictionSoftGracePeriod",
            "must be a positive value",
        ),
        (
            {"evictionSoftGracePeriod": {"memory.available": "90"}},
            "evictionSoftGracePeriod",
            "missing unit",
        ),
        (
            {"evictionMinimumReclaim": {"memory.available": "0%"}},
            "evictionMinimumReclaim",
            "must be positive",
        ),
        ({"enforceNodeAllocatable": ["pods", "none"]}, "enforceNodeAllocatable", "none"),
        ({"enforceNodeAllocatable": ["cpus"]}, "enforceNodeAllocatable", "not supported"),
        ({"evictionMaxPodGracePeriod": "soon"}, "evictionMaxPodGracePeriod", "integer"),
        ({"evictionPressureTransitionPeriod": "-1m"}, "evictionPressureTransitionPeriod", ">= 0"),
        ({"housekeepingInterval": "0s"}, "housekeepingInterval", "must be >= 10ms"),
        ({"evictionMode": "kill"}, "evictionMode", "delete, eviction-api"),
        ({"listen": "localhost"}, "listen", "host:port"),
        ({"memoryCapacity": "lots"}, "memoryCapacity", "not a quantity"),
        ({"memoryCapacity": "0"}, "memoryCapacity", "must be positive"),
        ({"dryRun": "yes"}, "dryRun", "true or false"),
        ({"kubeletSummaryUrl": "ftp://x"}, "kubeletSummaryUrl", "must be an https URL"),
        (
            {"kubeletSummaryUrl": "http://10.0.0.1:10255/stats/summary"},
            "kubeletSummaryUrl",
            "would send the ServiceAccount token",
        ),
        (
            {
                "kubeletSummaryUrl": "http://10.0.0.1:10255/stats/summary",
                "kubeletTokenFile": "/etc/agent/token",
            },
            "kubeletSummaryUrl",
            "must be https",
        ),
        ({"kubeletCAFile": "/nonexistent/ca.crt"}, "kubeletCAFile", "no such file"),
    ],
)
def test_each_bad_entry_names_field_and_rule(
    fields: dict[str, object], field: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(fields, env={})
    assert info.value.field.startswith(field)
    assert rule in str(info.value)


def test_file_rejects_unknown_fields_by_name(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "evictionHrad: {memory.available: 1Gi}\nevictionSoft: {}\n"
    )
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert "evictionHrad" in str(info.value)


def test_file_checks_kind_and_yaml(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("kind: Pod\n")
    with pytest.raises(ConfigError, match="KubeletConfiguration"):
        read_config_file(path)
    path.write_text("evictionHard: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_config_file(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.yaml")


def test_file_with_kubelet_fields_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "evictionHard: {memory.available: 300Mi}\nevictionMaxPodGracePeriod: 30\n"
        "evictionPressureTransitionPeriod: 30s\nnodeName: n1\n"
    )
    cfg = load_config(read_config_file(path), env={})
    assert cfg.eviction.eviction_max_pod_grace_period == 30
    assert cfg.eviction.eviction_pressure_transition_period == 30
    assert cfg.node_name == "n1"


def test_flag_syntax_errors() -> None:
    assert parse_langle_map("memory.available<100Mi, nodefs.available<10%") == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
    }
    assert parse_map("memory.available=1m30s") == {"memory.available": "1m30s"}
    with pytest.raises(ValueError, match="expect string<string"):
        parse_langle_map("memory.available=100Mi")
    assert parse_listen("[::1]:9808") == ("::1", 9808)
    with pytest.raises(ValueError):
        parse_listen("127.0.0.1:99999")


_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=12)
_VAL = st.text(alphabet="0123456789MiGk%", min_size=1, max_size=6)


@given(st.dictionaries(_KEY, _VAL, max_size=6))
def test_langle_map_round_trips(entries: dict[str, str]) -> None:
    text = ",".join(f"{k}<{v}" for k, v in entries.items())
    assert parse_langle_map(text) == entries
    assert parse_map(text.replace("<", "=")) == entries


_SIGNALS = st.sampled_from(
    [
        "memory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "pid.available",
    ]
)
_QUANTITY = st.builds(
    lambda n, unit: f"{n}{unit}",
    st.integers(1, 10**6),
    st.sampled_from(["", "Ki", "Mi", "Gi", "k"]),
)
_PERCENT = st.builds(lambda n: f"{n}%", st.integers(1, 99))


@given(st.dictionaries(_SIGNALS, st.one_of(_QUANTITY, _PERCENT), min_size=1))
def test_valid_hard_maps_load_one_threshold_per_entry(entries: dict[str, str]) -> None:
    cfg = load_config({"evictionHard": entries, "enforceNodeAllocatable": []}, env={})
    assert sorted(t.signal for t in cfg.thresholds) == sorted(entries)
    assert all(t.grace_period == 0 for t in cfg.thresholds)


@given(
    st.dictionaries(_SIGNALS, st.one_of(_QUANTITY, _PERCENT), max_size=3),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=20),
)
def test_an_unknown_signal_is_always_named(entries: dict[str, str], bad: str) -> None:
    if bad in {
        "memory.available",
        "allocatableMemory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "pid.available",
    }:
        return
    with pytest.raises(ConfigError) as info:
        load_config({"evictionHard": {**entries, bad: "1Gi"}}, env={})
    assert bad in str(info.value)


def test_eviction_preference_is_honoured_nowhere_by_default() -> None:
    cfg = load_config({}, env={})
    assert cfg.eviction_preference_namespaces == ()
    assert cfg.manager_config().eviction_preference_namespaces == frozenset()
    listed = load_config({"evictionPreferenceNamespaces": ["infra", "*", "infra"]}, env={})
    assert listed.eviction_preference_namespaces == ("infra", "*")
    flag = load_config({}, {"evictionPreferenceNamespaces": "a, b"}, env={})
    assert flag.manager_config().eviction_preference_namespaces == {"a", "b"}
    with pytest.raises(ConfigError) as info:
        load_config({"evictionPreferenceNamespaces": ["Team_A"]}, env={})
    assert info.value.field.startswith("evictionPreferenceNamespaces")
    assert "DNS-1123" in str(info.value)


NAN, INF = float("nan"), float("inf")
_OVERFLOW = "9999999999999999h"


@pytest.mark.parametrize(
    ("fields", "field", "rule"),
    [
        # every duration field: NaN, ±inf (YAML .nan/.inf/-.inf) and an overflowing Go duration
        *[
            ({name: value}, name, rule)
            for name in (
                "housekeepingInterval",
                "evictionPressureTransitionPeriod",
                "nodeStatusReportFrequency",
            )
            for value, rule in (
                (NAN, "must be a finite duration"),
                (INF, "must be a finite duration"),
                (-INF, "must be a finite duration"),
                (_OVERFLOW, "overflows a duration"),
            )
        ],
        ({"housekeepingInterval": "2h"}, "housekeepingInterval", "must be <= 1h"),
        ({"nodeStatusReportFrequency": "9s"}, "nodeStatusReportFrequency", "must be >= 10s"),
        ({"nodeStatusReportFrequency": "61m"}, "nodeStatusReportFrequency", "must be <= 1h"),
        ({"nodeStatusReportFrequency": "-5m"}, "nodeStatusReportFrequency", "must be >= 0s"),
        ({"nodeStatusReportFrequency": "5"}, "nodeStatusReportFrequency", "missing unit"),
        ({"housekeepingInterval": "1ms"}, "housekeepingInterval", "must be >= 10ms"),
        *[
            (
                {
                    "evictionSoft": {"memory.available": "1Gi"},
                    "evictionSoftGracePeriod": {"memory.available": value},
                },
                "evictionSoftGracePeriod",
                "invalid duration",
            )
            for value in (_OVERFLOW, "1" * 400 + "h", "nan", "inf")
        ],
        # every number: finite, within int32/int64 as the kubelet holds it
        *[
            ({"evictionMaxPodGracePeriod": value}, "evictionMaxPodGracePeriod", "integer")
            for value in (NAN, INF, -INF, 1e300)
        ],
        ({"evictionMaxPodGracePeriod": 2**31}, "evictionMaxPodGracePeriod", "int32"),
        ({"evictionHard": {"memory.available": "1e400"}}, "evictionHard", "int64"),
        ({"evictionHard": {"memory.available": "nan%"}}, "evictionHard", "invalid syntax"),
        ({"evictionHard": {"memory.available": "inf%"}}, "evictionHard", "<= 100%"),
        ({"evictionSoft": {"memory.available": "-inf%"}}, "evictionSoft", ">= 0%"),
        (
            {"evictionMinimumReclaim": {"memory.available": "1e400"}},
            "evictionMinimumReclaim",
            "int64",
        ),
        ({"memoryCapacity": "1e400"}, "memoryCapacity", "at most"),
        ({"memoryCapacity": NAN}, "memoryCapacity", "not a quantity"),
        ({"memoryCapacity": INF}, "memoryCapacity", "not a quantity"),
    ],
)
def test_numbers_and_durations_are_range_checked(
    fields: dict[str, object], field: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(fields, env={})
    assert info.value.field.startswith(field)
    assert rule in str(info.value)


def test_bounds_themselves_are_accepted() -> None:
    cfg = load_config(
        {
            "housekeepingInterval": "10ms",
            "evictionPressureTransitionPeriod": "2562047h",
            "evictionMaxPodGracePeriod": 2**31 - 1,
        },
        env={},
    )
    assert cfg.housekeeping_interval == 0.01
    assert load_config({"housekeepingInterval": "1h"}, env={}).housekeeping_interval == 3600


def test_kubelet_url_is_https_or_sends_no_credential(tmp_path: Path) -> None:
    https = load_config({"kubeletSummaryUrl": "https://10.0.0.1:10250/stats/summary"}, env={})
    assert https.kubelet_token_file.endswith("serviceaccount/token")
    assert https.kubelet_ca_file is None  # the ServiceAccount CA, verified
    bare = load_config(
        {"kubeletSummaryUrl": "http://10.0.0.1:10255/stats/summary", "kubeletTokenFile": ""},
        env={},
    )
    assert bare.kubelet_token_file == ""
    ca = tmp_path / "kubelet-ca.crt"
    ca.write_text("x")
    assert load_config({"kubeletCAFile": str(ca)}, env={}).kubelet_ca_file == str(ca)


def test_the_brake_defaults_to_ten_a_minute_and_zero_is_unlimited() -> None:
    assert load_config({}, env={}).max_evictions_per_minute == 10
    assert load_config({"maxEvictionsPerMinute": 0}, env={}).max_evictions_per_minute == 0
    assert load_config({}, {"maxEvictionsPerMinute": "3"}, env={}).max_evictions_per_minute == 3
    for bad, rule in ((-1, ">= 0"), (float("nan"), "integer"), (2**31, "int32"), ("x", "integer")):
        with pytest.raises(ConfigError) as info:
            load_config({"maxEvictionsPerMinute": bad}, env={})
        assert info.value.field.startswith("maxEvictionsPerMinute") and rule in str(info.value)


@given(st.ip_addresses(v=4), st.integers(min_value=1, max_value=65535))
def test_a_bracketed_ipv4_kubelet_address_loses_its_brackets(address: object, port: int) -> None:
    """One manifest for both families: ``https://[$(NODE_IP)]:10250`` works for IPv4 too."""
    cfg = load_config({"kubeletSummaryUrl": f"https://[{address}]:{port}/stats/summary"})
    assert cfg.kubelet_summary_url == f"https://{address}:{port}/stats/summary"


@given(st.ip_addresses(v=6), st.integers(min_value=1, max_value=65535))
def test_an_ipv6_kubelet_address_keeps_its_brackets(address: object, port: int) -> None:
    url = f"https://[{address}]:{port}/stats/summary"
    assert load_config({"kubeletSummaryUrl": url}).kubelet_summary_url == url


def test_other_kubelet_urls_are_kept_as_written() -> None:
    for url in (
        "https://node-1.example:10250/stats/summary",
        "https://10.0.0.1:10250/stats/summary",
        "https://[not-an-address]:10250/stats/summary",
    ):
        assert load_config({"kubeletSummaryUrl": url}).kubelet_summary_url == url


# --- the file: duplicate keys, aliases, and messages of bounded size ---------------------------

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        HEADER + "evictionHard:\n  memory.available: 300Mi\n  nodefs.available: 10%\n"
        "nodeName: n1\nhousekeepingInterval: 1s\nevictionSoft: {}\n"
        "evictionHard:\n  imagefs.available: 15%\n"
    )
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert info.value.field == "evictionHard"
    assert str(info.value) == f"evictionHard: duplicate key (lines 3 and 9) in {path}"


@pytest.mark.parametrize(
    ("body", "field", "where"),
    [
        (
            "evictionHard:\n  memory.available: 1Gi\n  nodefs.available: 5%\n"
            "  memory.available: 2Gi\n",
            "evictionHard[memory.available]",
            "lines 2 and 4",
        ),
        (
            "evictionHard: {memory.available: 1Gi, memory.available: 2Gi}\n",
            "evictionHard[memory.available]",
            "line 1",
        ),
        # the same key however it is written: YAML's int 1 and 0x1
        ("evictionSoftGracePeriod: {1: 1m, 0x1: 2m}\n", "evictionSoftGracePeriod[1]", "line 1"),
        # in a mapping inside a list, at any depth
        ("x: [{a: {b: 1, b: 2}}]\n", "x[0][a][b]", "line 1"),
    ],
)
def test_duplicates_are_refused_at_any_depth(
    tmp_path: Path, body: str, field: str, where: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert info.value.field == field
    assert info.value.detail == f"duplicate key ({where}) in {path}"


def test_distinct_keys_and_merged_keys_are_not_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    # "1" and 1 are different keys; an explicit key overrides a merged one (YAML merge)
    path.write_text(
        "evictionHard: {<<: {memory.available: 1Gi}, memory.available: 2Gi}\n"
        "evictionMinimumReclaim: {'1': a, 1: b}\n"
    )
    data = read_config_file(path)
    assert data["evictionHard"] == {"memory.available": "2Gi"}


# 9 levels of 9 aliases each: 9**9 (387 million) strings from 360 bytes, if aliases expanded
LAUGHS = "\n".join(
    [
        'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)),
        "evictionHard: *a8",
    ]
)


def test_aliases_are_refused_so_a_billion_laughs_expands_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(LAUGHS)
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert info.value.field == "--config"
    assert "line 2: YAML aliases (*a0) are not allowed" in str(info.value)
    # an anchor nobody refers to is harmless
    path.write_text("evictionHard: &hard {memory.available: 1Gi}\n")
    assert read_config_file(path) == {"evictionHard": {"memory.available": "1Gi"}}


def test_messages_stay_short_whatever_the_file_quotes(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    many_unknown = "".join(f"unknownField{i}: 1\n" for i in range(1000))
    path.write_text(many_unknown)
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert str(info.value).startswith("unknownField0, unknownField1")
    assert len(str(info.value)) < 2500
    path.write_text("housekeepingInterval: " + "9" * 100_000 + "x\n")
    with pytest.raises(ConfigError) as info:
        load_config(read_config_file(path), env={})
    assert len(str(info.value)) < 2500


@pytest.mark.parametrize(
    ("body", "rule"), [("9" * 5000, "Exceeds the limit"), ("2024-02-30", "day is out of range")]
)
def test_a_scalar_python_cannot_hold_is_bad_yaml_not_a_traceback(
    tmp_path: Path, body: str, rule: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"evictionMaxPodGracePeriod: {body}\n")
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert info.value.field == "--config"
    assert "is not valid YAML" in str(info.value) and rule in str(info.value)


def _shared(levels: int) -> object:
    """What an alias bomb builds: each level's list holds the level below nine times."""
    value: object = ["lol"] * 9
    for _ in range(levels):
        value = [value] * 9
    return value


@pytest.mark.parametrize(
    "field",
    ["evictionHard", "evictionPreferenceNamespaces", "nodeName", "memoryCapacity", "listen"],
)
def test_a_value_that_would_print_as_gigabytes_is_quoted_in_a_line(field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({field: _shared(9)}, env={})  # 9**10 strings if printed whole
    assert info.value.field.startswith(field)
    assert len(str(info.value)) < 400


nested = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=40), inner),
    max_leaves=30,
)


@settings(max_examples=80)
@given(
    field=st.sampled_from(sorted(set(KUBELET_FIELDS + AGENT_FIELDS) - {"timelineDir"})),
    value=nested,
)
def test_every_refusal_is_one_bounded_line(field: str, value: object) -> None:
    try:
        load_config({field: value}, env={})
    except ConfigError as exc:
        assert len(str(exc)) <= 256 + 2 + 2048
        assert exc.field

"""``parse_threshold_config`` and friends: the kubelet's flag and config rules
(``ParseThresholdConfig``, pkg/kubelet/eviction/helpers.go)."""

from __future__ import annotations

import pytest

from agent.eviction import (
    EvictionConfigError,
    Signal,
    Threshold,
    ThresholdValue,
    add_allocatable_thresholds,
    parse_percentage,
    parse_threshold_config,
    resolve_eviction_hard,
    update_container_fs_thresholds,
)
from agent.eviction.helpers import parse_go_duration
from agent.eviction.thresholds import float32

MI = 1024 * 1024
LT = "LessThan"


def q(n: int) -> ThresholdValue:
    return ThresholdValue(quantity=n)


def pct(p: float) -> ThresholdValue:
    return ThresholdValue(percentage=float32(float32(p) / 100))


def test_nothing_configured() -> None:
    assert parse_threshold_config([], {}, {}, {}, {}) == []


def test_all_memory_values_with_min_reclaim_and_allocatable_copy() -> None:
    got = parse_threshold_config(
        ["pods"],
        {"memory.available": "150Mi"},
        {"memory.available": "300Mi"},
        {"memory.available": "30s"},
        {"memory.available": "0"},
    )
    assert got == [
        Threshold(Signal.MEMORY_AVAILABLE, LT, q(150 * MI), 0.0, q(0)),
        Threshold(Signal.MEMORY_AVAILABLE, LT, q(300 * MI), 30.0, q(0)),
        Threshold(Signal.ALLOCATABLE_MEMORY_AVAILABLE, LT, q(150 * MI), 0.0, q(0)),
    ]


def test_percentages_with_min_reclaim_percentage() -> None:
    got = parse_threshold_config(
        [],
        {"memory.available": "10%"},
        {"memory.available": "30%"},
        {"memory.available": "30s"},
        {"memory.available": "5%"},
    )
    assert got == [
        Threshold(Signal.MEMORY_AVAILABLE, LT, pct(10), 0.0, pct(5)),
        Threshold(Signal.MEMORY_AVAILABLE, LT, pct(30), 30.0, pct(5)),
    ]


def test_disk_and_pid_signals() -> None:
    got = parse_threshold_config(
        [],
        {
            "imagefs.available": "150Mi",
            "nodefs.available": "100Mi",
            "nodefs.inodesFree": "5%",
            "pid.available": "500",
        },
        {"imagefs.inodesFree": "300"},
        {"imagefs.inodesFree": "1m30s"},
        {"imagefs.available": "2Gi", "nodefs.inodesFree": "1%"},
    )
    by_signal = {(t.signal, t.grace_period): t for t in got}
    assert by_signal[("imagefs.available", 0.0)].min_reclaim == q(2048 * MI)
    assert by_signal[("nodefs.available", 0.0)].min_reclaim is None
    assert by_signal[("nodefs.inodesFree", 0.0)].value == pct(5)
    assert by_signal[("pid.available", 0.0)].value == q(500)
    assert by_signal[("imagefs.inodesFree", 90.0)].value == q(300)
    # no allocatable copy without "pods" enforcement
    assert all(t.signal != Signal.ALLOCATABLE_MEMORY_AVAILABLE for t in got)


def test_zero_and_hundred_percent_disable_the_entry_even_when_soft_lacks_grace() -> None:
    assert parse_threshold_config([], {"memory.available": "0%"}, {}, {}, {}) == []
    assert parse_threshold_config([], {"nodefs.available": "100%"}, {}, {}, {}) == []
    assert parse_threshold_config([], {}, {"memory.available": "0%"}, {}, {}) == []


def test_zero_point_zero_percent_is_a_zero_threshold() -> None:
    (t,) = parse_threshold_config([], {"memory.available": "0.0%"}, {}, {}, {})
    assert t.value == ThresholdValue(percentage=0.0)


def test_grace_periods_for_unconfigured_signals_are_ignored() -> None:
    got = parse_threshold_config(
        [], {}, {}, {"memory.available": "30s"}, {"nodefs.available": "1Gi"}
    )
    assert got == []


def test_only_hard_memory_thresholds_are_copied_to_allocatable() -> None:
    soft = Threshold(Signal.MEMORY_AVAILABLE, LT, q(1), 10.0)
    hard = Threshold(Signal.MEMORY_AVAILABLE, LT, q(2), 0.0, q(3))
    nodefs = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(4))
    assert add_allocatable_thresholds([soft, hard, nodefs]) == [
        soft,
        hard,
        nodefs,
        Threshold(Signal.ALLOCATABLE_MEMORY_AVAILABLE, LT, q(2), 0.0, q(3)),
    ]


@pytest.mark.parametrize(
    ("hard", "soft", "grace", "reclaim", "message"),
    [
        ({"mem.available": "150Mi"}, {}, {}, {}, "unsupported eviction signal mem.available"),
        ({}, {"mem.available": "150Mi"}, {}, {}, "unsupported eviction signal mem.available"),
        ({}, {}, {"mem.available": "30s"}, {}, "unsupported eviction signal mem.available"),
        ({}, {}, {}, {"mem.available": "1Gi"}, "unsupported eviction signal mem.available"),
        ({"memory.available": "-150Mi"}, {}, {}, {}, "must be positive"),
        ({"memory.available": "0"}, {}, {}, {}, "must be positive"),
        ({}, {"memory.available": "-150Mi"}, {"memory.available": "30s"}, {}, "must be positive"),
        ({"memory.available": "-15%"}, {}, {}, {}, "must be >= 0%"),
        ({"memory.available": "150%"}, {}, {}, {}, "must be <= 100%"),
        ({"memory.available": "1x%"}, {}, {}, {}, "invalid syntax"),
        ({"memory.available": "nan%"}, {}, {}, {}, "invalid syntax"),
        ({"memory.available": "1e40%"}, {}, {}, {}, "out of range"),
        ({"memory.available": "1_0%"}, {}, {}, {}, "invalid syntax"),
        ({"memory.available": "inf%"}, {}, {}, {}, "must be <= 100%"),
        ({"memory.available": "-Infinity%"}, {}, {}, {}, "must be >= 0%"),
        ({"memory.available": "lots"}, {}, {}, {}, "quantities must match"),
        (
            {},
            {"memory.available": "150Mi"},
            {},
            {},
            "grace period must be specified for the soft eviction threshold memory.available",
        ),
        (
            {},
            {"memory.available": "150Mi"},
            {"memory.available": "-30s"},
            {},
            "invalid eviction grace period specified: -30s, must be a positive value",
        ),
        ({}, {"memory.available": "1Mi"}, {"memory.available": "30"}, {}, "missing unit"),
        ({}, {"memory.available": "1Mi"}, {"memory.available": "soon"}, {}, "invalid duration"),
        (
            {"memory.available": "1Mi"},
            {},
            {},
            {"memory.available": "-1Mi"},
            "negative eviction minimum reclaim specified for memory.available",
        ),
        (
            {"memory.available": "1Mi"},
            {},
            {},
            {"memory.available": "0%"},
            "eviction percentage minimum reclaim memory.available must be positive: 0%",
        ),
    ],
)
def test_invalid_entries_fail_with_the_kubelets_message(
    hard: dict[str, str],
    soft: dict[str, str],
    grace: dict[str, str],
    reclaim: dict[str, str],
    message: str,
) -> None:
    with pytest.raises(EvictionConfigError, match=message.replace("%", "%").replace(".", r"\.")):
        parse_threshold_config([], hard, soft, grace, reclaim)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("30s", 30.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2h45m", 9900.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


def test_eviction_hard_defaults_are_replaced_wholesale_unless_merged() -> None:
    assert resolve_eviction_hard(None) == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
        "imagefs.inodesFree": "5%",
    }
    assert resolve_eviction_hard({"memory.available": "1Gi"}) == {"memory.available": "1Gi"}
    merged = resolve_eviction_hard(
        {"memory.available": "1Gi"}, merge_default_eviction_settings=True
    )
    assert merged["memory.available"] == "1Gi"
    assert merged["nodefs.available"] == "10%"
    assert len(merged) == 5
    assert resolve_eviction_hard({}) == {}


def test_parse_percentage_is_float32_arithmetic() -> None:
    assert parse_percentage("7.5%") == float32(float32(7.5) / 100)
    assert parse_percentage("10%") == float32(0.1)
    assert parse_percentage("10%") != 0.1  # the float64 value differs


# --- containerfs derivation ------------------------------------------------------------------

HARD_NODEFS = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(100), 0.0, q(7))
SOFT_NODEFS = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(200), 60.0)
HARD_NODEFS_INODES = Threshold(Signal.NODE_FS_INODES_FREE, LT, pct(5))
HARD_IMAGEFS = Threshold(Signal.IMAGE_FS_AVAILABLE, LT, q(300))
SOFT_IMAGEFS_INODES = Threshold(Signal.IMAGE_FS_INODES_FREE, LT, q(400), 120.0)
ALL = [HARD_NODEFS, SOFT_NODEFS, HARD_NODEFS_INODES, HARD_IMAGEFS, SOFT_IMAGEFS_INODES]


def containerfs(thresholds: list[Threshold]) -> dict[tuple[str, bool], Threshold]:
    """Derived containerfs thresholds that can fire, by (signal, hard)."""
    return {
        (t.signal, t.grace_period == 0): t
        for t in thresholds
        if t.signal.startswith("containerfs") and t.operator
    }


@pytest.mark.parametrize(("image_fs", "split"), [(False, False), (True, True)])
def test_containerfs_copies_nodefs_on_single_or_split_fs(image_fs: bool, split: bool) -> None:
    out, err = update_container_fs_thresholds(ALL, image_fs, split)
    assert err is None
    assert out[: len(ALL)] == ALL
    assert len(out) == len(ALL) + 4
    assert containerfs(out) == {
        ("containerfs.available", True): Threshold("containerfs.available", LT, q(100), 0.0, q(7)),
        ("containerfs.available", False): Threshold("containerfs.available", LT, q(200), 60.0),
        ("containerfs.inodesFree", True): Threshold("containerfs.inodesFree", LT, pct(5)),
    }
    # no soft nodefs inode threshold: an inert one (no operator) that never fires
    (inert,) = [t for t in out if t.operator == ""]
    assert inert.signal == "containerfs.inodesFree"


def test_containerfs_copies_imagefs_on_dedicated_imagefs() -> None:
    out, _ = update_container_fs_thresholds(ALL, True, False)
    got = [t for t in out if t.signal.startswith("containerfs") and t.operator]
    assert got == [
        Threshold("containerfs.available", LT, q(300)),
        Threshold("containerfs.inodesFree", LT, q(400), 120.0),
    ]


def test_user_containerfs_entries_are_overwritten_in_place_with_an_error() -> None:
    user = Threshold(Signal.CONTAINER_FS_AVAILABLE, LT, q(1))
    out, err = update_container_fs_thresholds([user, HARD_NODEFS], False, False)
    assert err == "found containerfs.available for hard eviction. ignoring"
    assert out[0] == Threshold("containerfs.available", LT, q(100), 0.0, q(7))
    assert out[1] == HARD_NODEFS

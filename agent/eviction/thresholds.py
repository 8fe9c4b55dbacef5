"""Eviction signals and thresholds: ``pkg/kubelet/eviction/api/types.go``.

Every signal is an "available" quantity and the only operator is ``LessThan``. A threshold value is
either an absolute quantity or a fraction of the observation's capacity; fractions are float32 in
the kubelet and resolve as ``int64(float64(capacity) * float64(percentage))`` — truncation after
float32 rounding, so 20% of 1000Mi is 209715203 bytes, not 209715200. We keep that arithmetic
bit for bit: a threshold that fires one byte early or late is a different decision.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from agent.eviction.quantity import BINARY_SI, QuantityFormat

__all__ = [
    "DEFAULT_EVICTION_HARD",
    "OP_FOR_SIGNAL",
    "SIGNALS",
    "Signal",
    "Threshold",
    "ThresholdOperator",
    "ThresholdValue",
    "float32",
    "get_threshold_quantity",
    "resolve_eviction_hard",
]


class Signal:
    """The kubelet's signal names (``evictionapi.Signal*``)."""

    MEMORY_AVAILABLE: Final = "memory.available"
    ALLOCATABLE_MEMORY_AVAILABLE: Final = "allocatableMemory.available"
    NODE_FS_AVAILABLE: Final = "nodefs.available"
    NODE_FS_INODES_FREE: Final = "nodefs.inodesFree"
    IMAGE_FS_AVAILABLE: Final = "imagefs.available"
    IMAGE_FS_INODES_FREE: Final = "imagefs.inodesFree"
    CONTAINER_FS_AVAILABLE: Final = "containerfs.available"
    CONTAINER_FS_INODES_FREE: Final = "containerfs.inodesFree"
    PID_AVAILABLE: Final = "pid.available"


SIGNALS: Final[tuple[str, ...]] = (
    Signal.MEMORY_AVAILABLE,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE,
    Signal.NODE_FS_AVAILABLE,
    Signal.NODE_FS_INODES_FREE,
    Signal.IMAGE_FS_AVAILABLE,
    Signal.IMAGE_FS_INODES_FREE,
    Signal.CONTAINER_FS_AVAILABLE,
    Signal.CONTAINER_FS_INODES_FREE,
    Signal.PID_AVAILABLE,
)
# the two memory signals: the node's and allocatable (kubepods)
MEMORY_SIGNALS: Final[tuple[str, ...]] = (
    Signal.MEMORY_AVAILABLE,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE,
)


class ThresholdOperator:
    """``evictionapi.ThresholdOperator``; the empty operator marks an inert threshold."""

    LESS_THAN: Final = "LessThan"
    NONE: Final = ""


OP_FOR_SIGNAL: Final[dict[str, str]] = dict.fromkeys(SIGNALS, ThresholdOperator.LESS_THAN)

# defaults_linux.go; the imagefs.inodesFree entry arrived after the older docs were written.
DEFAULT_EVICTION_HARD: Final[dict[str, str]] = {
    Signal.MEMORY_AVAILABLE: "100Mi",
    Signal.NODE_FS_AVAILABLE: "10%",
    Signal.NODE_FS_INODES_FREE: "5%",
    Signal.IMAGE_FS_AVAILABLE: "15%",
    Signal.IMAGE_FS_INODES_FREE: "5%",
}


def resolve_eviction_hard(
    eviction_hard: Mapping[str, str] | None, *, merge_default_eviction_settings: bool = False
) -> dict[str, str]:
    """The effective ``evictionHard`` map (KubeletConfiguration defaulting).

    Unset (None) gives the defaults. Setting any entry replaces the whole map — signals left out get
    no threshold (kubernetes/kubernetes#112057, kubernetes/kubernetes#119985) — unless
    ``mergeDefaultEvictionSettings`` is true, in which case the defaults fill the signals not given.
    Only ``evictionHard`` has defaults.
    """
    if eviction_hard is None:
        return dict(DEFAULT_EVICTION_HARD)
    if merge_default_eviction_settings:
        return {**DEFAULT_EVICTION_HARD, **eviction_hard}
    return dict(eviction_hard)


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (raises ``OverflowError`` out of range)."""
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


@dataclass(frozen=True, slots=True)
class ThresholdValue:
    """A quantity (whole units) or a float32 fraction of capacity in [0, 1].

    ``fmt`` is the quantity's printing format (``BinarySI`` for ``100Mi``); it does not take part
    in comparisons, as ``Quantity.Cmp`` ignores it.
    """

    quantity: int | None = None
    percentage: float | None = None
    fmt: QuantityFormat = field(default=BINARY_SI, compare=False)

    @property
    def text(self) -> str:
        """As an operator reads it: ``10%``, or the quantity in whole units."""
        if self.percentage is not None:
            return f"{self.percentage * 100:g}%"
        return str(self.quantity)


@dataclass(frozen=True, slots=True)
class Threshold:
    """``evictionapi.Threshold``. ``grace_period`` is in seconds; 0 makes it a hard threshold."""

    signal: str
    operator: str
    value: ThresholdValue
    grace_period: float = 0.0
    min_reclaim: ThresholdValue | None = None


def is_hard_memory_threshold(threshold: Threshold) -> bool:
    """A hard threshold (grace 0) on a memory signal, not inert: what between-sync memory
    watches wake the loop for."""
    return (
        threshold.signal in MEMORY_SIGNALS
        and threshold.grace_period == 0
        and bool(threshold.operator)
    )


def get_threshold_quantity(value: ThresholdValue, capacity: int) -> int:
    """``GetThresholdQuantity``: the quantity, or ``int64(capacity × float32 fraction)``."""
    if value.quantity is not None:
        return value.quantity
    percentage = float32(value.percentage or 0.0)
    return int(float(capacity) * percentage)

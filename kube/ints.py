"""Go's fixed-width integer bounds (``math.MaxInt32``, ``math.MaxInt64``, …), which Kubernetes'
``int32`` and ``int64`` fields hold and its arithmetic clamps to: a priority, a replica count or
``maxSkew`` is an int32, a quantity's value, a generation, an observation or a
``time.Duration`` an int64. Python's integers have no bound, so every check of one is against
these.
"""

from __future__ import annotations

from typing import Final

__all__ = ["INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN"]

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

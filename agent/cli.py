"""Entry point of `eviction-agent`; the command itself lands with its issue."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("eviction-agent: not yet available in this version", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

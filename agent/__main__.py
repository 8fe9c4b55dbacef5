"""``python -m agent``: the same command as ``eviction-agent``."""

import sys

from agent.cli import main

sys.exit(main())

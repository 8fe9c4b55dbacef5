"""``python -m agent``: the same as the ``eviction-agent`` command (see ``agent.cli``)."""

import sys

from agent.cli import main

sys.exit(main())

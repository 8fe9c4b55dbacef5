"""``python -m evictor``: the same as the ``evict`` command (see ``evictor.cli``)."""

import sys

from evictor.cli import main

sys.exit(main())

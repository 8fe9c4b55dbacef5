"""``python -m kubesim``: the same as the ``kubesim`` command (see ``kubesim.cli``)."""

import sys

from kubesim.cli import main

sys.exit(main())

"""``scheduler.cliutil`` is now ``kube.cliutil``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.cliutil.__all__``.
New code imports ``kube.cliutil``.
"""

import kube.cliutil
from kube.cliutil import *  # noqa: F403

__all__ = list(kube.cliutil.__all__)

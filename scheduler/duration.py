"""``scheduler.duration`` is now ``kube.duration``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.duration.__all__``.
New code imports ``kube.duration``.
"""

import kube.duration
from kube.duration import *  # noqa: F403

__all__ = list(kube.duration.__all__)

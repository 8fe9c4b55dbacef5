"""``scheduler.labels`` is now ``kube.labels``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.labels.__all__``.
New code imports ``kube.labels``.
"""

import kube.labels
from kube.labels import *  # noqa: F403

__all__ = list(kube.labels.__all__)

"""``scheduler.quantity`` is now ``kube.quantity``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.quantity.__all__``.
New code imports ``kube.quantity``.
"""

import kube.quantity
from kube.quantity import *  # noqa: F403

__all__ = list(kube.quantity.__all__)

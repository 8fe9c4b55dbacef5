"""``scheduler.apierrors`` is now ``kube.apierrors``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.apierrors.__all__``.
New code imports ``kube.apierrors``.
"""

import kube.apierrors
from kube.apierrors import *  # noqa: F403

__all__ = list(kube.apierrors.__all__)

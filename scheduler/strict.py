"""``scheduler.strict`` is now ``kube.strict``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.strict.__all__``.
New code imports ``kube.strict``.
"""

import kube.strict
from kube.strict import *  # noqa: F403

__all__ = list(kube.strict.__all__)

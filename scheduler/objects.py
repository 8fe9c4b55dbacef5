"""``scheduler.objects`` is now ``kube.objects``, its time helpers ``kube.times``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.objects.__all__`` and
``kube.times.__all__``. New code imports ``kube.objects`` and ``kube.times``.
"""

import kube.objects
import kube.times
from kube.objects import *  # noqa: F403
from kube.times import *  # noqa: F403

__all__ = kube.objects.__all__ + kube.times.__all__

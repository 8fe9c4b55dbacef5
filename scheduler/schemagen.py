"""``scheduler.schemagen`` is now ``kube.schemagen``.

The Kubernetes basics every package uses live in the ``kube`` package; this module keeps the
old name working for users' code, handing out every name in ``kube.schemagen.__all__``.
New code imports ``kube.schemagen``.
"""

import kube.schemagen
from kube.schemagen import *  # noqa: F403

__all__ = list(kube.schemagen.__all__)


if __name__ == "__main__":
    raise SystemExit(main())  # noqa: F405

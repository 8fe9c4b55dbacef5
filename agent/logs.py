"""The agent's log lines: JSON on stderr in the shape of Kubernetes' structured logging.

KEP-1602 (https://github.com/kubernetes/enhancements/tree/master/keps/sig-instrumentation/1602-structured-logging):
``ts`` (Unix float), ``v`` (klog verbosity: 0 for info and above, 4 for debug), ``msg`` (a
constant string), ``err``, objects as klog's ``KObj`` (``{"pod": {"name", "namespace"}}``,
``pod_ref``) and the other key/value pairs of ``extra=``; errors and warnings add ``level``.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from typing import Any, Final

from kube.objects import Pod

__all__ = ["JsonFormatter", "pod_ref", "setup_logging"]

_STANDARD: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "v": 4 if record.levelno < logging.INFO else 0,
            "msg": record.getMessage(),
        }
        if record.levelno >= logging.WARNING:
            out["level"] = record.levelname.lower()
        out["logger"] = record.name
        out.update(
            (k, v)
            for k, v in vars(record).items()
            if k not in _STANDARD and not k.startswith("_") and v is not None
        )
        if record.exc_info and record.exc_info[1] is not None:
            out.setdefault("err", str(record.exc_info[1]) or type(record.exc_info[1]).__name__)
            out["stacktrace"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(out, default=str)


def setup_logging(*, debug: bool = False, stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("aiohttp.access", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def pod_ref(pod: Pod) -> dict[str, str]:
    """klog's ``KObj``: how a log line names a pod."""
    return {"name": pod.name, "namespace": pod.namespace}

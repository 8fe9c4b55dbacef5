"""kube-scheduler's scheduler_perf workloads, run from upstream's YAML against ``scheduler``.

scheduler_perf (kubernetes ``test/integration/scheduler_perf``) describes each benchmark as
data: test cases of opcodes with ``$params``, workloads with a floor in pods/s. This package
reads those files as upstream does and plays them, beside the repository's copies of them
(``misc/``, ``topology_spreading/``, ``affinity/``, ``templates/``; README.md says what was
kept): ``config`` decodes them (``gojson``), ``ops`` types a workload's ops, ``objects`` makes
nodes and pods from templates (``gotemplate``), ``executor`` plays the ops against a backend
(``library_backend`` in process, ``kubesim_backend`` over HTTP) measured by ``throughput``,
and ``cli`` is ``python bench/scheduler_perf --help``.
"""

from .cli import main
from .config import CONFIG_DIR, DEFAULT_CONFIGS, DEFAULT_TABLE, load_config, select
from .errors import ConfigError, Unmodelled, WorkloadFailed
from .executor import KUBESIM_URL_GATES_NOTE, Executor, run_workload
from .gotemplate import render_template
from .kubesim_backend import KubesimBackend
from .library_backend import LibraryBackend
from .objects import Templates
from .ops import plan, queueing_hints
from .throughput import Collector

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIGS",
    "DEFAULT_TABLE",
    "KUBESIM_URL_GATES_NOTE",
    "Collector",
    "ConfigError",
    "Executor",
    "KubesimBackend",
    "LibraryBackend",
    "Templates",
    "Unmodelled",
    "WorkloadFailed",
    "load_config",
    "main",
    "plan",
    "queueing_hints",
    "render_template",
    "run_workload",
    "select",
]

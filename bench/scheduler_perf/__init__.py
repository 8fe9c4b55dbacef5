"""kube-scheduler's scheduler_perf workloads, run from upstream's YAML against ``scheduler``
(or kubesim): ``python bench/scheduler_perf --help``."""

from .executor import (
    CONFIG_DIR,
    DEFAULT_CONFIGS,
    DEFAULT_TABLE,
    Collector,
    ConfigError,
    Executor,
    LibraryBackend,
    Templates,
    load_config,
    main,
    plan,
    render_template,
    run_workload,
    select,
)

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIGS",
    "DEFAULT_TABLE",
    "Collector",
    "ConfigError",
    "Executor",
    "LibraryBackend",
    "Templates",
    "load_config",
    "main",
    "plan",
    "render_template",
    "run_workload",
    "select",
]

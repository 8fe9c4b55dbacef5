"""Stats sources of the agent's shell: cgroups, /proc, statvfs, PSI and the kubelet summary. Every
reader is a plain function over filesystem roots (``--proc-root``, ``--cgroup-root``,
``--kubelet-root``: ``Roots``), so it runs unchanged on a host, in a DaemonSet with the host's trees
mounted elsewhere, and on fixture trees in tests; ``SummaryCollector`` assembles their readings into
one typed ``Summary``, the decision core's one input.
"""

from agent.sources.cgroups import CgroupLayout, CgroupVersion, detect_layout
from agent.sources.collector import SourceConfig, SummaryCollector
from agent.sources.kubelet import KubeletSummaryConfig, fetch_summary
from agent.sources.pods import PodIdentity
from agent.sources.psi import MonitorMode, PressureMonitor, Trigger, parse_pressure
from agent.sources.roots import Roots
from kube.cgroups import CgroupDriver

__all__ = [
    "CgroupDriver",
    "CgroupLayout",
    "CgroupVersion",
    "KubeletSummaryConfig",
    "MonitorMode",
    "PodIdentity",
    "PressureMonitor",
    "Roots",
    "SourceConfig",
    "SummaryCollector",
    "Trigger",
    "detect_layout",
    "fetch_summary",
    "parse_pressure",
]

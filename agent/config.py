"""The agent's configuration: the kubelet's eviction flags and KubeletConfiguration fields, under
their names and with their rules (operators already have ``--eviction-hard`` strings and
KubeletConfiguration files), plus the agent's own options — validated completely before anything
runs (``load_config``). Heavy imports (the decision core) happen inside functions, so ``--help``
stays fast.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import reprlib
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kube.ints import INT32_MAX, INT32_MIN, INT64_MAX

if TYPE_CHECKING:
    from agent.eviction import ManagerConfig, Threshold

__all__ = [
    "AGENT_FIELDS",
    "DEFAULT_LISTEN",
    "EVICTION_MODES",
    "KUBELET_FIELDS",
    "AgentConfig",
    "ConfigError",
    "EvictionSettings",
    "load_config",
    "parse_langle_map",
    "parse_listen",
    "parse_map",
]

DEFAULT_LISTEN: Final = "127.0.0.1:9808"
# A sync reads every pod cgroup: below 10 ms it cannot finish and the loop only burns the CPU;
# above 1 h the agent is 360 times slower than the kubelet's 10 s loop it is meant to beat.
MIN_HOUSEKEEPING_INTERVAL: Final = 0.01
MAX_HOUSEKEEPING_INTERVAL: Final = 3600.0
# How often unchanged node conditions are written again: the kubelet's nodeStatusReportFrequency
# (5 min; 0 means that default, as the kubelet's defaulting does). No kubelet writes its status
# more often than its 10 s nodeStatusUpdateFrequency; past an hour ``lastHeartbeatTime`` no
# longer tells a reader whether the agent still reports.
DEFAULT_NODE_STATUS_REPORT_FREQUENCY: Final = 300.0
MIN_NODE_STATUS_REPORT_FREQUENCY: Final = 10.0
MAX_NODE_STATUS_REPORT_FREQUENCY: Final = 3600.0
_GO_MAX_DURATION: Final = "2562047h47m16.854775807s"
EVICTION_MODES: Final = ("delete", "eviction-api")
KUBELET_API_VERSION: Final = "kubelet.config.k8s.io/v1beta1"

# KubeletConfiguration fields the agent reads (camelCase, as in the file).
KUBELET_FIELDS: Final = (
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionPressureTransitionPeriod",
    "evictionMaxPodGracePeriod",
    "mergeDefaultEvictionSettings",
    "enforceNodeAllocatable",
    "localStorageCapacityIsolation",
    "nodeStatusReportFrequency",
)
# The agent's own options, also accepted in the file under the same camelCase names.
AGENT_FIELDS: Final = (
    "housekeepingInterval",
    "nodeName",
    "kubeconfig",
    "evictionMode",
    "dryRun",
    "nodeConditions",
    "nodeTaints",
    "listen",
    "procRoot",
    "cgroupRoot",
    "kubeletRoot",
    "runtimeRoot",
    "memoryCapacity",
    "kubeletSummaryUrl",
    "nodeCgroup",
    "evictionPreferenceNamespaces",
    "kubeletCAFile",
    "kubeletTokenFile",
    "maxEvictionsPerMinute",
    "kernelMemcgNotification",
    "timelineDir",
)
_ENFORCE_OPTIONS: Final = ("pods", "system-reserved", "kube-reserved", "none")
_FLAG_OF: Final = {
    name: "--" + re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), name)
    for name in KUBELET_FIELDS + AGENT_FIELDS
}
_FLAG_OF["listen"] = "--listen"
_FLAG_OF["kubeletCAFile"] = "--kubelet-ca-file"
# the ServiceAccount's files, mounted in every pod (and the kubelet's default credentials)
SERVICE_ACCOUNT_TOKEN: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_ACCOUNT_CA: Final = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


# An error message is one line an operator reads, whatever the input it quotes (a key of a
# megabyte, thousands of unknown fields): longer parts are cut.
_FIELD_LIMIT: Final = 256
_DETAIL_LIMIT: Final = 2048
_ELLIPSIS: Final = "..."


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(_ELLIPSIS)] + _ELLIPSIS


class ConfigError(ValueError):
    """A configuration entry that cannot be used: ``field`` names it, the message says why.

    Both are cut to a bounded length, so the message stays one readable line.
    """

    def __init__(self, field_name: str, detail: str) -> None:
        self.field = _cut(field_name, _FIELD_LIMIT)
        self.detail = _cut(detail, _DETAIL_LIMIT)
        super().__init__(f"{self.field}: {self.detail}")


_REPR: Final = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 6
_REPR.maxstring = 120
_REPR.maxother = 60
_REPR.maxlong = 40
_SHOW_LIMIT: Final = 240


def _show(value: Any) -> str:
    """A value as a message quotes it: ``repr`` bounded in length and in the work it takes,
    whatever it nests or repeats (``reprlib``: two levels of six items)."""
    return _cut(_REPR.repr(value), _SHOW_LIMIT)


def flag_of(field_name: str) -> str:
    """``evictionHard`` → ``--eviction-hard``."""
    return _FLAG_OF.get(field_name, field_name)


def _label(field_name: str) -> str:
    flag = flag_of(field_name)
    return f"{field_name} ({flag})" if flag != field_name else field_name


# --- flag syntax -------------------------------------------------------------------------------


def _parse_pairs(value: str, sep: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in value.split(","):
        if not item:
            continue
        key, found, val = item.partition(sep)
        if not found:
            raise ValueError(f"malformed pair {_show(item.strip())}, expect string{sep}string")
        out[key.strip()] = val.strip()
    return out


def parse_langle_map(value: str) -> dict[str, str]:
    """``cliflag.LangleSeparatedMapStringString``: ``a<1,b<2``.

    ``--eviction-hard`` and ``--eviction-soft`` are ``<``-separated pairs
    (``memory.available<100Mi,nodefs.available<10%``); the grace-period and minimum-reclaim flags
    are ``=``-separated (``parse_map``). Repeating a map flag adds pairs; the first use replaces the
    default, as ``LangleSeparatedMapStringString.Set`` does.
    """
    return _parse_pairs(value, "<")


def parse_map(value: str) -> dict[str, str]:
    """``cliflag.MapStringString``: ``a=1,b=2``."""
    return _parse_pairs(value, "=")


def parse_listen(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``); port 0 picks a free port."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{_show(value)} must be host:port with a port between 0 and 65535")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


# --- values ------------------------------------------------------------------------------------


def _duration(
    field_name: str,
    value: Any,
    *,
    minimum: float = 0.0,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """A Go duration string (or a number of seconds), finite and within [minimum, maximum].

    NaN compares false with everything, so the bounds are written to fail for it; the maximum
    defaults to the longest ``time.Duration`` (an int64 of nanoseconds, about 292 years).
    """
    from kube.duration import (
        MAX_DURATION_SECONDS,
        DurationError,
        DurationOverflowError,
        parse_go_duration,
    )

    label = _label(field_name)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(label, f"must be a duration such as 1m30s, got {_show(value)}")
    if isinstance(value, str):
        try:
            seconds = parse_go_duration(value.strip())
        except DurationOverflowError as exc:
            raise ConfigError(
                label, f"{exc}: overflows a duration (at most {_GO_MAX_DURATION})"
            ) from None
        except DurationError as exc:
            raise ConfigError(label, str(exc)) from None
    else:
        seconds = float(value)
    if not math.isfinite(seconds):
        raise ConfigError(label, f"must be a finite duration, got {_show(value)}")
    top = MAX_DURATION_SECONDS if maximum is None else maximum
    low_ok = seconds > minimum if exclusive_minimum else seconds >= minimum
    if not low_ok:
        op = ">" if exclusive_minimum else ">="
        raise ConfigError(label, f"must be {op} {_seconds(minimum)}, got {_show(value)}")
    if not seconds <= top:
        raise ConfigError(label, f"must be <= {_seconds(top)}, got {_show(value)}")
    return seconds


def _seconds(value: float) -> str:
    from kube.duration import MAX_DURATION_SECONDS

    if value >= MAX_DURATION_SECONDS:
        return _GO_MAX_DURATION
    if value >= 3600 and value % 3600 == 0:
        return f"{value / 3600:g}h"
    if value >= 60 and value % 60 == 0:
        return f"{value / 60:g}m"
    if value < 1 and value != 0:
        return f"{value * 1000:g}ms"
    return f"{value:g}s"


def _str_map(field_name: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            _label(field_name), f"must be a map of signal to value, got {_show(value)}"
        )
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ConfigError(
                f"{_label(field_name)}[{k}]", f"must be a string value, got {_show(v)}"
            )
        out[k] = str(v)
    return out


def _bool(field_name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(_label(field_name), f"must be true or false, got {_show(value)}")
    return value


def _int32(field_name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if not isinstance(value, str):
                raise ValueError(value)  # str() of a nested value could be of any size
            value = int(value.strip())
        except ValueError:
            raise ConfigError(
                _label(field_name), f"must be an integer, got {_show(value)}"
            ) from None
    if not INT32_MIN <= value <= INT32_MAX:
        raise ConfigError(_label(field_name), f"must fit in int32, got {value}")
    return int(value)


_NAMESPACE_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _namespaces(field_name: str, value: Any) -> tuple[str, ...]:
    """A list of namespace names (DNS-1123 labels) or ``*``; a comma list from the flag."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple):
        raise ConfigError(_label(field_name), f"must be a list of namespaces, got {_show(value)}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not (
            item == "*" or _NAMESPACE_NAME.fullmatch(item) is not None
        ):
            raise ConfigError(
                _label(field_name), f"{_show(item)} is not a namespace name (DNS-1123 label) or '*'"
            )
        if item not in out:
            out.append(item)
    return tuple(out)


def _string(field_name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(_label(field_name), f"must be a string, got {_show(value)}")
    return value


def _report_frequency(value: Any) -> float:
    """``nodeStatusReportFrequency``: 0 or unset is the kubelet's default, else within bounds."""
    if value is None:
        return DEFAULT_NODE_STATUS_REPORT_FREQUENCY
    name = "nodeStatusReportFrequency"
    seconds = _duration(name, value, maximum=MAX_NODE_STATUS_REPORT_FREQUENCY)
    if seconds == 0:
        return DEFAULT_NODE_STATUS_REPORT_FREQUENCY
    if seconds < MIN_NODE_STATUS_REPORT_FREQUENCY:
        raise ConfigError(
            _label(name),
            f"must be >= {_seconds(MIN_NODE_STATUS_REPORT_FREQUENCY)} (0 means "
            f"{_seconds(DEFAULT_NODE_STATUS_REPORT_FREQUENCY)}), got {_show(value)}",
        )
    return seconds


def _max_evictions(value: Any) -> int:
    from agent.eviction.brake import DEFAULT_MAX_EVICTIONS_PER_MINUTE

    if value is None:
        return DEFAULT_MAX_EVICTIONS_PER_MINUTE
    n = _int32("maxEvictionsPerMinute", value)
    if n < 0:
        raise ConfigError(_label("maxEvictionsPerMinute"), f"must be >= 0 (0 = no limit), got {n}")
    return n


_BRACKETED_IPV4: Final = re.compile(r"(https?://)\[([0-9.]+)\]")


def url_for_any_family(url: str) -> str:
    """A URL whose host is an IPv4 address in brackets, without them.

    A manifest cannot know its node's address family: ``https://$(NODE_IP):10250`` is a broken
    URL on an IPv6 node (the address needs brackets) and ``https://[$(NODE_IP)]:10250`` on an
    IPv4 node (it must not have them). So the agent takes the bracketed form for both: brackets
    around an IPv4 literal are dropped; any other URL is returned as it is.
    """
    m = _BRACKETED_IPV4.match(url)
    if m is None:
        return url
    try:
        ipaddress.IPv4Address(m.group(2))
    except ValueError:
        return url
    return m.group(1) + m.group(2) + url[m.end() :]


def _timeline_dir(value: Any) -> str | None:
    """An existing directory the agent may create files in; None or "" for none."""
    if value is None:
        return None
    path = _string("timelineDir", value)
    if not path:
        return None
    label = _label("timelineDir")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ConfigError(label, f"{path}: no such directory") from None
    except OSError as exc:
        raise ConfigError(label, f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(mode):
        raise ConfigError(label, f"{path}: not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(label, f"{path}: not writable by this user")
    return path


def _check_kubelet_url(url: str, *, token_file: str) -> None:
    """https (verified), or http only when no credential would be sent.

    "No credential" means ``kubeletTokenFile`` is empty: the fetch then carries no
    Authorization header (the agent has no other credential for the kubelet — no client
    certificate), so a read-only port such as 10255 gives away nothing that can delete pods.
    """
    label = _label("kubeletSummaryUrl")
    if url.startswith("https://"):
        return
    if not url.startswith("http://"):
        raise ConfigError(label, f"must be an https URL, got {_show(url)}")
    if token_file:
        raise ConfigError(
            label,
            f"must be https: {_show(url)} would send the ServiceAccount token ({token_file}) in "
            'clear; http is allowed only with kubeletTokenFile: "" (no credential)',
        )


# --- the result --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvictionSettings:
    """The kubelet's eviction settings after defaulting (strings, as in the kubelet config)."""

    eviction_hard: dict[str, str]
    eviction_soft: dict[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: dict[str, str] = field(default_factory=dict)
    eviction_minimum_reclaim: dict[str, str] = field(default_factory=dict)
    eviction_pressure_transition_period: float = 300.0
    eviction_max_pod_grace_period: int = 0
    merge_default_eviction_settings: bool = False
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    local_storage_capacity_isolation: bool = True


@dataclass(frozen=True)
class AgentConfig:
    """Everything ``eviction-agent run`` needs, validated."""

    eviction: EvictionSettings
    thresholds: tuple[Threshold, ...]
    housekeeping_interval: float = 1.0
    node_name: str = ""
    kubeconfig: str | None = None
    eviction_mode: str = "delete"
    dry_run: bool = False
    node_conditions: bool = False
    # unchanged conditions are written again after this long (the kubelet's field)
    node_status_report_frequency: float = DEFAULT_NODE_STATUS_REPORT_FREQUENCY
    node_taints: bool = False
    # the kubelet's field; on by default here (the kubelet's default is off): see memcg.py
    kernel_memcg_notification: bool = True
    listen: tuple[str, int] = ("127.0.0.1", 9808)
    proc_root: str = "/proc"
    cgroup_root: str = "/sys/fs/cgroup"
    kubelet_root: str = "/var/lib/kubelet"
    runtime_root: str = "/var/lib/containerd"
    memory_capacity: int | None = None
    kubelet_summary_url: str | None = None
    # The node's cgroup below each hierarchy root ("" = the root): a kind/kwok node container,
    # or the kubesim demo node's sub-root. kubepods is looked for beneath it.
    node_cgroup: str = ""
    # where pods may state ``eviction-preference`` (``*`` = everywhere); none by default
    eviction_preference_namespaces: tuple[str, ...] = ()
    # TLS trust for kubeletSummaryUrl: None = the ServiceAccount CA (a missing file fails fetches)
    kubelet_ca_file: str | None = None
    # the bearer token sent to the kubelet; "" = no credential (the only case http is allowed)
    kubelet_token_file: str = SERVICE_ACCOUNT_TOKEN
    # the brake: evictions per sliding minute (0 = unlimited); hard thresholds pass it
    max_evictions_per_minute: int = 10
    # per-incident timeline files (agent.timeline); None: none written
    timeline_dir: str | None = None
    source: str = "defaults"

    def manager_config(self) -> ManagerConfig:
        from agent.eviction import ManagerConfig

        return ManagerConfig(
            thresholds=self.thresholds,
            max_pod_grace_period_seconds=self.eviction.eviction_max_pod_grace_period,
            pressure_transition_period_seconds=self.eviction.eviction_pressure_transition_period,
            local_storage_capacity_isolation=self.eviction.local_storage_capacity_isolation,
            eviction_preference_namespaces=frozenset(self.eviction_preference_namespaces),
        )

    def with_changes(self, **changes: Any) -> AgentConfig:
        return replace(self, **changes)

    def summary(self) -> dict[str, Any]:
        """The effective configuration, in the file's field names (for ``check-config``)."""
        e = self.eviction
        return {
            "evictionHard": dict(e.eviction_hard),
            "evictionSoft": dict(e.eviction_soft),
            "evictionSoftGracePeriod": dict(e.eviction_soft_grace_period),
            "evictionMinimumReclaim": dict(e.eviction_minimum_reclaim),
            "evictionPressureTransitionPeriod": f"{e.eviction_pressure_transition_period:g}s",
            "evictionMaxPodGracePeriod": e.eviction_max_pod_grace_period,
            "mergeDefaultEvictionSettings": e.merge_default_eviction_settings,
            "enforceNodeAllocatable": list(e.enforce_node_allocatable),
            "localStorageCapacityIsolation": e.local_storage_capacity_isolation,
            "housekeepingInterval": f"{self.housekeeping_interval:g}s",
            "nodeName": self.node_name,
            "kubeconfig": self.kubeconfig,
            "evictionMode": self.eviction_mode,
            "dryRun": self.dry_run,
            "nodeConditions": self.node_conditions,
            "nodeStatusReportFrequency": f"{self.node_status_report_frequency:g}s",
            "nodeTaints": self.node_taints,
            "kernelMemcgNotification": self.kernel_memcg_notification,
            "listen": f"{self.listen[0]}:{self.listen[1]}",
            "procRoot": self.proc_root,
            "cgroupRoot": self.cgroup_root,
            "kubeletRoot": self.kubelet_root,
            "runtimeRoot": self.runtime_root,
            "memoryCapacity": self.memory_capacity,
            "kubeletSummaryUrl": self.kubelet_summary_url,
            "nodeCgroup": self.node_cgroup,
            "evictionPreferenceNamespaces": list(self.eviction_preference_namespaces),
            "kubeletCAFile": self.kubelet_ca_file,
            "kubeletTokenFile": self.kubelet_token_file,
            "maxEvictionsPerMinute": self.max_evictions_per_minute,
            "timelineDir": self.timeline_dir,
        }


# --- loading -----------------------------------------------------------------------------------


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The file's mapping; ConfigError naming the file for unreadable or non-mapping YAML.

    YAML is read as strictly as a configuration must be (``kube.strict.parse_yaml``): aliases
    are refused — a file of a few hundred bytes whose anchors refer to each other names
    billions of values (the "billion laughs"), and a KubeletConfiguration has no use for them —
    and so is a key given twice in one mapping, at any depth, with both lines: the last one
    would silently win (a second ``evictionHard`` dropping the first's signals), where the
    kubelet's strict decoding refuses a duplicate field.
    """
    from kube.strict import AliasRefused, DuplicateKey, InvalidYaml, parse_yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError("--config", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        docs, _ = parse_yaml(text, duplicates="refuse", aliases="refuse", timestamps="dates")
    except DuplicateKey as exc:
        first, *rest = exc.path
        name = str(first) + "".join(f"[{part}]" for part in rest)
        raise ConfigError(name, f"duplicate key ({exc.where}) in {path}") from None
    except AliasRefused as exc:
        raise ConfigError(
            "--config",
            f"{path}: line {exc.line}: YAML aliases (*{exc.anchor}) are not allowed in the "
            "agent's configuration; write the value out",
        ) from None
    except InvalidYaml as exc:
        raise ConfigError("--config", f"{path} is not valid YAML: {exc.problem}") from None
    if len(docs) > 1:
        raise ConfigError(
            "--config", f"{path} is not valid YAML: one document expected, found {len(docs)}"
        )
    data = docs[0] if docs else None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config", f"{path} must hold a mapping of fields, got {_show(data)}")
    kind = data.pop("kind", "KubeletConfiguration")
    api_version = data.pop("apiVersion", KUBELET_API_VERSION)
    if kind != "KubeletConfiguration":
        raise ConfigError("kind", f"must be KubeletConfiguration, got {_show(kind)}")
    if api_version != KUBELET_API_VERSION:
        raise ConfigError("apiVersion", f"must be {KUBELET_API_VERSION}, got {_show(api_version)}")
    unknown = sorted(str(k) for k in data if k not in KUBELET_FIELDS + AGENT_FIELDS)
    if unknown:
        raise ConfigError(
            ", ".join(unknown),
            f"unknown field{'s' if len(unknown) > 1 else ''} in {path}; "
            f"known fields: {', '.join(KUBELET_FIELDS + AGENT_FIELDS)}",
        )
    return data


def _hard_with_defaults(hard: Mapping[str, str] | None, merge: bool) -> dict[str, str]:
    from agent.eviction import DEFAULT_EVICTION_HARD

    if hard is None:
        return dict(DEFAULT_EVICTION_HARD)
    out = dict(hard)
    if merge:
        for signal, value in DEFAULT_EVICTION_HARD.items():
            out.setdefault(signal, value)
    return out


def _validate_enforce(values: Sequence[str]) -> tuple[str, ...]:
    label = _label("enforceNodeAllocatable")
    for v in values:
        if v not in _ENFORCE_OPTIONS:
            raise ConfigError(
                label,
                f"option {_show(v)} is not supported; valid options are "
                + ", ".join(repr(o) for o in _ENFORCE_OPTIONS),
            )
    if "none" in values and len(values) > 1:
        raise ConfigError(label, "may not contain additional enforcements when 'none' is given")
    return tuple(v for v in values if v != "none")


def _check_thresholds(e: EvictionSettings) -> tuple[Threshold, ...]:
    """Run each field through the kubelet's parser alone, so the error names the field."""
    from agent.eviction import EvictionConfigError, parse_threshold_config

    checks: list[tuple[str, dict[str, str], Mapping[str, Any]]] = [
        ("evictionHard", e.eviction_hard, {"eviction_hard": e.eviction_hard}),
        (
            "evictionSoftGracePeriod",
            e.eviction_soft_grace_period,
            {"eviction_soft_grace_period": e.eviction_soft_grace_period},
        ),
        (
            "evictionMinimumReclaim",
            e.eviction_minimum_reclaim,
            {"eviction_minimum_reclaim": e.eviction_minimum_reclaim},
        ),
    ]
    for name, entries, kwargs in checks:
        for signal, value in entries.items():
            one = {k: {signal: value} for k in kwargs}
            try:
                parse_threshold_config(
                    [],
                    one.get("eviction_hard"),
                    None,
                    one.get("eviction_soft_grace_period"),
                    one.get("eviction_minimum_reclaim"),
                )
            except EvictionConfigError as exc:
                raise ConfigError(f"{_label(name)}[{signal}]", f"{_show(value)}: {exc}") from None
    for signal, value in e.eviction_soft.items():
        grace = e.eviction_soft_grace_period
        try:
            parse_threshold_config(
                [], None, {signal: value}, {signal: grace[signal]} if signal in grace else {}, None
            )
        except EvictionConfigError as exc:
            raise ConfigError(
                f"{_label('evictionSoft')}[{signal}]", f"{_show(value)}: {exc}"
            ) from None
    try:
        thresholds = parse_threshold_config(
            list(e.enforce_node_allocatable),
            e.eviction_hard,
            e.eviction_soft,
            e.eviction_soft_grace_period,
            e.eviction_minimum_reclaim,
        )
    except EvictionConfigError as exc:  # pragma: no cover - the per-entry checks come first
        raise ConfigError("eviction settings", str(exc)) from None
    return tuple(thresholds)


def load_config(
    file_data: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    source: str = "defaults",
) -> AgentConfig:
    """Merge defaults ← file ← flags (both keyed by the camelCase field names) and validate.

    Map flags arrive as already-parsed dicts. Raises ``ConfigError`` naming the first bad entry. The
    kubelet's rules:

    - Flags take precedence over ``--config`` values (the kubelet's precedence); a map flag replaces
      the file's whole map.
    - ``evictionHard`` defaults (``memory.available<100Mi``, ``nodefs.available<10%``,
      ``nodefs.inodesFree<5%``, ``imagefs.available<15%``, ``imagefs.inodesFree<5%``) apply only
      while it is unset; setting any entry drops the others (kubernetes/kubernetes#112057,
      kubernetes/kubernetes#119985) unless ``mergeDefaultEvictionSettings`` is true, which fills in
      each default signal left unspecified.
    - ``evictionPressureTransitionPeriod`` 0 means 5 min (defaulting); ``evictionMaxPodGracePeriod``
      0 gives soft evictions the pod's own grace and a negative value means 1 s — the kubelet's real
      behaviour (kubernetes/kubernetes#118172, ``agent.eviction.manager.EvictionManager``).
    - Every entry is checked with the kubelet's own parser (``parse_threshold_config``), so a bad
      entry fails here with the kubelet's message, prefixed with the field that carries it.

    Unknown fields in the file are refused by name (a typo must not silently drop a threshold), and
    so are a key given twice and any YAML alias (``read_config_file``). A message quotes what it
    refuses in a bounded length (``_show``, ``ConfigError``), however large or nested the value.
    """
    environ = os.environ if env is None else env
    raw: dict[str, Any] = dict(file_data or {})
    raw.update({k: v for k, v in (flags or {}).items() if v is not None})
    unknown = sorted(k for k in raw if k not in KUBELET_FIELDS + AGENT_FIELDS)
    if unknown:
        raise ConfigError(", ".join(unknown), "unknown field")

    merge = _bool("mergeDefaultEvictionSettings", raw.get("mergeDefaultEvictionSettings", False))
    hard_raw = raw.get("evictionHard")
    hard = None if hard_raw is None else _str_map("evictionHard", hard_raw)
    enforce_raw = raw.get("enforceNodeAllocatable", ["pods"])
    if isinstance(enforce_raw, str):
        enforce_raw = [v.strip() for v in enforce_raw.split(",") if v.strip()]
    if not isinstance(enforce_raw, list | tuple) or not all(
        isinstance(v, str) for v in enforce_raw
    ):
        raise ConfigError(
            _label("enforceNodeAllocatable"), f"must be a list of strings, got {_show(enforce_raw)}"
        )
    transition = _duration(
        "evictionPressureTransitionPeriod", raw.get("evictionPressureTransitionPeriod", "5m")
    )
    settings = EvictionSettings(
        eviction_hard=_hard_with_defaults(hard, merge),
        eviction_soft=_str_map("evictionSoft", raw.get("evictionSoft")),
        eviction_soft_grace_period=_str_map(
            "evictionSoftGracePeriod", raw.get("evictionSoftGracePeriod")
        ),
        eviction_minimum_reclaim=_str_map(
            "evictionMinimumReclaim", raw.get("evictionMinimumReclaim")
        ),
        eviction_pressure_transition_period=transition or 300.0,
        eviction_max_pod_grace_period=_int32(
            "evictionMaxPodGracePeriod", raw.get("evictionMaxPodGracePeriod", 0)
        ),
        merge_default_eviction_settings=merge,
        enforce_node_allocatable=_validate_enforce(list(enforce_raw)),
        local_storage_capacity_isolation=_bool(
            "localStorageCapacityIsolation", raw.get("localStorageCapacityIsolation", True)
        ),
    )
    thresholds = _check_thresholds(settings)

    interval = _duration(
        "housekeepingInterval",
        raw.get("housekeepingInterval", "1s"),
        minimum=MIN_HOUSEKEEPING_INTERVAL,
        maximum=MAX_HOUSEKEEPING_INTERVAL,
    )
    mode = _string("evictionMode", raw.get("evictionMode", "delete"))
    if mode not in EVICTION_MODES:
        raise ConfigError(
            _label("evictionMode"), f"must be one of {', '.join(EVICTION_MODES)}, got {_show(mode)}"
        )
    listen_text = _string("listen", raw.get("listen", DEFAULT_LISTEN))
    try:
        listen = parse_listen(listen_text)
    except ValueError as exc:
        raise ConfigError(_label("listen"), str(exc)) from None
    capacity: int | None = None
    if raw.get("memoryCapacity") not in (None, ""):
        from kube.quantity import QuantityError, parse_quantity, quantity_value

        value = raw["memoryCapacity"]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(_label("memoryCapacity"), f"not a quantity: {_show(value)}")
        text = str(value)
        try:
            exact = parse_quantity(text)
            capacity = quantity_value(text)
        except (QuantityError, ValueError) as exc:
            raise ConfigError(_label("memoryCapacity"), f"not a quantity: {exc}") from None
        if capacity <= 0:
            raise ConfigError(_label("memoryCapacity"), f"must be positive, got {capacity}")
        if not exact <= INT64_MAX:  # quantity_value clamps; a node has no 8 EiB of memory
            raise ConfigError(
                _label("memoryCapacity"), f"must be at most {INT64_MAX} bytes, got {_show(text)}"
            )
    node_name = _string("nodeName", raw.get("nodeName") or environ.get("NODE_NAME", ""))
    url = raw.get("kubeletSummaryUrl")
    token_file = _string("kubeletTokenFile", raw.get("kubeletTokenFile", SERVICE_ACCOUNT_TOKEN))
    ca_file = raw.get("kubeletCAFile")
    if ca_file is not None:
        ca_file = _string("kubeletCAFile", ca_file)
        if not os.path.isfile(ca_file):
            raise ConfigError(_label("kubeletCAFile"), f"{ca_file}: no such file")
    if url is not None:
        _check_kubelet_url(_string("kubeletSummaryUrl", url), token_file=token_file)
        url = url_for_any_family(url)
    kubeconfig = raw.get("kubeconfig")
    node_cgroup = _string("nodeCgroup", raw.get("nodeCgroup") or "").strip("/")
    if ".." in node_cgroup.split("/"):
        raise ConfigError(
            _label("nodeCgroup"), f"must stay below the cgroup root, got {_show(node_cgroup)}"
        )
    return AgentConfig(
        eviction=settings,
        thresholds=thresholds,
        housekeeping_interval=interval,
        node_name=node_name,
        kubeconfig=_string("kubeconfig", kubeconfig) if kubeconfig else None,
        eviction_mode=mode,
        dry_run=_bool("dryRun", raw.get("dryRun", False)),
        node_conditions=_bool("nodeConditions", raw.get("nodeConditions", False)),
        node_status_report_frequency=_report_frequency(raw.get("nodeStatusReportFrequency")),
        node_taints=_bool("nodeTaints", raw.get("nodeTaints", False)),
        kernel_memcg_notification=_bool(
            "kernelMemcgNotification", raw.get("kernelMemcgNotification", True)
        ),
        listen=listen,
        proc_root=_string("procRoot", raw.get("procRoot", "/proc")),
        cgroup_root=_string("cgroupRoot", raw.get("cgroupRoot", "/sys/fs/cgroup")),
        kubelet_root=_string("kubeletRoot", raw.get("kubeletRoot", "/var/lib/kubelet")),
        runtime_root=_string("runtimeRoot", raw.get("runtimeRoot", "/var/lib/containerd")),
        memory_capacity=capacity,
        kubelet_summary_url=url,
        node_cgroup=node_cgroup,
        eviction_preference_namespaces=_namespaces(
            "evictionPreferenceNamespaces", raw.get("evictionPreferenceNamespaces")
        ),
        kubelet_ca_file=ca_file,
        kubelet_token_file=token_file,
        max_evictions_per_minute=_max_evictions(raw.get("maxEvictionsPerMinute")),
        timeline_dir=_timeline_dir(raw.get("timelineDir")),
        source=source,
    )

"""PodTopologySpread (PreFilter, Filter, PreScore, Score, NormalizeScore), as in kube 1.32:
the plugin and its args (``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``).

Its Filter is in ``filtering``, its Score in ``scoring``, what both use in ``common``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from kube.objects import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, TopologySpreadConstraint
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.podtopologyspread.common import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, NAME
from scheduler.plugins.podtopologyspread.filtering import Filtering
from scheduler.plugins.podtopologyspread.hints import QueueingHints
from scheduler.plugins.podtopologyspread.scoring import Scoring

__all__ = ["SYSTEM_DEFAULT_CONSTRAINTS", "PodTopologySpread"]

SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    {"maxSkew": 3, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)


def _validate_default_constraints(
    constraints: Sequence[TopologySpreadConstraint], defaulting_type: str
) -> None:
    """``ValidatePodTopologySpreadArgs``; raises ValueError naming the bad field."""
    if defaulting_type not in ("System", "List"):
        raise ValueError(
            f'defaultingType: Unsupported value: "{defaulting_type}": supported values:'
            ' "List", "System"'
        )
    if defaulting_type == "System" and constraints:
        raise ValueError(
            'defaultConstraints: Invalid value: when .defaultingType is "System",'
            " .defaultConstraints must be empty"
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        if c.label_selector is not None:
            raise ValueError(
                f"defaultConstraints[{i}].labelSelector: Forbidden: constraint must not define"
                " a selector, as they deduced for each pod"
            )
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise ValueError(
                f"defaultConstraints[{i}]: Duplicate value: {{{c.topology_key},"
                f" {c.when_unsatisfiable}}}"
            )
        seen.add(pair)


class PodTopologySpread(Filtering, Scoring, QueueingHints):
    """The plugin; one instance may serve the Filter and the Score extension points.

    Keyword arguments mirror ``PodTopologySpreadArgs`` and the 1.32 feature gates (all on):
    ``default_constraints`` as in KubeSchedulerConfiguration YAML, used with
    ``defaulting_type="List"``; ``"System"`` (the default) uses ``SYSTEM_DEFAULT_CONSTRAINTS``.
    """

    name = NAME
    scores_in_range = True  # 100 * (max + min - s) / max with min <= s <= max
    use_index = True  # False: PreFilter and PreScore walk every node (the reference form)

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
        *,
        default_constraints: Sequence[Mapping[str, Any] | TopologySpreadConstraint] = (),
        defaulting_type: Literal["System", "List"] = "System",
        enable_node_inclusion_policy: bool = True,
        enable_match_label_keys: bool = True,
        enable_min_domains: bool = True,
    ) -> None:
        parsed = [
            c if isinstance(c, TopologySpreadConstraint) else TopologySpreadConstraint.from_dict(c)
            for c in default_constraints
        ]
        _validate_default_constraints(parsed, defaulting_type)
        self.weight = weight
        self.system_defaulted = defaulting_type == "System"
        if self.system_defaulted:
            parsed = [TopologySpreadConstraint.from_dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS]
        self.default_constraints = tuple(parsed)
        self.enable_node_inclusion_policy = enable_node_inclusion_policy
        self.enable_match_label_keys = enable_match_label_keys
        self.enable_min_domains = enable_min_domains
        self._indexes = weakref.WeakKeyDictionary()
        # Defaults without matchLabelKeys do not depend on the pod: filter them once per action.
        self._defaults_by_action = None
        if not any(c.match_label_keys for c in self.default_constraints):
            self._defaults_by_action = {
                action: self.filter_topology_spread_constraints(
                    self.default_constraints, {}, action
                )
                for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
            }

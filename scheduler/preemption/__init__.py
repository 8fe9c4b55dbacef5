"""DefaultPreemption: which pods to preempt, and on which node, so that a pod can schedule.

``core`` holds kube-scheduler's functions one to one (``select_victims_on_node``,
``dry_run_preemption``, ``pick_one_node_for_preemption``, …); ``evaluator.preempt`` is the
PostFilter decision, exhaustive or sampled, with per-node caching that keeps it exact while
evaluating only what changed; ``explain`` renders why each node was or was not chosen.
"""

from scheduler.preemption.core import (
    NO_VICTIMS_MESSAGE,
    NOT_HELPFUL_MESSAGE,
    PICK_CRITERIA,
    UNSET_START_TIME,
    Candidate,
    Victims,
    calculate_num_candidates,
    dry_run_preemption,
    filter_pods_with_pdb_violation,
    get_earliest_pod_start_time,
    get_offset_and_num_candidates,
    more_important_pod,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    pod_eligible_to_preempt_others,
    select_victims_on_node,
)
from scheduler.preemption.evaluator import NODE_LOCAL_PLUGINS, PreemptionResult, preempt
from scheduler.preemption.explain import Explanation, NodeVerdict

__all__ = [
    "NODE_LOCAL_PLUGINS",
    "NOT_HELPFUL_MESSAGE",
    "NO_VICTIMS_MESSAGE",
    "PICK_CRITERIA",
    "UNSET_START_TIME",
    "Candidate",
    "Explanation",
    "NodeVerdict",
    "PreemptionResult",
    "Victims",
    "calculate_num_candidates",
    "dry_run_preemption",
    "filter_pods_with_pdb_violation",
    "get_earliest_pod_start_time",
    "get_offset_and_num_candidates",
    "more_important_pod",
    "nodes_where_preemption_might_help",
    "pick_one_node_for_preemption",
    "pod_eligible_to_preempt_others",
    "preempt",
    "select_victims_on_node",
]

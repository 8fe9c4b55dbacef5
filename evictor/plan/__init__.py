"""The drain planner: will ``evict drain`` finish, where does every pod go, which budget holds
it — the drain played forward on the project's scheduler, without any I/O."""

from evictor.plan.play import (
    ASSUMPTIONS,
    MAX_EXHAUSTIVE,
    BudgetPlan,
    ClusterView,
    DrainPlan,
    NodePlan,
    PlanEvent,
    PlanOptions,
    PodPlan,
    Replacement,
    Workload,
    best_plan,
    plan_drain,
)

__all__ = [
    "ASSUMPTIONS",
    "MAX_EXHAUSTIVE",
    "BudgetPlan",
    "ClusterView",
    "DrainPlan",
    "NodePlan",
    "PlanEvent",
    "PlanOptions",
    "PodPlan",
    "Replacement",
    "Workload",
    "best_plan",
    "plan_drain",
]

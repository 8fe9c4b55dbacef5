"""The drain planner: will ``evict drain`` finish, where does every pod go, which budget holds
it. The drain is played forward on the project's scheduler, without any I/O; ARCHITECTURE.md
draws its steps. Importing the package imports none of its modules:

``types`` (input and per-pod records), ``view`` (the API's lists, typed), ``play`` (one play
of the drain: ``plan_drain``) and its parts ``clock``, ``scheduling``, ``budgets``,
``controllers``, ``explain``; ``search`` (the order search: ``best_plan``), ``output``
(``DrainPlan``, as text and JSON). ``evictor.clusterread`` reads the cluster for it.
"""

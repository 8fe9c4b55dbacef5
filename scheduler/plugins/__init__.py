"""kube-scheduler's in-tree plugins, one module or folder per plugin, as in
``pkg/scheduler/framework/plugins``. Each holds the plugin's name, its args (the constructors'
keyword arguments), its extension points and its CycleState keys:

================================  =========================================================
``nodeunschedulable``             NodeUnschedulable: PreFilter, Filter
``nodename``                      NodeName: PreFilter, Filter
``tainttoleration``               TaintToleration: PreFilter, Filter; PreScore, Score
``nodeaffinity``                  NodeAffinity: PreFilter, Filter; PreScore, Score
``nodeports``                     NodePorts: PreFilter, Filter
``noderesources``                 NodeResourcesFit (``fit``: PreFilter, Filter;
                                  ``least_allocated``: Score) and
                                  NodeResourcesBalancedAllocation (``balanced_allocation``)
``podtopologyspread``             PodTopologySpread: ``plugin`` (args), ``filtering``,
                                  ``scoring``, ``common``
``interpodaffinity``              InterPodAffinity: ``filtering``, ``scoring``, ``index``
``imagelocality``                 ImageLocality: PreScore, Score
================================  =========================================================

``registry`` names them and builds the default profile that ``defaults`` lists; ``helper``
holds what several of them share. The interfaces they implement, and the runs of a profile's
plugins, are ``scheduler.framework``'s.

This package's ``__init__`` imports nothing: importing a plugin imports only what it uses.
"""

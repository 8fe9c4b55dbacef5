"""PodTopologySpread (kube's ``plugins/podtopologyspread``): the plugin and its args in
``plugin``, its PreFilter and Filter in ``filtering``, its PreScore, Score and NormalizeScore
in ``scoring``, and what both use (the constraints, which nodes count, the counts) in
``common``.
"""

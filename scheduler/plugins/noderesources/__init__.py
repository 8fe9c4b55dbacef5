"""NodeResourcesFit and NodeResourcesBalancedAllocation (kube's ``plugins/noderesources``):
``fit`` is NodeResourcesFit's Filter, ``least_allocated`` its Score (the LeastAllocated
strategy), ``balanced_allocation`` the other plugin; ``resource_allocation`` is what the two
scores share.
"""

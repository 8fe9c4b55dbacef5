"""InterPodAffinity (kube's ``plugins/interpodaffinity``): required pod affinity and
anti-affinity in ``filtering``, the preferred terms' score in ``scoring``.
"""

"""InterPodAffinity (kube's ``plugins/interpodaffinity``): required pod affinity and
anti-affinity in ``filtering``, the preferred terms' score in ``scoring``, and ``index``: what
both count each cycle, kept per snapshot.
"""

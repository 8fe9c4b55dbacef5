"""kubectl's drain (``k8s.io/kubectl/pkg/drain``): ``filters`` (the pod filter chain, pure),
``order`` (``--order=priority``'s groups, pure) and ``helper`` (listing, evicting and waiting:
the I/O). Importing the package imports none of them.
"""

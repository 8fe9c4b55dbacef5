"""kubesim's registry layer: kube's generic ``registry.Store`` and the strategies of the kinds.

``generic.GenericStore`` creates, reads, updates, patches and deletes every kind with kube's
semantics over the core object store; each kind's defaulting and validation is its
``strategy.Strategy``, declared by the module of its group (``validation`` for core and apps,
``rbac``, ``events``, ``admissionregistration``) and gathered in ``validation``; ``scale``
is the Scale view of workloads; ``admission`` the shapes the store calls admission with. It
imports only ``kubesim.core`` (and the basics); plugins, endpoints and actors sit above it.
"""

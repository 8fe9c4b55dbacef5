"""The agent's writes to the API, one concern per module, each through ``evictor.api``: the pod
eviction (``evict``: DELETE or the Eviction API, by ``evictor.client.Evictor``), its Events
(``events``) and ``DisruptionTarget`` condition (``disruption``), and the node's pressure
conditions (``node_conditions``) and taints (``node_taints``).
"""

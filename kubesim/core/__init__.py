"""kubesim's bottom layer: what every layer above reads and none of them owns.

The object store with its watch (``store``: etcd and kube-apiserver's watch cache), the served
types (``scheme``), ``metav1.Status`` errors (``errors``), time fields as Go encodes them
(``timefields``), the three patch formats (``patch``), server-side tables (``tables``), the
event conversion between groups (``events``), object names (``names``), readings of stored
objects (``objects``), CEL (``cel``) and the user and attributes of the request being served
(``attributes``). Nothing here imports the rest of kubesim (the import contract in
pyproject.toml checks it).
"""

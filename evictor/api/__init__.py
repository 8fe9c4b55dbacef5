"""The project's one room for talking to the Kubernetes API, one concern per module in the
manner of kopf's ``_cogs/clients``: ``connect`` (the client, with credentials that refresh as
client-go's do), ``calls`` (every request but a watch, and bounded reads), ``watching`` (one
list-then-watch generator), ``health`` (how the API answers this process), ``impersonation``
(``--as``) and ``deferred`` (start-up savings that rely on dependencies' internals, checked).

The agent's pod informer, the PDB watch and the deletion wait all watch through ``watching``:
one policy for an expired resourceVersion and for a watch that stops delivering. Importing this
package imports nothing heavy: kubernetes-asyncio is loaded by the caller's ``ApiClient``.
"""

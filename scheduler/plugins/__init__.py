"""kube-scheduler's in-tree plugins, one module or folder per plugin (its args, Filter, Score and
CycleState keys together), as ``pkg/scheduler/framework/plugins`` has them.

``registry`` names them with the extension points each implements and builds the default
profile that ``defaults`` lists; ``helper`` holds what several share; the interfaces they
implement are ``scheduler.framework``'s. This ``__init__`` imports nothing, so importing a
plugin imports only what it uses.
"""

"""kube-scheduler's in-tree plugins, one module or folder per plugin, as in
``pkg/scheduler/framework/plugins``; ``helper`` holds what several of them share.

This package imports nothing itself: importing one plugin does not import the others.
"""

"""NodeResourcesFit's Filter args: ``ignoredResources`` and ``ignoredResourceGroups`` leave
extended resources (a domain outside ``kubernetes.io/``) unchecked, by name or by the group
before the ``/``; native resources are always checked (``fit.go``'s ``fitsRequest``)."""

from __future__ import annotations

import pytest

from kube.objects import Node
from scheduler.framework import CycleState
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.snapshot import Snapshot
from tests.support import objects as obj

NODE = Node.from_dict(
    {
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "5"}},
    }
)


@pytest.mark.parametrize(
    ("requests", "names", "groups", "reasons"),
    [
        ({"example.com/aaa": "1"}, (), (), ["Insufficient example.com/aaa"]),
        ({"example.com/aaa": "1"}, ("example.com/aaa",), (), []),
        ({"example.com/aaa": "1"}, (), ("example.com",), []),
        (
            {"example.com/aaa": "1", "other.io/b": "1"},
            (),
            ("example.com",),
            ["Insufficient other.io/b"],
        ),
        ({"cpu": "2"}, ("cpu",), ("cpu",), ["Insufficient cpu"]),
        ({"hugepages-2Mi": "2Mi"}, ("hugepages-2Mi",), (), ["Insufficient hugepages-2Mi"]),
        ({"kubernetes.io/x": "1"}, (), ("kubernetes.io",), ["Insufficient kubernetes.io/x"]),
    ],
)
def test_ignored_resources(
    requests: dict[str, str], names: tuple[str, ...], groups: tuple[str, ...], reasons: list[str]
) -> None:
    plugin = NodeResourcesFit(ignored_resources=names, ignored_resource_groups=groups)
    snapshot = Snapshot.from_objects([NODE])
    (ni,) = snapshot.node_info_list
    pod = obj.pod("p", requests=requests)
    status = plugin.filter(CycleState(), pod, ni)
    assert (list(status.reasons) if status is not None else []) == reasons
    _, rejected = plugin.filter_nodes(CycleState(), pod, [ni])
    assert (not rejected) is (not reasons)
    uniform = plugin.uniform_verdict(CycleState(), pod, snapshot)
    if uniform is not None:
        assert list(uniform.reasons) == reasons

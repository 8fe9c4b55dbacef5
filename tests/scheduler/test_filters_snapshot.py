"""Snapshot/NodeInfo aggregates the filter plugins rely on."""

from __future__ import annotations

from typing import Any

from scheduler.objects import Node, Pod
from scheduler.snapshot import NodeInfo, host_ports


def _pod(name: str, **spec: Any) -> Pod:
    return Pod.from_dict({"metadata": {"name": name}, "spec": spec})


def test_host_ports_include_sidecars_but_not_plain_init_containers() -> None:
    pod = _pod(
        "p",
        initContainers=[
            {"name": "init", "ports": [{"containerPort": 1, "hostPort": 9001}]},
            {
                "name": "sidecar",
                "restartPolicy": "Always",
                "ports": [{"containerPort": 2, "hostPort": 9002, "protocol": "UDP"}],
            },
        ],
        containers=[
            {
                "name": "app",
                "ports": [
                    {"containerPort": 80},
                    {"containerPort": 3, "hostPort": 9003, "hostIP": "10.0.0.1"},
                ],
            }
        ],
    )
    assert list(host_ports(pod)) == [("0.0.0.0", "UDP", 9002), ("10.0.0.1", "TCP", 9003)]
    ni = NodeInfo(Node("n"), [pod])
    assert ni.used_ports == {("0.0.0.0", "UDP", 9002): 1, ("10.0.0.1", "TCP", 9003): 1}
    ni.remove_pod(pod)
    assert ni.used_ports == {}

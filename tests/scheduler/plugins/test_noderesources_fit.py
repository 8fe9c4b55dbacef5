import pytest

from kube.objects import Node
from scheduler.framework import Code, Status
from scheduler.plugins.noderesources.fit import fits_request, is_scalar_resource_name
from scheduler.snapshot import NodeInfo
from tests.support.objects import mkpod


def node_info(pods: int = 110, **alloc: int) -> NodeInfo:
    return NodeInfo(Node("n", allocatable={"pods": pods, **alloc}))


def test_fits_when_there_is_room() -> None:
    ni = node_info(cpu=1000, memory=1000)
    ni.add_pod(mkpod("a", cpu=500))
    assert fits_request(mkpod("p", cpu=500, mem=1000), ni) is None


def test_reports_every_shortage_in_upstream_order() -> None:
    ni = node_info(pods=1, cpu=1000, memory=1000, ephemeral_storage=10)
    ni.add_pod(mkpod("a", cpu=800, mem=800))
    st = fits_request(mkpod("p", cpu=300, mem=300), ni)
    assert st == Status(
        Code.Unschedulable, ["Too many pods", "Insufficient cpu", "Insufficient memory"]
    )


def test_request_above_allocatable_is_unresolvable() -> None:
    st = fits_request(mkpod("p", cpu=2000), node_info(cpu=1000))
    assert st is not None and st.code is Code.UnschedulableAndUnresolvable
    assert st.reasons == ("Insufficient cpu",)


def test_zero_request_pods_need_only_a_slot() -> None:
    full = node_info(pods=0, cpu=0)
    assert fits_request(mkpod("p"), full) == Status(Code.Unschedulable, "Too many pods")
    assert fits_request(mkpod("p"), node_info(pods=1, cpu=0)) is None


def test_scalar_resources() -> None:
    ni = node_info(**{"cpu": 1000})
    ni.allocatable["example.com/gpu"] = 1
    assert fits_request(mkpod("p", requests={"example.com/gpu": 1}), ni) is None
    st = fits_request(mkpod("p", requests={"example.com/gpu": 2}), ni)
    assert st == Status(Code.UnschedulableAndUnresolvable, "Insufficient example.com/gpu")
    # Unknown native names are ignored, as Resource.Add ignores them.
    assert fits_request(mkpod("p", requests={"gpu": 5}), ni) is None


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("nvidia.com/gpu", True),
        ("hugepages-2Mi", True),
        ("kubernetes.io/batch-cpu", True),
        ("attachable-volumes-aws-ebs", True),
        ("requests.example.com/x", False),
        ("cpu", False),
        ("gpu", False),
    ],
)
def test_scalar_resource_names(name: str, scalar: bool) -> None:
    assert is_scalar_resource_name(name) is scalar

"""``--node-cgroup``: the agent reads a node that is itself a cgroup (kind/kwok node containers,
the kubesim demo node), with kubepods beneath it instead of at the hierarchy root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent.cli import cli
from tests.support.cgroupfs import (
    FakeCgroup,
    FakePod,
    _write_v1,
    build_cgroup_tree,
    build_proc_tree,
)

MIB = 1 << 20
NODE = "kubesim-4242-abc123"
UID = "0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b"
CID = "ab" * 32


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    cg = build_cgroup_tree(
        tmp_path,
        version="v1",
        driver="cgroupfs",
        root=FakeCgroup(usage=8000 * MIB),
        kubepods=FakeCgroup(usage=300 * MIB),
        pods=[
            FakePod(
                UID,
                "burstable",
                FakeCgroup(usage=300 * MIB, procs=[10]),
                containers={CID: FakeCgroup(usage=300 * MIB, procs=[10])},
            )
        ],
        parent=NODE,
    )
    # the node cgroup itself, holding kubepods
    _write_v1(cg / "memory" / NODE, FakeCgroup(usage=300 * MIB), pids_dir=cg / "pids" / NODE)
    return cg, build_proc_tree(tmp_path)


def _rank(tmp_path: Path, *extra: str) -> dict[str, object]:
    cg, proc = _tree(tmp_path)
    args = ["rank", "--cgroup-root", str(cg), "--proc-root", str(proc)]
    args += ["--memory-capacity", "1Gi", "--eviction-hard", "memory.available<100Mi"]
    args += ["--kubelet-root", str(tmp_path), "-o", "json", *extra]
    env = {"KUBECONFIG": "", "HOME": str(tmp_path), "NODE_NAME": ""}
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.output)
    return out


def test_node_cgroup_points_the_readers_at_the_nodes_kubepods(tmp_path: Path) -> None:
    report = _rank(tmp_path, "--node-cgroup", f"/{NODE}/")
    observations = report["observations"]
    assert isinstance(observations, dict)
    assert observations["memory.available"]["available"] == 1024 * MIB - 300 * MIB
    pods = report["pods"]
    assert isinstance(pods, list)
    assert [p["pod"]["uid"] for p in pods] == [UID]


def test_without_node_cgroup_the_root_is_the_node(tmp_path: Path) -> None:
    report = _rank(tmp_path)
    observations = report["observations"]
    assert isinstance(observations, dict)
    # the root's 8000Mi working set against the 1Gi capacity, and no kubepods at the root
    assert observations["memory.available"]["available"] == 0
    assert report["pods"] == []


@pytest.mark.parametrize("bad", ["../escape", "a/../../b"])
def test_node_cgroup_may_not_climb_out(tmp_path: Path, bad: str) -> None:
    result = CliRunner().invoke(cli, ["check-config", "--node-cgroup", bad])
    assert result.exit_code == 2
    assert "nodeCgroup" in result.output and "below the cgroup root" in result.output


def test_node_cgroup_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(f"nodeCgroup: {NODE}\n")
    result = CliRunner().invoke(cli, ["check-config", "--config", str(config), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nodeCgroup"] == NODE

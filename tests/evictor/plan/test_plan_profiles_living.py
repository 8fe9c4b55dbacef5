"""``evict drain --plan --scheduler-config`` against a living kubesim run with the same
KubeSchedulerConfiguration (``kubesim serve --scheduler-config``): the replacements of a
workload scheduled by a non-default profile land where the plan says, as in
``tests/evictor/plan/test_living.py``; without the file the plan says it cannot tell."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from scheduler.config import load_config
from tests.support.evict import Evict
from tests.support.living import living, settle
from tests.support.planliving import (
    TIME_SCALE,
    Placements,
    cpu_node,
    member,
    plan_pods,
    predicted,
    settled_quiet,
    workload,
)

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
  - schedulerName: bin-packing
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - {name: cpu, weight: 1}
"""


def packed(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objs`` with the web workload's pods (template and members) on the bin-packing
    profile."""
    for obj in objs:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ReplicaSet" and name == "web":
            obj["spec"]["template"]["spec"]["schedulerName"] = "bin-packing"
        if obj["kind"] == "Pod" and name.startswith("web-"):
            obj["spec"]["schedulerName"] = "bin-packing"
    return objs


async def test_the_plan_follows_the_profile_kubesim_runs(tmp_path: Path) -> None:
    # node-2 is busy, node-3 idle: the default profile would send web's first replacement to
    # node-3; the bin-packing profile puts it where cpu is fullest, node-2. The second goes
    # to node-3 all the same: balanced allocation and the system spreading outweigh packing.
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG)
    objs = [cpu_node("node-1", "4"), cpu_node("node-2", "8"), cpu_node("node-3", "8")]
    objs += workload("ReplicaSet", "web", 2, "1")
    objs += workload("ReplicaSet", "filler", 1, "5")
    objs += [member("ReplicaSet", "web", f"web-{i}", "node-1", "1") for i in (0, 1)]
    objs += [member("ReplicaSet", "filler", "filler-0", "node-2", "5")]
    objs = packed(objs)
    async with living(objs, time_scale=TIME_SCALE, scheduler_config=load_config(path)) as sim:
        await settle(sim)
        evict = Evict(sim)
        code, out, err = await evict(
            "drain", "node-1", "--plan", "-o", "json", "--scheduler-config", str(path)
        )
        assert code == 0, err
        plan = json.loads(out)
        assert predicted(plan) == {"ReplicaSet web": ["node-2", "node-3"]}
        # without the file, the profile is unknown to the plan: another scheduler's pods
        code, out, _ = await evict("drain", "node-1", "--plan", "-o", "json")
        blind = plan_pods(json.loads(out))
        assert 'schedulerName "bin-packing"' in " ".join(blind["web-0"]["unmodelled"])
        watcher = Placements(sim, {p["metadata"]["uid"] for p in sim.list_objects("Pod")})
        task = asyncio.create_task(watcher.run())
        await asyncio.sleep(0)
        drained, _, derr = await evict("drain", "node-1", "--timeout=30s")
        await settled_quiet(sim)
        task.cancel()
        assert drained == 0, derr
        assert watcher.by_owner() == predicted(plan)


async def test_a_bad_file_exits_2_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG.replace("type: MostAllocated", "type: Most"))
    async with living([cpu_node("node-1", "4")], time_scale=TIME_SCALE) as sim:
        code, _, err = await Evict(sim)(
            "drain", "node-1", "--plan", "--scheduler-config", str(path)
        )
        assert code == 2
        assert "profiles[1].pluginConfig[0].args.scoringStrategy.type" in err
        assert 'Unsupported value: "Most"' in err
        assert "Traceback" not in err
        code, _, err = await Evict(sim)("drain", "node-1", "--scheduler-config", str(path))
        assert code == 2

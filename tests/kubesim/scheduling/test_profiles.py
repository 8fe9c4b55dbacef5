"""kubesim's scheduler loop run with a KubeSchedulerConfiguration (``kubesim serve
--scheduler-config``): every profile schedules its pods, events come from the pod's profile,
a pod of no profile stays Pending untouched, and the queue takes the file's backoffs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import kubesim
from kubesim.cli import main
from scheduler.config import decode_config
from tests.support.manifests import pending_pod
from tests.support.schedloop import (
    condition,
    create_pod,
    events_for,
    loop_of,
    node_yaml,
    stored_pod,
)
from tests.support.wait import until

CONFIG = decode_config(
    textwrap.dedent(
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 20
        profiles:
          - schedulerName: default-scheduler
          - schedulerName: foo-scheduler
            pluginConfig:
              - name: NodeAffinity
                args:
                  addedAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                      nodeSelectorTerms:
                      - matchExpressions:
                        - key: disk
                          operator: In
                          values: [hdd]
          - schedulerName: bin-packing
            pluginConfig:
              - name: NodeResourcesFit
                args:
                  scoringStrategy:
                    type: MostAllocated
        """
    )
)


async def test_every_profile_schedules_its_pods() -> None:
    state = [
        node_yaml("ssd-a", cpu="4"),
        node_yaml("ssd-b", cpu="4"),
        node_yaml("hdd-a", cpu="4", disk="hdd"),
    ]
    async with kubesim.serve(state=state, time_scale=0.01, scheduler_config=CONFIG) as sim:
        loop = loop_of(sim)
        assert (loop.pod_initial_backoff, loop.pod_max_backoff) == (2.0, 20.0)
        create_pod(sim, pending_pod("busy", cpu="3", node_name="ssd-b"))
        create_pod(sim, pending_pod("foo", schedulerName="foo-scheduler"))
        create_pod(sim, pending_pod("packed", cpu="500m", schedulerName="bin-packing"))
        create_pod(sim, pending_pod("spread", cpu="500m"))
        create_pod(sim, pending_pod("stranger", schedulerName="my-scheduler"))
        for name in ("foo", "packed", "spread"):
            await until(lambda name=name: stored_pod(sim, name)["spec"].get("nodeName"))
        await loop.wait_idle()
        assert stored_pod(sim, "foo")["spec"]["nodeName"] == "hdd-a"
        assert stored_pod(sim, "packed")["spec"]["nodeName"] == "ssd-b"  # the fullest that fits
        assert stored_pod(sim, "spread")["spec"]["nodeName"] != "ssd-b"
        (scheduled,) = events_for(sim, "foo", "Scheduled")
        assert scheduled["reportingController"] == "foo-scheduler"
        (default,) = events_for(sim, "spread", "Scheduled")
        assert default["reportingController"] == "default-scheduler"
        stranger = stored_pod(sim, "stranger")
        assert not stranger["spec"].get("nodeName")
        assert condition(stranger, "PodScheduled") is None
        assert not [
            e
            for e in sim.list_objects("events.events.k8s.io", "default")
            if e["regarding"]["name"] == "stranger"
        ]


async def test_a_profile_pod_without_a_matching_node_gets_the_profiles_reason() -> None:
    async with kubesim.serve(
        state=[node_yaml("ssd-a")], time_scale=0.01, scheduler_config=CONFIG
    ) as sim:
        create_pod(sim, pending_pod("foo", schedulerName="foo-scheduler"))
        await until(lambda: condition(stored_pod(sim, "foo"), "PodScheduled"))
        await loop_of(sim).wait_idle()
        cond = condition(stored_pod(sim, "foo"), "PodScheduled")
        assert cond is not None and cond["reason"] == "Unschedulable"
        assert cond["message"] == (
            "0/1 nodes are available: 1 node(s) didn't match scheduler-enforced node affinity."
            " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
        (failed,) = events_for(sim, "foo", "FailedScheduling")
        assert failed["reportingController"] == "foo-scheduler"


def test_serve_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "sched.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n"
        "      - {name: NodeResourcesFit, wieght: 3}\n"
    )
    assert main(["serve", "--scheduler-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert 'unknown field "profiles[0].plugins.score.enabled[0].wieght"' in err
    assert "--scheduler-config" in err

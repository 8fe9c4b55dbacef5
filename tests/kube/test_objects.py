import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.objects import (
    Container,
    InvalidObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    Taint,
    Toleration,
    load_manifests,
    load_objects,
)
from kube.times import parse_time


def pod(spec: dict[str, Any], **meta: Any) -> Pod:
    return Pod.from_dict({"metadata": {"name": "p", **meta}, "spec": spec})


def c(name: str, cpu: str | None = None, mem: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    return {"name": name, "resources": {"requests": requests}, **extra}


def test_requests_sum_app_containers() -> None:
    p = pod({"containers": [c("a", "100m", "1Gi"), c("b", "250m", "512Mi")]})
    assert p.requests == {"cpu": 350, "memory": 1024**3 + 512 * 1024**2}


def test_ordinary_init_container_peak_wins_over_the_sum() -> None:
    p = pod({"containers": [c("a", "500m")], "initContainers": [c("i", "2")]})
    assert p.requests == {"cpu": 2000}


def test_sidecars_add_to_the_sum_and_to_later_init_containers() -> None:
    # sidecar 100m runs with app 900m (=1000m); init "late" runs beside the sidecar (1600m).
    p = pod(
        {
            "containers": [c("app", "900m")],
            "initContainers": [
                c("early", "1"),
                c("sidecar", "100m", restartPolicy="Always"),
                c("late", "1500m"),
            ],
        }
    )
    assert p.requests == {"cpu": 1600}


def test_overhead_and_pod_level_requests() -> None:
    p = pod(
        {
            "containers": [c("a", "100m", "100Mi")],
            "overhead": {"cpu": "10m"},
            "resources": {"requests": {"cpu": "1"}},
        }
    )
    assert p.requests == {"cpu": 1010, "memory": 100 * 1024**2}


def test_non_zero_requests_default_missing_cpu_and_memory_per_container() -> None:
    p = pod({"containers": [c("a", "300m"), c("b", mem="1Gi")]})
    assert p.requests == {"cpu": 300, "memory": 1024**3}
    assert p.non_zero_requests == {"cpu": 400, "memory": 1024**3 + 200 * 1024**2}


def test_priority_defaults_to_zero_and_keeps_what_was_given() -> None:
    assert pod({}).priority == 0
    assert pod({}).spec_priority is None
    p = pod({"priority": -5})
    assert (p.priority, p.spec_priority) == (-5, -5)
    assert p.with_changes(spec_priority=7).priority == 7


def test_pod_fields() -> None:
    p = Pod.from_dict(
        {
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "uid": "u1",
                "labels": {"app": "web"},
                "deletionTimestamp": "2024-01-01T00:00:10Z",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "name": "web",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": "n1",
                "priorityClassName": "high",
                "preemptionPolicy": "Never",
                "schedulingGates": [{"name": "a"}, {"name": "b"}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                "volumes": [{"name": "scratch", "emptyDir": {}}],
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            },
            "status": {
                "phase": "Running",
                "startTime": "2024-01-01T00:00:00Z",
                "nominatedNodeName": "n2",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    assert p.key == "shop/web-0"
    assert p.start_time == parse_time("2024-01-01T00:00:00Z")
    assert p.is_terminating
    assert p.scheduling_gates == ("a", "b")
    assert p.controller_ref() is not None and p.controller_ref().kind == "StatefulSet"  # type: ignore[union-attr]
    assert p.volumes[0].source == "emptyDir"
    assert p.containers[0].ports[0].host_port == 8080
    assert p.condition("Ready") is not None
    assert p.preemption_policy == "Never"


@pytest.mark.parametrize(
    ("manifest", "field", "detail"),
    [
        ({"metadata": {}}, "metadata.name", "Required value"),
        ({"metadata": {"name": "x"}, "spec": {"priority": "high"}}, "spec.priority", "integer"),
        (
            {"metadata": {"name": "x"}, "spec": {"priority": 2**31}},
            "spec.priority",
            "must be between",
        ),
        (
            {"metadata": {"name": "x"}, "spec": {"containers": [c("a", "-1")]}},
            "spec.containers[0].resources.requests.cpu",
            "greater than or equal to 0",
        ),
        (
            {"metadata": {"name": "x"}, "spec": {"containers": "nope"}},
            "spec.containers",
            "must be a list",
        ),
        (
            {"metadata": {"name": "x"}, "spec": {"tolerations": [{"operator": "Foo"}]}},
            "spec.tolerations[0].operator",
            'Unsupported value: "Foo"',
        ),
        (
            {
                "metadata": {"name": "x"},
                "spec": {
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {}}
                            ]
                        }
                    }
                },
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey",
            "can not be empty",
        ),
        (
            {"metadata": {"name": "x"}, "status": {"startTime": "yesterday"}},
            "status.startTime",
            "invalid time",
        ),
    ],
)
def test_invalid_pods_name_object_and_field(
    manifest: dict[str, Any], field: str, detail: str
) -> None:
    with pytest.raises(InvalidObject) as err:
        Pod.from_dict(manifest)
    assert err.value.kind == "Pod"
    assert err.value.field == field
    assert detail in err.value.detail
    assert str(err.value).startswith('Pod "x"' if field != "metadata.name" else "Pod: ")


def test_affinity_conversion_and_match_label_keys() -> None:
    p = Pod.from_dict(
        {
            "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "a", "rev": "7"}},
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["z1"]}
                                    ]
                                },
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["n9"]}
                                    ]
                                },
                            ]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 5,
                                "preference": {
                                    "matchExpressions": [{"key": "ssd", "operator": "Exists"}]
                                },
                            }
                        ],
                    },
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "a"}},
                                "topologyKey": "zone",
                                "matchLabelKeys": ["rev"],
                            }
                        ]
                    },
                }
            },
        }
    )
    assert p.affinity is not None and p.affinity.node_affinity is not None
    required = p.affinity.node_affinity.required
    assert required is not None
    assert required.matches(Node("n1", labels={"zone": "z1"}))
    assert required.matches(Node("n9"))
    assert not required.matches(Node("n2", labels={"zone": "z2"}))
    assert p.affinity.node_affinity.preferred[0].weight == 5
    assert p.affinity.pod_affinity is not None
    term = p.affinity.pod_affinity.required[0]
    assert term.namespaces == frozenset({"ns"})
    same_rev = Pod("y", namespace="ns", labels={"app": "a", "rev": "7"})
    other_rev = Pod("z", namespace="ns", labels={"app": "a", "rev": "8"})
    assert term.matches(same_rev, {})
    assert not term.matches(other_rev, {})
    assert not term.matches(Pod("w", namespace="other", labels={"app": "a", "rev": "7"}), {})


def test_empty_node_selector_term_matches_nothing() -> None:
    p = pod(
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}
                }
            }
        }
    )
    assert p.affinity is not None and p.affinity.node_affinity is not None
    assert p.affinity.node_affinity.required is not None
    assert not p.affinity.node_affinity.required.matches(Node("n1"))


def test_tolerations_follow_tolerates_taint() -> None:
    taint = Taint("dedicated", "gpu", "NoSchedule")
    assert Toleration("dedicated", "Equal", "gpu", "NoSchedule").tolerates(taint)
    assert Toleration("dedicated", "Exists").tolerates(taint)
    assert Toleration(operator="Exists").tolerates(taint)
    assert not Toleration("dedicated", "Equal", "cpu").tolerates(taint)
    assert not Toleration("dedicated", "Exists", effect="NoExecute").tolerates(taint)
    assert not Toleration("other", "Exists").tolerates(taint)
    assert str(taint) == "{dedicated: gpu}"


def test_node_conversion() -> None:
    n = Node.from_dict(
        {
            "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoExecute"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    assert n.allocatable == {"cpu": 4000, "memory": 8 * 1024**3, "pods": 110}
    assert n.unschedulable
    assert n.taints == (Taint("k", "", "NoExecute"),)
    with pytest.raises(InvalidObject, match=r"spec\.taints\[0\]\.effect"):
        Node.from_dict({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k"}]}})


def test_priority_class_defaults_preemption_policy_and_requires_value() -> None:
    pc = PriorityClass.from_dict({"metadata": {"name": "high"}, "value": 1000})
    assert pc.preemption_policy == "PreemptLowerPriority"
    assert not pc.global_default
    empty = PriorityClass.from_dict({"metadata": {"name": "x"}, "value": 1, "preemptionPolicy": ""})
    assert empty.preemption_policy == ""
    with pytest.raises(InvalidObject, match='PriorityClass "x": value: Required value'):
        PriorityClass.from_dict({"metadata": {"name": "x"}})


def test_pdb_conversion() -> None:
    pdb = PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": "web", "namespace": "shop", "generation": 3},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
            "status": {
                "disruptionsAllowed": 1,
                "observedGeneration": 3,
                "disruptedPods": {"web-0": "2024-01-01T00:00:00Z"},
            },
        }
    )
    assert pdb.key == "shop/web"
    assert pdb.min_available == "50%"
    assert pdb.selector is not None and pdb.selector.matches({"app": "web"})
    assert pdb.disrupted_pods == {"web-0": parse_time("2024-01-01T00:00:00Z")}
    with pytest.raises(InvalidObject, match="cannot be both set"):
        PodDisruptionBudget.from_dict(
            {"metadata": {"name": "x"}, "spec": {"minAvailable": 1, "maxUnavailable": 1}}
        )
    with pytest.raises(InvalidObject, match=r"spec\.maxUnavailable"):
        PodDisruptionBudget.from_dict({"metadata": {"name": "x"}, "spec": {"maxUnavailable": "x%"}})


def test_namespace_gets_the_metadata_name_label() -> None:
    ns = Namespace.from_dict({"metadata": {"name": "shop"}})
    assert ns.labels == {"kubernetes.io/metadata.name": "shop"}


def test_load_objects_multi_document_and_lists(tmp_path: Path) -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: a}}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: hi}, value: 5}
---
"""
    objs = load_objects(text)
    assert [type(o).__name__ for o in objs] == ["Node", "Pod", "PriorityClass"]
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert len(load_objects(path)) == 3
    assert len(load_objects(str(path))) == 3


def test_load_objects_rejects_unknown_kinds_unless_asked() -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    )
    with pytest.raises(InvalidObject, match="unsupported kind 'Deployment'"):
        load_objects(text)
    assert [o.name for o in load_objects(text, ignore_unknown=True)] == ["n"]
    assert len(load_manifests(text)) == 2


def test_load_objects_reports_bad_yaml() -> None:
    with pytest.raises(InvalidObject, match="invalid YAML"):
        load_objects("kind: [unclosed\n")
    with pytest.raises(InvalidObject, match="a manifest must be a mapping"):
        load_objects("- 1\n- 2\n")


resources = st.dictionaries(st.sampled_from(["cpu", "memory"]), st.integers(0, 10_000), max_size=2)


@given(
    st.lists(resources, max_size=4),
    st.lists(st.tuples(resources, st.booleans()), max_size=4),
)
def test_effective_request_bounds(
    apps: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]]
) -> None:
    p = Pod(
        "x",
        containers=tuple(Container(f"c{i}", r) for i, r in enumerate(apps)),
        init_containers=tuple(
            Container(f"i{i}", r, restart_policy="Always" if sidecar else None)
            for i, (r, sidecar) in enumerate(inits)
        ),
    )
    for res in ("cpu", "memory"):
        running = sum(r.get(res, 0) for r in apps) + sum(
            r.get(res, 0) for r, sidecar in inits if sidecar
        )
        # Never less than what runs for the pod's whole life, nor than any single init container.
        assert p.requests.get(res, 0) >= running
        for r, _ in inits:
            assert p.requests.get(res, 0) >= r.get(res, 0)
        if not inits:
            assert p.requests.get(res, 0) == running


def test_pod_volumes_keep_the_emptydir_medium_and_size_limit() -> None:
    pod = Pod.from_dict(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                    {"name": "plain", "emptyDir": {}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
                ],
            },
        }
    )
    assert [(v.name, v.source, v.medium, v.size_limit) for v in pod.volumes] == [
        ("scratch", "emptyDir", "", 2**30),
        ("ram", "emptyDir", "Memory", 64 * 2**20),
        ("plain", "emptyDir", "", None),
        ("data", "persistentVolumeClaim", "", None),
    ]
    with pytest.raises(InvalidObject, match=r"spec\.volumes\[0\]\.emptyDir\.sizeLimit"):
        Pod.from_dict(
            {
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c"}],
                    "volumes": [{"name": "s", "emptyDir": {"sizeLimit": "lots"}}],
                },
            }
        )


_CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["a", "b"]),
        "namespace": st.sampled_from(["default", "other"]),
        "node_name": st.sampled_from(["", "node-a"]),
        "resource_version": st.sampled_from(["", "7"]),
        "spec_priority": st.one_of(st.none(), st.integers(-10, 10)),
        "containers": st.lists(
            st.builds(
                Container,
                name=st.just("c"),
                requests=st.dictionaries(
                    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 4000)
                ),
            ),
            max_size=3,
        ).map(tuple),
        "overhead": st.dictionaries(st.sampled_from(["cpu", "memory"]), st.integers(0, 100)),
        "pod_requests": st.dictionaries(st.sampled_from(["cpu", "memory"]), st.integers(0, 900)),
        "phase": st.sampled_from(["", "Running"]),
    },
)


@given(changes=_CHANGES)
def test_with_changes_is_dataclasses_replace(changes: dict[str, Any]) -> None:
    """The slot-by-slot copy recomputes the derived fields exactly when ``replace`` would
    give them other values (a mutation of the derived-from set fails this)."""
    base = pod(
        {"priority": 3, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    )
    fast, slow = base.with_changes(**changes), dataclasses.replace(base, **changes)
    for f in dataclasses.fields(Pod):
        assert getattr(fast, f.name) == getattr(slow, f.name), f.name


def test_with_changes_refuses_what_replace_refuses() -> None:
    base = pod({})
    with pytest.raises(TypeError):
        base.with_changes(no_such_field=1)
    with pytest.raises(ValueError, match="init=False"):
        base.with_changes(priority=4)

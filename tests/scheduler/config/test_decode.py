"""A KubeSchedulerConfiguration read as kube-scheduler reads ``--config``: strict decoding
names the unknown field, Go's type errors, keys given twice, and a bad file exits 2 from the
CLI naming the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from scheduler.cli import cli
from scheduler.config import ConfigError, decode_config, load_config

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

DOCS_EXAMPLE = HEAD + textwrap.dedent(
    """\
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
                    - key: scheduler-profile
                      operator: In
                      values:
                      - foo
    """
)


def test_the_docs_example_has_two_profiles() -> None:
    config = decode_config(DOCS_EXAMPLE)
    assert config.scheduler_names == ("default-scheduler", "foo-scheduler")
    foo = config.profiles["foo-scheduler"]
    affinity = next(p for p in foo.framework.filter_plugins if p.name == "NodeAffinity")
    assert affinity.added_node_selector is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabeld: []\n",
            "profiles[0].plugins.score.enabeld",
            'strict decoding error: unknown field "profiles[0].plugins.score.enabeld"',
        ),
        (
            "percentageOfNodesToScore: high\n",
            "percentageOfNodesToScore",
            "json: cannot unmarshal string into Go struct field KubeSchedulerConfiguration."
            "percentageOfNodesToScore of type int",
        ),
        (
            "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourcesFit\n"
            "    args:\n      scoringStrategy:\n        typ: MostAllocated\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.typ",
            "decoding profiles[0].pluginConfig[0].args: strict decoding error: unknown field"
            ' "scoringStrategy.typ"',
        ),
        (
            "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourcesFit\n"
            "    args:\n      kind: InterPodAffinityArgs\n",
            "profiles[0].pluginConfig[0].args.kind",
            "has to match plugin args",
        ),
        (
            "podMaxBackoffSeconds: 1\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds",
            'strict decoding error: duplicate field "podMaxBackoffSeconds"',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            "profiles[1].schedulerName",
            'profiles[1].schedulerName: Duplicate value: "profiles[0].schedulerName"',
        ),
        (
            "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n"
            "      - name: MyFilter\n",
            "profiles[0].plugins",
            "initializing profiles: creating profile for scheduler name a:"
            ' FilterPlugin "MyFilter" does not exist',
        ),
    ],
)
def test_a_bad_file_names_the_field(body: str, field: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        decode_config(HEAD + body, source="sched.yaml")
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith("sched.yaml: ")


def test_kind_and_version_are_checked() -> None:
    with pytest.raises(ConfigError, match="KubeSchedulerConfiguration"):
        decode_config(
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
        )
    with pytest.raises(ConfigError, match="one KubeSchedulerConfiguration expected"):
        decode_config(HEAD + "---\n" + HEAD)


def test_load_config_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(DOCS_EXAMPLE)
    assert load_config(path).scheduler_names == ("default-scheduler", "foo-scheduler")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "missing.yaml")
    assert str(tmp_path / "missing.yaml") in str(caught.value)


def test_simulate_exits_2_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "sched.yaml"
    config.write_text(HEAD + "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: 101\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    result = CliRunner().invoke(cli, ["simulate", str(cluster), "--config", str(config)])
    assert result.exit_code == 2
    assert (
        "profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
        in result.output
    )
    assert "Traceback" not in result.output

"""A profile's plugins as ``NewFramework`` builds them: MultiPoint's expansion, ``disabled``
(``*`` too), Score weights, and kube's errors for plugins it would refuse
(``runtime/framework_test.go``'s expansion cases, as data)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import default_configuration
from scheduler.config.defaults import set_defaults
from scheduler.config.profiles import ProfileError, build_profile, expand_plugins
from scheduler.plugins.registry import default_filter_plugins, default_score_plugins


def profile(plugins: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    doc = set_defaults({"profiles": [{"schedulerName": "p", "plugins": plugins, **extra}]})
    built: dict[str, Any] = doc["profiles"][0]
    return built


def test_the_default_profile_is_the_library_default() -> None:
    built = default_configuration().profiles["default-scheduler"]
    assert [p.name for p in built.framework.filter_plugins] == [
        p.name for p in default_filter_plugins()
    ]
    assert [(p.name, p.weight) for p in built.score_plugins] == [
        (p.name, p.weight) for p in default_score_plugins()
    ]
    assert built.preemption
    assert built.plugins["queueSort"] == ("PrioritySort",)
    assert built.plugins["bind"] == ("DefaultBinder",)


def test_disabling_every_scorer() -> None:
    built = build_profile(profile({"score": {"disabled": [{"name": "*"}]}}))
    assert built.score_plugins == ()
    assert built.plugins["preScore"]  # PreScore is a point of its own
    assert len(built.framework.filter_plugins) == 8


def test_score_weight_overrides_multi_point() -> None:
    built = build_profile(
        profile(
            {
                "multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 7}]},
                "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
            }
        )
    )
    weights = {p.name: p.weight for p in built.score_plugins}
    assert weights["NodeResourcesFit"] == 5
    assert weights["ImageLocality"] == 7
    # an override at Score comes first, in that list's order
    assert built.plugins["score"][0] == "NodeResourcesFit"


def test_a_plugin_disabled_at_one_point_keeps_the_others() -> None:
    built = build_profile(profile({"filter": {"disabled": [{"name": "TaintToleration"}]}}))
    assert "TaintToleration" not in [p.name for p in built.framework.filter_plugins]
    assert "TaintToleration" in [p.name for p in built.score_plugins]


def test_no_default_preemption_means_no_post_filter() -> None:
    built = build_profile(profile({"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}))
    assert not built.preemption


EXPANSION_ERRORS = [
    ({"filter": {"enabled": [{"name": "Nope"}]}}, 'FilterPlugin "Nope" does not exist'),
    ({"multiPoint": {"enabled": [{"name": "Nope"}]}}, 'PreFilterPlugin "Nope" does not exist'),
    (
        {"filter": {"enabled": [{"name": "ImageLocality"}]}},
        'plugin "ImageLocality" does not extend FilterPlugin plugin',
    ),
    (
        {"score": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}},
        'plugin "ImageLocality" already registered as "ScorePlugin"',
    ),
    (
        {"multiPoint": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}, "filter": {}},
        'plugin "NodeName" already registered as "FilterPlugin"',
    ),
]


@pytest.mark.parametrize(("plugins", "message"), EXPANSION_ERRORS)
def test_expansion_errors_are_kubes(plugins: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expand_plugins(plugins)


def test_queue_sort_and_bind_are_required() -> None:
    with pytest.raises(
        ProfileError,
        match='only one queue sort plugin required for profile with scheduler name "p", but got 0',
    ):
        build_profile(profile({"multiPoint": {"disabled": [{"name": "*"}]}}))
    with pytest.raises(
        ProfileError, match='at least one bind plugin is needed for profile with scheduler name "p"'
    ):
        build_profile(profile({"bind": {"disabled": [{"name": "*"}]}}))


def test_expansion_order_override_then_multi_point_then_own() -> None:
    """``expandMultiPointPlugins``: plugins enabled at the point that MultiPoint also names
    come first (the point's order), then MultiPoint's others, then the point's others."""
    points = expand_plugins(
        {
            "multiPoint": {
                "enabled": [
                    {"name": "NodeName"},
                    {"name": "TaintToleration"},
                    {"name": "NodePorts"},
                ]
            },
            "filter": {"enabled": [{"name": "NodeUnschedulable"}, {"name": "NodePorts"}]},
        }
    )
    assert points["filter"] == ("NodePorts", "NodeName", "TaintToleration", "NodeUnschedulable")

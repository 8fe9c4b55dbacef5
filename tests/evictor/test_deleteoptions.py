"""The one DeleteOptions builder: what an eviction and a DELETE carry, from the same options."""

from __future__ import annotations

from evictor.deleteoptions import PodDeleteOptions


def test_defaults_leave_everything_to_the_pod_and_the_server() -> None:
    opts = PodDeleteOptions()
    assert opts.body() == {}
    assert opts.query() == []


def test_uid_grace_and_dry_run_in_body_and_query() -> None:
    opts = PodDeleteOptions(uid="u-1", grace_period_seconds=0, dry_run=True)
    assert opts.body() == {
        "preconditions": {"uid": "u-1"},
        "gracePeriodSeconds": 0,  # 0 is "delete immediately", not "unset"
        "dryRun": ["All"],
    }
    assert opts.query() == [("dryRun", "All"), ("gracePeriodSeconds", 0)]


def test_a_negative_grace_period_means_the_pods_own() -> None:
    # kubectl's --grace-period=-1 default
    assert "gracePeriodSeconds" not in PodDeleteOptions(grace_period_seconds=-1).body()
    assert PodDeleteOptions(grace_period_seconds=-1).query() == []


def test_an_eviction_carries_the_same_options_and_names_the_pod() -> None:
    opts = PodDeleteOptions(uid="u-1", grace_period_seconds=3)
    assert opts.eviction("policy/v1", "default", "web-0") == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "default"},
        "deleteOptions": {"preconditions": {"uid": "u-1"}, "gracePeriodSeconds": 3},
    }


def test_the_package_exports_it() -> None:
    import evictor

    assert evictor.PodDeleteOptions is PodDeleteOptions

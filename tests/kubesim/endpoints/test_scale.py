"""10 000 pods in state: lists are complete and ordered (timing lives in bench/kubesim_list.py)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

import kubesim
from tests.support.bench import load_bench


async def test_ten_thousand_pods_list_fully_and_in_pages() -> None:
    bench = load_bench("kubesim_list")
    async with kubesim.serve(state=bench.make_state(10000)) as sim, sim.api_client() as api:
        v1 = client.CoreV1Api(api)
        resp = await v1.list_pod_for_all_namespaces(_preload_content=False)
        body = await resp.json()
        names = [p["metadata"]["name"] for p in body["items"]]
        assert len(names) == 10000
        assert names == sorted(names)
        assert len({p["metadata"]["uid"] for p in body["items"]}) == 10000
        token = None
        paged: list[str] = []
        while True:
            resp = await v1.list_pod_for_all_namespaces(
                limit=500, _continue=token, _preload_content=False
            )
            page = await resp.json()
            paged.extend(p["metadata"]["name"] for p in page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        assert paged == names
        resp = await v1.list_pod_for_all_namespaces(
            field_selector="spec.nodeName=node-7",
            label_selector="app=app-7",
            _preload_content=False,
        )
        selected = await resp.json()
        # pod i is on node i % 100 with app i % 50: i ≡ 7 (mod 100) — 100 pods.
        assert len(selected["items"]) == 100


async def test_benchmark_core_runs_on_a_small_size() -> None:
    bench = load_bench("kubesim_list")
    lines = await bench.run(50, 1)
    assert [line["bench"] for line in lines] == [
        "kubesim_list_full_50_pods",
        "kubesim_list_paged500_50_pods",
    ]
    for line in lines:
        assert line["unit"] == "pods/s"
        assert line["value"] > 0
        # the ratio is rounded from the unrounded rate (value keeps one decimal): equal to 3 places
        assert line["ratio"] == pytest.approx(line["value"] / line["anchor"], abs=6e-4)

"""The EndpointSlice controller's metrics (upstream's expectMetrics of reconciler_test.go and
trackSync of endpointslice_controller.go), read from the default registry as deltas."""
from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, generate_latest

from kubeplane.controller.endpointslice.endpointslice_controller import StaleInformerCache

from test_endpointslice import KEY, new_fixture, pod, service

P = "endpoint_slice_controller_"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(P + name, labels) or 0.0


def snapshot() -> dict[str, float]:
    return {"added_sum": value("endpoints_added_per_sync_sum"), "added_count": value("endpoints_added_per_sync_count"),
            "removed_sum": value("endpoints_removed_per_sync_sum"),
            "create": value("changes_total", operation="create"), "update": value("changes_total", operation="update"),
            "delete": value("changes_total", operation="delete"),
            "old_create": value("changes", operation="create"),
            "changed_sum": value("endpointslices_changed_per_sync_sum", topology="Disabled", traffic_distribution=""),
            "success": value("syncs", result="success"), "stale": value("syncs", result="stale"),
            "error": value("syncs", result="error")}


def delta(before: dict[str, float]) -> dict[str, float]:
    after = snapshot()
    return {k: after[k] - before[k] for k in before if after[k] != before[k]}


async def test_many_pods_metrics() -> None:
    """TestReconcileManyPods' expectMetrics: 250 endpoints desired and added, 3 slices desired,
    3 actual, 3 created, 3 slices changed in the sync."""
    f = await new_fixture()
    f.add(service(), *(pod(i) for i in range(250)))
    before = snapshot()
    await f.sync()
    assert value("endpoints_desired") == 250
    assert value("num_endpoint_slices") == 3
    assert value("desired_endpoint_slices") == 3
    d = delta(before)
    assert d["added_sum"] == 250 and d["added_count"] == 1 and "removed_sum" not in d
    assert d["create"] == d["old_create"] == 3 and "update" not in d and "delete" not in d
    assert d["changed_sum"] == 3


async def test_removed_and_updated_endpoints() -> None:
    """Two of three pods go: two endpoints removed, the slice updated, one desired."""
    f = await new_fixture()
    f.add(service(), pod(1), pod(2), pod(3))
    await f.sync()
    f.remove(pod(2))
    f.remove(pod(3))
    before = snapshot()
    await f.sync()
    d = delta(before)
    assert d["removed_sum"] == 2 and d["update"] == 1 and "create" not in d
    assert value("endpoints_desired") == 1 and value("num_endpoint_slices") == 1


async def test_packing_is_measured_against_perfect_allocation() -> None:
    """max 2 per slice, 5 endpoints: 3 slices desired; the deleted Service takes its share away."""
    f = await new_fixture(max_per_slice=2)
    f.add(service(), *(pod(i) for i in range(5)))
    await f.sync()
    assert (value("desired_endpoint_slices"), value("num_endpoint_slices"), value("endpoints_desired")) == (3, 3, 5)
    f.factory.core_v1().services().informer().get_indexer().delete(service())
    await f.sync()
    assert (value("desired_endpoint_slices"), value("num_endpoint_slices"), value("endpoints_desired")) == (0, 0, 0)


async def test_syncs_are_counted_by_result() -> None:
    """trackSync: success, stale (the slice cache lags our writes) and error."""
    f = await new_fixture()
    f.add(service(), pod(1))
    before = snapshot()
    f.esc.handle_err(None, KEY)
    f.esc.handle_err(StaleInformerCache("EndpointSlice informer cache is out of date"), KEY)
    f.esc.handle_err(RuntimeError("boom"), KEY)
    assert delta(before) == {"success": 1, "stale": 1, "error": 1}


def test_counters_keep_upstreams_names_in_the_exposition() -> None:
    """`syncs` and `changes` have no _total upstream; `changes_total` does."""
    text = generate_latest(REGISTRY).decode()
    assert "# TYPE endpoint_slice_controller_syncs counter\n" in text
    assert "# TYPE endpoint_slice_controller_changes counter\n" in text
    assert "# TYPE endpoint_slice_controller_changes_total counter\n" in text
    assert "# TYPE endpoint_slice_controller_endpoints_added_per_sync histogram\n" in text
    assert 'endpoint_slice_controller_endpoints_added_per_sync_bucket{le="32768.0"}' in text


@pytest.mark.parametrize("n,max_eps,want", [(0, 100, 0), (1, 100, 1), (100, 100, 1), (101, 100, 2), (250, 100, 3)])
def test_num_desired_slices(n: int, max_eps: int, want: int) -> None:
    from kubeplane.controller.endpointslice.metrics import num_desired_slices
    assert num_desired_slices(n, max_eps) == want

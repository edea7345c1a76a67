"""The mirroring controller's metrics (upstream's expectMetrics in reconciler_test.go), as
deltas of the default registry."""
from __future__ import annotations

from prometheus_client import REGISTRY

from test_mirroring import endpoints, new_fixture, subset, svc

P = "endpoint_slice_mirroring_controller_"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(P + name, labels) or 0.0


NAMES = ("endpoints_added_per_sync_sum", "endpoints_updated_per_sync_sum", "endpoints_removed_per_sync_sum",
         "addresses_skipped_per_sync_sum", "endpoints_sync_duration_count")


def snapshot() -> dict[str, float]:
    out = {n: value(n) for n in NAMES}
    out.update({op: value("changes", operation=op) for op in ("create", "update", "delete")})
    return out


def delta(before: dict[str, float]) -> dict[str, float]:
    after = snapshot()
    return {k: after[k] - before[k] for k in before if after[k] != before[k]}


async def test_create_update_and_delete_are_measured() -> None:
    f = await new_fixture(max_per_subset=2)
    f.add(svc(), endpoints([subset(["10.0.0.1", "1.2.3", "10.0.0.2", "10.0.0.3"])]))
    before = snapshot()
    await f.sync()
    # two mirrored, one invalid and one over the maximum skipped; one slice created
    assert delta(before) == {"endpoints_added_per_sync_sum": 2, "addresses_skipped_per_sync_sum": 2,
                             "endpoints_sync_duration_count": 1, "create": 1}
    assert (value("endpoints_desired"), value("num_endpoint_slices"), value("desired_endpoint_slices")) == (2, 1, 1)

    f.add(endpoints([subset(["10.0.0.1"], ["10.0.0.9"])], rv="2"))       # 10.0.0.2 goes, 10.0.0.9 comes
    before = snapshot()
    await f.sync()
    assert delta(before) == {"endpoints_added_per_sync_sum": 1, "endpoints_removed_per_sync_sum": 1,
                             "endpoints_sync_duration_count": 1, "update": 1}

    f.add(svc(selector={"app": "x"}))                      # not mirrored any more: the slice goes
    before = snapshot()
    await f.sync()
    assert delta(before) == {"endpoints_sync_duration_count": 1, "delete": 1}
    assert (value("endpoints_desired"), value("num_endpoint_slices"), value("desired_endpoint_slices")) == (0, 0, 0)


async def test_a_ready_endpoint_turning_unready_is_an_update() -> None:
    f = await new_fixture()
    f.add(svc(), endpoints([subset(["10.0.0.7", "10.0.0.1"])]))     # the first address has a hostname
    await f.sync()
    f.add(endpoints([subset(["10.0.0.7"], ["10.0.0.1"])], rv="2"))
    before = snapshot()
    await f.sync()
    assert delta(before) == {"endpoints_updated_per_sync_sum": 1, "endpoints_sync_duration_count": 1, "update": 1}

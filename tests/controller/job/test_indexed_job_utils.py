"""Upstream's indexed_job_utils_test.go and backoff_utils_test.go tables, as facts."""
from __future__ import annotations

import pytest

from kubeplane.controller.job.backoff_utils import BackoffStore, get_remaining_time_for_failures_count
from kubeplane.controller.job.indexed_job_utils import (
    Interval, OrderedIntervals, first_pending_indexes, parse_indexes_from_string, pod_generate_name_with_index,
)
from kubeplane.utils.clock import rfc3339

from job_testutil import new_job, new_pod


def iv(*pairs: tuple[int, int]) -> OrderedIntervals:
    return OrderedIntervals(Interval(a, b) for a, b in pairs)


@pytest.mark.parametrize("text,completions,want", [
    pytest.param("", 10, iv(), id="empty"),
    pytest.param("1,3-5,7", 10, iv((1, 1), (3, 5), (7, 7)), id="mixed"),
    pytest.param("0,1,2", 10, iv((0, 2)), id="adjacent-merged"),
    pytest.param("1-3,9-12", 10, iv((1, 3), (9, 9)), id="capped-by-completions"),
    pytest.param("1,x,3", 10, iv((1, 1), (3, 3)), id="corrupted-part-skipped"),
    pytest.param("5,12,14", 10, iv((5, 5)), id="beyond-completions-stops"),
    pytest.param("1," + "9" * 5000 + ",3", 10, iv((1, 1), (3, 3)), id="huge-number-skipped"),
])
def test_parse_indexes_from_string(text, completions, want) -> None:
    assert parse_indexes_from_string(text, completions) == want


@pytest.mark.parametrize("intervals,want", [
    pytest.param(iv(), "", id="empty"),
    pytest.param(iv((0, 0)), "0", id="one"),
    pytest.param(iv((0, 1)), "0,1", id="pair-as-list"),
    pytest.param(iv((0, 2), (5, 5), (7, 9)), "0-2,5,7-9", id="ranges"),
])
def test_ordered_intervals_string(intervals, want) -> None:
    assert str(intervals) == want


@pytest.mark.parametrize("base,new,want", [
    pytest.param(iv(), [], iv(), id="nothing"),
    pytest.param(iv(), [0, 1, 3], iv((0, 1), (3, 3)), id="from-empty"),
    pytest.param(iv((0, 2), (7, 9)), [3, 5, 6, 10], iv((0, 3), (5, 10)), id="merges-both-sides"),
    pytest.param(iv((2, 4)), [3], iv((2, 4)), id="already-there"),
])
def test_with_ordered_indexes(base, new, want) -> None:
    assert base.with_ordered_indexes(new) == want


@pytest.mark.parametrize("intervals,ix,want", [
    (iv((1, 3), (7, 7)), 0, False), (iv((1, 3), (7, 7)), 2, True), (iv((1, 3), (7, 7)), 5, False),
    (iv((1, 3), (7, 7)), 7, True), (iv(), 0, False),
])
def test_has(intervals, ix, want) -> None:
    assert intervals.has(ix) is want


@pytest.mark.parametrize("succeeded,active,failed,count,completions,want", [
    pytest.param("", [], None, 3, 10, [0, 1, 2], id="from-zero"),
    pytest.param("", [], None, 3, 2, [0, 1], id="capped-by-completions"),
    pytest.param("2,4,5,7-9", ["0", "3"], None, 6, 20, [1, 6, 10, 11, 12, 13], id="gaps"),
    pytest.param("0-1", ["3"], "2", 2, 6, [4, 5], id="failed-indexes-skipped"),
    pytest.param("", [], None, 0, 5, [], id="none-wanted"),
])
def test_first_pending_indexes(succeeded, active, failed, count, completions, want) -> None:
    job = new_job(1, completions, completion_mode="Indexed")
    pods = [new_pod(job, "Running", index=ix) for ix in active]
    failed_iv = parse_indexes_from_string(failed, completions) if failed is not None else None
    assert first_pending_indexes(parse_indexes_from_string(succeeded, completions), failed_iv, pods, None, count,
                                 completions) == want


def test_pod_generate_name_with_index_fits_a_generated_name() -> None:
    assert pod_generate_name_with_index("pi", 3) == "pi-3-"
    long = "a" * 63
    got = pod_generate_name_with_index(long, 12)
    assert got == "a" * 54 + "-12-" and len(got) == 58


@pytest.mark.parametrize("failures,elapsed,want", [
    pytest.param(0, 0, 0, id="no-failures"),
    pytest.param(1, 0, 10, id="one-failure-just-now"),
    pytest.param(1, 4, 6, id="one-failure-4s-ago"),
    pytest.param(2, 5, 15, id="two-failures"),
    pytest.param(3, 15, 25, id="three-failures"),
    pytest.param(3, 50, 0, id="back-off-passed"),
    pytest.param(10, 0, 600, id="capped-at-10-minutes"),
])
def test_remaining_time_for_failures_count(failures, elapsed, want) -> None:
    now = 1000.0
    assert get_remaining_time_for_failures_count(now, 10.0, 600.0, failures, now - elapsed) == want


def test_new_backoff_record_counts_failures_after_the_last_success() -> None:
    job = new_job(1, 1)
    t = 1_000.0
    store = BackoffStore()
    fail = [new_pod(job, "Failed", finished_at=rfc3339(t + s)) for s in (1, 2, 5)]
    ok = [new_pod(job, "Succeeded", finished_at=rfc3339(t + 3))]
    rec = store.new_backoff_record("k", ok, fail)
    assert (rec.failures_after_last_success, rec.last_failure_time) == (1, t + 5)
    store.update_backoff_record(rec)
    rec2 = store.new_backoff_record("k", [], [new_pod(job, "Failed", finished_at=rfc3339(t + 9))])
    assert (rec2.failures_after_last_success, rec2.last_failure_time) == (2, t + 9)
    rec3 = store.new_backoff_record("k", ok, [])
    assert (rec3.failures_after_last_success, rec3.last_failure_time) == (0, None)
    assert store.new_backoff_record("k", [], []) == rec


@pytest.mark.parametrize("value,want", [
    ("3", 3), ("0", 0), ("-1", -1), ("x", -1), ("٣", -1), ("2147483647", 2147483647), ("2147483648", -1),
    ("9" * 5000, -1),
])
def test_get_completion_index(value, want) -> None:
    from kubeplane.controller.job.indexed_job_utils import get_completion_index
    assert get_completion_index({"batch.kubernetes.io/job-completion-index": value}) == want

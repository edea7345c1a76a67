"""Pure helpers of the node lifecycle package: taints, tolerations, zone state, the rate-limited
tainting queue and the timed eviction workers.

Tables reproduce upstream's core/v1/toleration_test.go (TestTolerationToleratesTaint),
tainteviction/taint_eviction_test.go (TestGetMinTolerationTime), pkg/util/taints/taints_test.go.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api.types import ObjectName, core_v1
from kubeplane.controller.nodelifecycle import taints as tu
from kubeplane.controller.nodelifecycle.node_lifecycle_controller import (
    STATE_FULL_DISRUPTION, STATE_NORMAL, STATE_PARTIAL_DISRUPTION, NodeLifecycleController, get_zone_key,
)
from kubeplane.controller.nodelifecycle.rate_limited_queue import RateLimitedTimedQueue, TokenBucketRateLimiter
from kubeplane.controller.nodelifecycle.tainteviction import TimedWorkerQueue
from kubeplane.utils.clock import FakeClock


def tol(**kw: Any) -> core_v1.Toleration:
    return core_v1.Toleration(**kw)


def taint(key: str = "foo", value: str | None = "bar", effect: str = "NoExecute", **kw: Any) -> core_v1.Taint:
    return core_v1.Taint(key=key, value=value, effect=effect, **kw)


@pytest.mark.parametrize(("toleration", "expected"), [
    pytest.param(tol(key="foo", operator="Exists", effect="NoExecute"), True, id="exists-same-key-effect"),
    pytest.param(tol(key="foo", operator="Equal", value="bar", effect="NoExecute"), True, id="equal-same-value"),
    pytest.param(tol(key="foo", value="bar", effect="NoExecute"), True, id="empty-operator-is-equal"),
    pytest.param(tol(key="foo", operator="Equal", value="baz", effect="NoExecute"), False, id="equal-other-value"),
    pytest.param(tol(key="foo", operator="Exists", effect="NoSchedule"), False, id="other-effect"),
    pytest.param(tol(key="foo", operator="Exists"), True, id="empty-effect-matches-all"),
    pytest.param(tol(operator="Exists"), True, id="empty-key-exists-matches-all"),
    pytest.param(tol(key="other", operator="Exists"), False, id="other-key"),
    pytest.param(tol(key="foo", operator="Lt", value="bar"), False, id="unknown-operator"),
])
def test_tolerates_taint(toleration: core_v1.Toleration, expected: bool) -> None:
    """Upstream: TestTolerationToleratesTaint"""
    assert tu.tolerates_taint(toleration, taint()) is expected


@pytest.mark.parametrize(("seconds", "expected"), [
    pytest.param([], 0.0, id="no-tolerations"),
    pytest.param([1], 1.0, id="one"),
    pytest.param([1, 2], 1.0, id="min-of-two"),
    pytest.param([1, None], 1.0, id="forever-ignored"),
    pytest.param([None, 1], 1.0, id="forever-first"),
    pytest.param([None], -1.0, id="forever"),
    pytest.param([300, 0], 0.0, id="zero-means-now"),
    pytest.param([-5], 0.0, id="negative-means-now"),
])
def test_get_min_toleration_time(seconds: list[int | None], expected: float) -> None:
    """Upstream: TestGetMinTolerationTime"""
    assert tu.get_min_toleration_time([tol(toleration_seconds=s) for s in seconds]) == expected


def test_get_matching_tolerations_uses_first_match_per_taint() -> None:
    a, b = tol(key="foo", operator="Exists", toleration_seconds=10), tol(operator="Exists")
    assert tu.get_matching_tolerations([taint(), taint(key="x")], [a, b]) == (True, [a, b])
    assert tu.get_matching_tolerations([taint(key="x")], [a]) == (False, [])
    assert tu.get_matching_tolerations([], []) == (True, [])


def test_taint_set_diff_and_add_remove() -> None:
    """Upstream: TestTaintSetDiff, TestAddOrUpdateTaint, TestRemoveTaint (taints_test.go)"""
    old = [taint("a", effect="NoSchedule"), taint("b", effect="NoSchedule")]
    new = [taint("b", effect="NoSchedule", value="other"), taint("c", effect="NoSchedule")]
    to_add, to_remove = tu.taint_set_diff(new, old)
    assert [t.key for t in to_add] == ["c"] and [t.key for t in to_remove] == ["a"]   # value does not matter

    node = core_v1.Node(metadata=None, spec=core_v1.NodeSpec(taints=[taint("a")]))
    same, changed = tu.add_or_update_taint(node, taint("a"))
    assert not changed and same.spec.taints == [taint("a")]
    newer, changed = tu.add_or_update_taint(node, taint("a", time_added="2024-01-01T00:00:00Z"))
    assert changed and newer.spec.taints == [taint("a", time_added="2024-01-01T00:00:00Z")]
    more, changed = tu.add_or_update_taint(node, taint("b"))
    assert changed and [t.key for t in more.spec.taints] == ["a", "b"]
    assert node.spec.taints == [taint("a")]                               # the input is never changed
    gone, changed = tu.remove_taint(more, taint("a", value="ignored"))
    assert changed and [t.key for t in gone.spec.taints] == ["b"]
    assert tu.remove_taint(gone, taint("zzz"))[1] is False


@pytest.mark.parametrize(("statuses", "expected"), [
    pytest.param(["True", "True"], (0, STATE_NORMAL), id="healthy"),
    pytest.param(["Unknown"], (1, STATE_FULL_DISRUPTION), id="only-node-down"),
    pytest.param(["False", None, "Unknown"], (3, STATE_FULL_DISRUPTION), id="none-ready"),
    pytest.param(["True", "False", "Unknown"], (2, STATE_NORMAL), id="two-down-is-not-partial"),
    pytest.param(["True", "True", "False", "False", "Unknown"], (3, STATE_PARTIAL_DISRUPTION), id="3-of-5"),
    pytest.param(["True", "True", "True", "False", "False", "Unknown"], (3, STATE_NORMAL), id="3-of-6-below-55pc"),
])
def test_compute_zone_state(statuses: list[str | None], expected: tuple[int, str]) -> None:
    nlc = NodeLifecycleController.__new__(NodeLifecycleController)
    nlc.unhealthy_zone_threshold = 0.55
    conds = [None if s is None else core_v1.NodeCondition(type="Ready", status=s) for s in statuses]
    assert nlc.compute_zone_state(conds) == expected


def test_get_zone_key() -> None:
    def node(labels: dict[str, str]) -> core_v1.Node:
        from kubeplane.api.types import meta_v1
        return core_v1.Node(metadata=meta_v1.ObjectMeta(name="n", labels=labels))

    assert get_zone_key(node({})) == ""
    assert get_zone_key(node({"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"})) == "r:\x00:z"
    assert get_zone_key(node({"failure-domain.beta.kubernetes.io/zone": "old"})) == ":\x00:old"


def test_rate_limited_timed_queue() -> None:
    clock = FakeClock()
    q = RateLimitedTimedQueue(TokenBucketRateLimiter(0.1, 1, clock), clock)
    assert q.add("a", "uid-a") and not q.add("a", "uid-a")
    assert q.add("b", "uid-b")
    processed: list[str] = []

    async def done(v: Any) -> tuple[bool, float]:
        processed.append(v.value)
        return True, 0.0

    asyncio.run(q.try_(done))
    assert processed == ["a"]                       # one token
    assert not q.add("a", "uid-a")                  # processed but remembered
    clock.step(10)
    asyncio.run(q.try_(done))
    assert processed == ["a", "b"]
    assert q.remove("a") and q.add("a", "uid-a")    # forgotten: may be queued again
    q.swap_limiter(0.0)                             # full disruption: stop
    clock.step(100)
    asyncio.run(q.try_(done))
    assert processed == ["a", "b"]
    q.swap_limiter(0.1)                             # the stopped bucket was empty: so is the new one
    asyncio.run(q.try_(done))
    assert processed == ["a", "b"]
    clock.step(10)
    asyncio.run(q.try_(done))
    assert processed == ["a", "b", "a"]


async def test_timed_worker_queue() -> None:
    clock = FakeClock()
    fired: list[str] = []

    async def fn(name: ObjectName, fire_at: float) -> None:
        fired.append(str(name))

    q = TimedWorkerQueue(fn, clock)
    a, b = ObjectName("ns", "a"), ObjectName("ns", "b")
    q.add_work(a, clock.now(), clock.now() + 10)
    q.add_work(a, clock.now(), clock.now() + 1)     # already scheduled: ignored
    q.add_work(b, clock.now(), clock.now() + 10)
    await asyncio.sleep(0)
    assert q.cancel_work("ns/b") is True
    clock.step(9.5)
    await asyncio.sleep(0)
    assert fired == []
    clock.step(0.5)
    for _ in range(3):
        await asyncio.sleep(0)
    assert fired == ["ns/a"]
    assert "ns/a" in q.workers and q.workers["ns/a"] is None     # done, remembered
    assert q.cancel_work("ns/a") is False and "ns/a" not in q.workers
    await q.shutdown()

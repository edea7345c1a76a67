"""The event recorder's shortcuts behave as the plain code (and upstream) would.

- _LRU: a get() counts as a use, so callers that got a value skip upstream's re-Add;
- the spam filter and the aggregator keep a group alive by that get() alone;
- the keys are Go's separator-less concatenations, also for events without source/object;
- sprintf's plain %s/%d path renders exactly what the Go-format path renders;
- UniqueNanos, the token bucket, get_reference, and the correlator's copy-on-observe;
- the broadcaster's drain loop writes a backlog in order;
- the correlator's one-body path under upstream's key functions matches its three steps.
"""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.client.tools.record import (
    CorrelatorOptions,
    EventBroadcaster,
    EventCorrelateResult,
    EventCorrelator,
    EventSourceObjectSpamFilter,
    get_event_key,
    get_reference,
    get_spam_key,
    sprintf,
)
from kubeplane.client.tools.record.events_cache import (
    _LRU,
    UniqueNanos,
    _TokenBucket,
    event_aggregator_by_reason_func,
)
from kubeplane.client.tools.record.util import _sprintf_go
from kubeplane.utils.clock import FakeClock

START = 1_600_000_000.0


def ev(name: str = "web", reason: str = "BackOff", message: str = "back-off", *, field_path: str | None = None,
       component: str = "c", host: str | None = None) -> core_v1.Event:
    return core_v1.Event(
        metadata=meta_v1.ObjectMeta(name=f"{name}.1", namespace="default"),
        involved_object=core_v1.ObjectReference(kind="Pod", api_version="v1", namespace="default", name=name,
                                                uid=f"uid-{name}", field_path=field_path),
        source=core_v1.EventSource(component=component, host=host), type="Warning", reason=reason,
        message=message, count=1, first_timestamp="2020-09-13T12:26:40Z", last_timestamp="2020-09-13T12:26:40Z",
        reporting_component=component, reporting_instance=host)


# --- _LRU -----------------------------------------------------------------------------------

def test_lru_get_is_a_use_and_the_least_recent_is_evicted():
    lru: _LRU[str, int] = _LRU(2)
    lru.add("a", 1)
    lru.add("b", 2)
    assert lru.get("a") == 1                 # a is now the most recent
    lru.add("c", 3)                          # evicts b, not a
    assert lru.keys() == ["a", "c"]
    assert lru.get("b") is None


def test_lru_add_of_a_present_key_replaces_it_and_makes_it_most_recent():
    lru: _LRU[str, int] = _LRU(3)
    for i, k in enumerate("abc"):
        lru.add(k, i)
    lru.add("a", 10)
    assert lru.keys() == ["b", "c", "a"]
    assert lru.get("a") == 10
    assert len(lru) == 3


# --- the spam filter and the aggregator keep groups alive through get() ----------------------

def test_spam_filter_bucket_survives_eviction_of_others_when_used():
    clock = FakeClock(START)
    f = EventSourceObjectSpamFilter(2, 1, 1e-9, clock)      # two buckets of one token, no refill
    a, b, c = ev("a"), ev("b"), ev("c")
    assert [f.filter(a), f.filter(b)] == [False, False]
    assert f.filter(a) is True              # a's token is spent; a is now the most recent
    assert f.filter(c) is False             # evicts b (least recent), not a
    assert f.filter(a) is True              # a kept its empty bucket
    assert f.filter(b) is False             # b starts with a fresh bucket


def test_aggregate_group_survives_eviction_of_others_when_used():
    clock = FakeClock(START)
    c = EventCorrelator(clock, CorrelatorOptions(lru_cache_size=2, max_events=3))
    for i in range(2):
        assert not c.event_correlate(ev("a", message=f"m{i}")).event.message.startswith("(combined")
    c.event_correlate(ev("b", message="x"))             # a, b in the aggregator's cache
    c.event_correlate(ev("a", message="m0"))            # a is used again (no new message)
    c.event_correlate(ev("z", message="x"))             # evicts b
    got = c.event_correlate(ev("a", message="m2")).event   # a's third message: aggregate
    assert got.message == "(combined from similar events): m2"


def test_aggregate_group_starts_afresh_after_the_interval():
    clock = FakeClock(START)
    c = EventCorrelator(clock, CorrelatorOptions(max_events=2))
    c.event_correlate(ev(message="m0"))
    clock.step(601)
    assert c.event_correlate(ev(message="m1")).event.message == "m1"     # the group was forgotten
    clock.step(600)
    assert c.event_correlate(ev(message="m2")).event.message.startswith("(combined")   # not yet


# --- keys -----------------------------------------------------------------------------------

def test_keys_are_gos_concatenations():
    e = ev("web", field_path="spec.containers{c}", host="node-1")
    assert get_event_key(e) == "cnode-1Poddefaultwebspec.containers{c}uid-webv1WarningBackOffback-off"
    assert get_spam_key(e) == "cnode-1Poddefaultwebuid-webv1"
    assert event_aggregator_by_reason_func(e) == ("cnode-1Poddefaultwebuid-webv1WarningBackOffcnode-1", "back-off")


def test_keys_of_an_event_without_source_or_object():
    e = core_v1.Event(type="Normal", reason="R", message="m")
    assert get_event_key(e) == "NormalRm"
    assert get_spam_key(e) == ""
    assert event_aggregator_by_reason_func(e) == ("NormalR", "m")


# --- sprintf's plain path -------------------------------------------------------------------

@pytest.mark.parametrize(("fmt", "args"), [
    ("Created pod: %s", ("web-1",)),
    ("Scaled up replica set %s to %d from %d", ("web", 3, 1)),
    ("100%% of %d", (7,)),
    ("no verbs", ()),
    ("%%", ()),
    ("%d", (True,)),                # a bool is not an int to Go: "%!d(bool=true)" path
    ("%s", (5,)),                   # an int under %s goes the Go way
    ("%d", ("x",)),
    ("%s %s", ("one",)),            # missing argument
    ("%s", ("a", "b")),             # extra argument
    ("%(x)s", ()),                  # a % that is no Go verb: literal, never Python's mapping key
    ("50% done", ()),
    ("%-5s|", ("a",)),
    ("%v", ("a",)),
])
def test_sprintf_plain_path_matches_go_path(fmt, args):
    assert sprintf(fmt, *args) == _sprintf_go(fmt, args)


_PIECES = st.sampled_from(["%s", "%d", "%%", "%v", "%q", "%5d", "%", "x", " ", "(", "%(k)s", "é"])
_ARGS = st.one_of(st.text(max_size=5), st.integers(-10**6, 10**6), st.booleans(), st.none(),
                  st.floats(allow_nan=False, allow_infinity=False))


def _outcome(f, *a):
    try:
        return "ok", f(*a)
    except Exception as e:                  # noqa: BLE001 - e.g. "%x" of a float fails on both paths
        return "raised", type(e)


@given(st.lists(_PIECES, max_size=6).map("".join), st.lists(_ARGS, max_size=4))
def test_sprintf_plain_path_matches_go_path_for_any_format(fmt, args):
    assert _outcome(sprintf, fmt, *args) == _outcome(_sprintf_go, fmt, tuple(args))


# --- small pieces -----------------------------------------------------------------------------

def test_unique_nanos_never_repeat_or_go_back():
    n = UniqueNanos()
    assert [n(1.0), n(1.0), n(0.5), n(2.0)] == [1_000_000_000, 1_000_000_001, 1_000_000_002, 2_000_000_000]


def test_token_bucket_ignores_a_clock_going_back_and_caps_at_burst():
    clock = FakeClock(START)
    b = _TokenBucket(1.0, 2, clock)
    assert [b.try_accept(), b.try_accept(), b.try_accept()] == [True, True, False]
    clock._mono -= 5.0                      # a monotonic reading earlier than the last: no refill
    assert b.try_accept() is False
    clock._mono += 100.0                    # 95 s later: full again, but only to 2 tokens
    assert [b.try_accept(), b.try_accept(), b.try_accept()] == [True, True, False]


def test_get_reference_of_a_reference_is_an_equal_copy():
    ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name="p", namespace="ns", field_path="spec")
    got = get_reference(ref)
    assert got == ref and got is not ref


def test_observe_of_a_repeat_leaves_the_callers_event_alone():
    c = EventCorrelator(FakeClock(START))
    first = c.event_correlate(ev())
    c.update_state(first.event)
    repeat = ev()
    repeat.metadata.name = "web.2"
    got = c.event_correlate(repeat)
    assert (got.event.metadata.name, got.event.count) == ("web.1", 2)
    assert got.patch == {"count": 2, "lastTimestamp": "2020-09-13T12:26:40Z", "message": "back-off"}
    assert (repeat.metadata.name, repeat.count) == ("web.2", 1)


async def test_a_backlog_is_written_in_order():
    written: list[str] = []

    class Sink:
        async def create(self, event: core_v1.Event) -> core_v1.Event:
            written.append(event.message)
            return event

        update = create

        async def patch(self, event: core_v1.Event, data: dict) -> core_v1.Event:
            return event

    b = EventBroadcaster(sink=Sink(), clock=FakeClock(START))
    rec = b.new_recorder("c")
    for i in range(40):                      # queued before start(): one drain takes them all
        d = apps_v1.Deployment(metadata=meta_v1.ObjectMeta(name=f"web-{i}", namespace="default"))
        rec.eventf(d, "Normal", "R", "event %d", i)
    b.start()
    await b.flush()
    await b.shutdown()
    assert written == [f"event {i}" for i in range(40)]
    assert b.pending() == 0


async def test_event_queue_keeps_order_wakes_its_getter_and_joins_what_was_put() -> None:
    """The broadcaster's queue does what it used of asyncio.Queue: FIFO, get() waits for a
    put, a cancelled get() leaves it usable, join() returns once every item put is done."""
    import asyncio

    from kubeplane.client.tools.record.event import _EventQueue
    q = _EventQueue()
    await q.join()                                   # nothing put: returns at once
    cancelled = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    getter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    for i in range(3):
        q.put_nowait(i)
    assert await getter == 0 and q.qsize() == 2
    joined = asyncio.ensure_future(q.join())
    q.task_done()
    assert q.get_nowait() == 1
    q.task_done()
    await asyncio.sleep(0)
    assert not joined.done()                         # item 2 is still to be done
    q.put_nowait(3)                                  # put meanwhile: joined waits for it too
    assert [q.get_nowait(), q.get_nowait()] == [2, 3]
    q.task_done()
    await asyncio.sleep(0)
    assert not joined.done()
    q.task_done()
    await asyncio.wait_for(joined, 1)


@pytest.mark.parametrize("burst,qps", [(0, 1.0), (1, 0.5), (2, 1.0), (25, 1.0 / 300.0)])
def test_spam_filter_first_event_of_an_object_takes_a_token_as_try_accept_would(burst: int, qps: float) -> None:
    """A new bucket's first token is taken at once (no try_accept call): the filter answers
    as a bucket made and asked at the same instant, then goes on from its state."""
    clock = FakeClock(START)
    f = EventSourceObjectSpamFilter(16, burst, qps, clock)
    oracle = _TokenBucket(qps, burst, clock)
    got = [f.filter(ev())]
    want = [not oracle.try_accept()]
    for step in (0.0, 0.0, 1.0, 2.0, 300.0, 0.0):
        clock.step(step)
        got.append(f.filter(ev()))
        want.append(not oracle.try_accept())
    assert got == want


# --- the correlator's one-body path under upstream's key functions ------------------------------

_EVENT_PIECES = st.tuples(st.sampled_from(["web", "db", "web2"]), st.sampled_from(["Started", "BackOff"]),
                          st.sampled_from([f"m{i}" for i in range(14)]),
                          st.sampled_from([None, "spec.containers{web}"]), st.sampled_from(["c", "kubelet"]),
                          st.sampled_from([None, "node-1", "node-2"]),
                          st.sampled_from([0.0, 0.0, 1.0, 301.0, 700.0]), st.booleans())


def _as_tuple(result: EventCorrelateResult) -> tuple:
    e = result.event
    return (result.skip, result.patch, None if e is None else (e.metadata, e.count, e.message, e.first_timestamp,
                                                                e.last_timestamp, e.involved_object, e.source,
                                                                e.type, e.reason))


@given(st.lists(_EVENT_PIECES, max_size=80), st.sampled_from([4096, 3]), st.sampled_from([25, 2]))
def test_correlate_with_upstreams_keys_matches_the_three_steps(pieces, cache_size: int, burst: int) -> None:
    """The one-body path (default key functions) and the step-by-step one (the same functions
    wrapped, so that the correlator cannot tell them for its own) agree on every result and
    every cache, through aggregation (max_events 10), spam filtering, eviction and updates."""
    clock_a, clock_b = FakeClock(START), FakeClock(START)
    fast = EventCorrelator(clock_a, CorrelatorOptions(lru_cache_size=cache_size, burst_size=burst),
                           nanos=UniqueNanos())
    steps = EventCorrelator(clock_b, CorrelatorOptions(
        lru_cache_size=cache_size, burst_size=burst, key_func=lambda e: event_aggregator_by_reason_func(e),
        spam_key_func=lambda e: get_spam_key(e)), nanos=UniqueNanos())
    assert fast._default_keys and not steps._default_keys
    # first a group past the aggregation threshold (10 messages): combined events from the 10th on
    burst_of_messages = [("web", "Started", f"m{i}", None, "c", None, 0.0, i % 3 == 0) for i in range(12)]
    combined = 0
    for i, (name, reason, message, field_path, component, host, step, written) in enumerate(burst_of_messages
                                                                                             + pieces):
        clock_a.step(step)
        clock_b.step(step)
        a = fast.event_correlate(ev(name, reason, message, field_path=field_path, component=component, host=host))
        b = steps.event_correlate(ev(name, reason, message, field_path=field_path, component=component, host=host))
        assert _as_tuple(a) == _as_tuple(b)
        combined += a.event is not None and a.event.message.startswith("(combined")
        if written and a.event is not None:      # the server's copy, with its resourceVersion
            for c, r in ((fast, a), (steps, b)):
                copy = msgspec.structs.replace(r.event, metadata=msgspec.structs.replace(
                    r.event.metadata, resource_version=str(i + 1)))
                c.update_state(copy)
    assert combined >= 2 or burst < 25
    assert fast.aggregator._cache.keys() == steps.aggregator._cache.keys()
    assert list(fast.logger._cache._d.items()) == list(steps.logger._cache._d.items())
    assert ([(k, b.tokens) for k, b in fast._spam_filter._cache._d.items()]
            == [(k, b.tokens) for k, b in steps._spam_filter._cache._d.items()])
    assert ([(r.local_keys, r.last_timestamp) for r in fast.aggregator._cache._d.values()]
            == [(r.local_keys, r.last_timestamp) for r in steps.aggregator._cache._d.values()])

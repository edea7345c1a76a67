"""Event correlation: spam filtering, aggregation of similar events, de-duplication.

Every event a recorder emits passes through one EventCorrelator before it is written:

1. EventAggregator: events that differ only in their message are "similar". Once 10
   distinct messages of one similar group arrive within 10 minutes, later ones are folded
   into a single event whose message is "(combined from similar events): <latest message>".
2. eventLogger: an event identical to one already written (same source, involved object,
   type, reason, message) is not created again; the existing Event is PATCHed with
   count + 1 and the new lastTimestamp.
3. EventSourceObjectSpamFilter: per source + involved object, a token bucket of 25 tokens
   refilled at 1 every 5 minutes; an event without a token is dropped.

The filter runs last, so a dropped occurrence is still counted: after 30 identical events
in a burst the server shows count 25, and the next accepted one (5 minutes later) shows 31.

Upstream: client-go tools/record/events_cache.go
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

import msgspec

from ....api.types import core_v1, meta_v1
from ....utils.clock import REAL_CLOCK, Clock, rfc3339
from .util import generate_event_name

MAX_LRU_CACHE_ENTRIES = 4096
# If the same event, varying only by message, is seen more than 10 times in
# 10 minutes, aggregate it.
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_IN_SECONDS = 600
# A source may send 25 events about an object, then 1 more every 5 minutes: this bounds
# the long tail of events about things that are always unhealthy.
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0

K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A bounded map that forgets its least recently used key (groupcache lru.Cache).

    get() of a present key makes it the most recent, so a caller that got a value and
    keeps using that same object need not add() it again (upstream's Get-then-Add pairs
    leave the cache in the same state either way). Values are never None.
    """

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._d: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        v = self._d.get(key)
        if v is not None:
            self._d.move_to_end(key)
        return v

    def add(self, key: K, value: V) -> None:
        d = self._d
        d[key] = value
        d.move_to_end(key)
        if len(d) > self._max:
            d.popitem(last=False)

    def keys(self) -> list[K]:
        """Keys from least to most recently used (for tests)."""
        return list(self._d)

    def __len__(self) -> int:
        return len(self._d)


class _TokenBucket:
    """A token bucket that never waits: try_accept() takes a token if one is there.

    Starts full. Example: burst 25, qps 1/300: 25 accepts at t=0, the 26th is refused,
    and one token is back at t=300 s.
    Upstream: NewTokenBucketPassiveRateLimiterWithClock(...).TryAccept, util/flowcontrol
    """

    # One per source + object: slots keep the spam filter's thousands of buckets small.
    __slots__ = ("_qps", "_burst", "_clock", "tokens", "_last")

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._qps, self._burst, self._clock = qps, burst, clock
        self.tokens = float(burst)
        self._last = clock.monotonic()

    def try_accept(self) -> bool:
        now = self._clock.monotonic()
        elapsed = now - self._last
        if elapsed > 0.0:
            self.tokens = min(float(self._burst), self.tokens + elapsed * self._qps)
        self._last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


# Stand-ins for an event without source or involvedObject (read only, never modified).
_NO_SOURCE = core_v1.EventSource()
_NO_REF = core_v1.ObjectReference()


def _ref(event: core_v1.Event) -> core_v1.ObjectReference:
    return event.involved_object or _NO_REF


# The keys below are Go's plain string concatenations (no separators), built with one
# f-string each: every event computes three of them, and update_state a fourth.

def get_event_key(event: core_v1.Event) -> str:
    """The identity of an event for de-duplication: source, object, type, reason, message.

    Upstream: getEventKey, events_cache.go
    """
    s, r = event.source or _NO_SOURCE, event.involved_object or _NO_REF
    return (f"{s.component or ''}{s.host or ''}{r.kind or ''}{r.namespace or ''}{r.name or ''}"
            f"{r.field_path or ''}{r.uid or ''}{r.api_version or ''}{event.type or ''}{event.reason or ''}"
            f"{event.message or ''}")


def get_spam_key(event: core_v1.Event) -> str:
    """The spam filter's bucket: source + involved object.

    Upstream: getSpamKey, events_cache.go
    """
    s, r = event.source or _NO_SOURCE, event.involved_object or _NO_REF
    return (f"{s.component or ''}{s.host or ''}{r.kind or ''}{r.namespace or ''}{r.name or ''}"
            f"{r.uid or ''}{r.api_version or ''}")


class EventSourceObjectSpamFilter:
    """Throttles the events one source may produce about one object.

    Upstream: EventSourceObjectSpamFilter, events_cache.go
    """

    def __init__(self, lru_cache_size: int, burst: int, qps: float, clock: Clock,
                 spam_key_func: Callable[[core_v1.Event], str] = get_spam_key) -> None:
        self._cache: _LRU[str, _TokenBucket] = _LRU(lru_cache_size)
        self._burst, self._qps, self._clock = burst, qps, clock
        self._spam_key_func = spam_key_func

    def filter(self, event: core_v1.Event) -> bool:
        """True if the event must be dropped (its source + object has no token left).

        Upstream: EventSourceObjectSpamFilter.Filter
        """
        key = self._spam_key_func(event)
        bucket = self._cache.get(key)           # a hit is now the most recent: no add needed
        if bucket is not None:
            return not bucket.try_accept()
        bucket = _TokenBucket(self._qps, self._burst, self._clock)
        self._cache.add(key, bucket)
        if bucket.tokens >= 1.0:                # a new bucket is full: this event takes a token at once
            bucket.tokens -= 1.0                # (what try_accept does no time after the bucket was made)
            return False
        return not bucket.try_accept()


def unix_nano(t: float) -> int:
    """Epoch seconds as integer nanoseconds (metav1.Time.UnixNano)."""
    return int(round(t * 1e9))


class UniqueNanos:
    """Hands out strictly increasing nanosecond stamps for event names.

    Event names are `<object>.<hex nanos>`: two events about one object at the same
    instant would get the same name and the second create would fail with AlreadyExists.
    Go's clock rarely repeats a nanosecond; a FakeClock always does, and a float
    time.time() near 1.7e9 only resolves ~240 ns. So a repeat gets last + 1 ns.
    Example: stamps for t=1.0 s, 1.0 s, 0.5 s -> 1000000000, 1000000001, 1000000002.
    """

    def __init__(self) -> None:
        self._last = 0

    def __call__(self, t: float) -> int:
        n = round(t * 1e9)              # unix_nano(t), inlined: one call per event
        self._last = n if n > self._last else self._last + 1
        return self._last


def event_aggregator_by_reason_func(event: core_v1.Event) -> tuple[str, str]:
    """(aggregate key, local key): everything but the message, and the message.

    Upstream: EventAggregatorByReasonFunc, events_cache.go
    """
    s, r = event.source or _NO_SOURCE, event.involved_object or _NO_REF
    agg = (f"{s.component or ''}{s.host or ''}{r.kind or ''}{r.namespace or ''}{r.name or ''}{r.uid or ''}"
           f"{r.api_version or ''}{event.type or ''}{event.reason or ''}{event.reporting_component or ''}"
           f"{event.reporting_instance or ''}")
    return agg, event.message or ""


def event_aggregator_by_reason_message_func(event: core_v1.Event) -> str:
    """Upstream: EventAggregatorByReasonMessageFunc, events_cache.go"""
    return "(combined from similar events): " + (event.message or "")


class _AggregateRecord:
    """One similar-events group of the aggregator. Upstream: aggregateRecord"""

    __slots__ = ("local_keys", "last_timestamp")

    def __init__(self) -> None:
        # distinct local keys (messages) seen in this aggregate group; past max, aggregate
        self.local_keys: set[str] = set()
        self.last_timestamp = 0.0       # epoch seconds


class EventAggregator:
    """Folds similar events (same everything but message) into one combined event.

    Upstream: EventAggregator, events_cache.go
    """

    def __init__(self, lru_cache_size: int, key_func: Callable[[core_v1.Event], tuple[str, str]],
                 message_func: Callable[[core_v1.Event], str], max_events: int,
                 max_interval_in_seconds: int, clock: Clock,
                 nanos: Callable[[float], int] = unix_nano) -> None:
        self._cache: _LRU[str, _AggregateRecord] = _LRU(lru_cache_size)
        self._nanos = nanos
        self._key_func, self._message_func = key_func, message_func
        self._max_events, self._max_interval = max_events, max_interval_in_seconds
        self._clock = clock

    def event_aggregate(self, new_event: core_v1.Event) -> tuple[core_v1.Event, str]:
        """The event to write and its cache key for the event logger.

        Below the threshold that is the event itself under its full key; at or above it
        a new combined event under the aggregate key, so each later similar event
        updates the same combined Event.
        Upstream: EventAggregator.EventAggregate
        """
        now = self._clock.now()
        aggregate_key, local_key = self._key_func(new_event)
        record = self._cache.get(aggregate_key)       # a hit is now the most recent
        # A group not seen for the interval starts afresh.
        if record is None or now - record.last_timestamp > self._max_interval:
            record = _AggregateRecord()
            self._cache.add(aggregate_key, record)
        record.local_keys.add(local_key)
        record.last_timestamp = now
        if len(record.local_keys) < self._max_events:
            return new_event, get_event_key(new_event)
        record.local_keys.pop()         # do not let the set grow past max
        return self._combined(new_event, now), aggregate_key

    def _combined(self, new_event: core_v1.Event, now: float) -> core_v1.Event:
        ts = rfc3339(now)
        ref = _ref(new_event)
        ns = new_event.metadata.namespace if new_event.metadata else None
        src = new_event.source
        return core_v1.Event(   # the copies are shallow: both structs hold only strings
            metadata=meta_v1.ObjectMeta(name=generate_event_name(ref.name or "", self._nanos(now)), namespace=ns),
            count=1, first_timestamp=ts, last_timestamp=ts, involved_object=ref.__copy__(),
            message=self._message_func(new_event), type=new_event.type, reason=new_event.reason,
            source=src.__copy__() if src is not None else None)


class _EventLog(msgspec.Struct, frozen=True, gc=False):
    """What we know about an event already written. Upstream: eventLog

    A Struct, not a dataclass: two are made per event, and a frozen dataclass's
    __init__ costs ~10x a Struct's.
    """

    count: int
    first_timestamp: str | None
    name: str
    resource_version: str


class EventLogger:
    """Remembers written events so a repeat becomes a count + 1 patch.

    Upstream: eventLogger, events_cache.go
    """

    def __init__(self, lru_cache_entries: int, clock: Clock) -> None:
        self._cache: _LRU[str, _EventLog] = _LRU(lru_cache_entries)
        self._clock = clock

    def event_observe(self, new_event: core_v1.Event, key: str) -> tuple[core_v1.Event, dict[str, Any] | None]:
        """The event to write and, for a repeat, the strategic-merge patch to send.

        A repeat takes the name, resourceVersion and firstTimestamp of the first
        occurrence and count = last count + 1. The patch is upstream's two-way merge patch
        from a copy with count 0, lastTimestamp at the epoch and no message, which is
        always exactly these three fields.
        A first occurrence is returned as it was given (upstream returns a copy that nothing
        tells apart from it: the caller owns both); a repeat is a copy, new_event unchanged.
        Upstream: eventLogger.eventObserve
        """
        last = self._cache.get(key)
        patch: dict[str, Any] | None = None
        event = new_event
        if last is not None and last.count > 0:
            # Upstream copies the Event struct by value (eventCopy := *newEvent): its own
            # ObjectMeta, shared pointers below it, which nobody modifies.
            meta = new_event.metadata
            event = msgspec.structs.replace(new_event, metadata=meta.__copy__() if meta is not None else None)
            assert event.metadata is not None
            event.metadata.name = last.name
            event.metadata.resource_version = last.resource_version or None
            event.first_timestamp = last.first_timestamp
            event.count = last.count + 1
            patch = {"count": event.count, "lastTimestamp": event.last_timestamp, "message": event.message}
        self._record(key, event)
        return event, patch

    def update_state(self, event: core_v1.Event) -> None:
        """Remember the server's copy (its name and resourceVersion) of a written event.

        Upstream: eventLogger.updateState
        """
        self._record(get_event_key(event), event)

    def _record(self, key: str, event: core_v1.Event) -> None:
        m = event.metadata
        name, rv = (m.name or "", m.resource_version or "") if m is not None else ("", "")
        self._cache.add(key, _EventLog(event.count or 0, event.first_timestamp, name, rv))


@dataclass(slots=True)
class EventCorrelateResult:
    """Upstream: EventCorrelateResult, events_cache.go"""

    event: core_v1.Event | None = None
    # if set, PATCH the existing Event with this strategic merge patch
    patch: dict[str, Any] | None = None
    # if true, drop the event
    skip: bool = False


@dataclass
class CorrelatorOptions:
    """Tunables of the correlator; the defaults are upstream's.

    Upstream: CorrelatorOptions, tools/record/event.go
    """

    lru_cache_size: int = MAX_LRU_CACHE_ENTRIES
    burst_size: int = DEFAULT_SPAM_BURST
    qps: float = DEFAULT_SPAM_QPS
    key_func: Callable[[core_v1.Event], tuple[str, str]] = event_aggregator_by_reason_func
    message_func: Callable[[core_v1.Event], str] = event_aggregator_by_reason_message_func
    max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS
    max_interval_in_seconds: int = DEFAULT_AGGREGATE_INTERVAL_IN_SECONDS
    spam_key_func: Callable[[core_v1.Event], str] = get_spam_key


class EventCorrelator:
    """Filters, aggregates, counts and de-duplicates events before they are written.

    Upstream: EventCorrelator, NewEventCorrelatorWithOptions, events_cache.go
    """

    def __init__(self, clock: Clock = REAL_CLOCK, options: CorrelatorOptions | None = None, *,
                 nanos: Callable[[float], int] = unix_nano) -> None:
        o = options or CorrelatorOptions()
        self._spam_filter = EventSourceObjectSpamFilter(o.lru_cache_size, o.burst_size, o.qps, clock,
                                                        o.spam_key_func)
        self.aggregator = EventAggregator(o.lru_cache_size, o.key_func, o.message_func, o.max_events,
                                          o.max_interval_in_seconds, clock, nanos)
        self.logger = EventLogger(o.lru_cache_size, clock)
        # Upstream's own key functions: event_correlate builds the three keys in one go.
        self._default_keys = o.key_func is event_aggregator_by_reason_func and o.spam_key_func is get_spam_key
        self._clock = clock

    def event_correlate(self, new_event: core_v1.Event) -> EventCorrelateResult:
        """Upstream: EventCorrelator.EventCorrelate"""
        if self._default_keys:
            return self._correlate(new_event)
        aggregate_event, ckey = self.aggregator.event_aggregate(new_event)
        observed_event, patch = self.logger.event_observe(aggregate_event, ckey)
        if self._spam_filter.filter(observed_event):
            return EventCorrelateResult(skip=True)
        return EventCorrelateResult(event=observed_event, patch=patch)

    def _correlate(self, new_event: core_v1.Event) -> EventCorrelateResult:
        """event_correlate under upstream's key functions, the steps of EventAggregate,
        eventObserve and the spam filter's Filter written out in one body (~4,000 events per
        rolling update of 1,000 pods): the aggregate, event and spam keys share their source +
        involved object part, built once; the spam key of the observed event is its new
        event's (a repeat or a combined event copies source and involvedObject unchanged).
        Same caches, same results as the three steps (tests/client/tools/record)."""
        s, r = new_event.source or _NO_SOURCE, new_event.involved_object or _NO_REF
        obj = f"{s.component or ''}{s.host or ''}{r.kind or ''}{r.namespace or ''}{r.name or ''}"
        uid_version = f"{r.uid or ''}{r.api_version or ''}"
        type_reason = f"{new_event.type or ''}{new_event.reason or ''}"
        # EventAggregator.event_aggregate (event_aggregator_by_reason_func's keys)
        agg = self.aggregator
        now = self._clock.now()
        aggregate_key = (f"{obj}{uid_version}{type_reason}{new_event.reporting_component or ''}"
                         f"{new_event.reporting_instance or ''}")
        cache = agg._cache._d
        record = cache.get(aggregate_key)
        if record is not None:
            cache.move_to_end(aggregate_key)
        if record is None or now - record.last_timestamp > agg._max_interval:
            record = _AggregateRecord()
            agg._cache.add(aggregate_key, record)
        local_keys = record.local_keys
        local_keys.add(new_event.message or "")
        record.last_timestamp = now
        if len(local_keys) < agg._max_events:
            event, key = new_event, f"{obj}{r.field_path or ''}{uid_version}{type_reason}{new_event.message or ''}"
        else:
            local_keys.pop()
            event, key = agg._combined(new_event, now), aggregate_key
        # EventLogger.event_observe
        observed, patch = self.logger.event_observe(event, key)
        # EventSourceObjectSpamFilter.filter (get_spam_key)
        spam = self._spam_filter
        spam_key = obj + uid_version
        buckets = spam._cache._d
        bucket = buckets.get(spam_key)
        if bucket is not None:
            buckets.move_to_end(spam_key)
            if not bucket.try_accept():
                return EventCorrelateResult(skip=True)
        elif spam.filter(observed):         # a new bucket, made as filter() makes it
            return EventCorrelateResult(skip=True)
        return EventCorrelateResult(event=observed, patch=patch)

    def update_state(self, event: core_v1.Event) -> None:
        """Upstream: EventCorrelator.UpdateState"""
        self.logger.update_state(event)

"""The event recorder: controllers report what they did as core/v1 Events.

    broadcaster = EventBroadcaster(clientset, clock=clock)
    broadcaster.start()                                   # needs a running event loop
    recorder = broadcaster.new_recorder("deployment-controller")
    recorder.eventf(d, "Normal", "ScalingReplicaSet", "Scaled up replica set %s to %d", rs_name, 3)
    ...
    await broadcaster.shutdown()

`event()` is a plain synchronous call that never blocks or raises: it builds the Event
and appends it to a bounded queue (1000 events; past that new events are dropped and
logged). One asyncio task drains the queue in order, passes each event through the
EventCorrelator (events_cache.py) and writes it: a POST for a new event, a
strategic-merge PATCH of count/lastTimestamp/message for a repeat. A write that fails
to reach the server is retried up to 12 times, 10 s apart (the first wait is a random
fraction of that, so that clients do not retry in lockstep after an outage); an error
answer from the server is final. Either way the event is then dropped and logged,
because losing an event must never stop a controller.

Upstream: client-go tools/record/event.go
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from ....api import errors
from ....api import types
from ....api.types import core_v1, meta_v1
from ....utils.clock import REAL_CLOCK, Clock, rfc3339
from ...rest import raise_for_status
from .events_cache import CorrelatorOptions, EventCorrelator, UniqueNanos
from .util import (
    generate_event_name,
    get_reference,
    is_key_not_found_error,
    sprintf,
    validate_event_type,
)

if TYPE_CHECKING:
    from ...clientset import Clientset

log = logging.getLogger(__name__)

MAX_TRIES_PER_EVENT = 12
DEFAULT_SLEEP_DURATION = 10.0       # seconds between tries of one event
MAX_QUEUED_EVENTS = 1000
NAMESPACE_DEFAULT = "default"
_MAX_CACHED_CLIENTS = 1024


class EventSink(Protocol):
    """Where events are stored; each call uses the namespace embedded in the event.

    Upstream: EventSink, tools/record/event.go
    """

    async def create(self, event: core_v1.Event) -> core_v1.Event:
        """POST the event; returns the server's copy."""

    async def update(self, event: core_v1.Event) -> core_v1.Event:
        """PUT the event; returns the server's copy."""

    async def patch(self, event: core_v1.Event, data: dict[str, Any]) -> core_v1.Event:
        """Strategic-merge PATCH the named event with data; returns the server's copy."""


class EventSinkImpl:
    """An EventSink over the clientset's core/v1 events.

    Upstream: EventSinkImpl, kubernetes/typed/core/v1/event_expansion.go
    """

    def __init__(self, clientset: Clientset) -> None:
        self._cs = clientset
        self._clients: dict[str, Any] = {}      # namespace -> its events client, built once
        # The in-process transport's Event writer (apiserver/registry/core/event_writer.py): the
        # same POST, served without building and parsing an HTTP-shaped request. Looked up on the
        # transport's class: a wrapper that forwards other attributes (RateLimitedTransport)
        # must keep its own path, so that its requests are paced.
        transport = getattr(clientset, "transport", None)
        make_writer = getattr(type(transport), "event_writer", None)
        self._writer = make_writer(transport) if make_writer is not None else None

    def _events(self, event: core_v1.Event) -> Any:
        ns = (event.metadata.namespace if event.metadata else None) or ""
        client = self._clients.get(ns)
        if client is None:
            if len(self._clients) >= _MAX_CACHED_CLIENTS:     # many short-lived namespaces
                self._clients.clear()
            client = self._clients[ns] = self._cs.core_v1().events(ns)
        return client

    async def create(self, event: core_v1.Event) -> core_v1.Event:
        writer = self._writer
        if writer is not None:
            ns = (event.metadata.namespace if event.metadata else None) or ""
            if ns:
                # what ResourceClient.create sends in process and makes of the answer (the
                # stored object that the body encodes converted, not the body parsed)
                resp, stored = await writer.create_returning(ns, types.to_dict(event))
                raise_for_status(resp)
                return types.decode(resp.body, core_v1.Event) if stored is None else types.from_dict(stored, core_v1.Event)
        return await self._events(event).create(event)

    async def update(self, event: core_v1.Event) -> core_v1.Event:
        return await self._events(event).update(event)

    async def patch(self, event: core_v1.Event, data: dict[str, Any]) -> core_v1.Event:
        assert event.metadata is not None and event.metadata.name
        return await self._events(event).patch(event.metadata.name, data, "strategic")


class EventRecorder(Protocol):
    """Records events on behalf of one source; FakeRecorder implements it too.

    Upstream: EventRecorder, tools/record/event.go
    """

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        """Queue an event about obj (a typed object or an ObjectReference); never blocks.

        type_ is "Normal" or "Warning"; reason is short UpperCamelCase; the event lands
        in obj's namespace ("default" for cluster-scoped objects).
        """

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        """event() with a Go-style format ("Scaled up replica set %s to %d")."""

    def annotated_eventf(self, obj: Any, annotations: dict[str, str], type_: str, reason: str,
                         fmt: str, *args: Any) -> None:
        """eventf() with annotations on the Event's metadata."""


class RecorderImpl:
    """An EventRecorder feeding an EventBroadcaster's queue.

    Upstream: recorderImpl, tools/record/event.go
    """

    def __init__(self, broadcaster: EventBroadcaster, source: core_v1.EventSource, clock: Clock) -> None:
        self._broadcaster = broadcaster
        self.source = source
        self._clock = clock

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.generate_event(obj, None, type_, reason, message)

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        self.event(obj, type_, reason, sprintf(fmt, *args))

    def annotated_eventf(self, obj: Any, annotations: dict[str, str], type_: str, reason: str,
                         fmt: str, *args: Any) -> None:
        self.generate_event(obj, annotations, type_, reason, sprintf(fmt, *args))

    def generate_event(self, obj: Any, annotations: dict[str, str] | None, type_: str, reason: str,
                       message: str) -> None:
        """Build the event and queue it; bad input is logged and dropped, never raised.

        Upstream: recorderImpl.generateEvent
        """
        try:
            ref = get_reference(obj)
        except ValueError as e:
            log.error("Could not construct reference, will not report event",
                      extra={"err": str(e), "eventType": type_, "reason": reason, "note": message})
            return
        if not validate_event_type(type_):
            log.error("Unsupported event type", extra={"eventType": type_})
            return
        self._broadcaster.action_or_drop(self.make_event(ref, annotations, type_, reason, message))

    def make_event(self, ref: core_v1.ObjectReference, annotations: dict[str, str] | None, type_: str,
                   reason: str, message: str) -> core_v1.Event:
        """The Event with its source and reporting fields (generateEvent sets those right after
        makeEvent upstream; here one constructor call does both).

        Upstream: recorderImpl.makeEvent + the source of recorderImpl.generateEvent
        """
        now = self._clock.now()
        t = rfc3339(now)
        src = self.source
        return core_v1.Event(
            metadata=meta_v1.ObjectMeta(name=generate_event_name(ref.name or "", self._broadcaster.nanos(now)),
                                        namespace=ref.namespace or NAMESPACE_DEFAULT,
                                        annotations=dict(annotations) if annotations else None),
            involved_object=ref, reason=reason, message=message, first_timestamp=t, last_timestamp=t,
            count=1, type=type_,
            source=core_v1.EventSource(component=src.component, host=src.host),   # a copy, as Go's value copy
            reporting_component=src.component, reporting_instance=src.host)


_STOP = object()    # queue sentinel: the drain task exits when it reaches it


class _EventQueue:
    """The broadcaster's FIFO: put_nowait never blocks (action_or_drop bounds it), get() waits
    for an item, join() until every item put so far (and any put meanwhile) is task_done().

    What the broadcaster used of asyncio.Queue, without its bookkeeping for bounded queues and
    many getters: one drain task gets, and each event is put and taken once (~4,000 per rolling
    update of 1,000 pods).
    _items: events not yet taken. _unfinished: put and not yet task_done() (>= len(_items)).
    _waiter: the getter's future while it waits on an empty queue, else None.
    """

    __slots__ = ("_items", "_unfinished", "_waiter", "_idle")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._unfinished = 0
        self._waiter: asyncio.Future[None] | None = None
        self._idle = asyncio.Event()            # set while _unfinished == 0
        self._idle.set()

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        if not self._unfinished:
            self._idle.clear()
        self._unfinished += 1
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def get_nowait(self) -> Any:
        return self._items.popleft()

    async def get(self) -> Any:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:      # cancelled while waiting
                    self._waiter = None
        return self._items.popleft()

    def task_done(self) -> None:
        self._unfinished -= 1
        if not self._unfinished:
            self._idle.set()

    async def join(self) -> None:
        while self._unfinished:
            await self._idle.wait()


class EventBroadcaster:
    """Receives events from its recorders and writes them through one correlator.

    Events are written in the order they were recorded. Construct anywhere; start()
    needs a running event loop. Events recorded before start() wait in the queue.
    Upstream: eventBroadcasterImpl + StartRecordingToSink, tools/record/event.go
    """

    def __init__(self, clientset: Clientset | None = None, *, clock: Clock = REAL_CLOCK,
                 sink: EventSink | None = None, sleep_duration: float = DEFAULT_SLEEP_DURATION,
                 max_queued_events: int = MAX_QUEUED_EVENTS,
                 correlator_options: CorrelatorOptions | None = None,
                 rng: random.Random | None = None) -> None:
        if sink is None:
            if clientset is None:
                raise ValueError("EventBroadcaster needs a clientset or a sink")
            sink = EventSinkImpl(clientset)
        self.sink = sink                    # a plain field: tests may swap it
        self.clock = clock
        self.sleep_duration = sleep_duration
        self.max_queued_events = max_queued_events
        self.nanos = UniqueNanos()          # event-name stamps, shared by recorders and correlator
        self.correlator = EventCorrelator(clock, correlator_options, nanos=self.nanos)
        self._rng = rng or random.Random()
        # Unbounded, bounded by action_or_drop, so the stop sentinel always fits.
        self._queue = _EventQueue()
        self._task: asyncio.Task[None] | None = None
        self._shut_down = False
        self._stop = asyncio.Event()        # set by shutdown(): abandon retry sleeps

    def new_recorder(self, component: str, host: str = "") -> RecorderImpl:
        """A recorder whose events carry source {component, host}.

        Upstream: eventBroadcasterImpl.NewRecorder
        """
        return RecorderImpl(self, core_v1.EventSource(component=component or None, host=host or None),
                            self.clock)

    def start(self) -> None:
        """Start the task that writes queued events (idempotent)."""
        if self._task is None and not self._shut_down:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="event-broadcaster")

    async def shutdown(self) -> None:
        """Stop accepting events; each still queued gets one try; then the task ends.

        A retry sleep in progress is abandoned (the event is dropped and logged).
        Upstream: eventBroadcasterImpl.Shutdown
        """
        if self._shut_down:
            return
        self._shut_down = True
        self._stop.set()
        if self._task is None:
            return
        self._queue.put_nowait(_STOP)
        await self._task

    async def flush(self) -> None:
        """Wait until every event queued so far has been written or dropped (after start())."""
        if self._task is None:
            raise RuntimeError("flush() before start() would wait forever")
        await self._queue.join()

    def pending(self) -> int:
        """Events queued and not yet finished (for tests and metrics)."""
        return self._queue.qsize()

    def action_or_drop(self, event: core_v1.Event) -> bool:
        """Queue event unless the queue is full or the broadcaster is shut down.

        Upstream: watch.Broadcaster.ActionOrDrop (with DropIfChannelFull)
        """
        if self._shut_down:
            log.error("Unable to record event (will not retry!)",
                      extra={"err": "broadcaster already stopped", "event": _describe(event)})
            return False
        if self._queue.qsize() >= self.max_queued_events:
            log.error("Unable to record event: too many queued events, dropped event",
                      extra={"event": _describe(event)})
            return False
        self._queue.put_nowait(event)
        return True

    async def _run(self) -> None:
        q = self._queue
        while True:
            # get() makes a coroutine even when an item is waiting; take it directly then.
            item = q.get_nowait() if q.qsize() else await q.get()
            try:
                if item is _STOP:
                    return
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("Event occurred", extra={"event": _describe(item)})
                await self.record_to_sink(item)
            except Exception:               # a bug must not kill the writer
                log.exception("Unexpected error recording event")
            finally:
                self._queue.task_done()

    async def record_to_sink(self, event: core_v1.Event) -> None:
        """Correlate the event, then write it, retrying while the server is unreachable.

        Tries: 12 at most. Waits: first a random fraction of 10 s, then 10 s each, so an
        event is given up after at most ~110 s.
        Upstream: eventBroadcasterImpl.recordToSink
        """
        result = self.correlator.event_correlate(event)
        if result.skip or result.event is None:
            return
        ev = result.event
        tries = 0
        while True:
            if await self.record_event(ev, result.patch, (ev.count or 0) > 1):
                return
            tries += 1
            if tries >= MAX_TRIES_PER_EVENT:
                log.error("Unable to write event (retry limit exceeded!)", extra={"event": _describe(ev)})
                return
            delay = self.sleep_duration * (self._rng.random() if tries == 1 else 1.0)
            if not await self._sleep_unless_stopped(delay):
                log.error("Unable to write event (broadcaster is shut down)", extra={"event": _describe(ev)})
                return

    async def _sleep_unless_stopped(self, delay: float) -> bool:
        """Sleep on the clock; False if shutdown() came first."""
        if self._stop.is_set():
            return False
        sleep = asyncio.ensure_future(self.clock.sleep(delay))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({sleep, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            stop.cancel()
        return not self._stop.is_set()

    async def record_event(self, event: core_v1.Event, patch: dict[str, Any] | None,
                           update_existing_event: bool) -> bool:
        """Write the event once: True if written or not worth retrying, False to retry.

        A repeat is patched; if it has been deleted meanwhile it is created again.
        Upstream: recordEvent, tools/record/event.go
        """
        new_event: core_v1.Event | None = None
        err: BaseException | None = None
        if update_existing_event and patch is not None:
            try:
                new_event = await self.sink.patch(event, patch)
            except Exception as e:
                err = e
        if not update_existing_event or patch is None or (err is not None and is_key_not_found_error(err)):
            if event.metadata is not None:
                event.metadata.resource_version = None     # a create carries no resourceVersion
            try:
                new_event, err = await self.sink.create(event), None
            except Exception as e:
                err = e
        if err is None and new_event is not None:
            # the server's name/resourceVersion are what the next patch needs
            self.correlator.update_state(new_event)
            return True
        return _is_final(err, event)


def _is_final(err: BaseException | None, event: core_v1.Event) -> bool:
    """Whether a failed write should be given up: yes for any answer from the server."""
    if isinstance(err, errors.StatusError):
        if isinstance(err, errors.AlreadyExists) or errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
            log.debug("Server rejected event (will not retry!)", extra={"event": _describe(event), "err": str(err)})
        else:
            log.error("Server rejected event (will not retry!)", extra={"event": _describe(event), "err": str(err)})
        return True
    # no answer (connection refused, reset, timeout): hold the event and try again
    log.error("Unable to write event (may retry after sleeping)", extra={"event": _describe(event), "err": repr(err)})
    return False


def _describe(event: core_v1.Event) -> str:
    r = event.involved_object or core_v1.ObjectReference()
    return f"{r.kind}/{r.namespace or ''}/{r.name}: {event.type} {event.reason} {event.message!r}"

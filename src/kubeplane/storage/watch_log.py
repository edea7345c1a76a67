"""The shared watch log: one bounded ring of WatchEvents read by every watcher through a cursor.

Every write takes exactly one revision and appends exactly one event, so the events in the
window are the contiguous revisions (oldest_revision, revision] and the event of revision r
sits in slot r % capacity. A watcher is nothing but (prefix, cursor = last revision it has
passed): it copies no events and owns no queue, so a thousand watchers cost a thousand cursors.
Writers never wait for readers; a reader whose next revision has been overwritten (or
compacted away) gets `Compacted` and must re-list, exactly like an etcd watcher past the
compaction point.

Example with capacity 4 after 10 writes: the ring holds revisions 7..10, oldest_revision is 6.
watch(p, 6) replays 7..10; watch(p, 5) raises Compacted(5, 6) because event 6 is gone.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .interface import Compacted, WatchEvent

if TYPE_CHECKING:
    from .interface import Watcher


class WatchLog:
    """Bounded, revision-indexed ring of events plus the futures of watchers waiting for more.

    revision: the revision of the last appended event (0 if none).
    _floor: revisions <= _floor were compacted (or precede a restored history).
    Invariant: for every r in (oldest_revision, revision], _ring[r % capacity].revision == r.
    _waiters: (prefix, future) of watchers that found nothing new. An append wakes only those
    whose prefix its key falls under, with the event's revision: every revision in between
    was under other prefixes, so the watcher may skip them unread. Waking every watcher on
    every write cost a task switch per watcher per write: with ~25 informers watching, most of
    the CPU of 1,000 idle nodes' 100 Lease renewals a second.
    """

    __slots__ = ("capacity", "revision", "closed", "_floor", "_ring", "_waiters")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("watch history capacity must be >= 1")
        self.capacity = capacity
        self.revision = 0
        self.closed = False
        self._floor = 0
        self._ring: list[WatchEvent | None] = [None] * capacity
        self._waiters: list[tuple[str, asyncio.Future[int | None]]] = []

    @property
    def oldest_revision(self) -> int:
        """The oldest revision a watch may start after: events after it are all retained."""
        return max(self.revision - self.capacity, self._floor)

    def append(self, ev: WatchEvent) -> None:
        """Record the event of the next revision and wake the watchers of its key."""
        assert ev.revision == self.revision + 1, (ev.revision, self.revision)
        self._ring[ev.revision % self.capacity] = ev
        self.revision = ev.revision
        if self._waiters:
            key, waiting = ev.kv.key, []
            for prefix, fut in self._waiters:
                if fut.done():                       # a stopped or cancelled watcher
                    continue
                if key.startswith(prefix):
                    fut.set_result(ev.revision)
                else:
                    waiting.append((prefix, fut))
            self._waiters = waiting

    def close(self) -> None:
        """End every watcher's stream (the store is closing)."""
        self.closed = True
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def event(self, revision: int) -> WatchEvent:
        """The event of revision, which must be inside the window."""
        ev = self._ring[revision % self.capacity]
        assert ev is not None and ev.revision == revision
        return ev

    def compact(self, revision: int) -> None:
        """Forget events at and before revision (clamped to the current revision)."""
        revision = min(revision, self.revision)
        for r in range(self.oldest_revision + 1, revision + 1):
            self._ring[r % self.capacity] = None     # release the objects
        self._floor = max(self._floor, revision)

    def restore(self, revision: int, events: list[WatchEvent]) -> None:
        """Start from a reloaded state: the counter is at revision, history is events.

        events must be contiguous and end at revision (or be empty); the window then
        starts just before the first of them.
        """
        assert self.revision == 0, "restore() on a used log"
        events = events[-self.capacity:]
        assert not events or events[-1].revision == revision
        assert all(b.revision == a.revision + 1 for a, b in zip(events, events[1:]))
        for ev in events:
            self._ring[ev.revision % self.capacity] = ev
        self.revision = revision
        self._floor = events[0].revision - 1 if events else revision

    def watch(self, prefix: str, after_revision: int) -> LogWatcher:
        """A watcher of keys under prefix from after_revision; Compacted if that is too old."""
        if after_revision < self.oldest_revision:
            raise Compacted(after_revision, self.oldest_revision)
        return LogWatcher(self, prefix, after_revision)

    def _wait(self, prefix: str) -> asyncio.Future[int | None]:
        """A future resolved with the revision of the next event under prefix (None on close)."""
        fut: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self._waiters.append((prefix, fut))
        return fut


class LogWatcher:
    """One reader of a WatchLog: yields the events under prefix after its cursor, in order.

    _cursor: the last revision this watcher has passed (delivered or skipped by prefix).
    """

    __slots__ = ("_log", "_prefix", "_cursor", "_stopped", "_fut")

    def __init__(self, log: WatchLog, prefix: str, after_revision: int) -> None:
        self._log = log
        self._prefix = prefix
        self._cursor = after_revision
        self._stopped = False
        self._fut: asyncio.Future[int | None] | None = None

    def __aiter__(self) -> LogWatcher:
        return self

    async def __anext__(self) -> WatchEvent:
        log, prefix = self._log, self._prefix
        while not (self._stopped or log.closed):
            if self._cursor < log.oldest_revision:
                raise Compacted(self._cursor, log.oldest_revision)
            while self._cursor < log.revision:
                self._cursor += 1
                ev = log.event(self._cursor)
                if ev.kv.key.startswith(prefix):
                    return ev
            self._fut = log._wait(prefix)
            try:
                woken_by = await self._fut
            finally:
                self._fut = None
            if woken_by is not None:                 # nothing of ours came before it
                self._cursor = max(self._cursor, woken_by - 1)
        raise StopAsyncIteration

    @property
    def progress(self) -> int:
        """The revision this watcher has been brought up to (delivered or skipped by prefix);
        while it waits, that is the log's revision: nothing under its prefix came since."""
        if self._fut is not None and not self._fut.done():
            return self._log.revision
        return self._cursor

    def ready(self) -> list[WatchEvent]:
        """Every event available now, without waiting (a burst becomes one batch).

        Raises Compacted if this watcher fell out of the window.
        """
        log, prefix = self._log, self._prefix
        if self._cursor < log.oldest_revision:
            raise Compacted(self._cursor, log.oldest_revision)
        out = []
        while self._cursor < log.revision:
            self._cursor += 1
            ev = log.event(self._cursor)
            if ev.kv.key.startswith(prefix):
                out.append(ev)
        return out

    def stop(self) -> None:
        """End the stream: a pending or later iteration raises StopAsyncIteration.

        Closing the store does the same for every watcher.
        """
        self._stopped = True
        if self._fut is not None and not self._fut.done():
            self._cursor = self._log.revision        # waiting: nothing of ours is unread
            self._fut.set_result(None)


if TYPE_CHECKING:
    def _conforms(w: LogWatcher) -> Watcher:
        return w

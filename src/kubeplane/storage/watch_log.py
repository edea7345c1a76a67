"""The shared watch log: one bounded ring of WatchEvents read by every watcher through a cursor.

Every write takes exactly one revision and appends exactly one event, so the events in the
window are the revisions (oldest_revision, revision] and the event of revision r sits in slot
r % capacity. A store that shares its revision counter (etcd: writes outside the watched prefix,
the compaction key) may skip revisions: `advance` moves the counter without an event, and a
skipped revision's slot stays empty (it still counts against the capacity). A watcher is nothing but (prefix, cursor = last revision it has
passed): it copies no events and owns no queue, so a thousand watchers cost a thousand cursors.
Writers never wait for readers; a reader whose next revision has been evicted (or compacted
away) gets `Compacted` and must re-list, exactly like an etcd watcher past the compaction point.

Example with capacity 4 after 10 writes: the ring holds revisions 7..10, oldest_revision is 6.
watch(p, 6) replays 7..10; watch(p, 5) raises Compacted(5, 6) because event 6 is gone.

The window is bounded twice: by `capacity` events, and by the bytes of their encoded objects
(`kv.value`; an event's `prev` is the previous event's `kv`, already counted, except for the
first event of each key in the window). The byte budget is max(min_bytes, LIVE_FACTOR x the
bytes of the current objects), which the log keeps count of from the events themselves.

Why these numbers: a watcher that falls out of the window must re-list, and a re-list reads
the live data once; with a budget of 8 x the live data a watcher has to miss more than 8
re-lists' worth of changes before it pays for one. The budget grows with the cluster: the
density benchmark (1,000 pods on 100 nodes, then a rolling update) writes 20,457 events of
30.3 MB in all and ends with 8.3 MB of live objects (9,315 objects), a budget of 67 MB; as the
events written never exceed ~3.7 x the live data during the run, the window never drops one,
so no in-process informer can fall out of it (measured: no re-list; bookmarks move a resuming
watch's resourceVersion up every minute anyway). The floor, 8 MiB, keeps a small cluster's
history long: one idle node writes well under 1 KB/s (a ~0.5 KB Lease renewal every 10 s),
8 MiB of it is hours, beyond the 5-10 minutes that compaction keeps (upstream's watch cache
keeps ~75 s).
Against a client that rewrites one 1 MiB ConfigMap in a loop (1 MiB of live data), the window
holds 8 versions (8 MiB, ~17 MB of memory with the decoded objects) instead of 50,000 (2 GB).

Versions that are no longer current keep only their bytes once they are LEAN_LAG revisions old
(KeyValue.lean: `kv.obj` then decodes on access). The decoded dict of a pod costs ~4.5 times its
JSON (13 KB against 2.9 KB, benchmarks/memory_costs.py objects), and at 10,000 pods the window
holds ~50,000 events, most of them versions that later writes replaced: their dicts were the
largest share of the API server's memory. Readers near the head (every in-process watcher, the
node authorizer's graph, the admission and RBAC indexes) still find the decoded objects; only a
reader more than LEAN_LAG revisions behind, which also needs the object itself (a watch with a
selector), decodes it again. What stays decoded: the current version of every key (the store's
reads and the patches merged onto it use it), and the events of the last LEAN_LAG revisions.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .interface import Compacted, LeanKeyValue, WatchEvent

if TYPE_CHECKING:
    from .interface import Watcher

DEFAULT_HISTORY_BYTES = 8 << 20
LIVE_FACTOR = 8
# Revisions after which a replaced version keeps only its bytes (module docstring): 0.5-1 s of
# writes at 10,000 pods on 1,000 nodes, ~4 % of the default window of 50,000 events.
LEAN_LAG = 2_048


def history_budget(min_bytes: int, live_bytes: int) -> int:
    """The bytes of events the window may hold when the current objects take live_bytes."""
    return max(min_bytes, LIVE_FACTOR * live_bytes)


def _root(key: str) -> str:
    """The resource part of a key or prefix: "/registry/pods/ns/a" -> "/registry/pods/",
    "/registry/apiregistration.k8s.io/apiservices/x" -> "/registry/apiregistration.k8s.io/";
    "" when it stops before that ("/registry/", "/registry/pods"). A key under a prefix has the
    prefix's root, or the prefix's root is ""."""
    i = key.find("/", 1)
    j = key.find("/", i + 1) if i > 0 else -1
    return key[:j + 1] if j > 0 else ""


class WatchLog:
    """Bounded, revision-indexed ring of events plus the futures of watchers waiting for more.

    revision: the revision of the last appended event (0 if none).
    _floor: revisions <= _floor were evicted, compacted, or precede a restored history.
    bytes: sum of len(ev.kv.value) over the window.  live_bytes: sum of len(kv.value) over the
    current objects (kept up to date from each event: ADDED adds its object, MODIFIED the
    difference to prev, DELETED removes prev).  evicted_bytes: bytes ever evicted (the sqlite
    committer trims its copy of the log when enough has gone).
    _leaned: the events up to this revision had their replaced versions made lean (_lean_event).
    Invariants: revision - capacity <= _floor <= revision; for every r in (_floor, revision],
    _ring[r % capacity] is the event of r or None (a skipped revision), every other slot is None; bytes <= budget() or the
    window holds a single event (the newest is kept, however big: an idle watcher waiting for
    it must not be told it fell behind).
    _waiters: (prefix, future) of watchers that found nothing new, by the resource their prefix
    lies in (_root: "/registry/pods/"; "" for a prefix above any resource). An append wakes only
    those whose prefix its key falls under, with the event's revision: every revision in between
    was under other prefixes, so the watcher may skip them unread. Waking every watcher on
    every write cost a task switch per watcher per write: with ~25 informers watching, most of
    the CPU of 1,000 idle nodes' 100 Lease renewals a second. Looking only at the key's
    resource's waiters keeps a write from even scanning the informers of other resources
    (~30 of them in `up`, ~5 % of the API server's CPU in benchmarks/density.py).
    """

    __slots__ = ("capacity", "min_bytes", "revision", "closed", "bytes", "live_bytes",
                 "evicted_bytes", "_floor", "_leaned", "_ring", "_waiters")

    def __init__(self, capacity: int, min_bytes: int = DEFAULT_HISTORY_BYTES) -> None:
        if capacity < 1:
            raise ValueError("watch history capacity must be >= 1")
        if min_bytes < 0:
            raise ValueError("watch history bytes must be >= 0")
        self.capacity = capacity
        self.min_bytes = min_bytes
        self.revision = 0
        self.closed = False
        self.bytes = 0
        self.live_bytes = 0
        self.evicted_bytes = 0
        self._floor = 0
        self._leaned = 0
        self._ring: list[WatchEvent | None] = [None] * capacity
        self._waiters: dict[str, list[tuple[str, asyncio.Future[int | None]]]] = {}

    @property
    def oldest_revision(self) -> int:
        """The oldest revision a watch may start after: events after it are all retained."""
        return self._floor

    def budget(self) -> int:
        """The bytes of events the window may hold now (module docstring: why these numbers)."""
        return history_budget(self.min_bytes, self.live_bytes)

    def append(self, ev: WatchEvent) -> None:
        """Record the event of the next revision, evict what exceeds the bounds, and wake the
        watchers of its key."""
        rev, prev, size = ev.revision, ev.prev, len(ev.kv.value)
        if rev != self.revision + 1:
            self.advance(rev - 1)
        if self._floor < rev - self.capacity:       # the window is full: the oldest leaves
            self._evict_oldest()
        self._ring[rev % self.capacity] = ev
        self.revision = rev
        self.bytes += size
        # The current objects: ADDED adds its object, MODIFIED the difference, DELETED takes prev's.
        if prev is None:
            self.live_bytes += size
        else:
            self.live_bytes += (0 if ev.type == "DELETED" else size) - len(prev.value)
        if self.bytes > self.min_bytes and self.bytes > LIVE_FACTOR * self.live_bytes:
            while self.bytes > self.budget() and self._floor < rev - 1:
                self._evict_oldest()
        lean = rev - LEAN_LAG
        if lean == self._leaned + 1 and lean > self._floor:     # the usual step: one event
            self._leaned = lean
            old = self._ring[lean % self.capacity]
            if old is not None and (old.prev is not None or old.type == "DELETED"):
                self._lean_event(old)
        elif lean > self._leaned:
            self._lean_upto(lean)
        if waiters := self._waiters:
            key = ev.kv.key
            root = _root(key)
            if root in waiters:
                self._wake(root, key, rev)
            if root and "" in waiters:
                self._wake("", key, rev)

    def _wake(self, root: str, key: str, rev: int) -> None:
        """Resolve the waiters of bucket root whose prefix key falls under; drop stopped ones."""
        bucket = self._waiters.get(root)
        if not bucket:
            return
        waiting = []
        for prefix, fut in bucket:
            if fut.done():                           # a stopped or cancelled watcher
                continue
            if key.startswith(prefix):
                fut.set_result(rev)
            else:
                waiting.append((prefix, fut))
        if waiting:
            self._waiters[root] = waiting
        else:
            del self._waiters[root]

    def advance(self, revision: int) -> None:
        """Move the counter to revision without an event (revisions nobody here wrote: see the
        module docstring); as with appends, what is `capacity` revisions old leaves."""
        assert revision >= self.revision, (revision, self.revision)
        target = revision - self.capacity
        if target - self._floor > self.capacity:     # a jump past the whole ring: all leave
            for i, ev in enumerate(self._ring):
                if ev is not None:
                    self._ring[i] = None
                    self.bytes -= len(ev.kv.value)
                    self.evicted_bytes += len(ev.kv.value)
            self._floor = target
        while self._floor < target:
            self._evict_oldest()
        self.revision = revision

    def _lean_upto(self, revision: int) -> None:
        """Make the replaced versions of the events up to revision lean (module docstring)."""
        r = max(self._leaned, self._floor)
        while r < revision:
            r += 1
            if (ev := self._ring[r % self.capacity]) is not None:
                self._lean_event(ev)
        self._leaned = revision

    def _lean_event(self, ev: WatchEvent) -> None:
        """Keep only the bytes of the versions the event of r replaced: its prev, and the event
        that wrote that prev if still in the window; a DELETED event's own object, too (its key
        has no current version). The current version of a key is never an event's prev, so it
        keeps its decoded object.

        Example: key a written at 5 (ADDED) and 9 (MODIFIED, prev = the version of 5); when
        9 + LEAN_LAG is appended, event 9's prev and event 5's kv become one lean KeyValue; the
        version of 9, still current, stays decoded.
        """
        ring, cap, r = self._ring, self.capacity, ev.revision
        kv, prev = ev.kv, ev.prev
        lean_kv = kv.lean() if ev.type == "DELETED" else kv
        lean_prev = None if prev is None else prev.lean()
        if lean_kv is kv and lean_prev is prev:
            return
        ring[r % cap] = WatchEvent(ev.type, lean_kv, lean_prev, r)
        if prev is not None and lean_prev is not None and lean_prev is not prev:
            pr = prev.mod_revision
            pev = ring[pr % cap] if pr > self._floor else None
            if pev is not None and pev.kv is prev:
                ring[pr % cap] = WatchEvent(pev.type, lean_prev, pev.prev, pr)

    def _evict_oldest(self) -> None:
        r = self._floor + 1
        slot = r % self.capacity
        ev = self._ring[slot]
        self._floor = r
        if ev is None:                               # a skipped revision
            return
        assert ev.revision == r
        self._ring[slot] = None                      # release the objects
        size = len(ev.kv.value)
        self.bytes -= size
        self.evicted_bytes += size

    def close(self) -> None:
        """End every watcher's stream (the store is closing)."""
        self.closed = True
        waiters, self._waiters = self._waiters, {}
        for bucket in waiters.values():
            for _, fut in bucket:
                if not fut.done():
                    fut.set_result(None)

    def reset(self, revision: int, live_bytes: int) -> None:
        """Forget every event and go on from revision, whose current objects take live_bytes (a
        store that re-read its data after falling behind): every watcher gets Compacted."""
        for ev in self._ring:
            if ev is not None:
                self.evicted_bytes += len(ev.kv.value)
        self._ring = [None] * self.capacity
        self.bytes = 0
        self.live_bytes = live_bytes
        self.revision = self._floor = self._leaned = max(revision, self.revision)
        waiters, self._waiters = self._waiters, {}
        for bucket in waiters.values():
            for _, fut in bucket:
                if not fut.done():
                    fut.set_result(None)

    def event(self, revision: int) -> WatchEvent | None:
        """The event of revision, which must be inside the window (None: a skipped revision)."""
        ev = self._ring[revision % self.capacity]
        assert ev is None or ev.revision == revision
        return ev

    def compact(self, revision: int) -> None:
        """Forget events at and before revision (clamped to the current revision)."""
        revision = min(revision, self.revision)
        while self._floor < revision:
            self._evict_oldest()

    def restore(self, revision: int, events: Sequence[WatchEvent], live_bytes: int,
                oldest: int | None = None) -> None:
        """Start from a reloaded state: the counter is at revision, history is events (then
        trimmed to the bounds), the current objects take live_bytes.

        events are in revision order, the last at or before revision; the window starts after
        `oldest` (default: just before the first event), or after the newest event trimmed.
        Revisions between events are skipped ones (a shared counter: advance).
        """
        assert self.revision == 0, "restore() on a used log"
        assert not events or events[-1].revision <= revision
        assert all(b.revision > a.revision for a, b in zip(events, events[1:]))
        self.live_bytes = live_bytes
        budget, kept, size = self.budget(), 0, 0
        for ev in reversed(events):                  # the newest that fit, at least one
            if kept and (revision - ev.revision >= self.capacity or size + len(ev.kv.value) > budget):
                break
            kept += 1
            size += len(ev.kv.value)
        for ev in events[len(events) - kept:]:
            self._ring[ev.revision % self.capacity] = ev
        self.revision = revision
        self.bytes = size
        if kept < len(events):
            floor = events[len(events) - kept - 1].revision
        elif oldest is not None:
            floor = oldest
        else:
            floor = events[0].revision - 1 if events else revision
        self._floor = self._leaned = max(floor, revision - self.capacity)
        self._lean_upto(revision - LEAN_LAG)

    def watch(self, prefix: str, after_revision: int) -> LogWatcher:
        """A watcher of keys under prefix from after_revision; Compacted if that is too old."""
        if after_revision < self.oldest_revision:
            raise Compacted(after_revision, self.oldest_revision)
        return LogWatcher(self, prefix, after_revision)

    def _wait(self, prefix: str) -> asyncio.Future[int | None]:
        """A future resolved with the revision of the next event under prefix (None on close)."""
        fut: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        bucket = self._waiters.setdefault(_root(prefix), [])
        n = len(bucket)
        if n >= 16 and n & (n - 1) == 0:
            # Stopped watchers leave only when their resource is written; a resource nobody
            # writes while watches restart would keep them all. Pruning at each power of two
            # bounds the bucket by twice its live waiters at an amortised O(1) per wait.
            bucket[:] = [w for w in bucket if not w[1].done()]
        bucket.append((prefix, fut))
        return fut

    def _check_invariants(self) -> None:
        assert self.revision - self.capacity <= self._floor <= self.revision
        window = [ev for r in range(self._floor + 1, self.revision + 1) if (ev := self.event(r)) is not None]
        assert sum(1 for ev in self._ring if ev is not None) == len(window)
        assert self.bytes == sum(len(ev.kv.value) for ev in window)
        assert self.bytes <= self.budget() or len(window) == 1, (self.bytes, self.budget())
        for ev in window:
            if ev.revision <= self._leaned:
                assert ev.prev is None or isinstance(ev.prev, LeanKeyValue), ev
                assert ev.type != "DELETED" or isinstance(ev.kv, LeanKeyValue), ev



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
                if ev is not None and ev.kv.key.startswith(prefix):
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
            if ev is not None and ev.kv.key.startswith(prefix):
                out.append(ev)
        return out

    def changes(self) -> list[WatchEvent]:
        """The events under prefix since the last call, without waiting: ready() for a cache
        that asks on every request (the admission plugins' PrefixIndex), which between writes
        under its prefix costs no scan of the log — a waiter armed on the log after each call
        says whether any came. Not for a watcher that is also iterated (both use _fut).

        Raises Compacted if an event of ours fell out of the window before it was read.
        """
        if self._stopped:
            return []
        fut = self._fut
        if fut is not None:
            if not fut.done():
                self._cursor = self._log.revision     # nothing under prefix since it was armed
                return []
            self._fut = None
            woken_by = fut.result()
            if woken_by is not None:                  # everything before it was someone else's
                self._cursor = max(self._cursor, woken_by - 1)
        out = self.ready()
        if not (self._stopped or self._log.closed):
            self._fut = self._log._wait(self._prefix)
        return out

    def waiter(self) -> asyncio.Future[int | None] | None:
        """The future the next write under the prefix resolves, as armed by the last
        changes(): a cache that asks on every request may keep it and look at fut.done()
        instead of calling idle() (None: nothing armed, call changes())."""
        return self._fut

    def idle(self) -> bool:
        """Whether changes() has nothing to give, known without a look at the log: the waiter
        it armed is still unresolved (no write under the prefix since). For a cache that
        follows several prefixes and asks on every request (the RBAC index)."""
        fut = self._fut
        return fut is not None and not fut.done()

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

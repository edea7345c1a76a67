"""Committer: the thread that makes SqliteStorage's writes durable, in batches, off the event loop.

A write is applied in memory on the loop and handed to `put` (a list append under a lock);
the committer thread takes everything queued so far and commits it in one transaction, then
the next batch, and so on. SQLite releases the GIL while it works (B-tree updates, the WAL
write(), checkpoints with their fsync), so commits run on the second core while the loop goes
on. Batches size themselves: the busier the loop, the more writes queue during one commit.

Whoever must not get ahead of the disk awaits `wait_committed(revision)` on the loop: the
thread moves `committed` forward and, only if someone waits, wakes the loop with
call_soon_threadsafe. Example: writes 1..3 queued; the thread commits [1, 2, 3] while write
4 queues; wait_committed(4) returns once the next batch [4] is committed.

When nobody waits, the thread lets writes gather for up to GATHER seconds before it commits
(etcd's backend commits its batch every 100 ms, too): 1,000 idle nodes renewing their Leases
then cost a commit per ~10 renewals instead of one each. A waiter cuts the gathering short at
the end of the loop's turn (the turn's other writes join the batch), so a client outside never
waits for it.

Group commit under load: a commit costs SQLite ~60k instructions whatever it holds (BEGIN,
COMMIT, page 1 and a pointer-map page to the WAL, the locks) plus ~35-70k per create (its pages),
so the thread lets a commit wait for more writes when more are evidently coming: when more than
one write arrived since the last batch was taken (so several clients write at once; a client
that writes, waits and writes again brings one) and writes arrive more often than one per
LINGER / 2. It waits in steps of two mean gaps, until BATCH writes are pending, LINGER has
passed, or a step brought none (the writers are waiting for this commit). Example: 16 HTTPS
clients at 5,000 creates/s (a write every 200 µs) had batches of 1.5-2.3; a commit now waits up
to 0.5 ms for up to 8. A response waits that much longer; nothing is acknowledged before its
commit, as before. (etcd's backend batches its commits too: 100 ms or 10,000 writes, but it
acknowledges after the raft log's fsync, not the backend's commit.)

Housekeeping (trimming the log, reclaiming free pages, checkpointing the WAL) runs on the same
thread, between commits, in bounded steps: `housekeep(idle)` does one step and says whether more
is left; the thread takes the next step only when no write is queued, so a write waits for at
most one step, never for a whole reclaim. Waiters are released before a step starts. `kick()`
asks for a step while nothing is written (a compaction). `idle` is True when nothing was written
for IDLE seconds (the moment to truncate the WAL).

A failed commit or step (disk full, I/O error) stops the committer: memory is then ahead of the
disk, so every waiter and every later write gets StorageError (etcd stops serving when its
backend fails, too).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any, Callable

from .interface import StorageError, WatchEvent

log = logging.getLogger(__name__)

Commit = Callable[[list[WatchEvent]], None]
Housekeep = Callable[[bool], bool]

GATHER = 0.1
IDLE = 1.0
# Group commit under load (the module docstring): how long a commit may wait for more writes
# (s), and how many it waits for at most.
LINGER = 0.0005
BATCH = 8


_FAILED = object()


def _no_housekeeping(idle: bool) -> bool:
    return False


class Committer:
    """Commits queued events on its own thread; `committed` is the last committed revision.

    Shared with the thread under _cond: _pending, _stopping, _kicked, committed, failure,
    _waiters.
    """

    def __init__(self, commit: Commit, committed: int, housekeep: Housekeep = _no_housekeeping) -> None:
        self.committed = committed
        self.failure: Exception | None = None
        self._commit = commit
        self._housekeep = housekeep
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._pending: list[WatchEvent] = []
        self._stopping = False
        self._kicked = False
        self._told = False              # put() scheduled a wake-up for the first pending write
        self._puts = 0                  # writes queued so far (the thread's arrival rate)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._thread = threading.Thread(target=self._run, name="sqlite-committer", daemon=True)
        self._thread.start()

    def put(self, ev: WatchEvent) -> None:
        """Queue ev (revisions in order); StorageError once a commit has failed or after stop().

        The first write of a batch tells the thread to start gathering, but on the loop not at
        once: each wake-up of the thread costs the loop a futex call and a GIL hand-over
        (~10 µs), and a request that writes then waits for its write (every HTTPS write) asks
        for one in wait_committed too. So the thread is told once, after the loop's current
        turn, by whichever of them came first (wait_committed explains why after the turn)."""
        with self._lock:        # _cond's lock, entered without Condition's two Python-level calls
            if self.failure is not None or self._stopping:
                self._check_running()
            self._pending.append(ev)
            self._puts += 1
            if len(self._pending) > 1 or self._told:
                if len(self._pending) == BATCH:     # a lingering thread has its batch
                    self._cond.notify()
                return
            self._told = True
        try:
            asyncio.get_running_loop().call_soon(self._tell)
        except RuntimeError:                         # not on a loop: at once
            self._tell()

    def _tell(self) -> None:
        """Wake the thread for what is pending (once per turn of the loop: the first put or
        waiter of a turn asks for it)."""
        with self._lock:
            if self._told:
                self._told = False
                if self._pending:
                    self._cond.notify()

    def kick(self) -> None:
        """Ask the thread for a housekeeping step even if nothing is written."""
        with self._cond:
            self._kicked = True
            self._cond.notify()

    async def wait_committed(self, revision: int) -> None:
        """Return once revision is committed. The thread, if idle, is told to commit after the
        loop's current turn, not at once: the other requests of the turn (the rest of what one
        poll of the sockets brought) write too, and join the same commit. Told at once, the
        thread takes the GIL at the loop's next release (every TLS read or write releases it)
        and commits a batch of one: a transaction per create, ~100k instructions of the
        committer thread's each, against ~1/n of that for a batch of n."""
        if self.committed >= revision:
            return
        self.check()
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._cond:
            if self.committed >= revision:
                return
            self._check_running()       # under the lock: a failing thread cannot slip in between
            self._loop = loop
            self._waiters.append((revision, fut))
            tell = not self._told
            self._told = True
        if tell:                                # commit after this turn of the loop, don't gather
            loop.call_soon(self._tell)
        await fut

    def check(self) -> None:
        if self.failure is not None:
            raise StorageError(f"storage failed: {self.failure!r}")

    def _check_running(self) -> None:
        self.check()
        if self._stopping:
            raise StorageError("storage is closed")

    def stop(self) -> None:
        """Commit what is queued, then end the thread (blocks the caller until it has)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()
        self._release()

    def _run(self) -> None:
        more = False            # housekeeping has another step to take
        idle = False            # nothing written for IDLE seconds (until the next write)
        quiet = False           # an idle step found nothing to do: sleep until something happens
        gap = LINGER            # mean time between writes, over the last few batches
        since, puts = time.monotonic(), 0
        while self.failure is None:
            with self._cond:
                if not (self._pending or self._stopping or self._kicked or more):
                    idle = not self._cond.wait_for(
                        lambda: self._pending or self._stopping or self._kicked, None if quiet else IDLE)
                if self._pending:
                    self._cond.wait_for(lambda: self._waiters or self._stopping, GATHER)
                    now, arrived = time.monotonic(), self._puts - puts
                    if arrived:
                        gap = (gap + (now - since) / arrived) / 2
                    since, puts = now, self._puts
                    if arrived > 1 and self._waiters and 2 * gap < LINGER:
                        self._linger(now + LINGER, 2 * gap)
                batch, self._pending = self._pending, []
                self._kicked = False
                stopping = self._stopping
            idle = idle and not batch
            if batch and self._try(self._commit, batch) is not _FAILED:
                with self._cond:
                    self.committed = batch[-1].revision
                self._wake()
            if stopping and not batch:
                self._try(self._housekeep, True)     # the last step: catch up on disk
                return
            if self.failure is None:
                more = self._try(self._housekeep, idle) is True
                quiet = idle and not more

    def _linger(self, deadline: float, step: float) -> None:
        """Under _cond: let more writes join the batch, in steps of two mean gaps between
        writes, until BATCH are pending, the deadline, or a step in which none came (its
        writers are waiting for this commit, or they stopped: waiting on would only delay)."""
        while len(self._pending) < BATCH and not self._stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            n = len(self._pending)
            self._cond.wait_for(lambda: len(self._pending) >= BATCH or self._stopping, min(left, step))
            if len(self._pending) == n:
                return

    def _try(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """fn(arg), or _FAILED once it raised: then the store stops and every waiter hears why."""
        try:
            return fn(arg)
        except Exception as e:
            log.critical("storage write failed; the store stops accepting writes: %r", e)
            with self._cond:
                self.failure = e
            self._wake()
            return _FAILED

    def _wake(self) -> None:
        """Have the loop resolve the waiters (only if there are any: a wake-up costs the loop)."""
        with self._cond:
            wake = self._loop if self._waiters else None
        if wake is not None:
            try:
                wake.call_soon_threadsafe(self._release)
            except RuntimeError:                     # the loop is closed: nobody is waiting any more
                pass

    def _release(self) -> None:
        """On the loop: resolve the waiters whose revision is committed (all of them on failure)."""
        with self._cond:
            waiters = self._waiters
            self._waiters = [(r, f) for r, f in waiters if r > self.committed and self.failure is None]
        for revision, fut in waiters:
            if fut.done():
                continue
            if revision <= self.committed:             # durable, whatever failed afterwards
                fut.set_result(None)
            elif self.failure is not None:
                fut.set_exception(StorageError(f"storage failed: {self.failure!r}"))

"""The reflector: keep a store in step with the API server by list, then watch.

Upstream: client-go tools/cache/reflector.go. ListAndWatch "first lists all items and gets the
resource version at the moment of call, and then uses the resource version to watch". A watch
that ends (timeout, dropped connection, server restart) resumes from the last resourceVersion
seen, so no event is lost or delivered twice; only `410 Gone` (the version fell out of the
server's history) forces a fresh list. Failures back off exponentially (800 ms -> 30 s).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any, AsyncGenerator, AsyncIterator, Protocol, cast

from ....api import errors
from ....utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)


class ListerWatcher(Protocol):
    """What a reflector needs from a resource client (ResourceClient satisfies it)."""

    async def list(self, *, resource_version: str = "") -> Any:
        """Return an ObjectList (items, resource_version)."""

    def watch(self, *, resource_version: str = "", allow_watch_bookmarks: bool = False,
              timeout_seconds: int | None = None) -> AsyncIterator[Any]:
        """Stream Events (type, obj, resource_version) after resource_version. The watch of an
        informer that shares unchanged specs is also given share_unchanged_specs=True: an
        object whose spec is unchanged may then hold its previous event's spec object
        (ResourceClient.watch)."""


class ReflectorStore(Protocol):
    def replace(self, objs: list[Any], resource_version: str) -> None:
        """Take a full list as the new truth."""

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...


class Backoff:
    """Exponential backoff, reset after a quiet period. Upstream: wait.NewExponentialBackoffManager.

    Delays before jitter: 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30 ... seconds; a failure more
    than `reset_after` seconds after the previous one starts again at 0.8. Each delay is
    stretched by up to `jitter` (10 %) so that many reflectors do not retry in lock-step.
    """

    def __init__(self, clock: Clock, initial: float = 0.8, cap: float = 30.0, reset_after: float = 120.0,
                 jitter: float = 0.1) -> None:
        self.clock, self.initial, self.cap, self.reset_after = clock, initial, cap, reset_after
        self.jitter = jitter
        self.delay = 0.0                         # the last delay before jitter (0: none yet)
        self.last = 0.0                          # monotonic time of the last next()

    def next(self) -> float:
        """The seconds to wait before the next attempt; records one more failure."""
        now = self.clock.monotonic()
        if self.delay == 0.0 or now - self.last > self.reset_after:
            self.delay = self.initial
        else:
            self.delay = min(self.delay * 2, self.cap)
        self.last = now
        return self.delay * (1 + self.jitter * random.random())


class Reflector:
    """Mirror one resource into a store: list, then watch from the list's resourceVersion.

    Upstream: Reflector (reflector.go). `lists` counts the lists made (1 + relists), so tests
    and metrics can tell a resumed watch from a relist.
    """

    def __init__(self, name: str, lw: ListerWatcher, store: ReflectorStore, *, clock: Clock = REAL_CLOCK,
                 min_watch_timeout: float = 300.0) -> None:
        self.name = name
        self.lw = lw
        self.store = store
        self.clock = clock                       # tests drive a FakeClock
        self.min_watch_timeout = min_watch_timeout
        self.last_sync_resource_version = ""     # the newest resourceVersion the store reflects
        self.backoff = Backoff(clock)            # shared by list and watch failures; a test seam
        self.lists = 0
        self.share_unchanged_specs = False       # SharedIndexInformer.share_unchanged_specs

    async def run(self) -> None:
        """List and watch until cancelled; every failure backs off and retries.

        Upstream: Reflector.Run (reflector.go)
        """
        while True:
            try:
                await self.list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as err:            # keep reflecting; CancelledError still propagates
                log.info("reflector %s: %r; retrying", self.name, err)
                await self.clock.sleep(self.backoff.next())

    async def list_and_watch(self) -> None:
        """One list, then watches from its resourceVersion until one fails with 410 (relist).

        Upstream: ListAndWatch (reflector.go)
        """
        lst = await self.lw.list()
        self.lists += 1
        self.store.replace(lst.items, lst.resource_version)
        self.last_sync_resource_version = lst.resource_version
        while True:
            try:
                await self.watch_once()
            except errors.Gone:
                log.info("reflector %s: watch of %s expired; relisting", self.name,
                         self.last_sync_resource_version)
                return
            except asyncio.CancelledError:
                raise
            except Exception as err:            # connection dropped: resume from the same version
                log.info("reflector %s: watch failed: %r; resuming", self.name, err)
                await self.clock.sleep(self.backoff.next())

    async def watch_once(self) -> None:
        """Watch from last_sync_resource_version until the stream ends; apply each event.

        A stream that ends within a second without delivering anything backs off before the
        next watch (upstream calls it a "very short watch"), so a server that closes every
        watch at once is not hammered in a tight loop.
        """
        timeout = int(self.min_watch_timeout * (1 + random.random()))   # [min, 2·min), as upstream
        started, count = self.clock.monotonic(), 0
        share = {"share_unchanged_specs": True} if self.share_unchanged_specs else {}
        events = self.lw.watch(resource_version=self.last_sync_resource_version, allow_watch_bookmarks=True,
                               timeout_seconds=timeout, **share)
        # aclosing: a cancelled or failed watch releases its connection now, not at garbage collection
        closing = (contextlib.aclosing(cast(AsyncGenerator[Any, None], events)) if hasattr(events, "aclose")
                   else contextlib.nullcontext())
        async with closing:
            async for ev in events:
                count += 1
                self._apply(ev)
        if count == 0 and self.clock.monotonic() - started < 1.0:
            log.info("reflector %s: very short watch; backing off", self.name)
            await self.clock.sleep(self.backoff.next())

    def _apply(self, ev: Any) -> None:
        """Apply one watch event to the store; BOOKMARK only moves the resourceVersion on.

        Upstream: watchHandler (reflector.go)
        """
        if ev.type == "ADDED":
            self.store.add(ev.obj)
        elif ev.type == "MODIFIED":
            self.store.update(ev.obj)
        elif ev.type == "DELETED":
            self.store.delete(ev.obj)
        if ev.resource_version:
            self.last_sync_resource_version = ev.resource_version

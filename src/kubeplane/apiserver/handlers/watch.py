"""Watch: a chunked stream of newline-delimited JSON events.

Upstream: serveWatch (handlers/watch.go) and the cacher's filtering (cacher/cache_watcher.go).
- resourceVersion unset or "0", or sendInitialEvents=true: synthetic ADDED events for the
  current objects first; watch-list (sendInitialEvents) ends them with a BOOKMARK annotated
  `k8s.io/initial-events-end: "true"` (kubectl rollout status waits for it).
- resourceVersion=N: every change after N; a compacted N gets one ERROR event with a 410
  Status (the stream itself is a 200, as upstream).
- Selectors see transitions: an object that stops matching is DELETED for this watcher, one
  that starts matching is ADDED.
- timeoutSeconds ends the stream; without it (or with 0) the stream ends after a random time
  in [--min-request-timeout, 2 × that), 30–60 min by default, so watchers spread their
  reconnects; --min-request-timeout 0 lets such a watch run until the client leaves. With
  allowWatchBookmarks a BOOKMARK carrying the progress made goes out about every minute and
  2 s before the timeout. Both run on the server's clock, so tests drive them with a fake one.
"""
from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.resources import ResourceInfo
from ...storage.interface import Compacted, KeyValue, WatchEvent
from .. import codec
from ..objects import Obj
from ..request import Request, Response
from . import common

if TYPE_CHECKING:
    from ..server import APIServer

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Upstream's cacher sends a watcher that allows bookmarks one about every minute, and one
# 2 s before its timeout (cacheWatcher.nextBookmarkTime), so a reconnect resumes from a
# recent resourceVersion instead of one that may have been compacted meanwhile.
BOOKMARK_FREQUENCY = 60.0
BOOKMARK_BEFORE_TIMEOUT = 2.0


async def watch(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str = "") -> Response:
    """Validate the request and start the stream (errors before streaming are plain HTTP errors)."""
    common.validate_list_options(req, watch=True)
    sel = common.Selectors.from_request(req, ri)
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    rv = req.query.get("resourceVersion", "")
    after = common.parse_resource_version(rv)
    send_initial = req.flag("sendInitialEvents") if "sendInitialEvents" in req.query else None
    bookmarks = req.flag("allowWatchBookmarks")
    timeout = _timeout(req, api.options.min_request_timeout)
    started = api.clock.monotonic()          # the timeout runs from the request, as upstream's
    stream = _Stream(api, req, ri, sel, prefix, name, codec.wants_table(req.headers), bookmarks)
    # Unset and "0" start with the current state as synthetic ADDED events; watch-list asks
    # for that explicitly (sendInitialEvents=true) or declines it (false: from now on).
    initial = rv in ("", "0") if send_initial is None else send_initial
    if initial:
        kvs, rev = await api.storage.list(prefix)
        body = stream.run(rev, kvs, send_initial is True, started, timeout)
    else:
        start = api.storage.revision if rv in ("", "0") else after
        body = stream.run(start, None, False, started, timeout)
    return Response(200, body, content_type="application/json", headers=[("cache-control", "no-cache")])


def _timeout(req: Request, min_request_timeout: int) -> float:
    """Seconds until the stream ends (math.inf: never).

    Upstream: handleWatch (endpoints/handlers/get.go) — timeoutSeconds, else (unset or 0)
    minRequestTimeout × (1 + rand), so with the default 1800 a watch lasts 30–60 min; with
    --min-request-timeout 0 it has no timeout. A negative timeoutSeconds ends it at once.
    """
    value = req.query.get("timeoutSeconds", "")
    timeout = float(value) if value else 0.0       # an int64: validate_list_options parsed it
    if timeout < 0:
        return 0.0
    if timeout == 0:
        return min_request_timeout * (1 + random.random()) if min_request_timeout > 0 else math.inf
    return timeout


def _event_line(type_: str, payload: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + payload + b"}\n"


class _Stream:
    """Turns storage events into this watcher's event lines (filtered, maybe as Tables)."""

    def __init__(self, api: APIServer, req: Request, ri: ResourceInfo, sel: common.Selectors,
                 prefix: str, name: str, table: bool, bookmarks: bool = False) -> None:
        self.api, self.req, self.ri, self.sel = api, req, ri, sel
        self.prefix, self.name, self.bookmarks = prefix, name, bookmarks
        self.codec = getattr(ri, "storage_codec", None)     # custom resources: converted per batch
        self.tables = None
        # Events' objects as PartialObjectMetadata where the Accept header asks for it. Upstream's
        # watchEmbeddedEncoder sends the object itself where the transform fails (a
        # PartialObjectMetadataList asked of a watch's single objects).
        kind, self.partial = codec.wants_partial(req.headers)
        if kind != codec.PARTIAL:
            self.partial = ""
        # No selector, no name, no table or conversion: every event goes out as stored (translate).
        self.verbatim = (not table and not self.partial and not name and sel.empty and self.codec is None
                         and getattr(ri, "from_storage", None) is None)
        if table:
            from ..tables import WatchTables
            self.tables = WatchTables(ri.plural, ri.group, include_object=req.query.get("includeObject", "Metadata"),
                                      version=ri.version)

    def matches(self, obj: Obj) -> bool:
        if self.name and obj["metadata"].get("name") != self.name:
            return False
        return self.sel.empty or self.sel.matches(obj)

    def line(self, type_: str, obj: Obj, value: bytes | None) -> bytes:
        if self.tables is not None:       # columnDefinitions only on the first event, as upstream
            payload = orjson.dumps(self.tables.table(common.output_obj(self.ri, obj), now=self.api.clock.now()))
        elif self.partial:
            payload = orjson.dumps(common.as_partial_object_metadata(self.ri, obj, codec.PARTIAL, self.partial))
        else:
            payload = common.output_bytes(self.ri, obj, value)
        return _event_line(type_, payload)

    async def served(self, batch: list[WatchEvent]) -> list[WatchEvent]:
        """The events' objects as the requested version serves them (storage_codec), converted together."""
        if self.codec is None:
            return batch
        kvs = [kv for ev in batch for kv in (ev.kv, ev.prev) if kv is not None]
        done = dict(zip(map(id, kvs), await self.codec.decode(kvs, True)))
        return [WatchEvent(ev.type, done[id(ev.kv)], done[id(ev.prev)] if ev.prev is not None else None, ev.revision)
                for ev in batch]

    def bookmark(self, rev: int, initial_end: bool) -> bytes:
        meta: Obj = {"resourceVersion": str(rev)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.ri.kind, "apiVersion": self.ri.api_version, "metadata": meta}
        if self.partial:
            obj = {"kind": codec.PARTIAL, "apiVersion": self.partial, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def translate(self, ev: WatchEvent) -> bytes | None:
        """Upstream: cacheWatcher.convertToWatchEvent — selector transitions become ADDED/DELETED."""
        if self.verbatim:         # the stored bytes as they are: an old, lean version is not decoded
            return _event_line(ev.type, ev.kv.value)
        cur = self.matches(ev.kv.obj)
        if ev.type == "MODIFIED":
            prev = ev.prev is not None and self.matches(ev.prev.obj)
            if cur and prev:
                return self.line("MODIFIED", ev.kv.obj, ev.kv.value)
            if cur:
                return self.line("ADDED", ev.kv.obj, ev.kv.value)
            if prev:
                return self.line("DELETED", ev.kv.obj, ev.kv.value)
            return None
        return self.line(ev.type, ev.kv.obj, ev.kv.value) if cur else None

    async def run(self, after: int, initial: list[KeyValue] | None, initial_end: bool,
                  started: float, timeout: float) -> AsyncIterator[bytes]:
        """The stream: initial events (maybe), then changes after `after`, until the timeout.

        Events are read straight from the storage watcher (no task per event). Time is the
        server's clock: an alarm task sleeps on it until the timeout or the next bookmark and
        then stops the storage watcher; a bookmark resumes with a fresh watcher from the
        progress made (a storage watcher is only a cursor), so nothing is lost or repeated.
        """
        try:
            watcher = self.api.storage.watch(self.prefix, after)
        except Compacted:
            yield _error_line(errors.Gone(f"too old resource version: {after} ({self.api.storage.oldest_revision})"))
            return
        ticker = _Ticker(started + timeout, started, self.bookmarks)
        progress = after                     # every event up to here has been sent
        alarm: asyncio.Future[None] | None = None
        try:
            if initial is not None:
                if self.codec is not None:
                    initial = await self.codec.decode(initial, True)
                lines = [self.line("ADDED", kv.obj, kv.value) for kv in initial if self.matches(kv.obj)]
                if initial_end and self.bookmarks:
                    lines.append(self.bookmark(after, True))
                if lines:
                    yield b"".join(lines)
            else:
                yield b""                     # send the headers now: the client knows it is watching
            while True:
                reason: list[str] = []
                alarm = asyncio.ensure_future(self._alarm(ticker, watcher, reason))
                async for batch in _batches(watcher):
                    progress = batch[-1].revision
                    batch = await self.served(batch)
                    out = [line for ev in batch if (line := self.translate(ev)) is not None]
                    if out:
                        yield b"".join(out)
                alarm.cancel()
                if not reason or reason == ["deadline"]:
                    return                    # the store closed, or the timeout
                progress = _progress(watcher, progress)
                if reason == ["bookmark"]:
                    yield self.bookmark(progress, False)
                watcher = self.api.storage.watch(self.prefix, progress)   # "early": a timer's slop
        except Compacted as e:
            yield _error_line(errors.Gone(f"too old resource version: {e.requested} ({e.oldest})"))
        except errors.StatusError as e:     # a conversion failed: upstream's watcher sends it and ends
            yield _error_line(e if e.reason else errors.InternalError(e.message))
        finally:
            if alarm is not None:
                alarm.cancel()
            watcher.stop()

    async def _alarm(self, ticker: _Ticker, watcher: object, reason: list[str]) -> None:
        """Sleep until the deadline or the next bookmark, say which, and end the storage watcher."""
        clock = self.api.clock
        wake = ticker.wake()
        if wake == math.inf:                  # no timeout and no bookmarks: nothing to wake for
            await asyncio.get_running_loop().create_future()
        await clock.sleep(max(wake - clock.monotonic(), 0.0))
        now = clock.monotonic()
        if now >= ticker.deadline - 1e-9:
            reason.append("deadline")
        elif ticker.bookmark_due(now):
            reason.append("bookmark")
        else:
            reason.append("early")
        watcher.stop()  # type: ignore[attr-defined]


class _Ticker:
    """When a watcher wakes without an event: its timeout, and its bookmarks if it allows them.

    Upstream: cacheWatcher.nextBookmarkTime — now + 1 min, but no later than 2 s before the
    deadline. Example: timeoutSeconds=150 from t=0 -> bookmarks at 60 and 120, then (the next
    would be 180, capped at 148) one at 148, and the stream ends at 150.
    """

    def __init__(self, deadline: float, now: float, bookmarks: bool) -> None:
        self.deadline = deadline
        self.next_bookmark = self._next(now) if bookmarks else None

    def _next(self, now: float) -> float | None:
        t = min(now + BOOKMARK_FREQUENCY, self.deadline - BOOKMARK_BEFORE_TIMEOUT)
        return t if t > now else None

    def wake(self) -> float:
        return self.deadline if self.next_bookmark is None else min(self.deadline, self.next_bookmark)

    def bookmark_due(self, now: float) -> bool:
        if self.next_bookmark is None or now < self.next_bookmark - 1e-9:
            return False
        self.next_bookmark = self._next(now)
        return True


def _progress(watcher: object, delivered: int) -> int:
    """The revision up to which this watcher has seen every event of its prefix.

    The storage watcher knows it (its cursor passes writes to other prefixes too) when it
    exposes `progress`; otherwise the last event sent is the best we can say.
    """
    value = getattr(watcher, "progress", None)
    return max(int(value), delivered) if isinstance(value, int) else delivered


def _error_line(err: errors.StatusError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n"


async def _batches(watcher: Any) -> AsyncIterator[list[WatchEvent]]:
    """Wait for one event, then take every event already available: a burst of writes goes out
    as one chunk (one send, one client read) instead of one per event."""
    async for ev in watcher:
        yield [ev, *watcher.ready()]

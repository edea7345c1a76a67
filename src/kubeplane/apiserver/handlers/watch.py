"""Watch: a chunked stream of newline-delimited JSON events.

Upstream: serveWatch (handlers/watch.go) and the cacher's filtering (cacher/cache_watcher.go).
- resourceVersion unset or "0", or sendInitialEvents=true: synthetic ADDED events for the
  current objects first; watch-list (sendInitialEvents) ends them with a BOOKMARK annotated
  `k8s.io/initial-events-end: "true"` (kubectl rollout status waits for it).
- resourceVersion=N: every change after N; a compacted N gets one ERROR event with a 410
  Status (the stream itself is a 200, as upstream).
- Selectors see transitions: an object that stops matching is DELETED for this watcher, one
  that starts matching is ADDED.
"""
from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, AsyncIterator

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
# Upstream's --min-request-timeout is 1800 s; watches without timeoutSeconds last [1800, 3600) s.
MIN_REQUEST_TIMEOUT = 1800.0


async def watch(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str = "") -> Response:
    """Validate the request and start the stream (errors before streaming are plain HTTP errors)."""
    sel = common.Selectors.from_request(req, ri)
    prefix = ri.prefix + (f"{ns}/" if ri.namespaced and ns else "")
    rv = req.query.get("resourceVersion", "")
    send_initial = req.flag("sendInitialEvents")
    if send_initial and (req.query.get("resourceVersionMatch") != "NotOlderThan" or not req.flag("allowWatchBookmarks")):
        raise errors.Invalid("meta.k8s.io", "ListOptions", "", [errors.forbidden(
            "sendInitialEvents", "sendInitialEvents is forbidden for watch unless resourceVersionMatch is "
            "NotOlderThan and allowWatchBookmarks is true")])
    timeout = _timeout(req)
    stream = _Stream(api, req, ri, sel, prefix, name, codec.wants_table(req.headers))
    if rv in ("", "0") or send_initial:
        kvs, rev = await api.storage.list(prefix)
        body = stream.run(rev, kvs, send_initial, timeout)
    else:
        try:
            after = int(rv)
        except ValueError:
            raise errors.BadRequest(f"invalid resourceVersion: {rv!r}") from None
        body = stream.run(after, None, False, timeout)
    return Response(200, body, content_type="application/json", headers=[("cache-control", "no-cache")])


def _timeout(req: Request) -> float:
    value = req.query.get("timeoutSeconds", "")
    if value:
        try:
            return max(float(value), 0.0)
        except ValueError:
            raise errors.BadRequest(f"invalid timeoutSeconds: {value!r}") from None
    return MIN_REQUEST_TIMEOUT * (1 + random.random())


class _Stream:
    """Turns storage events into this watcher's event lines (filtered, maybe as Tables)."""

    def __init__(self, api: APIServer, req: Request, ri: ResourceInfo, sel: common.Selectors,
                 prefix: str, name: str, table: bool) -> None:
        self.api, self.req, self.ri, self.sel = api, req, ri, sel
        self.prefix, self.name = prefix, name
        self.tables = None
        if table:
            from ..tables import WatchTables
            self.tables = WatchTables(ri.plural, ri.group, include_object=req.query.get("includeObject", "Metadata"))

    def matches(self, obj: Obj) -> bool:
        if self.name and obj["metadata"].get("name") != self.name:
            return False
        return self.sel.empty or self.sel.matches(obj)

    def line(self, type_: str, obj: Obj, value: bytes | None) -> bytes:
        if self.tables is not None:       # columnDefinitions only on the first event, as upstream
            payload = orjson.dumps(self.tables.table(common.output_obj(self.ri, obj), now=self.api.clock.now()))
        else:
            payload = common.output_bytes(self.ri, obj, value)
        return b'{"type":"' + type_.encode() + b'","object":' + payload + b"}\n"

    def bookmark(self, rev: int, initial_end: bool) -> bytes:
        meta: Obj = {"resourceVersion": str(rev)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.ri.kind, "apiVersion": self.ri.api_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def translate(self, ev: WatchEvent) -> bytes | None:
        """Upstream: cacheWatcher.convertToWatchEvent — selector transitions become ADDED/DELETED."""
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
                  timeout: float) -> AsyncIterator[bytes]:
        try:
            watcher = self.api.storage.watch(self.prefix, after)
        except Compacted:
            yield _error_line(errors.Gone(f"too old resource version: {after} ({self.api.storage.oldest_revision})"))
            return
        try:
            if initial is not None:
                lines = [self.line("ADDED", kv.obj, kv.value) for kv in initial if self.matches(kv.obj)]
                if initial_end:
                    lines.append(self.bookmark(after, True))
                if lines:
                    yield b"".join(lines)
            else:
                yield b""                     # send the headers now: the client knows it is watching
            async with asyncio.timeout(timeout):
                async for batch in _batches(watcher):
                    out = [line for ev in batch if (line := self.translate(ev)) is not None]
                    if out:
                        yield b"".join(out)
        except TimeoutError:
            return
        except Compacted as e:
            yield _error_line(errors.Gone(f"too old resource version: {e.requested} ({e.oldest})"))
        finally:
            watcher.stop()


async def _batches(watcher: AsyncIterator[WatchEvent] | object) -> AsyncIterator[list[WatchEvent]]:
    """Group events that are already waiting, so a burst goes out in one chunk."""
    get_batch = getattr(watcher, "next_batch", None)
    if get_batch is not None:
        while True:
            batch = await get_batch()
            if not batch:
                return
            yield batch
    else:
        async for ev in watcher:  # type: ignore[attr-defined]
            yield [ev]


def _error_line(err: errors.StatusError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n"

"""The HTTP front end: an ASGI adapter from uvicorn to APIServer.handle.

Bodies are read whole (capped at 3 MiB, as upstream); streamed responses (watches) are sent
chunk by chunk and stop as soon as the client goes away.

Nothing leaves the process before it is durable: a response, and each watch chunk, waits until
storage has committed every write made so far (storage commits in batches; the in-process
components see writes at once, see storage/sqlite.py).
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from ..api import errors
from ..storage.interface import Storage, StorageError
from .codec import MAX_BODY
from .request import Request, Response
from .server import APIServer, status_response

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ASGIApp:
    def __init__(self, api: APIServer) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body, too_large = await _read_body(receive)
        req = Request.build(scope["method"], scope["path"], scope["query_string"].decode("latin-1"), headers, body)
        if too_large:
            resp = status_response(errors.RequestEntityTooLarge())
        else:
            resp = await self.api.handle(req)
        try:
            await self.api.storage.wait_committed(self.api.storage.revision)
        except StorageError as e:
            aclose = getattr(resp.body, "aclose", None)       # a watch stream: end it
            if aclose is not None:
                await aclose()
            resp = status_response(errors.InternalError(str(e)))
        await _send_response(resp, send, receive, self.api.storage, head=scope["method"] == "HEAD")


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size <= MAX_BODY + 1:
            chunks.append(chunk)
        if not msg.get("more_body"):
            break
    return b"".join(chunks), size > MAX_BODY


def _headers(resp: Response) -> list[tuple[bytes, bytes]]:
    out = [(b"content-type", resp.content_type.encode())]
    out.extend((k.encode(), v.encode()) for k, v in resp.headers)
    return out


async def _send_response(resp: Response, send: Send, receive: Receive, storage: Storage,
                         head: bool = False) -> None:
    await send({"type": "http.response.start", "status": resp.status, "headers": _headers(resp)})
    if isinstance(resp.body, (bytes, bytearray)):
        await send({"type": "http.response.body", "body": b"" if head else bytes(resp.body)})
        return
    await _stream(resp, send, receive, storage)


async def _stream(resp: Response, send: Send, receive: Receive, storage: Storage) -> None:
    """Send the async body until it ends or the client disconnects (which cancels it)."""
    stream = resp.body
    assert not isinstance(stream, (bytes, bytearray))

    async def pump() -> None:
        async for chunk in stream:
            await storage.wait_committed(storage.revision)     # the chunk's events are durable
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    pump_task = asyncio.ensure_future(pump())
    watch_task = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({pump_task, watch_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (pump_task, watch_task):
            t.cancel()
        await asyncio.gather(pump_task, watch_task, return_exceptions=True)
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if pump_task.done() and not pump_task.cancelled() and pump_task.exception() is None:
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:   # the client went away at the same moment: nothing to tell it
            pass

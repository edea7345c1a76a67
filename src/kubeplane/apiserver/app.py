"""The HTTP front end: an ASGI adapter from uvicorn to the API server, with upstream's filters.

Each request goes through upstream's handler chain (DefaultBuildHandlerChain, filters/):
1. the request deadline: --request-timeout, or the client's shorter ?timeout= (a bad value is
   a 400); past it the request is cancelled and answered 504 (filters/timeout.py);
2. authentication (APIServer.authenticate; 401);
3. the in-flight limit: --max-requests-inflight / --max-mutating-requests-inflight, 429 with
   Retry-After (filters/maxinflight.py);
4. the body is read (capped at 3 MiB, as upstream: 413) and the request routed
   (APIServer.route_trusted).
Long-running requests (watch, pods/log, ...; filters/longrunning.py) skip the deadline and the
in-flight limit, as upstream. The in-process components call route_trusted directly and meet
none of this (see filters/__init__.py).

Nothing leaves the process before it is durable: a response, and each watch chunk, waits until
storage has committed every write made so far (storage commits in batches; the in-process
components see writes at once, see storage/sqlite.py). That wait is inside the deadline and
holds the in-flight slot; sending the response does not (a client that does not read cannot
pin a slot: the limit counts the server's work, not the client's reading).

Streamed responses (watches) are sent chunk by chunk and stop as soon as the client goes away.

Two entries: ASGI (__call__), and `direct` for a request the protocol read whole (serving.py
Exchange; the same filters, without ASGI's per-request objects), which answers through ASGI's
cycle only when it must (HEAD, 204/304, a streamed body, a paused writer).
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ..api import errors
from ..storage.interface import Storage, StorageError
from . import metrics
from .codec import MAX_BODY
from .filters.longrunning import is_long_running
from .filters.maxinflight import RETRY_AFTER, MaxInFlightLimit
from .filters.timeout import INVALID_TIMEOUT_IN_URL, Deadlines, request_timeout, timeout_error
from .request import Request, RequestInfo, Response, parse_request_info
from .authentication.x509 import X509_SCOPE_KEY
from .server import APIServer, status_response
from .serving import Exchange, send_whole
from .upgrade import HIJACK_SCOPE_KEY

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ASGIApp:
    def __init__(self, api: APIServer) -> None:
        self.api = api
        opts = api.options
        self.inflight = MaxInFlightLimit(opts.max_requests_inflight, opts.max_mutating_requests_inflight,
                                         clock=api.clock, publish=metrics.set_inflight)
        self.deadlines = Deadlines(api.clock)
        # Waiting for a commit is not a storage request: straight to the store, not through the
        # metrics' wrapper (a watch chunk checks it for every watcher of every event).
        self.storage = metrics.uninstrumented(api.storage)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        req = Request.build(scope["method"], scope["path"], scope["query_string"].decode("latin-1"), headers)
        req.raw_headers = scope["headers"]
        req.x509 = scope.get(X509_SCOPE_KEY)            # the connection's client certificate (serving.py)
        # An upgrade request's means to take the connection over (upgrade.py). The request keeps
        # its deadline and an in-flight slot (unless long-running) until its handler switches
        # protocols; the session then runs on its own, as upstream's hijacked connections, so
        # Upgrade headers buy a client no way around the limits.
        req.hijack = scope.get(HIJACK_SCOPE_KEY)
        if self.api.audit is not None and (client := scope.get("client")):      # the audit event's sourceIPs
            req.remote_addr = client[0]
        info = parse_request_info(req)
        body = Body(receive)
        if is_long_running(info):
            if info.subresource == "proxy" and (client := scope.get("client")):   # X-Forwarded-For
                req.remote_addr = client[0]
            resp = await self.serve(req, info, body)
        else:
            resp = await self.serve_with_deadline(req, info, body)
        if body.streamed is not None:               # a proxied body (handlers/proxy.py): it reads the channel
            body.complete, receive = body.streamed.complete, body.streamed.receive
        if not body.complete and _has_body(headers):
            # Answered before the body was read to its end (401, 429, 413, 504, ...): close the
            # connection rather than read what is left, as Go's server does for a large rest,
            # so a client trickling a body cannot hold the connection.
            resp.headers.append(("connection", "close"))
        await _send_response(resp, send, receive, self.storage, head=scope["method"] == "HEAD")

    def direct(self, ex: Exchange) -> Coroutine[Any, Any, None] | None:
        """The HTTP protocol's entry for a request it read whole (serving.py Exchange): the same
        filters and routing as __call__, without ASGI's scope, messages and cycle; None for a
        long-running request (watch, log, exec, proxy, ...), which the protocol serves through
        ASGI. A body over MAX_BODY goes there too (its 413)."""
        headers = {_NAMES.get(k) or k.decode("latin-1"): v.decode("latin-1") for k, v in ex.headers}
        req = Request.build(ex.method, ex.path, ex.query_string, headers, ex.body)
        info = parse_request_info(req)
        if is_long_running(info) or len(ex.body) > MAX_BODY:
            return None
        req.raw_headers = ex.headers
        req.x509 = ex.x509
        if self.api.audit is not None and (client := ex.proto.client):      # the audit event's sourceIPs
            req.remote_addr = client[0]
        ex.at_once = _at_once(req, info)
        return self._direct(ex, req, info)

    def adopt(self, task: asyncio.Task[None]) -> None:
        """A direct request's first step ran outside a task (serving.py HttpToolsProtocol
        ._run_direct) and goes on in `task`: its deadline is that task's."""
        self.deadlines.bind(task)

    async def _direct(self, ex: Exchange, req: Request, info: RequestInfo) -> None:
        resp = await self.serve_with_deadline(req, info, None)
        head = req.method == "HEAD"
        if not head and isinstance(resp.body, (bytes, bytearray)) and ex.write_whole(resp.status, _headers(resp), resp.body):
            return
        send, receive = ex.channel()           # HEAD, 204/304, a streamed body, a paused writer
        await _send_response(resp, send, receive, self.storage, head=head)

    async def serve_with_deadline(self, req: Request, info: RequestInfo, body: Body | None) -> Response:
        """Serve within the request's deadline, authenticated, holding an in-flight slot; past
        the deadline, the 504 alone.

        Upstream: WithRequestDeadline + WithTimeoutForNonLongRunningRequests, then
        WithAuthentication and WithMaxInFlightLimit. Written out in one coroutine (each await
        of a further one costs the hot path a frame and a resumption per request).
        """
        try:
            seconds = request_timeout(req, self.api.options.request_timeout)
            await self.api.authenticate(req)
        except errors.StatusError as e:          # 400 for a bad ?timeout=, 401, 403 (impersonation)
            return await self.refused(req, info, e)
        try:
            kind = self.inflight.acquire(req, info.verb or req.method.lower())
        except errors.StatusError as e:          # 429
            metrics.record_termination(req, info, e.code)
            resp = status_response(e)
            resp.headers.append(("retry-after", str(RETRY_AFTER)))
            return await self.audited(req, info, resp)
        try:
            with self.deadlines.deadline(seconds):
                return await self.route(req, info, body)
        except TimeoutError:
            metrics.record_termination(req, info, 504)
            return await self.audited(req, info, status_response(timeout_error()))
        finally:
            self.inflight.release(kind)

    async def serve(self, req: Request, info: RequestInfo, body: Body) -> Response:
        """A long-running request (watch, pods/log): authenticated, no deadline, no slot."""
        try:
            await self.api.authenticate(req)
        except errors.StatusError as e:
            return await self.refused(req, info, e)
        return await self.route(req, info, body)

    async def refused(self, req: Request, info: RequestInfo, e: errors.StatusError) -> Response:
        """The refusal's Status, audited when auditing is on (audit/filter.py): a 401 and a bad
        ?timeout= (400) as upstream's filters outside its audit filter do; an impersonation
        refused (403, or 400 for malformed headers) as one answered inside it, with the requester
        as the event's user (upstream's WithImpersonation runs within WithAudit)."""
        resp = status_response(e)
        audit = self.api.audit
        if audit is None:
            return resp
        if e.code == 401:
            await audit.failed_authentication(req, info, resp)
        elif e.code == 400 and e.message.startswith(INVALID_TIMEOUT_IN_URL):
            await audit.failed_request(req, info, resp, e.message)
        elif e.code in (400, 403):
            await audit.answered_outside(req, info, resp)
        return resp

    async def audited(self, req: Request, info: RequestInfo, resp: Response) -> Response:
        """resp, audited when auditing is on: an answer upstream gives inside its audit filter
        (429, 413, 504; audit/filter.py Auditor.answered_outside)."""
        if self.api.audit is not None:
            await self.api.audit.answered_outside(req, info, resp)
        return resp

    async def route(self, req: Request, info: RequestInfo, body: Body | None) -> Response:
        """Read the body (None: req.body is the whole of it already), route the request, and wait
        until what it wrote is durable."""
        if body is not None:
            if info.subresource == "proxy" and info.is_resource_request:     # streamed to the backend
                from .handlers.proxy import StreamedBody
                req.body_stream = body.streamed = StreamedBody(body.receive, _has_body(req.headers))
                return await self.api.route_trusted(req, info)
            data = await body.read()
            if data is None:
                return await self.audited(req, info, status_response(errors.RequestEntityTooLarge()))
            req.body = data
        resp = await self.api.route_trusted(req, info)
        storage = self.storage
        if storage.committed_revision < storage.revision:
            resp = await self.durable(resp)
        return resp

    async def durable(self, resp: Response) -> Response:
        """resp once every write made so far is committed; a 500 if storage failed."""
        storage = self.storage
        try:
            await storage.wait_committed(storage.revision)
        except StorageError as e:
            aclose = getattr(resp.body, "aclose", None)       # a watch stream: end it
            if aclose is not None:
                await aclose()
            resp = status_response(errors.InternalError(str(e)))
        return resp


class Body:
    """The request body, read once; `complete` says whether it was read to its end."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.complete = False
        self.streamed: Any = None           # a proxied request's StreamedBody, which reads instead

    async def read(self) -> bytes | None:
        """The whole body, or None past MAX_BODY (3 MiB, as upstream; the rest is not read)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await self.receive()
            if msg["type"] == "http.disconnect":
                break
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                return None
            chunks.append(chunk)
            if not msg.get("more_body"):
                self.complete = True
                break
        return b"".join(chunks)


# The usual header names (lower-cased by uvicorn) as str, without decoding them per request.
_NAMES = {name.encode(): name for name in (
    "host", "user-agent", "accept", "accept-encoding", "authorization", "content-type", "content-length",
    "connection", "kubectl-command", "kubectl-session", "x-forwarded-for", "audit-id", "x-request-id",
    "impersonate-user", "impersonate-group", "impersonate-uid", "if-none-match", "if-match", "traceparent")}

AT_ONCE_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})


def _at_once(req: Request, info: RequestInfo) -> bool:
    """Whether a request's first step may run outside a task (serving.py
    HttpToolsProtocol._run_direct): reads of core/v1 objects (a kubelet's GET of its pods and
    node, `kubectl get pods`) and the version and health paths, which call nothing that needs a
    current task. Not: writes (admission webhooks), other groups (the aggregator, CRD
    conversion webhooks, the metrics API reach out through aiohttp, whose timeouts need one),
    subresources (proxies)."""
    if req.method != "GET":
        return False
    if info.is_resource_request:
        return info.api_prefix == "api" and not info.subresource and info.verb in ("get", "list")
    return req.path in AT_ONCE_PATHS


def _has_body(headers: dict[str, str]) -> bool:
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def _headers(resp: Response) -> list[tuple[bytes, bytes]]:
    out = [(b"content-type", resp.content_type.encode())] if resp.content_type else []   # 304/406: none
    out.extend((k.encode(), v.encode()) for k, v in resp.headers)
    return out


async def _send_response(resp: Response, send: Send, receive: Receive, storage: Storage,
                         head: bool = False) -> None:
    if resp.status == 101:            # an upgraded connection, hijacked and answered by its handler
        return
    if isinstance(resp.body, (bytes, bytearray)) and not head and send_whole(send, resp.status, _headers(resp), resp.body):
        return
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
            if storage.committed_revision < storage.revision:
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
        with contextlib.suppress(Exception):   # the client went away at the same moment: nothing to tell it
            await send({"type": "http.response.body", "body": b"", "more_body": False})

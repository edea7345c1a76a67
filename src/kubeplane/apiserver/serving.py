"""The HTTPS server's connection limits, as upstream's http.Server: header timeout, idle
timeout, header size, TLS handshake timeout.

Upstream: SecureServingInfo.Serve (apiserver/pkg/server/secure_serving.go) sets
ReadHeaderTimeout 32 s ("just shy of requestTimeoutUpperBound"), IdleTimeout 90 s (client-go's
keep-alive) and MaxHeaderBytes 1 MiB; Go's server bounds the TLS handshake by the same 32 s.

uvicorn has no header timeout: a connection that sends one header byte a second is kept open
forever, and its headers may grow without bound (httptools buffers them). So HttpToolsProtocol
below adds what Go's server does, and nothing else:
- from the moment a connection is made (after its TLS handshake), and from the first byte of
  each further request on a kept-alive connection, the complete headers must arrive within
  `read_header_timeout`, or the connection is closed without an answer (as Go's);
- more than `max_header_bytes` + 4 KiB before the end of the headers is answered with Go's
  "431 Request Header Fields Too Large" and the connection is closed;
- an idle kept-alive connection is closed after `idle_timeout` (uvicorn's keep-alive timer).
It also hands the TLS client certificate to the application: verified during the handshake
(uvicorn's ssl_cert_reqs/ssl_ca_certs: --client-ca-file), converted to its user once per
connection (authentication/x509.py identity_of) and put in each request's scope under
X509_SCOPE_KEY, since uvicorn's scope has no TLS extension.
Bodies are bounded elsewhere: by size in app.py, by time by the request timeout
(filters/timeout.py), as upstream (whose server sets no ReadTimeout).

Most requests skip ASGI (the "direct" path, ~80k instructions less per request than uvicorn's
cycle, scope dict, Event, task and messages): a request without Upgrade or Expect, whose body
came in the same read as its headers, on an idle connection, is handed to the application's
`direct` entry (app.py ASGIApp.direct) as an Exchange, and answered with one transport write.
The application declines long-running requests (watch, log, exec, proxy), which take uvicorn's
ASGI path as before, as does everything else above (upgrades, bodies spread over reads, 100
Continue, pipelined requests behind a busy one). Core reads run their first step outside a task
(see HttpToolsProtocol._run_direct).

The TLS handshake happens before uvicorn's protocol sees the connection; asyncio and uvloop
bound it by `ssl_handshake_timeout` (60 s unless given), which uvicorn does not pass. Server
passes upstream's 32 s, so a client that opens TCP and sends nothing (or dribbles its
ClientHello) is dropped then.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import re
import socket
import sys
import urllib.parse
from collections.abc import Callable, Coroutine
from itertools import chain
from dataclasses import dataclass
from typing import Any

import httptools
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol as _UvicornHttpToolsProtocol,
    RequestResponseCycle as _UvicornCycle,
)

from . import upgrade
from .authentication.x509 import X509_SCOPE_KEY, X509Identity, identity_of

log = logging.getLogger("uvicorn.error")

HEADER_SLACK = 4096          # Go reads MaxHeaderBytes + 4096 (initialReadLimitSize) before a 431
_TOO_LARGE = b"431 Request Header Fields Too Large"


@dataclass(frozen=True, slots=True)
class ServingOptions:
    read_header_timeout: float = 32.0       # seconds; upstream's ReadHeaderTimeout
    idle_timeout: float = 90.0              # seconds; upstream's IdleTimeout
    max_header_bytes: int = 1 << 20         # upstream's MaxHeaderBytes
    tls_handshake_timeout: float = 32.0     # Go: the smallest of the server's read timeouts

    def protocol(self) -> Callable[..., HttpToolsProtocol]:
        """The protocol factory to pass as uvicorn.Config(http=...)."""
        return functools.partial(HttpToolsProtocol, serving=self)


class HeadersTooLarge(Exception):
    """Raised from a parser callback to stop parsing a request whose headers are too large."""


class CoalescingTransport:
    """A connection's transport that sends a response's head and body in one write.

    uvicorn writes the status line and headers, then the body, each with its own
    transport.write: over TLS that is two records and two send() calls per response, ~10 % of
    the server's CPU for small answers (py-spy, benchmarks/api_cpu.py). Here the first write
    is held until the next one, or until the event loop's next turn (call_soon: a streamed
    response's head, or a lone write, goes out then). Everything else is the transport's; close
    and abort send what is held first.
    """

    __slots__ = ("_transport", "_loop", "_held")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write_now(self, data: bytes) -> None:
        """Write data at once, after what is held (a whole response needs no coalescing)."""
        held = self._held
        if held is not None:
            self._held = None
            data = held + data
        self._transport.write(data)

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._held = None
            self._transport.write(held + data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    # What the protocol and its flow control call per request, delegated without __getattr__
    # (whose failed ordinary lookup formats an AttributeError first: ~6k instructions a request).
    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HttpToolsProtocol(_UvicornHttpToolsProtocol):
    """uvicorn's httptools protocol with Go's header timeout and header size limit.

    Header bytes are counted twice: as parsed (the URL and each header as httptools handed them
    over, "name: value\r\n": exact, and checked once they are complete, before the request
    starts), and as received while the headers are incomplete (httptools buffers a header until
    it ends, so one endless header is caught there). Counting once per request instead of in a
    callback per header keeps every request's parsing at uvicorn's own cost.

    The header deadline is a number, not a timer per request (arming and cancelling a uvloop
    timer costs ~3 µs, a few per cent of a GET): one timer per connection, armed for the
    deadline and left alone when the headers arrive, checks the current deadline when it fires
    and re-arms for it (so a busy kept-alive connection sees one timer callback every 32 s).
    The idle deadline between requests is kept the same way, instead of uvicorn's keep-alive
    timer armed after every response and cancelled by the next request's first bytes.
    """

    def __init__(self, *args: Any, serving: ServingOptions, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.serving = serving
        self.max_header_bytes = serving.max_header_bytes + HEADER_SLACK
        self.timeout_keep_alive = serving.idle_timeout    # type: ignore[assignment]  # a float is fine for call_later
        self.header_timer: asyncio.TimerHandle | None = None
        self.header_deadline: float | None = None      # loop time; None: not reading headers
        self.idle_timer: asyncio.TimerHandle | None = None
        self.idle_deadline: float | None = None        # loop time; None: not idle between requests
        self.received_header_bytes = 0          # raw bytes since this request's headers began
        self.reading = 0                        # the size of the read being parsed
        self.headers_too_large = False
        self.x509: X509Identity | None = None    # the connection's verified client certificate
        self.upgrade_tail: bytearray | None = None    # an upgrade request's bytes after its headers (upgrade.py)
        # The application's direct entry (app.py ASGIApp.direct): ordinary requests skip ASGI.
        self.direct: Callable[[Exchange], Coroutine[Any, Any, None] | None] | None = getattr(self.app, "direct", None)
        if self.access_log or self.root_path or self.limit_concurrency is not None:
            self.direct = None                # uvicorn's own handling of these goes through its cycle
        self.direct_body: list[bytes] | None = None   # a direct request's body parts, until it is complete
        self.adopt: Callable[[asyncio.Task[None]], None] | None = getattr(self.app, "adopt", None)
        self.ready: tuple[Exchange, Coroutine[Any, Any, None]] | None = None   # to run after this read

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self.x509 = identity_of(ssl_object)
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
        self._start_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        cycle: Any = self.cycle              # uvicorn's, or an Exchange (on_message_complete)
        if type(cycle) is Exchange:
            if not cycle.response_complete:
                cycle.disconnected = True
            self.cycle = cycle.cycle          # type: ignore[assignment]  # uvicorn's, if it answers through one
        self.header_deadline = self.idle_deadline = None
        for timer in (self.header_timer, self.idle_timer):
            if timer is not None:
                timer.cancel()
        self.header_timer = self.idle_timer = None
        super().connection_lost(exc)

    def _unset_keepalive_if_required(self) -> None:
        """Data arrived (uvicorn calls this first in data_received): no longer idle."""
        self.idle_deadline = None

    def on_response_complete(self) -> None:
        """uvicorn's, with the idle deadline in place of its keep-alive timer per response."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        if self.flow.read_paused:
            self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self.idle_deadline = self.loop.time() + self.timeout_keep_alive
            if self.idle_timer is None:
                self.idle_timer = self.loop.call_at(self.idle_deadline, self._check_idle_deadline)

    def _check_idle_deadline(self) -> None:
        self.idle_timer = None
        if self.idle_deadline is None or self.transport.is_closing():
            return                                   # busy: re-armed by the next response
        if self.loop.time() < self.idle_deadline:
            self.idle_timer = self.loop.call_at(self.idle_deadline, self._check_idle_deadline)
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.upgrade_tail is not None:
            upgrade.hold(self, data)
            return
        self.idle_deadline = None          # uvicorn's data_received, keeping what follows an upgrade
        self.reading = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as e:
            upgrade.upgraded(self, data, e)
        except httptools.HttpParserError:
            if self.ready is not None:                 # a request before the bad one: dropped, as the connection
                self.ready[1].close()
                self.ready = None
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        if self.direct_body is not None:               # the body did not come with its headers
            self._start_asgi_cycle(more_body=True)
            if len(self.cycle.body) > HIGH_WATER_LIMIT:
                self.flow.pause_reading()
        if self.header_deadline is not None:            # still reading a request's headers
            if not self.header_deadline:                # begun in this read: from now (on_message_begin)
                self._arm_header_deadline()
            self.received_header_bytes += len(data)
            if self.received_header_bytes > self.max_header_bytes:
                self._reject_too_large()
        if self.ready is not None:                     # a request read whole (on_message_complete)
            ex, run = self.ready
            self.ready = None
            if self.transport._transport.is_closing():   # type: ignore[attr-defined]  # CoalescingTransport's
                run.close()
            else:
                self._run_direct(ex, run)

    def on_message_begin(self) -> None:
        """uvicorn's, without its ASGI scope: built only for a request served through ASGI."""
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self.scope = None                 # type: ignore[assignment]
        if self.header_deadline is None:                # a further request on a kept-alive connection
            self.received_header_bytes = 0
            self.header_deadline = 0.0                  # armed by data_received if the headers end in a later read

    def on_headers_complete(self) -> None:
        self.header_deadline = None
        headers = self.headers                  # uvicorn's (name, value) pairs, as received
        # The parsed headers are no longer than the raw bytes they came in: counted only when
        # those (this read and the earlier ones of these headers) could be too many.
        if (self.received_header_bytes + self.reading > self.max_header_bytes
                and len(self.url) + 4 * len(headers) + sum(map(len, chain.from_iterable(headers))) > self.max_header_bytes):
            self.headers_too_large = True
            raise HeadersTooLarge              # httptools stops; uvicorn calls send_400_response
        if self.parser.should_upgrade():
            self.scope = self._asgi_scope()
            upgrade.offer(self)               # the handler may take the connection over (upgrade.py)
            _UvicornHttpToolsProtocol.on_headers_complete(self)
            self.cycle.keep_alive = False     # answered as any request: then closed (no HTTP follows)
            return
        cycle = self.cycle
        if (self.direct is not None and not self.expect_100_continue
                and (cycle is None or cycle.response_complete)):
            self.direct_body = []             # served directly if its body is in this read (on_message_complete)
            return
        self.scope = self._asgi_scope()
        _UvicornHttpToolsProtocol.on_headers_complete(self)

    def on_body(self, body: bytes) -> None:
        if self.direct_body is not None:
            self.direct_body.append(body)     # at most what one read brought (data_received)
        else:
            _UvicornHttpToolsProtocol.on_body(self, body)

    def on_message_complete(self) -> None:
        parts = self.direct_body
        if parts is None:
            _UvicornHttpToolsProtocol.on_message_complete(self)
            return
        self.direct_body = None
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        parser = self.parser
        # uvicorn's keep-alive: never for HTTP/1.0. llhttp keeps a 1.0 request alive only with a
        # Connection header, so without one the version (a formatted string) need not be read.
        keep_alive = parser.should_keep_alive()
        if keep_alive:
            for name, _ in self.headers:
                if name == b"connection":
                    keep_alive = parser.get_http_version() != "1.0"
                    break
        method = parser.get_method().decode("ascii")
        url = httptools.parse_url(self.url)
        path = url.path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        query = url.query
        ex = Exchange(self, method, path, query.decode("latin-1") if query else "", body, keep_alive)
        try:
            run = self.direct(ex)              # type: ignore[misc]
        except Exception:                      # not here, inside the parser: ASGI's run_asgi answers it
            run = None
        if run is None:                        # not for the direct path: ASGI, with the body read
            self.direct_body = [body]
            self._start_asgi_cycle(more_body=False)
            return
        self.cycle = ex                        # type: ignore[assignment]
        self.ready = (ex, run)                 # run by data_received once the parser is done with this read

    def _run_direct(self, ex: Exchange, run: Coroutine[Any, Any, None]) -> None:
        """Run the application's direct handler in a task of its own, as uvicorn runs its ASGI
        app; or, for a request the application marked `at_once`, its first step right here,
        outside a task (a GET of a pod answers in that step: no task, no loop turn), going on in
        a task only if it has to wait, with its deadlines bound to it (`adopt`). The first step
        runs in a copy of the context, which the task goes on in, as a task's own would be.
        The application marks only requests whose first step calls nothing that needs a current
        task (aiohttp's timeouts do: webhooks, the aggregator, proxies), as Python 3.12's eager
        tasks would make safe for all.

        As uvicorn's run_asgi, an exception is logged and answered 500 (or the connection closed
        if the answer had begun).
        """
        if not ex.at_once:
            task = self.loop.create_task(run)
            task.add_done_callback(functools.partial(self._direct_done, ex))
            self.tasks.add(task)
            return
        ctx = contextvars.copy_context()
        try:
            waiting = ctx.run(run.send, None)
        except StopIteration:
            return
        except BaseException as exc:
            self._direct_failed(ex, exc)
            if not isinstance(exc, Exception):
                raise
            return
        task = self.loop.create_task(_go_on(self, ex, run, waiting), context=ctx)
        if self.adopt is not None:
            self.adopt(task)
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def _direct_done(self, ex: Exchange, task: asyncio.Task[None]) -> None:
        """A direct handler's task ended: a failure is handled as uvicorn's run_asgi would (a
        done callback rather than a wrapping coroutine: one frame fewer at every resumption)."""
        self.tasks.discard(task)
        if task.cancelled():
            self._direct_failed(ex, asyncio.CancelledError())
        elif (exc := task.exception()) is not None:
            self._direct_failed(ex, exc)

    def _direct_failed(self, ex: Exchange, exc: BaseException) -> None:
        self.logger.error("Exception in ASGI application\n", exc_info=exc)
        cycle = ex.cycle
        if cycle is not None:
            if not cycle.response_started:
                task = self.loop.create_task(cycle.send_500_response())
                task.add_done_callback(self.tasks.discard)
                self.tasks.add(task)
            else:
                self.transport.close()
        elif not ex.response_complete and not ex.disconnected:
            ex.write_whole(500, [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")],
                           b"Internal Server Error")

    def _start_asgi_cycle(self, more_body: bool) -> None:
        """Serve the current request through ASGI after all, with the body parts read so far."""
        parts, self.direct_body = self.direct_body, None
        self.scope = self._asgi_scope()
        _UvicornHttpToolsProtocol.on_headers_complete(self)
        cycle = self.cycle
        if parts:
            cycle.body += b"".join(parts)
        cycle.more_body = more_body
        cycle.message_event.set()

    def _asgi_scope(self) -> Any:
        """uvicorn's scope (its on_message_begin), with the connection's client certificate."""
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "root_path": self.root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
        }
        if self.x509 is not None:
            scope[X509_SCOPE_KEY] = self.x509
        return scope

    def _should_upgrade(self) -> bool:
        """Never uvicorn's own WebSocket protocol (were `websockets` or `wsproto` installed, with
        ws="auto"): every upgrade request reaches the application (upgrade.py)."""
        return False

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers a parser error with 400; headers stopped by on_headers_complete get Go's 431."""
        if self.headers_too_large:
            self._reject_too_large()
        else:
            super().send_400_response(msg)

    def _start_header_deadline(self) -> None:
        self.received_header_bytes = 0
        self._arm_header_deadline()

    def _arm_header_deadline(self) -> None:
        self.header_deadline = self.loop.time() + self.serving.read_header_timeout
        if self.header_timer is None:
            self.header_timer = self.loop.call_at(self.header_deadline, self._check_header_deadline)

    def _check_header_deadline(self) -> None:
        self.header_timer = None
        if self.header_deadline is None or self.transport.is_closing():
            return                                   # headers complete: re-armed by the next request
        if self.loop.time() < self.header_deadline:
            self.header_timer = self.loop.call_at(self.header_deadline, self._check_header_deadline)
        else:
            self.transport.close()

    def _reject_too_large(self) -> None:
        """Go's answer: 431, plain text, and the connection closed."""
        self.header_deadline = None
        if not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 " + _TOO_LARGE + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                 b"Connection: close\r\n\r\n" + _TOO_LARGE)
            self.transport.close()


class Server(uvicorn.Server):
    """uvicorn's server, listening with a TLS handshake timeout (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, *, serving: ServingOptions | None = None) -> None:
        super().__init__(config)
        self.serving = serving or ServingOptions()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's Server.startup for a host and port or for sockets bound by the caller (what
        `up` uses), with ssl_handshake_timeout; a file descriptor or a Unix socket takes uvicorn's
        own path."""
        config = self.config
        if config.fd is not None or config.uds is not None:
            await super().startup(sockets)
            return
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop)

        loop = asyncio.get_running_loop()
        handshake = self.serving.tls_handshake_timeout if config.ssl else None
        try:
            if sockets is not None:
                self.servers = [await loop.create_server(create_protocol, sock=sock, backlog=config.backlog,
                                                         ssl=config.ssl, ssl_handshake_timeout=handshake)
                                for sock in sockets]
            else:
                self.servers = [await loop.create_server(create_protocol, host=config.host, port=config.port,
                                                         backlog=config.backlog, ssl=config.ssl,
                                                         ssl_handshake_timeout=handshake)]
        except OSError as exc:                   # as uvicorn: log it and exit
            log.error(exc)
            await self.lifespan.shutdown()
            sys.exit(STARTUP_FAILURE)
        self.started = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        upgrade.close_all()           # taken-over connections (exec, port-forward) end with the server
        await super().shutdown(sockets)


def _go_on(proto: HttpToolsProtocol, ex: Exchange, run: Coroutine[Any, Any, None], waiting: Any) -> Any:
    """A task's body for a direct handler that was started outside it (HttpToolsProtocol
    ._run_direct) and is `waiting` on a future: hands that to the task, then what the task
    sends or throws back to the handler, until it returns. (A generator: Task accepts one.)"""
    try:
        while True:
            try:
                value = yield waiting
            except BaseException as exc:     # the task's (a cancellation): the handler's
                waiting = run.throw(exc)
            else:
                waiting = run.send(value)
    except StopIteration:
        return
    except BaseException as exc:             # as uvicorn's run_asgi
        proto._direct_failed(ex, exc)
        if not isinstance(exc, Exception):
            raise


class Exchange:
    """One request served without ASGI (HttpToolsProtocol.on_message_complete, for the
    application's `direct` entry): the request as parsed, its body complete, and the means to
    answer it. It stands in for uvicorn's cycle towards the protocol (response_complete,
    keep_alive, disconnected): no scope dict, no asyncio.Event, no receive/send messages.
    """

    __slots__ = ("proto", "method", "path", "query_string", "headers", "body", "keep_alive",
                 "response_complete", "disconnected", "cycle", "at_once", "x509")

    def __init__(self, proto: HttpToolsProtocol, method: str, path: str, query_string: str, body: bytes,
                 keep_alive: bool) -> None:
        self.proto = proto
        self.method = method
        self.path = path
        self.query_string = query_string
        self.headers: list[tuple[bytes, bytes]] = proto.headers   # lower-cased names, as received
        self.body = body
        self.keep_alive = keep_alive
        self.response_complete = False
        self.disconnected = False
        self.cycle: _UvicornCycle | None = None   # uvicorn's, once channel() was asked for
        self.at_once = False                      # set by the application: HttpToolsProtocol._run_direct
        self.x509: X509Identity | None = proto.x509    # the connection's client certificate

    def write_whole(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
        """Write the whole response in one transport write (see send_whole); False, with nothing
        written, when it must go through channel() instead: 204/304, a paused writer, a header
        value uvicorn would refuse, or an answer already begun."""
        proto = self.proto
        if self.response_complete or self.disconnected or self.cycle is not None or proto.flow.write_paused:
            return False
        data = _whole(status, proto.server_state.default_headers, headers, body, self)
        if data is None:
            return False
        self.response_complete = True
        transport: Any = proto.transport                 # CoalescingTransport
        if transport._held is None:
            transport._transport.write(data)
        else:
            transport.write_now(data)
        if not self.keep_alive:
            transport.close()
        proto.on_response_complete()
        return True

    def channel(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """ASGI's send and receive for this request, through uvicorn's cycle (a streamed or HEAD
        answer): the body is read already, receive() waits for the client to go away."""
        proto = self.proto
        cycle = self.cycle = _UvicornCycle(
            scope={"type": "http", "method": self.method, "path": self.path,   # type: ignore[typeddict-item]
                   "client": proto.client, "http_version": "1.1"},
            transport=proto.transport, flow=proto.flow, logger=proto.logger, access_logger=proto.access_logger,
            access_log=proto.access_log, default_headers=proto.server_state.default_headers,
            message_event=asyncio.Event(), expect_100_continue=False, keep_alive=self.keep_alive,
            on_response=proto.on_response_complete)
        cycle.more_body = False
        cycle.disconnected = self.disconnected
        current: Any = proto.cycle
        if current is self:                          # connection_lost tells it the client went away
            proto.cycle = cycle
        return cycle.send, cycle.receive


_UNSAFE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")     # uvicorn's HEADER_VALUE_RE: no CR, LF or NUL


# uvicorn's default headers (its server's tick puts a new list in place each second, for the date)
# as the bytes they are written as, and whether they close the connection: built once a list.
_DEFAULTS: list[Any] = [None, b"", False]


def _defaults(default_headers: list[tuple[bytes, bytes]]) -> tuple[bytes, bool]:
    if default_headers is not _DEFAULTS[0]:       # the old list is held here: its id cannot come back
        block: list[bytes] = []
        close = False
        for name, value in default_headers:
            name = name.lower()
            close = close or (name == b"connection" and b"close" in value.lower())
            block += (name, b": ", value, b"\r\n")
        _DEFAULTS[:] = [default_headers, b"".join(block), close]
    return _DEFAULTS[1], _DEFAULTS[2]


def _whole(status: int, default_headers: list[tuple[bytes, bytes]], headers: list[tuple[bytes, bytes]],
           body: bytes, state: Any) -> bytes | None:
    """A complete response's bytes, as uvicorn writes them (its default headers first, lower-cased
    names, `connection: close` unless kept alive), with Content-Length; None for 204/304 or a
    header value uvicorn would refuse. A `connection: close` header clears state.keep_alive."""
    if status == 204 or status == 304:
        return None
    search = _UNSAFE.search
    for _, value in headers:                 # the default headers are uvicorn's own
        if search(value):
            return None
    block, has_close = _defaults(default_headers)
    content = [STATUS_LINE[status], block]
    for name, value in headers:
        name = name.lower()
        if name == b"connection" and b"close" in value.lower():
            has_close = True
        content += (name, b": ", value, b"\r\n")
    if has_close:
        state.keep_alive = False
    elif not state.keep_alive:
        content.append(b"connection: close\r\n")
    content += (b"content-length: ", str(len(body)).encode(), b"\r\n\r\n", body)
    return b"".join(content)


def send_whole(send: Callable[..., Any], status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
    """Write a complete response (status line, headers with Content-Length, body) in one
    transport write, as uvicorn's RequestResponseCycle.send does over its two ASGI messages,
    without them: no message dicts, no per-header regexes for our own header names, no
    chunked framing of a body whose length is known (Go's server also sends Content-Length
    for a response written at once). False, with nothing written, when `send` is not an idle
    uvicorn httptools cycle's (the caller then sends the ASGI messages): a response already
    started, a paused writer, an access log, 204/304, or a header value uvicorn would refuse.
    """
    cycle = getattr(send, "__self__", None)
    if (type(cycle) is not _UvicornCycle or cycle.response_started or cycle.disconnected
            or cycle.flow.write_paused or cycle.access_log
            or not isinstance(cycle.transport, CoalescingTransport)):
        return False
    data = _whole(status, cycle.default_headers, headers, body, cycle)
    if data is None:
        return False
    cycle.response_started = cycle.response_complete = True
    cycle.waiting_for_100_continue = False
    cycle.transport.write_now(data)
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()
    return True

"""The HTTP front end's direct path (serving.py Exchange, app.py ASGIApp.direct): an ordinary
request whose body came with its headers is served without ASGI, and its first step runs
outside a task. Driven through the real protocol (uvicorn's httptools parser, our subclass)
on a fake transport, with the API server in memory; each read is delivered from the event
loop (call_soon), as a transport does, so no task is current while it is parsed.
Everything else (a body split over reads, long-running requests, Expect, HEAD) goes through
ASGI or its cycle, which these tests also check."""
from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import httptools
import orjson
import uvicorn
from uvicorn.server import ServerState

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.codec import MAX_BODY
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import Request, RequestInfo, Response
from kubeplane.apiserver.server import APIServer
from kubeplane.apiserver.serving import ServingOptions
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock

TOKEN = "s3cret"
CMS = "/api/v1/namespaces/default/configmaps"


class CountingApp(ASGIApp):
    """The API server's ASGI app, counting the requests that reach it through ASGI."""

    asgi = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.asgi += 1
        await super().__call__(scope, receive, send)


class Wire(asyncio.Transport):
    """A connection's transport: records what the server writes and whether it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed, "written after close"
        self.out += data

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 6443)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class Answers:
    """The responses parsed from what the server wrote (httptools' response parser)."""

    def __init__(self) -> None:
        self.done: list[dict[str, Any]] = []
        self._cur: dict[str, Any] = {}
        self.parser = httptools.HttpResponseParser(self)

    def on_message_begin(self) -> None:
        self._cur = {"headers": {}, "body": b""}

    def on_header(self, name: bytes, value: bytes) -> None:
        self._cur["headers"][name.decode().lower()] = value.decode()

    def on_headers_complete(self) -> None:
        self._cur["status"] = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self._cur["body"] += body

    def on_message_complete(self) -> None:
        self.done.append(self._cur)


class Conn:
    """One client connection to the protocol."""

    def __init__(self, app: ASGIApp) -> None:
        config = uvicorn.Config(app, loop="none", http=ServingOptions().protocol(), lifespan="off",  # type: ignore[arg-type]
                                log_level="warning", access_log=False, ws="none", proxy_headers=False)
        config.load()
        self.loop = asyncio.get_running_loop()
        self.proto = config.http_protocol_class(config=config, server_state=ServerState(),  # type: ignore[call-arg]
                                                app_state={}, _loop=self.loop)
        self.wire = Wire()
        self.proto.connection_made(self.wire)
        self.answers = Answers()
        self._parsed = 0

    async def send(self, data: bytes) -> None:
        """Deliver one read from the event loop, as a transport does (no task current)."""
        self.loop.call_soon(self.proto.data_received, data)
        await settle()

    async def answered(self, n: int = 1) -> list[dict[str, Any]]:
        """The responses so far, once there are at least n."""
        for _ in range(200):
            self.answers.parser.feed_data(bytes(self.wire.out[self._parsed:]))
            self._parsed = len(self.wire.out)
            if len(self.answers.done) >= n:
                return self.answers.done
            await asyncio.sleep(0)
        raise AssertionError(f"{len(self.answers.done)} answers, wanted {n}: {bytes(self.wire.out)!r}")


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def request(method: str, path: str, body: bytes = b"", version: str = "1.1", extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/{version}\r\nHost: 127.0.0.1:6443\r\nAuthorization: Bearer {TOKEN}\r\n{extra}"
    if body or method in ("POST", "PUT", "PATCH"):
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})


async def make_app(clock: FakeClock | None = None, **opts: Any) -> CountingApp:
    kw: dict[str, Any] = {"clock": clock} if clock is not None else {}
    api = APIServer(new_storage("memory"), tokens={TOKEN: "admin"}, options=ServerRunOptions(**opts), **kw)
    await api.bootstrap()
    return CountingApp(api)


class Gate:
    """A slow handler (APIServer.route_trusted): every request waits until opened."""

    def __init__(self, api: APIServer) -> None:
        self.open = asyncio.Event()
        self.entered = 0
        self.real = api.route_trusted
        api.route_trusted = self.route        # type: ignore[method-assign]

    async def route(self, req: Request, info: RequestInfo | None = None) -> Response:
        self.entered += 1
        await self.open.wait()
        return await self.real(req, info)


async def test_ordinary_requests_are_served_without_asgi_on_a_kept_alive_connection() -> None:
    app = await make_app()
    c = Conn(app)
    for i in range(3):
        await c.send(request("GET", "/api/v1/namespaces/default"))
        answers = await c.answered(i + 1)
    assert [a["status"] for a in answers] == [200, 200, 200]
    assert all(int(a["headers"]["content-length"]) == len(a["body"]) > 0 for a in answers)
    assert orjson.loads(answers[0]["body"])["metadata"]["name"] == "default"
    assert app.asgi == 0 and not c.wire.closed


async def test_a_create_is_direct_when_its_body_came_with_its_headers_else_through_asgi() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("POST", CMS, configmap("whole")))
    assert (await c.answered(1))[0]["status"] == 201
    assert app.asgi == 0
    split = request("POST", CMS, configmap("split"))
    await c.send(split[:-10])                 # the body's end comes in a later read
    await c.send(split[-10:])
    answers = await c.answered(2)
    assert answers[1]["status"] == 201 and orjson.loads(answers[1]["body"])["metadata"]["name"] == "split"
    assert app.asgi == 1 and not c.wire.closed


async def test_pipelined_requests_are_answered_in_order() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("POST", CMS, configmap("p1")) + request("GET", f"{CMS}/p1") + request("GET", f"{CMS}/nope"))
    answers = await c.answered(3)
    assert [a["status"] for a in answers] == [201, 200, 404]
    assert orjson.loads(answers[1]["body"])["metadata"]["name"] == "p1"


async def test_http_1_0_is_answered_then_closed() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("GET", "/version", version="1.0"))
    answer = (await c.answered(1))[0]
    assert answer["status"] == 200 and answer["headers"]["connection"] == "close"
    assert c.wire.closed and app.asgi == 0


async def test_connection_close_from_the_client_closes_after_the_answer() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("GET", "/version", extra="Connection: close\r\n"))
    assert (await c.answered(1))[0]["headers"]["connection"] == "close"
    assert c.wire.closed


async def test_head_has_no_body() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("HEAD", "/version"))
    head = bytes(c.wire.out)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")     # headers only
    del c.wire.out[:]
    await c.send(request("GET", "/version"))            # the connection goes on
    assert (await c.answered(1))[0]["body"]


async def test_a_watch_goes_through_asgi_and_streams() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("GET", f"{CMS}?watch=1"))
    for _ in range(100):
        if b"\r\n\r\n" in c.wire.out:
            break
        await asyncio.sleep(0)
    assert c.wire.out.startswith(b"HTTP/1.1 200 OK") and b"transfer-encoding: chunked" in c.wire.out
    assert app.asgi == 1
    c.proto.connection_lost(None)             # the client goes away: the watch ends
    await settle()


async def test_a_body_over_the_limit_is_413_and_the_connection_closed() -> None:
    app = await make_app()
    c = Conn(app)
    head = (f"POST {CMS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n").encode()
    await c.send(head + b"x" * 65536)
    left = MAX_BODY + 1 - 65536
    while left > 0 and not c.wire.closed:     # a transport stops delivering once closed
        await c.send(b"x" * min(left, 65536))
        left -= 65536
    answer = (await c.answered(1))[0]
    assert answer["status"] == 413 and answer["headers"]["connection"] == "close"


async def test_expect_100_continue_goes_through_asgi() -> None:
    app = await make_app()
    c = Conn(app)
    body = configmap("expect")
    await c.send(request("POST", CMS, extra="Expect: 100-continue\r\n").replace(b"Content-Length: 0",
                                                                                f"Content-Length: {len(body)}".encode()))
    assert bytes(c.wire.out).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    del c.wire.out[:len(b"HTTP/1.1 100 Continue\r\n\r\n")]
    await c.send(body)
    assert (await c.answered(1))[0]["status"] == 201
    assert app.asgi == 1


async def test_the_request_deadline_cuts_a_request_whose_first_step_ran_outside_a_task() -> None:
    clock = FakeClock(1_700_000_000.0)
    app = await make_app(clock, request_timeout=60.0)
    gate = Gate(app.api)
    c = Conn(app)
    await c.send(request("GET", f"{CMS}/slow"))
    assert gate.entered == 1 and not c.wire.out
    assert not app.deadlines.unbound and len(app.deadlines.pending) == 1     # bound to the task it goes on in
    clock.step(61)
    answer = (await c.answered(1))[0]
    assert answer["status"] == 504
    assert not app.deadlines.pending and not c.wire.closed


async def test_a_request_answered_in_its_first_step_leaves_no_deadline_behind() -> None:
    app = await make_app()
    c = Conn(app)
    await c.send(request("GET", "/version"))
    await c.answered(1)
    assert not app.deadlines.unbound and not app.deadlines.pending


async def test_a_client_gone_while_its_request_waits_gets_nothing_written() -> None:
    app = await make_app()
    gate = Gate(app.api)
    c = Conn(app)
    await c.send(request("POST", CMS, configmap("gone")))
    assert gate.entered == 1
    c.proto.connection_lost(None)
    c.wire.closed = False                     # a write now would land here: none must come
    gate.open.set()
    await settle()
    assert not c.wire.out
    assert (await app.api.handle(Request.build("GET", f"{CMS}/gone", "", {"authorization": f"Bearer {TOKEN}"}))).status == 200


async def test_a_failing_handler_is_a_500_and_the_connection_closed() -> None:
    app = await make_app()

    async def broken(req: Request, info: RequestInfo, body: Any) -> Response:
        raise RuntimeError("boom")

    app.serve_with_deadline = broken          # type: ignore[method-assign]
    for sent in (request("GET", "/version"), request("POST", CMS, configmap("x"))):   # at once; in a task
        c = Conn(app)
        await c.send(sent)
        answer = (await c.answered(1))[0]
        assert answer["status"] == 500 and answer["body"] == b"Internal Server Error"
        assert c.wire.closed


async def test_a_context_variable_set_by_a_waiting_request_does_not_leak_to_the_next() -> None:
    var: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_direct", default=None)
    app = await make_app()
    seen: list[str | None] = []
    gate = asyncio.Event()
    real = app.api.route_trusted

    async def route(req: Request, info: RequestInfo | None = None) -> Response:
        seen.append(var.get())
        var.set(req.path)
        if req.path.endswith("/first"):
            await gate.wait()
        return await real(req, info)

    app.api.route_trusted = route             # type: ignore[method-assign]
    first, second = Conn(app), Conn(app)
    await first.send(request("GET", f"{CMS}/first"))
    await second.send(request("GET", f"{CMS}/second"))
    gate.set()
    await first.answered(1)
    await second.answered(1)
    assert seen == [None, None]
    assert var.get() is None


async def test_only_core_reads_and_health_run_their_first_step_outside_a_task() -> None:
    app = await make_app()
    outside: dict[str, bool] = {}
    real = app.api.route_trusted

    async def route(req: Request, info: RequestInfo | None = None) -> Response:
        outside[f"{req.method} {req.path}"] = asyncio.current_task() is None
        return await real(req, info)

    app.api.route_trusted = route             # type: ignore[method-assign]
    c = Conn(app)
    sent = [request("GET", "/api/v1/namespaces/default"), request("GET", f"{CMS}"), request("GET", "/version"),
            request("POST", CMS, configmap("w")), request("GET", "/apis/apps/v1/namespaces/default/deployments"),
            request("GET", "/api/v1/namespaces/default/configmaps/w/status")]
    for i, data in enumerate(sent):
        await c.send(data)
        await c.answered(i + 1)
    assert outside == {
        "GET /api/v1/namespaces/default": True, f"GET {CMS}": True, "GET /version": True,
        f"POST {CMS}": False,                              # writes may call admission webhooks
        "GET /apis/apps/v1/namespaces/default/deployments": False,    # other groups may be aggregated
        "GET /api/v1/namespaces/default/configmaps/w/status": False,  # subresources may proxy
    }


async def test_uvicorn_default_headers_lead_each_answer_and_follow_their_updates() -> None:
    app = await make_app()
    c = Conn(app)
    state = c.proto.server_state
    for i, date in enumerate((b"Fri, 27 Nov 2026 10:00:00 GMT", b"Fri, 27 Nov 2026 10:00:01 GMT")):
        state.default_headers = [(b"date", date), (b"server", b"uvicorn")]    # uvicorn's tick: a new list
        await c.send(request("GET", "/version"))
        answer = (await c.answered(i + 1))[i]
        assert answer["headers"]["date"] == date.decode() and answer["headers"]["server"] == "uvicorn"
    assert bytes(c.wire.out).startswith(b"HTTP/1.1 200 OK\r\ndate: ")


async def test_a_chunked_body_read_whole_is_served_directly() -> None:
    app = await make_app()
    c = Conn(app)
    body = configmap("chunked")
    head = (f"POST {CMS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:])) + b"0\r\n\r\n"
    await c.send(head + chunks)
    answer = (await c.answered(1))[0]
    assert answer["status"] == 201 and orjson.loads(answer["body"])["metadata"]["name"] == "chunked"
    assert app.asgi == 0


async def test_a_failure_deciding_the_direct_way_leaves_the_request_to_asgi() -> None:
    app = await make_app()

    def broken(ex: Any) -> None:
        raise ValueError("boom")

    app.direct = broken                       # type: ignore[method-assign,assignment]
    c = Conn(app)
    await c.send(request("GET", "/version"))
    assert (await c.answered(1))[0]["status"] == 200
    assert app.asgi == 1

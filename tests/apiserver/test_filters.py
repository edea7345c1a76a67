"""The HTTP front end's filters: in-flight limits (429), the request deadline (504, ?timeout=),
and the watch timeout from --min-request-timeout. Driven through ASGIApp with a fake clock and
fake slow handlers (the test seam is APIServer.route_trusted)."""
from __future__ import annotations

import asyncio
import math
from typing import Any

import orjson
import pytest

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.filters.longrunning import is_long_running
from kubeplane.apiserver.filters.maxinflight import MaxInFlightLimit
from kubeplane.apiserver.filters.timeout import (
    Deadlines,
    parse_go_duration,
    request_timeout,
)
from kubeplane.apiserver.handlers.watch import _timeout
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import (
    Request,
    RequestInfo,
    Response,
    parse_request_info,
)
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock

TOKEN = "s3cret"
CMS = "/api/v1/namespaces/default/configmaps"
START = 1_700_000_000.0


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


class Exchange:
    """One request through the ASGI app; `status`, `headers` and `body` once it answered."""

    def __init__(self, app: ASGIApp, method: str, path: str, query: str = "", body: bytes = b"",
                 token: str | None = TOKEN) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if token is not None:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        self.scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(),
                      "headers": headers}
        self.body: bytes | None = body
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()
        self.task = asyncio.ensure_future(app(self.scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, msg: dict[str, Any]) -> None:
        self.sent.append(msg)

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.sent[0]["headers"]}

    @property
    def json(self) -> Any:
        return orjson.loads(b"".join(m.get("body", b"") for m in self.sent[1:]))

    async def done(self) -> Exchange:
        await asyncio.wait_for(self.task, 5)
        return self


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


class Gate:
    """A fake slow handler: every request waits until opened; it records what it saw."""

    def __init__(self, api: APIServer) -> None:
        self.open = asyncio.Event()
        self.entered = 0
        self.cancelled = 0
        self.real = api.route_trusted
        api.route_trusted = self.route        # type: ignore[method-assign]

    async def route(self, req: Request, info: RequestInfo | None = None) -> Response:
        self.entered += 1
        try:
            await self.open.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return await self.real(req, info)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


async def make_app(clock: FakeClock, **opts: Any) -> ASGIApp:
    api = APIServer(new_storage("memory"), tokens={TOKEN: "admin"}, clock=clock, options=ServerRunOptions(**opts))
    await api.bootstrap()
    return ASGIApp(api)


# --- max in-flight -----------------------------------------------------------------------------


async def test_a_burst_over_the_mutating_limit_gets_429_with_retry_after(clock: FakeClock) -> None:
    app = await make_app(clock, max_mutating_requests_inflight=2)
    gate = Gate(app.api)
    held = [Exchange(app, "POST", CMS, body=orjson.dumps(configmap(f"cm{i}"))) for i in range(2)]
    await settle()
    over = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("over"))).done()
    assert over.status == 429
    assert over.headers["retry-after"] == "1"
    assert over.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
                         "details": {"retryAfterSeconds": 1}, "code": 429}
    assert gate.entered == 2                          # the refused request never reached a handler
    reader = Exchange(app, "GET", CMS)               # reads have their own budget
    await settle()
    assert gate.entered == 3
    gate.open.set()
    assert [(await e.done()).status for e in held] == [201, 201]
    assert (await reader.done()).status == 200
    again = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("again"))).done()
    assert again.status == 201                        # the slots were given back


async def test_a_request_answered_before_its_body_was_read_closes_the_connection(clock: FakeClock) -> None:
    app = await make_app(clock, max_mutating_requests_inflight=1)
    gate = Gate(app.api)
    held = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("held")))
    await settle()
    refused = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("refused"))).done()
    assert refused.status == 429 and refused.headers["connection"] == "close"
    unauthorized = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("x")), token="bad").done()
    assert unauthorized.status == 401 and unauthorized.headers["connection"] == "close"
    no_body = await Exchange(app, "GET", CMS, token="bad").done()
    assert no_body.status == 401 and "connection" not in no_body.headers
    gate.open.set()
    served = await held.done()
    assert served.status == 201 and "connection" not in served.headers


async def test_a_body_over_3_mib_is_413_without_reading_the_rest(clock: FakeClock) -> None:
    app = await make_app(clock)
    scope = {"type": "http", "method": "POST", "path": CMS, "query_string": b"",
             "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"transfer-encoding", b"chunked")]}
    sent: list[dict[str, Any]] = []
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * (1 << 20), "more_body": True}     # never ends

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    await asyncio.wait_for(app(scope, receive, send), 5)
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    assert reads == 4                      # stopped just past 3 MiB


async def test_long_running_requests_take_no_slot(clock: FakeClock) -> None:
    app = await make_app(clock, max_requests_inflight=1)
    watch = Exchange(app, "GET", CMS, "watch=1&timeoutSeconds=600")
    await settle()
    assert watch.status == 200 and not watch.task.done()     # streaming
    get = await Exchange(app, "GET", CMS).done()
    assert get.status == 200                         # the open watch did not use the only slot
    watch.gone.set()
    await watch.done()


async def test_read_only_budget_full_refuses_gets_but_not_writes(clock: FakeClock) -> None:
    app = await make_app(clock, max_requests_inflight=1, max_mutating_requests_inflight=5)
    gate = Gate(app.api)
    first = Exchange(app, "GET", CMS)
    await settle()
    assert (await Exchange(app, "GET", "/api/v1/namespaces/default").done()).status == 429
    write = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("w")))
    await settle()
    assert gate.entered == 2
    gate.open.set()
    assert (await first.done()).status == 200 and (await write.done()).status == 201


async def test_zero_disables_the_limit(clock: FakeClock) -> None:
    app = await make_app(clock, max_requests_inflight=0, max_mutating_requests_inflight=0)
    gate = Gate(app.api)
    many = [Exchange(app, "POST", CMS, body=orjson.dumps(configmap(f"cm{i}"))) for i in range(20)]
    await settle()
    assert gate.entered == 20
    gate.open.set()
    assert {(await e.done()).status for e in many} == {201}


async def test_unauthenticated_requests_take_no_slot(clock: FakeClock) -> None:
    app = await make_app(clock, max_mutating_requests_inflight=1)
    gate = Gate(app.api)
    denied = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("x")), token="wrong").done()
    assert denied.status == 401
    held = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("y")))
    await settle()
    assert gate.entered == 1
    gate.open.set()
    assert (await held.done()).status == 201


async def test_in_process_requests_pass_a_full_budget(clock: FakeClock) -> None:
    """The in-process components (route_trusted) stand for upstream's privileged loopback client."""
    app = await make_app(clock, max_mutating_requests_inflight=1)
    gate = Gate(app.api)
    held = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("http")))
    await settle()
    gate.open.set()
    r = await gate.real(Request.build("POST", CMS, "", {"content-type": "application/json"},
                                      orjson.dumps(configmap("inproc"))))
    assert r.status == 201
    await held.done()


async def test_watermark_publishes_the_highest_count_of_the_last_second(clock: FakeClock) -> None:
    published: list[tuple[str, int]] = []
    limit = MaxInFlightLimit(10, 10, clock=clock, publish=lambda k, v: published.append((k, v)))
    assert published == [("readOnly", 0), ("mutating", 0)]        # from the start
    published.clear()
    req = Request.build("GET", CMS)
    kinds = [limit.acquire(req, "list") for _ in range(3)]
    for k in kinds:
        limit.release(k)
    clock.step(1.0)
    await settle()
    assert published == [("readOnly", 3), ("mutating", 0)]
    published.clear()
    clock.step(1.0)
    await settle()
    assert published == [("readOnly", 0), ("mutating", 0)]      # the settled figure
    published.clear()
    clock.step(5.0)
    await settle()
    assert published == []                                     # idle: no timer runs


# --- request deadline ----------------------------------------------------------------------------


async def test_a_slow_request_is_cancelled_and_answered_504(clock: FakeClock) -> None:
    app = await make_app(clock)
    gate = Gate(app.api)
    ex = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("slow")))
    await settle()
    clock.step(59.0)
    await settle()
    assert not ex.task.done()
    clock.step(1.5)
    await ex.done()
    assert ex.status == 504
    assert ex.json["reason"] == "Timeout" and ex.json["code"] == 504
    assert ex.json["message"] == "Timeout: request did not complete within the allotted timeout"
    assert gate.cancelled == 1                            # the handler was stopped, not left running
    assert len(ex.sent) == 2                              # the Status alone: nothing partial


async def test_deadlines_share_one_timer_and_fire_in_order(clock: FakeClock) -> None:
    deadlines = Deadlines(clock)
    outcome: dict[str, str] = {}

    async def request(name: str, seconds: float, work: asyncio.Event) -> None:
        try:
            with deadlines.deadline(seconds):
                await work.wait()
            outcome[name] = "done"
        except TimeoutError:
            outcome[name] = "timeout"

    long_work, short_work, quick_work = asyncio.Event(), asyncio.Event(), asyncio.Event()
    tasks = [asyncio.ensure_future(request("long", 60, long_work)),
             asyncio.ensure_future(request("short", 2, short_work)),   # earlier than the armed timer
             asyncio.ensure_future(request("quick", 60, quick_work))]
    await settle()
    quick_work.set()
    await settle()
    assert outcome == {"quick": "done"} and len(deadlines.pending) == 2
    clock.step(2.5)
    await settle()
    assert outcome["short"] == "timeout" and "long" not in outcome
    clock.step(58.0)
    await settle()
    assert outcome["long"] == "timeout"
    await asyncio.gather(*tasks)
    assert deadlines.pending == {}


async def test_an_outside_cancel_is_not_a_timeout(clock: FakeClock) -> None:
    deadlines = Deadlines(clock)

    async def request() -> None:
        with deadlines.deadline(5):
            await asyncio.Event().wait()

    task = asyncio.ensure_future(request())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deadlines.pending == {}


async def test_the_client_timeout_shortens_the_deadline(clock: FakeClock) -> None:
    app = await make_app(clock)
    Gate(app.api)
    ex = Exchange(app, "GET", CMS, "timeout=2s")
    await settle()
    clock.step(2.1)
    await ex.done()
    assert ex.status == 504


async def test_a_client_timeout_longer_than_the_maximum_does_not_extend_it(clock: FakeClock) -> None:
    app = await make_app(clock, request_timeout=10.0)
    Gate(app.api)
    ex = Exchange(app, "GET", CMS, "timeout=5m")
    await settle()
    clock.step(10.5)
    await ex.done()
    assert ex.status == 504


async def test_watches_are_not_cut_by_the_request_timeout(clock: FakeClock) -> None:
    app = await make_app(clock, request_timeout=5.0)
    watch = Exchange(app, "GET", CMS, "watch=1&timeoutSeconds=600")
    await settle()
    clock.step(30.0)
    await settle()
    assert watch.status == 200 and not watch.task.done()
    watch.gone.set()
    await watch.done()


async def test_a_malformed_timeout_is_a_400_before_authentication(clock: FakeClock) -> None:
    app = await make_app(clock)
    ex = await Exchange(app, "GET", CMS, "timeout=abc", token=None).done()
    assert ex.status == 400
    assert ex.json["message"] == 'invalid timeout specified in the request URL - time: invalid duration "abc"'


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("", 60.0, id="unset"),
    pytest.param("5s", 5.0, id="shorter"),
    pytest.param("0s", 60.0, id="zero-means-the-maximum"),
    pytest.param("0", 60.0, id="bare-zero"),
    pytest.param("-5s", 60.0, id="negative-means-the-maximum"),
    pytest.param("2m", 60.0, id="longer-than-the-maximum"),
    pytest.param("1m30s", 60.0, id="compound"),
    pytest.param("1.5s", 1.5, id="fraction"),
    pytest.param("250ms", 0.25, id="ms"),
])
def test_request_timeout(value: str, expected: float) -> None:
    req = Request.build("GET", CMS, f"timeout={value}" if value else "")
    assert request_timeout(req, 60.0) == expected


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("1s", 1.0), ("+5s", 5.0), ("-2ms", -0.002), ("1m30s", 90.0), ("1.5h", 5400.0),
    (".5s", 0.5), ("1.s", 1.0), ("1µs", 1e-6), ("1μs", 1e-6), ("3us", 3e-6), ("7ns", 7e-9), ("1h1m1s1ms", 3661.001),
    ("2562047h47m16.854775807s", 9223372036.854775807),
])
def test_parse_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(("text", "message"), [
    ("abc", 'time: invalid duration "abc"'),
    ("1", 'time: missing unit in duration "1"'),
    ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1sec", 'time: unknown unit "sec" in duration "1sec"'),
    (".s", 'time: invalid duration ".s"'),
    ("-", 'time: invalid duration "-"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
    ("1é", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
    ('1"', 'time: unknown unit "\\"" in duration "1\\""'),
])
def test_parse_go_duration_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_go_duration(text)
    assert str(e.value) == message


# --- long-running requests and the watch timeout ------------------------------------------------


@pytest.mark.parametrize(("method", "path", "query", "long_running"), [
    ("GET", CMS, "watch=true", True),
    ("GET", "/api/v1/watch/namespaces/default/configmaps", "", True),
    ("GET", "/api/v1/namespaces/default/pods/web/log", "follow=true", True),
    ("POST", "/api/v1/namespaces/default/pods/web/exec", "", True),
    ("GET", CMS, "", False),
    ("PATCH", "/api/v1/namespaces/default/pods/web/status", "", False),
    ("GET", "/version", "", False),
])
def test_is_long_running(method: str, path: str, query: str, long_running: bool) -> None:
    assert is_long_running(parse_request_info(Request.build(method, path, query))) is long_running


def test_watch_timeout_is_random_between_min_and_twice_min() -> None:
    req = Request.build("GET", CMS, "watch=1")
    seen = [_timeout(req, 10) for _ in range(500)]
    assert all(10 <= t < 20 for t in seen)
    assert max(seen) - min(seen) > 5                       # spread, not a constant
    assert _timeout(Request.build("GET", CMS, "watch=1&timeoutSeconds=0"), 10) >= 10   # 0 = unset
    assert _timeout(Request.build("GET", CMS, "watch=1&timeoutSeconds=7"), 10) == 7
    assert _timeout(req, 0) == math.inf                    # --min-request-timeout 0: no timeout


async def test_a_watch_without_timeout_ends_within_the_flags_range(clock: FakeClock) -> None:
    app = await make_app(clock, min_request_timeout=100)
    watch = Exchange(app, "GET", CMS, "watch=1")
    await settle()
    clock.step(99.0)
    await settle()
    assert not watch.task.done()
    clock.step(101.5)
    await watch.done()
    assert watch.status == 200 and watch.sent[-1] == {"type": "http.response.body", "body": b"",
                                                      "more_body": False}


async def test_a_watch_never_times_out_with_min_request_timeout_zero(clock: FakeClock) -> None:
    app = await make_app(clock, min_request_timeout=0)
    watch = Exchange(app, "GET", CMS, "watch=1&allowWatchBookmarks=true")
    await settle()
    clock.step(100_000.0)
    await settle()
    assert not watch.task.done()
    watch.gone.set()
    await watch.done()


def test_options_refuse_negative_values() -> None:
    with pytest.raises(ValueError, match="--max-requests-inflight can not be negative value"):
        ServerRunOptions(max_requests_inflight=-1)

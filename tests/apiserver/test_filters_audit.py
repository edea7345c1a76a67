"""Answers given by the HTTP filters are audited as upstream's chain audits them (its audit filter
wraps max-in-flight and the handler that reads the body, and the timeout filter lets the audited
handler finish): a 429, a 413 and a 504 get RequestReceived and ResponseComplete with their
Status; a bad ?timeout= (refused before authentication) one ResponseStarted event with no user
(upstream: withFailedRequestAudit)."""
from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from test_filters import CMS, START, TOKEN, Exchange, Gate, configmap, make_app, settle

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.audit import log as auditlog
from kubeplane.apiserver.audit.filter import Auditor
from kubeplane.apiserver.audit.policy import PolicyRuleEvaluator, load_policy
from kubeplane.apiserver.request import Request, RequestInfo, Response
from kubeplane.utils.clock import FakeClock

POLICY = b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"


class Lines:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def flush(self) -> None:
        pass

    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.data.splitlines()]

    async def wait_for(self, n: int) -> list[dict[str, Any]]:
        """The events once there are n (the writer thread writes them)."""
        for _ in range(500):
            if len(evs := self.events()) >= n:
                return evs
            await asyncio.sleep(0.01)
        raise AssertionError(f"{len(self.events())} events, not {n}")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def audit(app: ASGIApp) -> tuple[Lines, auditlog.LogBackend]:
    out = Lines()
    backend = auditlog.LogBackend(out, mode=auditlog.MODE_BLOCKING)
    app.api.audit = Auditor(app.api, PolicyRuleEvaluator(load_policy(POLICY)), backend)
    return out, backend


class RouteGate:
    """Requests wait inside the audit step (at APIServer.route) until opened."""

    def __init__(self, app: ASGIApp) -> None:
        self.open = asyncio.Event()
        self.real = app.api.route
        app.api.route = self.route          # type: ignore[method-assign]

    async def route(self, req: Request, info: RequestInfo) -> Response:
        await self.open.wait()
        return await self.real(req, info)


def of(events: list[dict[str, Any]], audit_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e["auditID"] == audit_id]


async def test_a_429_is_audited(clock: FakeClock) -> None:
    app = await make_app(clock, max_mutating_requests_inflight=1)
    out, backend = audit(app)
    gate = Gate(app.api)
    held = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("held")))
    await settle()
    over = await Exchange(app, "POST", CMS, body=orjson.dumps(configmap("over"))).done()
    assert over.status == 429
    received, complete = of(out.events(), over.headers["audit-id"])
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert complete["verb"] == "create" and complete["user"]["username"] == "admin"
    assert complete["objectRef"] == {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}
    assert complete["responseStatus"] == {"metadata": {}, "status": "Failure",
                                          "message": "Too many requests, please try again later.",
                                          "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1},
                                          "code": 429}
    gate.open.set()
    assert (await held.done()).status == 201
    backend.shutdown()


async def test_a_413_is_audited(clock: FakeClock) -> None:
    app = await make_app(clock)
    out, backend = audit(app)
    scope = {"type": "http", "method": "POST", "path": CMS, "query_string": b"",
             "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"transfer-encoding", b"chunked")]}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x" * (1 << 20), "more_body": True}

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    await asyncio.wait_for(app(scope, receive, send), 5)
    assert sent[0]["status"] == 413
    audit_id = dict(sent[0]["headers"])[b"audit-id"].decode()
    received, complete = of(out.events(), audit_id)
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert complete["responseStatus"]["code"] == 413
    assert complete["responseStatus"]["reason"] == "RequestEntityTooLarge"
    backend.shutdown()


async def test_a_504_is_audited_once(clock: FakeClock) -> None:
    """Timed out inside the audit step: its RequestReceived is written, then ResponseComplete with the 504."""
    app = await make_app(clock)
    out, backend = audit(app)
    RouteGate(app)
    ex = Exchange(app, "POST", CMS, body=orjson.dumps(configmap("slow")))
    assert [e["stage"] for e in await out.wait_for(1)] == ["RequestReceived"]
    clock.step(61.0)
    await ex.done()
    assert ex.status == 504
    events = of(out.events(), ex.headers["audit-id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseComplete"]
    assert events[1]["responseStatus"] == {"metadata": {}, "status": "Failure",
                                           "message": "Timeout: request did not complete within the allotted timeout",
                                           "reason": "Timeout", "code": 504}
    backend.shutdown()


async def test_a_bad_timeout_parameter_is_audited_without_a_user(clock: FakeClock) -> None:
    app = await make_app(clock)
    out, backend = audit(app)
    ex = await Exchange(app, "GET", CMS, query="timeout=abc").done()
    assert ex.status == 400
    (ev,) = out.events()
    assert ev["stage"] == "ResponseStarted" and ev["user"] == {}
    assert ev["responseStatus"] == {"metadata": {}, "code": 400,
                                    "message": 'invalid timeout specified in the request URL - time: invalid '
                                               'duration "abc"'}
    backend.shutdown()


async def test_a_refused_impersonation_is_audited_with_the_requester(clock: FakeClock) -> None:
    """Upstream's WithImpersonation runs inside WithAudit: the refusal is a ResponseComplete
    with its 403 Status, the requester as the user, no impersonatedUser."""
    from kubeplane.apiserver.authorization.authorizer import AlwaysAllow, Decision

    class NoImpersonation(AlwaysAllow):
        def authorize(self, a: Any) -> Any:
            return (Decision.NO_OPINION, "") if a.verb == "impersonate" else super().authorize(a)

    app = await make_app(clock)
    app.api.authorizer = NoImpersonation()
    out, backend = audit(app)
    ex = Exchange(app, "GET", CMS)
    ex.scope["headers"].append((b"impersonate-user", b"bob"))
    await ex.done()
    assert ex.status == 403
    received, complete = of(out.events(), ex.headers["audit-id"])
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert complete["user"]["username"] == "admin" and "impersonatedUser" not in complete
    assert complete["responseStatus"]["code"] == 403 and complete["responseStatus"]["reason"] == "Forbidden"
    assert complete["responseStatus"]["message"].startswith('users "bob" is forbidden: User "admin" cannot impersonate')
    backend.shutdown()

"""The standalone components' secure serving (cmd/serving.py) in-process on a free loopback
port: who may read what, the health check sets, the leaderElection check. The e2e tests
(tests/e2e/test_component_metrics.py) run the same through real processes."""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client.core import GaugeMetricFamily

from kubeplane.cmd.flags import add_secure_serving
from kubeplane.cmd.serving import HealthChecks, LeaderHealthzAdaptor, SecureServer
from kubeplane.utils.healthz import NamedCheck

TOKEN = "component-token"


class Fixed:
    """A registry of one gauge."""

    def collect(self) -> list[Any]:
        return [GaugeMetricFamily("test_gauge", "A gauge.", value=1)]


class FakeElector:
    def __init__(self) -> None:
        self.err: Exception | None = None
        self.asked: list[float] = []

    def check(self, max_tolerable_expired_lease: float) -> Exception | None:
        self.asked.append(max_tolerable_expired_lease)
        return self.err


@pytest.fixture
async def served() -> AsyncIterator[tuple[SecureServer, LeaderHealthzAdaptor, aiohttp.ClientSession]]:
    health = HealthChecks()
    watchdog = LeaderHealthzAdaptor()
    health.add(("healthz", "readyz"), watchdog.named_check())
    server = SecureServer("kube-test", health, token=TOKEN, port=0, metrics=Fixed())
    await server.start()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False))
    try:
        yield server, watchdog, session
    finally:
        await session.close()
        await server.stop()


async def fetch(session: aiohttp.ClientSession, server: SecureServer, path: str, token: str | None = None,
                method: str = "GET") -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with session.request(method, f"https://127.0.0.1:{server.port}{path}", headers=headers) as r:
        body = await r.json() if r.content_type == "application/json" else await r.text()
        return r.status, body


@pytest.mark.parametrize(("path", "token", "code", "body"), [
    ("/healthz", None, 200, "ok"),
    ("/readyz?verbose", None, 200, "[+]leaderElection ok\nreadyz check passed\n"),
    ("/livez?verbose", None, 200, "[+]ping ok\nlivez check passed\n"),     # no checks: ping, as upstream
    ("/healthz/leaderElection", TOKEN, 200, "ok"),
    ("/metrics", TOKEN, 200, "# HELP test_gauge A gauge.\n# TYPE test_gauge gauge\ntest_gauge 1.0\n"),
    ("/debug/pprof", TOKEN, 404, "404 page not found\n"),
])
async def test_what_is_served_to_whom(served: Any, path: str, token: str | None, code: int, body: str) -> None:
    server, _, session = served
    assert await fetch(session, server, path, token) == (code, body)


@pytest.mark.parametrize(("path", "method", "token", "code", "message"), [
    ("/metrics", "GET", None, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'),
    ("/healthz/leaderElection", "GET", None, 403,
     'forbidden: User "system:anonymous" cannot get path "/healthz/leaderElection"'),
    ("/metrics", "POST", None, 403, 'forbidden: User "system:anonymous" cannot post path "/metrics"'),
    ("/healthz", "GET", "wrong", 401, "Unauthorized"),
    ("/metrics", "GET", "", 401, "Unauthorized"),
])
async def test_refusals_are_upstreams_statuses(served: Any, path: str, method: str, token: str | None, code: int,
                                               message: str) -> None:
    server, _, session = served
    status, body = await fetch(session, server, path, token, method)
    assert (status, body["code"], body["message"]) == (code, code, message)


async def test_leader_election_check_fails_when_the_lease_is_not_renewed(served: Any) -> None:
    server, watchdog, session = served
    elector = FakeElector()
    watchdog.elector = elector
    assert await fetch(session, server, "/healthz") == (200, "ok")
    elector.err = RuntimeError("failed election to renew leadership on lease kube-test")
    assert await fetch(session, server, "/healthz") == (500, "[-]leaderElection failed: reason withheld\n"
                                                               "healthz check failed\n")
    assert await fetch(session, server, "/healthz/leaderElection", TOKEN) == (
        500, "internal server error: failed election to renew leadership on lease kube-test\n")
    assert await fetch(session, server, "/livez") == (200, "ok")              # not a liveness matter
    assert set(elector.asked) == {20.0}                                        # upstream's 20 s tolerance


async def test_a_component_with_no_token_lets_only_health_through() -> None:
    health = HealthChecks()
    health.add(("readyz",), NamedCheck("sched-handler-sync", lambda: RuntimeError("waiting for handlers to sync")))
    server = SecureServer("kube-test", health, token="", port=0)
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
            assert (await fetch(session, server, "/metrics", ""))[0] == 401
            assert (await fetch(session, server, "/readyz"))[0] == 500
            assert await fetch(session, server, "/healthz") == (200, "ok")
    finally:
        await server.stop()


def test_flags_default_to_loopback_and_refuse_bad_ports() -> None:
    p = argparse.ArgumentParser()
    add_secure_serving(p, 10259)
    args = p.parse_args([])
    assert (args.bind_address, args.secure_port) == ("127.0.0.1", 10259)
    assert p.parse_args(["--secure-port", "0", "--bind-address", "0.0.0.0"]).secure_port == 0
    with pytest.raises(SystemExit):
        p.parse_args(["--secure-port", "65536"])

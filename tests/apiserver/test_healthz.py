"""/healthz, /livez, /readyz: upstream's handler table (healthz_test.go) as facts, then the
checks this API server installs."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.healthz import (
    HealthChecks,
    NamedCheck,
    format_quoted,
    handle_root_health,
)
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage


def _bad() -> Exception | None:
    return RuntimeError("this will fail")


def _server(bad: bool) -> APIServer:
    """An API server whose /healthz and /ready(z) run only ping (plus "bad"), as the upstream test."""
    api = APIServer(new_storage("memory"))
    checks = [c for c in api.health.checks["healthz"] if c.name == "ping"]
    if bad:
        checks.append(NamedCheck("bad", _bad))
    api.health.checks = {"healthz": list(checks), "readyz": list(checks), "livez": list(checks)}
    return api


# Upstream: testMultipleChecks (healthz_test.go): (query or sub-path, body, status, add the bad check)
MULTIPLE_CHECKS = [
    ("?verbose", "[+]ping ok\n{name} check passed\n", 200, False),
    ("?exclude=dontexist", "ok", 200, False),
    ("?exclude=bad", "ok", 200, True),
    ("?verbose=true&exclude=bad", "[+]ping ok\n[+]bad excluded: ok\n{name} check passed\n", 200, True),
    ("?verbose=true&exclude=dontexist",
     "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"dontexist\"\n{name} check passed\n",
     200, False),
    ("/ping", "ok", 200, False),
    ("", "ok", 200, False),
    ("?verbose", "[+]ping ok\n[-]bad failed: reason withheld\n{name} check failed\n", 500, True),
    ("/ping", "ok", 200, True),
    ("/bad", "internal server error: this will fail\n", 500, True),
    ("", "[+]ping ok\n[-]bad failed: reason withheld\n{name} check failed\n", 500, True),
]


@pytest.mark.parametrize("endpoint", ["healthz", "readyz", "livez"])
@pytest.mark.parametrize(("suffix", "body", "status", "bad"), MULTIPLE_CHECKS)
async def test_multiple_checks(endpoint: str, suffix: str, body: str, status: int, bad: bool) -> None:
    api = _server(bad)
    path, _, qs = suffix.partition("?")
    resp = await api.handle(Request.build("GET", f"/{endpoint}{path}", qs))
    assert (resp.status, resp.body) == (status, body.format(name=endpoint).encode())
    assert resp.content_type == "text/plain; charset=utf-8"
    assert ("x-content-type-options", "nosniff") in resp.headers


def test_format_quoted() -> None:
    """Upstream: TestFormatQuoted"""
    assert format_quoted() == ""
    assert format_quoted("n1") == '"n1"'
    assert format_quoted("n1", "n2") == '"n1","n2"'
    assert format_quoted("n2", "n1") == '"n2","n1"'


def test_a_check_that_raises_fails_itself_only() -> None:
    def boom() -> Exception | None:
        raise ValueError("broken check")
    resp = handle_root_health("livez", [NamedCheck("ping", lambda: None), NamedCheck("boom", boom)], {"verbose": ""})
    assert (resp.status, resp.body) == (500, b"[+]ping ok\n[-]boom failed: reason withheld\nlivez check failed\n")


async def test_default_checks_of_the_api_server() -> None:
    """ping, log and the bootstrap hook on every endpoint; shutdown on readyz only."""
    api = APIServer(new_storage("memory"))
    await api.bootstrap()
    resp = await api.handle(Request.build("GET", "/readyz", "verbose"))
    assert resp.status == 200
    assert resp.body == (b"[+]ping ok\n[+]log ok\n[+]poststarthook/bootstrap-controller ok\n[+]shutdown ok\n"
                         b"readyz check passed\n")
    resp = await api.handle(Request.build("GET", "/livez", "verbose"))
    assert resp.body == b"[+]ping ok\n[+]log ok\n[+]poststarthook/bootstrap-controller ok\nlivez check passed\n"


async def test_readyz_fails_until_bootstrapped_and_once_shutting_down() -> None:
    api = APIServer(new_storage("memory"))
    resp = await api.handle(Request.build("GET", "/readyz"))
    assert resp.status == 500
    assert b"[-]poststarthook/bootstrap-controller failed: reason withheld\n" in resp.body
    assert (await api.handle(Request.build("GET", "/readyz/poststarthook/bootstrap-controller"))).body == \
        b"internal server error: not finished\n"
    await api.bootstrap()
    assert (await api.handle(Request.build("GET", "/readyz"))).status == 200
    api.health.shutting_down = True
    resp = await api.handle(Request.build("GET", "/readyz"))
    assert (resp.status, resp.body.splitlines()[-2:]) == (500, [b"[-]shutdown failed: reason withheld",
                                                                b"readyz check failed"])
    assert (await api.handle(Request.build("GET", "/livez"))).status == 200     # alive, just not ready


async def test_unknown_check_is_not_found() -> None:
    api = APIServer(new_storage("memory"))
    for path in ("/readyz/nope", "/healthzz", "/livez/shutdown"):
        assert (await api.handle(Request.build("GET", path))).status == 404, path


def test_health_check_sets() -> None:
    """AddHealthChecks reaches all three endpoints; AddReadyzChecks and AddLivezChecks one each."""
    h = HealthChecks()
    c, r, lv = NamedCheck("c", lambda: None), NamedCheck("r", lambda: None), NamedCheck("l", lambda: None)
    h.add_health_checks(c)
    h.add_readyz_checks(r)
    h.add_livez_checks(lv)
    names = {e: [x.name for x in cs] for e, cs in h.checks.items()}
    assert names == {"healthz": ["ping", "log", "poststarthook/bootstrap-controller", "c"],
                     "livez": ["ping", "log", "poststarthook/bootstrap-controller", "c", "l"],
                     "readyz": ["ping", "log", "poststarthook/bootstrap-controller", "shutdown", "c", "r"]}

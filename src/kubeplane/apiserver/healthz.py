"""/healthz, /livez and /readyz: named checks, each also served on its own path.

    GET /readyz                  ok                               (200)
    GET /readyz?verbose          [+]ping ok ... readyz check passed
    GET /readyz                  [+]ping ok\\n[-]scheduler failed: reason withheld\\nreadyz check failed\\n (500)
    GET /readyz?exclude=scheduler  the scheduler check is skipped ("[+]scheduler excluded: ok")
    GET /readyz/scheduler        ok, or "internal server error: <reason>" (500)

The reason of a failure is withheld from the combined endpoints because they are public
(system:public-info-viewer); the per-check paths carry it, and it is logged (debug).
Only the last `exclude` value is honoured: Request.query keeps one value per name.

Upstream: k8s.io/apiserver pkg/server/healthz/healthz.go (handleRootHealth,
adaptCheckToHandler) and the check sets of GenericAPIServer (AddHealthChecks adds to all
three, AddReadyzChecks and AddLivezChecks to one).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .request import Response

log = logging.getLogger(__name__)

ENDPOINTS = ("healthz", "livez", "readyz")


@dataclass(frozen=True, slots=True)
class NamedCheck:
    """A health check: `check()` returns None when healthy, else the error. Upstream: NamedCheck"""

    name: str
    check: Callable[[], Exception | None]


def _ok() -> Exception | None:
    return None


# Upstream: PingHealthz. LogHealthz fails when klog's flush has been blocked for 2 minutes;
# here a blocked log handler would block the whole event loop, and so this answer with it.
PING = NamedCheck("ping", _ok)
LOG = NamedCheck("log", _ok)


class HealthChecks:
    """The checks behind each endpoint, in the order they were added (ping and log first)."""

    def __init__(self, bootstrapped: Callable[[], bool] = lambda: True) -> None:
        self.checks: dict[str, list[NamedCheck]] = {name: [PING, LOG] for name in ENDPOINTS}
        self.shutting_down = False
        self._bootstrapped = bootstrapped
        self.add_health_checks(NamedCheck("poststarthook/bootstrap-controller", self._bootstrap))
        self.add_readyz_checks(NamedCheck("shutdown", self._shutdown))

    def add_health_checks(self, *checks: NamedCheck) -> None:
        """Add to /healthz, /livez and /readyz. Upstream: GenericAPIServer.AddHealthChecks"""
        for name in ENDPOINTS:
            self.checks[name].extend(checks)

    def add_readyz_checks(self, *checks: NamedCheck) -> None:
        """Upstream: GenericAPIServer.AddReadyzChecks"""
        self.checks["readyz"].extend(checks)

    def add_livez_checks(self, *checks: NamedCheck) -> None:
        """Upstream: GenericAPIServer.AddLivezChecks"""
        self.checks["livez"].extend(checks)

    def _bootstrap(self) -> Exception | None:
        """The system namespaces exist. Upstream: postStartHookHealthz of the bootstrap-controller"""
        return None if self._bootstrapped() else RuntimeError("not finished")

    def _shutdown(self) -> Exception | None:
        """Upstream: NewShutdownHealthz: readyz fails once shutdown begins, so load balancers
        stop sending requests while the open ones drain."""
        return RuntimeError("process is shutting down") if self.shutting_down else None

    def serve(self, path: str, query: Mapping[str, str]) -> Response | None:
        """The response for a /healthz, /livez or /readyz path (or a check below one); None
        for any other path, including an unknown check."""
        endpoint, _, check_name = path.strip("/").partition("/")    # a check's name may hold "/"
        checks = self.checks.get(endpoint)
        if checks is None:
            return None
        if not check_name:
            return handle_root_health(endpoint, checks, query)
        check = next((c for c in checks if c.name == check_name), None)
        return None if check is None else adapt_check_to_handler(check)


def handle_root_health(endpoint: str, checks: list[NamedCheck], query: Mapping[str, str]) -> Response:
    """Run every check not excluded; 200 "ok" (or the list with ?verbose), or 500 and the list.

    Upstream: handleRootHealth
    """
    excluded = {query["exclude"]} if "exclude" in query else set()
    unknown_excluded = set(excluded)
    out: list[str] = []
    failed: list[str] = []
    for c in checks:
        if c.name in excluded:
            unknown_excluded.discard(c.name)
            out.append(f"[+]{c.name} excluded: ok\n")
            continue
        err = _run(c)
        if err is None:
            out.append(f"[+]{c.name} ok\n")
            continue
        # The reason is withheld from this public endpoint; the log and /<endpoint>/<name> have it.
        out.append(f"[-]{c.name} failed: reason withheld\n")
        failed.append(c.name)
        log.debug("health check failed", extra={"endpoint": endpoint, "check": c.name, "err": str(err)})
    if unknown_excluded:
        out.append(f"warn: some health checks cannot be excluded: no matches for {format_quoted(*sorted(unknown_excluded))}\n")
    if failed:
        # http.Error: the message plus a newline
        return _text(500, f"{''.join(out)}{endpoint} check failed\n")
    if "verbose" not in query:           # present with any value, as upstream
        return _text(200, "ok")
    return _text(200, f"{''.join(out)}{endpoint} check passed\n")


def adapt_check_to_handler(check: NamedCheck) -> Response:
    """One check on its own path, with the reason. Upstream: adaptCheckToHandler"""
    err = _run(check)
    return _text(200, "ok") if err is None else _text(500, f"internal server error: {err}\n")


def _text(status: int, body: str) -> Response:
    return Response(status, body.encode(), "text/plain; charset=utf-8", [("x-content-type-options", "nosniff")])


def _run(check: NamedCheck) -> Exception | None:
    try:
        return check.check()
    except Exception as err:  # noqa: BLE001 - a broken check fails itself, not the endpoint
        return err


def format_quoted(*names: str) -> str:
    """Go's %q of each name, joined by commas. Upstream: formatQuoted"""
    return ",".join('"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"' for n in names)

"""/healthz, /livez and /readyz: named checks, each also served on its own path.

    GET /readyz                  ok                               (200)
    GET /readyz?verbose          [+]ping ok ... readyz check passed
    GET /readyz                  [+]ping ok\\n[-]scheduler failed: reason withheld\\nreadyz check failed\\n (500)
    GET /readyz?exclude=scheduler  the scheduler check is skipped ("[+]scheduler excluded: ok")
    GET /readyz/scheduler        ok, or "internal server error: <reason>" (500)

The reason of a failure is withheld from the combined endpoints because they are public
(system:public-info-viewer); the per-check paths carry it, and it is logged (debug).
Only the last `exclude` value is honoured: Request.query keeps one value per name.

The answers themselves are utils/healthz.py's (shared with the kubelet's and the standalone
components' servers). Upstream: k8s.io/apiserver pkg/server/healthz/healthz.go (handleRootHealth,
adaptCheckToHandler) and the check sets of GenericAPIServer (AddHealthChecks adds to all
three, AddReadyzChecks and AddLivezChecks to one).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from ..utils import healthz as _healthz
from ..utils.healthz import ENDPOINTS, LOG, PING, NamedCheck, format_quoted
from .request import Response

__all__ = ["ENDPOINTS", "LOG", "PING", "HealthChecks", "NamedCheck", "adapt_check_to_handler", "format_quoted",
           "handle_root_health"]


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
        answer = _healthz.serve(self.checks, path, query)
        return None if answer is None else _text(*answer)


def handle_root_health(endpoint: str, checks: list[NamedCheck], query: Mapping[str, str]) -> Response:
    """Upstream: handleRootHealth (utils/healthz.py has the logic)."""
    return _text(*_healthz.handle_root_health(endpoint, checks, query))


def adapt_check_to_handler(check: NamedCheck) -> Response:
    """Upstream: adaptCheckToHandler"""
    return _text(*_healthz.adapt_check_to_handler(check))


def _text(status: int, body: str) -> Response:
    return Response(status, body.encode(), _healthz.CONTENT_TYPE, list(_healthz.HEADERS))

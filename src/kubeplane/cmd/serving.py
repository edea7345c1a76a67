"""Secure serving for the standalone controller-manager and scheduler: HTTPS with /healthz,
/livez, /readyz and /metrics, as upstream's kube-controller-manager and kube-scheduler serve.

    kubeplane scheduler --kubeconfig KC                      # https://127.0.0.1:10259
    kubeplane controller-manager --kubeconfig KC --secure-port 0 --bind-address 0.0.0.0

    GET /healthz, /livez, /readyz [?verbose] [?exclude=NAME]   anyone (ping, leaderElection, ...)
    GET /healthz/<check> ...                                   the token holder: the check's reason
    GET /metrics                                               the token holder: text format 0.0.4

Authentication and authorization, as upstream's delegated ones answer: a request without
credentials is system:anonymous, let through on the always-allowed paths (upstream's
--authorization-always-allow-paths default, /healthz, /readyz, /livez, exact paths) and
refused elsewhere with 403 `forbidden: User "system:anonymous" cannot get path "/metrics"`; a
bearer token must be the one of the component's own kubeconfig (upstream asks the API server
through a TokenReview and a SubjectAccessReview; one shared token is our simplification, as the
kubelet's server has), else 401, on any path. A token holder may read every path; an unknown
one is 404 "404 page not found".

Where this differs from upstream, and why:
- --bind-address defaults to 127.0.0.1 (upstream 0.0.0.0): kubeplane listens beyond loopback
  only when asked (ARCHITECTURE decision 7). 0.0.0.0 (or an interface's address) serves there.
- --secure-port 0 picks a free port, logged at start (upstream: 0 does not serve HTTPS at
  all), as `up --port 0` and `kubelet --port 0` do: tests and side-by-side runs need it.
- The controller-manager serves /livez and /readyz too (upstream's only /healthz), with the
  checks of its /healthz.
- The serving certificate is self-signed and made at each start (upstream's default without
  --tls-cert-file also self-signs, and keeps it in --cert-dir).

Upstream: k8s.io/apiserver pkg/server/options (SecureServingOptions, DelegatingAuthorization-
Options' AlwaysAllowPaths), pkg/server/healthz; k8s.io/controller-manager app/serve.go
(NewBaseHandler, BuildHandlerChain); cmd/kube-scheduler/app/server.go
(newHealthEndpointsAndMetricsHandler); client-go tools/leaderelection/healthzadaptor.go.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, REGISTRY
from prometheus_client.registry import Collector

from ..api import errors
from ..utils import healthz, serving
from ..utils.healthz import NamedCheck
from . import flags
from .flags import DEFAULT_BIND_ADDRESS

log = logging.getLogger(__name__)

ALWAYS_ALLOW_PATHS = frozenset({"/healthz", "/readyz", "/livez"})   # --authorization-always-allow-paths
LEADER_ELECTION_TIMEOUT = 20.0     # seconds past the lease's expiry (upstream: NewLeaderHealthzAdaptor(20s))
SHUTDOWN_TIMEOUT = 1.0


class LeaderHealthzAdaptor:
    """The "leaderElection" health check: fails when this process leads but has not renewed
    its lease for LEADER_ELECTION_TIMEOUT past the lease's duration; healthy while it does not
    lead or has no elector yet. Upstream: HealthzAdaptor (healthzadaptor.go)
    """

    def __init__(self, timeout: float = LEADER_ELECTION_TIMEOUT) -> None:
        self.timeout = timeout
        self.elector: Any = None            # a LeaderElector once leader election runs

    def check(self) -> Exception | None:
        return None if self.elector is None else self.elector.check(self.timeout)

    def named_check(self) -> NamedCheck:
        return NamedCheck("leaderElection", self.check)


class HealthChecks:
    """The checks of /healthz, /livez and /readyz; an endpoint without checks runs "ping",
    as upstream's healthz.InstallHandler installs PingHealthz when given none."""

    def __init__(self) -> None:
        self.checks: dict[str, list[NamedCheck]] = {name: [] for name in healthz.ENDPOINTS}

    def add(self, endpoints: tuple[str, ...], *checks: NamedCheck) -> None:
        for name in endpoints:
            self.checks[name].extend(checks)

    def serve(self, path: str, query: Mapping[str, str]) -> tuple[int, str] | None:
        return healthz.serve({k: v or [healthz.PING] for k, v in self.checks.items()}, path, query)


class SecureServer:
    """One component's HTTPS server. start() binds (a port in use fails there) and serves."""

    def __init__(self, component: str, health: HealthChecks, *, token: str, address: str = DEFAULT_BIND_ADDRESS,
                 port: int = 0, metrics: Collector = REGISTRY) -> None:
        self.component, self.health, self.token = component, health, token
        self.address, self.port = address, port
        self.metrics = metrics
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        """Bind and serve; returns the bound port. Upstream: SecureServingInfo.Serve"""
        sock = serving.listen(self.address, self.port)
        self.port = sock.getsockname()[1]
        try:
            ctx = serving.self_signed_context(self.component, [self.address])
            app = web.Application()
            app.router.add_route("*", "/{path:.*}", self.handle)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
            await self._runner.setup()
            await web.SockSite(self._runner, sock, ssl_context=ctx).start()
        except BaseException:
            sock.close()
            await self.stop()
            raise
        log.info("Serving securely on %s", flags.host_port(self.address, self.port))
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def handle(self, request: web.Request) -> web.Response:
        """Authenticate, authorize, route. Upstream: BuildHandlerChain's filters, then the mux."""
        token = serving.bearer_token(request.headers.get("Authorization", ""))
        if token is not None and not serving.token_matches(token, self.token):
            return _status(errors.Unauthorized())
        if token is None and request.path not in ALWAYS_ALLOW_PATHS:
            return _status(errors.Forbidden(
                f'forbidden: User "system:anonymous" cannot {request.method.lower()} path "{request.path}"'))
        if request.path == "/metrics":
            body = await serving.metrics_text(self.metrics)
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})
        answer = self.health.serve(request.path, request.query)
        if answer is None:
            return web.Response(status=404, text="404 page not found\n", content_type="text/plain", charset="utf-8",
                                headers=dict(healthz.HEADERS))
        status, text = answer
        return web.Response(status=status, text=text, content_type="text/plain", charset="utf-8",
                            headers=dict(healthz.HEADERS))


def _status(err: errors.StatusError) -> web.Response:
    return web.Response(status=err.code, body=orjson.dumps(err.status()), content_type="application/json")

"""The kubelet's HTTPS server: what the API server proxies `kubectl logs` to, and what
Prometheus scrapes.

    server = KubeletServer(kubelet, token="…", address="127.0.0.1", port=0)
    port = await server.start()          # the bound port (0 picks a free one)
    ...                                  # GET https://127.0.0.1:<port>/containerLogs/ns/pod/container
    await server.stop()

    GET /containerLogs/{namespace}/{pod}/{container}   a container's output (pods/log)
    GET /metrics                                       every metric of the process (kubelet_*, prober_*,
                                                       workqueue_*, process_*), text format 0.0.4
    GET /metrics/probes                                prober_* alone
    GET /healthz[/<check>]                             ping, log, syncloop (utils/healthz.py's answers)
    GET /pods[?node=<name>]                            the pods bound to the node(s), a v1 PodList
    GET|POST /exec/{namespace}/{pod}/{container}       pods/exec, attach and portforward: an upgrade to
    GET|POST /attach/{namespace}/{pod}/{container}     WebSocket and the channel protocols (streaming/)
    GET|POST /portForward/{namespace}/{pod}
    GET /stats/summary[?node=<name>]                   the node's and its running pods' CPU and memory
                                                       use (the Summary API's subset metrics.k8s.io needs;
                                                       node: which of this server's nodes, default the first)

A standalone `kubeplane kubelet` process runs one for all its nodes; its nodes report the
address as InternalIP and the port in status.daemonEndpoints.kubeletEndpoint.Port, which is
where the API server's pods/log finds it. In-process kubelets (`kubeplane up`) need none:
they hand themselves to the API server directly.

Every path needs the bearer token of the kubelet's own kubeconfig, 401 without it (upstream
authenticates through the API server's TokenReview and authorizes each path as a subresource
of the node; one shared token is our simplification). Upstream also answers /healthz without
credentials on a second, loopback-only HTTP port (--healthz-port 10248); there is none here. The serving
certificate is self-signed and made at start, as upstream's kubelet does when given none; the
API server does not verify it (upstream's default without --kubelet-certificate-authority).

Upstream: pkg/kubelet/server/server.go (ListenAndServeKubeletServer, InstallAuthFilter,
InstallDefaultHandlers, getContainerLogs).
"""
from __future__ import annotations

import datetime as dt
import functools
import ipaddress
import logging
import pathlib
import socket
import ssl
from typing import Any, AsyncIterator, Mapping, Protocol

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, REGISTRY

from ..api import errors
from ..api.podlog import LogOptions
from ..utils import healthz, serving
from ..utils.clock import Clock, parse_rfc3339
from .metrics import PROBES_REGISTRY

log = logging.getLogger(__name__)

DEFAULT_PORT = 10250          # upstream: ports.KubeletPort
SHUTDOWN_TIMEOUT = 1.0        # seconds open requests get when the server stops


class Host(Protocol):
    """What the server needs from the kubelet (a Kubelet satisfies it)."""

    pods: Mapping[str, Any]             # uid -> core_v1.Pod bound to one of the kubelet's nodes
    clock: Clock

    def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
        """The container's output; raises errors.StatusError before the first byte."""


class KubeletServer:
    def __init__(self, host: Host | None, *, token: str, address: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, logger: logging.Logger = log) -> None:
        """host may be set later (before requests arrive): the nodes need the bound port to
        register, and the kubelet needs registered nodes. token "" lets nobody in.
        logger: where the listening address is logged (a command's, to show it by default)."""
        self.host = host
        self.log = logger
        self.token = token
        self.address, self.port = address, port
        self._runner: web.AppRunner | None = None
        # Upstream: InstallDefaultHandlers' checkers. Its syncloop check fails when the sync loop
        # has not run for 2 x resync (at least 5 min); here the sync loop is the event loop that
        # answers this request, so a stuck one cannot answer at all.
        self.health_checks = {"healthz": [healthz.PING, healthz.LOG, healthz.NamedCheck("syncloop", lambda: None)]}

    async def start(self) -> int:
        """Bind and serve; returns the bound port."""
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self.get_container_logs)
        app.router.add_get("/metrics", self.get_metrics)
        app.router.add_get("/metrics/probes", self.get_metrics)
        app.router.add_get("/healthz", self.get_healthz)
        app.router.add_get("/stats/summary", self.get_stats_summary)
        app.router.add_get("/pods", self.get_pods)
        app.router.add_get("/healthz/{check:.+}", self.get_healthz)
        for path, kind in (("/exec/{namespace}/{pod}/{container}", "exec"),          # streaming/
                           ("/attach/{namespace}/{pod}/{container}", "attach"),
                           ("/portForward/{namespace}/{pod}", "portforward")):
            app.router.add_route("*", path, functools.partial(self.serve_stream, kind))
        sock = serving.listen(self.address, self.port)     # fails early (port in use) with nothing to undo
        self.port = sock.getsockname()[1]
        # Cancel a handler when its client goes away, so a quiet `logs -f` does not linger;
        # on stop, give open streams a second before cutting them.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                                     shutdown_timeout=SHUTDOWN_TIMEOUT)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, ssl_context=self_signed_context([self.address])).start()
        self.log.info("Starting to listen", extra={"address": self.address, "port": self.port})   # upstream's words
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- handlers ----------------------------------------------------------------------------

    async def get_container_logs(self, request: web.Request) -> web.StreamResponse:
        """Upstream: Server.getContainerLogs (server.go)"""
        try:
            self.authenticate(request)
            ns, name = request.match_info["namespace"], request.match_info["pod"]
            opts = log_options(request.query, request.match_info["container"], self._now())
            pod = self.find_pod(ns, name)
            if not _has_container(pod, opts.container):
                raise errors.StatusError(404, "NotFound", f'container "{opts.container}" not found in pod "{name}"')
            assert self.host is not None
            stream = self.host.container_logs(ns, name, pod.metadata.uid, opts)
        except errors.StatusError as e:
            return status_response(e)
        return await _send_stream(request, stream)

    async def serve_stream(self, kind: str, request: web.Request) -> web.StreamResponse:
        """/exec, /attach, /portForward: the connection is handed to kubelet/streaming, which
        answers the upgrade. Upstream: Server.getExec, getAttach, getPortForward (server.go)"""
        from . import streaming
        if request.method not in ("GET", "POST"):
            raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST"])
        try:
            self.authenticate(request)
        except errors.StatusError as e:
            return status_response(e)
        info = request.match_info
        conn = streaming.Duplex(request.transport, drain=request.writer.drain)
        request.protocol.set_parser(streaming.Feeder(conn))  # type: ignore[arg-type]
        query = {k: request.query.getall(k) for k in request.query}
        headers = {k.lower(): ", ".join(request.headers.getall(k)) for k in request.headers}
        await streaming.serve(self.host, kind, info["namespace"], info["pod"], info.get("container", ""),
                              query, headers, conn)
        return streaming.HIJACKED()

    async def get_metrics(self, request: web.Request) -> web.Response:
        """/metrics: the process's default registry; /metrics/probes: the prober's families.

        Upstream: InstallDefaultHandlers (legacyregistry.Handler, and the probes registry)
        """
        try:
            self.authenticate(request)
        except errors.StatusError as e:
            return status_response(e)
        registry = PROBES_REGISTRY if request.path == "/metrics/probes" else REGISTRY
        body = await serving.metrics_text(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    async def get_stats_summary(self, request: web.Request) -> web.Response:
        """Upstream: the Summary API (/stats/summary, stats/v1alpha1) — usageNanoCores and
        workingSetBytes of the node, each running pod and its containers."""
        try:
            self.authenticate(request)
        except errors.StatusError as e:
            return status_response(e)
        from .resource_usage import summary
        usage = getattr(self.host, "resource_usage", None)
        nodes = list(getattr(self.host, "node_names", None) or ())
        node = request.query.get("node") or (nodes[0] if nodes else "")
        if usage is None or (nodes and node not in nodes):
            return status_response(errors.StatusError(404, "NotFound", f'node "{node}" is not served here'))
        return web.Response(body=orjson.dumps(summary(node, *usage(node))), content_type="application/json")

    async def get_pods(self, request: web.Request) -> web.Response:
        """The pods bound to the node (?node=, default every node this server serves), as a
        v1 PodList. Upstream: Server.getPods (the pod manager's pods)."""
        try:
            self.authenticate(request)
        except errors.StatusError as e:
            return status_response(e)
        from ..api.types import to_dict
        node = request.query.get("node", "")
        pods = list(self.host.pods.values()) if self.host is not None else []
        items = [to_dict(p) for p in pods if not node or (p.spec is not None and p.spec.node_name == node)]
        for item in items:
            item.setdefault("apiVersion", "v1")
            item.setdefault("kind", "Pod")
        doc = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        return web.Response(body=orjson.dumps(doc), content_type="application/json")

    async def get_healthz(self, request: web.Request) -> web.Response:
        """Upstream: healthz.InstallHandler with ping, log and syncloop."""
        try:
            self.authenticate(request)
        except errors.StatusError as e:
            return status_response(e)
        answer = healthz.serve(self.health_checks, request.path, request.query)
        if answer is None:
            raise web.HTTPNotFound()
        status, text = answer
        return web.Response(status=status, text=text, content_type="text/plain", charset="utf-8",
                            headers=dict(healthz.HEADERS))

    def authenticate(self, request: web.Request) -> None:
        """Upstream: InstallAuthFilter (a bearer token instead of webhook authn/authz)."""
        if not serving.token_matches(serving.bearer_token(request.headers.get("Authorization", "")), self.token):
            raise errors.Unauthorized()

    def find_pod(self, namespace: str, name: str) -> Any:
        """Upstream: GetPodByName; not-found text from getContainerLogs."""
        if self.host is not None:
            for p in self.host.pods.values():
                if p.metadata.name == name and p.metadata.namespace == namespace:
                    return p
        raise errors.StatusError(404, "NotFound", f'pod "{name}" does not exist')

    def _now(self) -> float:
        return self.host.clock.now() if self.host is not None else dt.datetime.now(dt.timezone.utc).timestamp()


def log_options(query: Mapping[str, str], container: str, now: float) -> LogOptions:
    """PodLogOptions from the query, validated as upstream's kubelet does (400 "Unable to decode
    query." for a value that is no number or time, 422 "Invalid request." for values
    ValidatePodLogOptions rejects). sinceTime becomes sinceSeconds relative to now:
    sinceTime 10:00:00 at now 10:00:30 -> since_seconds 30.

    Upstream: getContainerLogs's DecodeParameters + ValidatePodLogOptions.
    """
    q = dict(query)
    tail = q.pop("tail", "")          # backwards compatibility: tail=N, or tail=all (no limit)
    if tail == "all":
        q.pop("tailLines", None)
    elif tail:
        q["tailLines"] = tail
    tail_lines, limit_bytes, since_seconds = _int(q, "tailLines"), _int(q, "limitBytes"), _int(q, "sinceSeconds")
    since: float | None = since_seconds
    if q.get("sinceTime"):
        try:
            t = parse_rfc3339(q["sinceTime"])
        except ValueError:
            raise errors.BadRequest("Unable to decode query.") from None
        if since_seconds is not None:
            raise _invalid()
        since = max(0.0, now - t)
    if (tail_lines is not None and tail_lines < 0 or limit_bytes is not None and limit_bytes < 1
            or since_seconds is not None and since_seconds < 1):
        raise _invalid()
    return LogOptions(container, _flag(q, "follow"), _flag(q, "previous"), tail_lines, limit_bytes,
                      _flag(q, "timestamps"), since)  # type: ignore[arg-type]   # a float is fine here


def _invalid() -> errors.StatusError:
    return errors.StatusError(422, "Invalid", "Invalid request.")


def _int(q: Mapping[str, str], name: str) -> int | None:
    value = q.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)  # type: ignore[arg-type]
    except ValueError:
        raise errors.BadRequest("Unable to decode query.") from None


def _flag(q: Mapping[str, str], name: str) -> bool:
    return q.get(name, "").lower() in ("true", "1")


def _has_container(pod: Any, name: str) -> bool:
    """Upstream: kubecontainer.GetContainerSpec (app, init and ephemeral containers)."""
    spec = pod.spec
    groups = (spec.containers, spec.init_containers, spec.ephemeral_containers) if spec is not None else ()
    return any(c.name == name for g in groups for c in g or ())


def status_response(err: errors.StatusError) -> web.Response:
    return web.Response(status=err.code, body=orjson.dumps(err.status()), content_type="application/json")


async def _send_stream(request: web.Request, stream: AsyncIterator[bytes]) -> web.StreamResponse:
    """Send each chunk as it comes (chunked encoding), so `logs -f` sees lines at once."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        async for chunk in stream:
            if chunk:
                await resp.write(chunk)
        await resp.write_eof()
    except ConnectionResetError:
        pass                  # the client went away: stop reading the log (cancelled alike)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return resp


# --- TLS and the token -----------------------------------------------------------------------

def self_signed_context(hosts: list[str]) -> ssl.SSLContext:
    """A server TLS context with a fresh self-signed certificate for hosts (plus localhost).

    Upstream: the kubelet makes a self-signed serving certificate when given none
    (cert.GenerateSelfSignedCertKey).
    """
    return serving.self_signed_context("kubeplane-kubelet", hosts)


def kubeconfig_token(path: str | pathlib.Path) -> str:
    """The bearer token of the kubeconfig's current user ("" when it has none)."""
    from ..client.transport import load_kubeconfig
    return str(load_kubeconfig(path)[1].get("token", ""))


def reported_address(bind: str) -> str:
    """The address nodes report for a server bound to `bind`: itself, or for a wildcard
    (0.0.0.0, ::) the host's outbound address (127.0.0.1 when there is no route)."""
    if not _is_ip(bind) or not ipaddress.ip_address(bind).is_unspecified:
        return bind
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))      # TEST-NET-1: picks the route; sends nothing
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _is_ip(s: str) -> bool:
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return True

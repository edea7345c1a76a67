"""pods/proxy, services/proxy, nodes/proxy: the request passed on to a pod, a service's
endpoint or a node's kubelet, and the answer passed back, both streamed.

    GET /api/v1/namespaces/default/services/web:80/proxy/index.html?x=1
      -> GET http://<a ready endpoint>:<its port>/index.html?x=1

How the request is passed on (upstream's UpgradeAwareHandler with a wrapped transport, and
Go's httputil.ReverseProxy under it):
- the path after /proxy, the raw query, every HTTP verb (GET/HEAD need `get`, POST `create`,
  PUT `update`, PATCH `patch`, DELETE `delete` on the `proxy` subresource: the API server
  authorizes before anything is dialled); a GET of `.../proxy` itself is redirected (301) to
  `.../proxy/`, as upstream does;
- headers as received, less the hop-by-hop ones (Connection and those it names, Keep-Alive,
  Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade) and the client's credentials
  (Authorization and Impersonate-*: the API server's authentication removed them); plus
  X-Forwarded-Uri (the path as the client asked for it) and X-Forwarded-For (the client's
  address appended). The Host header is the client's.
  A node's kubelet gets the API server's kubelet credentials instead;
- the body is streamed to the backend as it arrives (app.py StreamedBody), never held whole;
  the answer is streamed back chunk by chunk with the client's pace (bounded memory: the
  reader pauses while the client does not read);
- the answer's hop-by-hop and CORS headers are dropped, a Location on the backend's own host
  (or relative to its root) is rewritten under the proxy path (transport.go rewriteURL).
- a backend that cannot be reached: 503 "error trying to reach service: dial tcp 10.0.0.7:80:
  connect: connection refused". The dial is bounded (30 s, upstream's proxy dialer) and so is
  the TLS handshake (10 s); a proxied request is long-running as upstream's (no
  --request-timeout), and ends when either side goes away.

- links in an HTML answer are put under the proxy path too (proxy_html.py, pages up to 1 MiB).

Not done: protocol upgrades (WebSocket) through the proxy.

Upstream: ProxyREST (pkg/registry/core/{pod/rest/subresources.go,service/proxy.go,
node/rest/proxy.go}), UpgradeAwareHandler (apimachinery/pkg/util/proxy/upgradeaware.go),
proxy.Transport (transport.go), connect's subpath (apiserver endpoints/handlers/rest.go).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
from typing import TYPE_CHECKING, Any, AsyncIterator
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from ...api import errors
from ...api.resources import ResourceInfo
from ..request import Request, Response
from .proxy_location import KUBELET, Location, dial_error, node_location, pod_location, service_location

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

DIAL_TIMEOUT = 30.0            # seconds (upstream's proxy transport dialer)
TLS_HANDSHAKE_TIMEOUT = 10.0   # seconds (upstream: TLSHandshakeTimeout)
CHUNK = 64 * 1024              # bytes read from the backend at a time

# Upstream: httputil's hopHeaders, and corsRemovingTransport's.
HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authenticate",
                        "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"})
CORS = frozenset({"access-control-allow-credentials", "access-control-allow-headers",
                  "access-control-allow-methods", "access-control-allow-origin"})
# The client's credentials end at the API server (upstream's WithAuthentication and
# WithImpersonation delete them from the request).
CREDENTIALS = ("authorization", "impersonate-")

# Set by the proxy itself; and Expect, which the API server's front end has already answered
# (a 100 Continue to the client): the backend gets the body straight away.
OURS = frozenset({"x-forwarded-uri", "expect"})
NODE_SCOPED = ("/stats/summary", "/pods")     # kubelet paths that answer for ?node=
LOCATIONS = {"pods": pod_location, "services": service_location}


async def connect(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    """Serve <resource>/<name>/proxy[/<path>]. Upstream: ProxyREST.Connect + UpgradeAwareHandler.ServeHTTP"""
    prefix, path = split_proxy_path(req.path)
    if ri.plural == "nodes":
        loc = await node_location(api, name)
    else:
        loc = await LOCATIONS[ri.plural](api, ns, name)
    query = req.query_string if req.query_string or not req.query else urlencode(req.query)
    if not path and req.method in ("GET", "HEAD"):
        # Upstream: proxyRedirectsforRootPath (issue 4958: relative links need the slash)
        return Response(301, b"", "", [("location", req.path + "/" + (f"?{query}" if query else ""))])
    if loc.unreachable:
        raise dial_error(loc.unreachable)
    if loc.node and path.rstrip("/") in NODE_SCOPED and "node" not in req.query:
        # Not upstream (one kubelet, one node): a kubeplane kubelet server may serve several
        # nodes, and these paths answer for the one named (kubelet/server.py).
        query = "&".join(filter(None, (query, urlencode({"node": loc.node}))))
    return await proxy(api, req, loc, prefix, path, query)


def split_proxy_path(request_path: str) -> tuple[str, str]:
    """(the path up to and including /proxy, the rest): the backend's path, with its leading
    and trailing slashes as the client sent them.

    /api/v1/namespaces/ns/pods/web/proxy/a/b/ -> ("/api/v1/namespaces/ns/pods/web/proxy", "/a/b/")
    /api/v1/nodes/n/proxy -> ("/api/v1/nodes/n/proxy", "")
    Upstream: getRequestOptions' subpath (the parts after the subresource, joined).
    """
    parts = request_path.split("/")
    # The subresource is the 5th non-empty segment of /api/v1/<resource>/<name>/proxy, one more
    # for /apis/<group>, two more for /namespaces/<ns>.
    i = _subresource_index(parts)
    rest = "/".join(parts[i + 1:])
    if rest and not rest.startswith("/"):
        rest = "/" + rest
    if request_path.endswith("/") and not rest.endswith("/"):
        rest += "/"
    return "/".join(parts[:i + 1]), rest


def _subresource_index(parts: list[str]) -> int:
    n, want = 0, 5
    for i, p in enumerate(parts):
        if not p:
            continue
        n += 1
        if n == 1 and p == "apis":
            want += 1
        if n == want - 2 and p == "namespaces":
            want += 2
        if n == want:
            return i
    raise errors.NotFound("", "", "")        # not a proxy path (route_subresource sends none)


def backend_url(loc: Location, path: str, query: str) -> str:
    """The backend's URL: the location with the proxied path (escaped as Go's URL.EscapedPath)."""
    escaped = quote(path, safe="/:@!$&'()*+,;=")
    return urlunsplit((loc.scheme, loc.netloc, escaped, query, ""))


def request_headers(req: Request, loc: Location, forwarded_uri: str) -> list[tuple[str, str]]:
    """The client's headers less hop-by-hop and credentials, plus X-Forwarded-Uri (and the
    kubelet client's token for a kubelet)."""
    if req.raw_headers is not None:
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in req.raw_headers]
    else:
        raw = list(req.headers.items())
    named = {t.strip().lower() for k, v in raw if k.lower() == "connection" for t in v.split(",")}
    out = []
    for k, v in raw:
        lk = k.lower()
        if lk in HOP_BY_HOP or lk in named or lk.startswith(CREDENTIALS) or lk in OURS:
            continue
        out.append((k, v))
    out.append(("X-Forwarded-Uri", forwarded_uri))
    if req.remote_addr:                  # Go's ReverseProxy: the client's address, after any earlier hops'
        prior = ", ".join(v for k, v in raw if k.lower() == "x-forwarded-for")
        out = [(k, v) for k, v in out if k.lower() != "x-forwarded-for"]
        out.append(("X-Forwarded-For", f"{prior}, {req.remote_addr}" if prior else req.remote_addr))
    if loc.transport == KUBELET and loc.token:
        out.append(("Authorization", f"Bearer {loc.token}"))
    return out


def forwarded_uri(prefix: str, path: str) -> str:
    """Upstream: Transport.RoundTrip's X-Forwarded-Uri — path.Join(prefix, path), slash kept."""
    uri = posixpath.normpath(prefix + "/" + quote(path, safe="/:@!$&'()*+,;=")) if path else prefix
    uri = "/" + uri.lstrip("/")
    return uri + "/" if path.endswith("/") and not uri.endswith("/") else uri


def rewrite_location(location: str, backend: Location, request_host: str, prefix: str) -> str:
    """A redirect on the backend's own host (or the client's, or with no host) and an absolute
    path, put under the proxy path; anything else (another host, a relative path) unchanged.

    Location /login at pods/web/proxy -> /api/v1/namespaces/ns/pods/web/proxy/login
    Upstream: Transport.rewriteURL (transport.go), with its Scheme and Host empty as the API
    server's are (a server request's URL has none), so the rewritten URL is a path.
    """
    try:
        u = urlsplit(location)
    except ValueError:
        return location
    host = u.netloc
    if (host and host != backend.netloc and host != request_host) or not u.path.startswith("/"):
        return location
    scheme = u.scheme
    if not (host == request_host):
        scheme, host = "", ""
    if u.path.startswith(prefix):
        return urlunsplit((scheme, host, u.path, u.query, u.fragment))
    new_path = posixpath.normpath(prefix + "/" + u.path.lstrip("/"))
    new_path = "/" + new_path.lstrip("/")
    if u.path.endswith("/") and not new_path.endswith("/"):
        new_path += "/"
    return urlunsplit((scheme, host, new_path, u.query, u.fragment))


def response_headers(raw: Any, backend: Location, request_host: str, prefix: str) -> tuple[str, list[tuple[str, str]]]:
    """(content type, the other headers) of the backend's answer to pass on."""
    items = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
    named = {t.strip().lower() for k, v in items if k.lower() == "connection" for t in v.split(",")}
    content_type, out = "", []
    for k, v in items:
        lk = k.lower()
        if lk in HOP_BY_HOP or lk in named or lk in CORS:
            continue
        if lk == "content-type":
            content_type = v
            continue
        if lk == "location":
            v = rewrite_location(v, backend, request_host, prefix)
        out.append((lk, v))
    return content_type, out


async def proxy(api: APIServer, req: Request, loc: Location, prefix: str, path: str, query: str) -> Response:
    """Send the request to the backend; the answer's status, headers and streamed body."""
    import aiohttp

    url = backend_url(loc, path, query)
    headers = request_headers(req, loc, forwarded_uri(prefix, path))
    stream = req.body_stream
    data: Any = stream.chunks() if stream is not None and stream.has_body else (req.body or None)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=False, force_close=True),      # upstream: InsecureSkipVerify
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=DIAL_TIMEOUT,
                                      connect=DIAL_TIMEOUT + TLS_HANDSHAKE_TIMEOUT),
        auto_decompress=False, skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"))
    try:
        resp = await _send(session, req.method, url, headers, data, stream)
    except BaseException:
        await session.close()
        raise
    request_host = req.headers.get("host", "")
    content_type, out = response_headers(resp.raw_headers, loc, request_host, prefix)
    body: AsyncIterator[bytes] = _relay(session, resp)
    if content_type.split(";", 1)[0].strip() == "text/html" and "location" not in resp.headers:
        # Upstream: Transport.rewriteResponse (a redirect's page is left as it is)
        from .proxy_html import rewritten
        body = rewritten(body, resp.headers.get("content-encoding", ""),
                         lambda url: rewrite_location(url, loc, request_host, prefix))
        out = [(k, v) for k, v in out if k != "content-length"]
    return Response(resp.status, body, content_type, out)


async def _send(session: Any, method: str, url: str, headers: list[tuple[str, str]], data: Any,
                stream: Any) -> Any:
    """The backend's answer (its headers); 503 for a dial or transport failure. While waiting,
    a client that goes away (once its body is read) ends the wait."""
    import aiohttp
    from multidict import CIMultiDict

    request = asyncio.ensure_future(session.request(method, url, headers=CIMultiDict(headers), data=data,
                                                    allow_redirects=False, compress=None))
    watch = asyncio.ensure_future(stream.client_gone()) if stream is not None else None
    try:
        if watch is not None:
            await asyncio.wait({request, watch}, return_when=asyncio.FIRST_COMPLETED)
            if not request.done():
                request.cancel()
                with contextlib.suppress(BaseException):
                    await request
                raise dial_error("context canceled")       # Go's words; no one is left to read them
        return await request
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
        raise dial_error(_go_error(e, url)) from None
    finally:
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(BaseException):
                await watch


def _go_error(e: BaseException, url: str) -> str:
    """The failure as Go's transport words it where we can: "dial tcp 10.0.0.7:80: connect:
    connection refused", "dial tcp 10.0.0.7:80: i/o timeout", "EOF"."""
    import os

    import aiohttp
    where = urlsplit(url).netloc
    if isinstance(e, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return f"dial tcp {where}: i/o timeout"
    if isinstance(e, aiohttp.ClientConnectorError):
        os_err = e.os_error
        if os_err.errno:
            return f"dial tcp {where}: connect: {os.strerror(os_err.errno).lower()}"
        return f"dial tcp {where}: {os_err.strerror or os_err}"
    if isinstance(e, aiohttp.ServerDisconnectedError):
        return "EOF"
    return str(e) or type(e).__name__


async def _relay(session: Any, resp: Any) -> AsyncIterator[bytes]:
    """The backend's body as it comes; closing this (the client went away, or the answer was
    sent) closes the backend connection. A backend that fails mid-body ends the answer there."""
    import aiohttp
    try:
        async for chunk in resp.content.iter_chunked(CHUNK):
            yield chunk
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
        log.info("proxied response ended early: %s", e)
    finally:
        resp.close()
        await session.close()


class StreamedBody:
    """A proxied request's body, read from the ASGI channel as the backend takes it (never held
    whole). It is the channel's one reader until the body ends; after that, client_gone() (and
    app.py's disconnect watch, through receive()) read the channel for the client going away.

    Upstream streams a proxied body the same way (the request's Body goes to the transport)."""

    def __init__(self, receive: Any, has_body: bool) -> None:
        self._receive = receive
        self.has_body = has_body
        self.complete = not has_body       # read to its end
        self._gone = False
        self._ended = asyncio.Event()      # read to its end, or given up
        if not has_body:
            self._ended.set()

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            while not self._ended.is_set():
                msg = await self._receive()
                if msg["type"] == "http.disconnect":
                    self._gone = True
                    raise ConnectionResetError("the client went away while sending the body")
                if not msg.get("more_body"):
                    self.complete = True
                    self._ended.set()
                if chunk := msg.get("body", b""):
                    yield chunk
        finally:
            self._ended.set()

    async def receive(self) -> dict[str, Any]:
        """The ASGI channel once the body has been read (or abandoned)."""
        await self._ended.wait()
        if self._gone:
            return {"type": "http.disconnect"}
        return dict(await self._receive())

    async def client_gone(self) -> None:
        """Returns when the client disconnects (waiting for the body to be read first)."""
        while (await self.receive())["type"] != "http.disconnect":
            pass

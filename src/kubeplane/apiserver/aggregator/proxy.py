"""The proxy to an aggregated API server: a request for /apis/<group>/<version>/... of an
APIService with spec.service, once kubeplane has authenticated and authorized its user, goes to
one of the service's endpoints over HTTPS with the user in front-proxy headers.

- TLS: the server's certificate is verified against spec.caBundle for the name
  `<service>.<namespace>.svc` (none verified with spec.insecureSkipTLSVerify); kubeplane presents
  its front-proxy client certificate (--proxy-client-cert-file), which the aggregated server
  trusts through the requestheader CA published in kube-system/extension-apiserver-authentication.
- Identity: X-Remote-User, X-Remote-Uid, X-Remote-Group (one per group) and
  X-Remote-Extra-<key> (the key %-escaped) name the user kubeplane authenticated. Whatever
  X-Remote-* and Impersonate-* headers the client sent are dropped, as is its Authorization
  (upstream's authentication filter deletes it once the user is known): the backend believes
  only the proxy.
- Streaming: the backend's answer is passed on chunk by chunk as it arrives (a watch, or a huge
  list, never sits in memory). A non-long-running request has the request timeout for the whole
  exchange (5 s for a discovery document, /apis/<group>/<version>); a watch has no total limit,
  only a bounded connect.
- Failures: an APIService not Available -> 503 `service unavailable`; no ready endpoint -> the
  same; a backend that cannot be reached -> 503 with the error (upstream's responder.Error);
  a transport that cannot be built (an invalid caBundle) -> 500 with why. These are plain text
  bodies, as upstream's http.Error writes them.

Upstream: proxyHandler.ServeHTTP (kube-aggregator pkg/apiserver/handler_proxy.go),
NewRequestForProxy (apiserver pkg/util/proxy/proxy.go), SetAuthProxyHeaders (client-go
transport/round_trippers.go), UpgradeAwareHandler (apimachinery pkg/util/proxy/upgradeaware.go:
CORS headers removed from the answer).
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson

from ..request import Request, RequestInfo, Response
from .resolver import host_port

if TYPE_CHECKING:
    import aiohttp
    from ..authentication.user import UserInfo

log = logging.getLogger(__name__)

DISCOVERY_TIMEOUT = 5.0          # upstream: aggregatedDiscoveryTimeout
CONNECT_TIMEOUT = 30.0           # seconds to open a connection (Go's dialer default)
PLAIN_TEXT = "text/plain; charset=utf-8"

# Hop-by-hop headers (Go's httputil.ReverseProxy removes them) and what the proxy replaces.
_HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                         "te", "trailer", "transfer-encoding", "upgrade"})
_REQUEST_DROPPED = _HOP_BY_HOP | {"host", "content-length", "authorization", "expect"}
_RESPONSE_DROPPED = _HOP_BY_HOP | {"content-length", "content-type", "access-control-allow-credentials",
                                   "access-control-allow-headers", "access-control-allow-methods",
                                   "access-control-allow-origin"}
_IDENTITY_PREFIXES = ("x-remote-", "impersonate-")


def plain(status: int, text: str) -> Response:
    """Go's http.Error: the text and a newline, as text/plain."""
    return Response(status, (text + "\n").encode(), PLAIN_TEXT, [("x-content-type-options", "nosniff")])


@dataclass(slots=True)
class Backend:
    """How one APIService with spec.service is reached. Upstream: proxyHandlingInfo"""

    name: str
    namespace: str                     # the service's
    service: str
    port: int
    available: bool
    ssl: ssl.SSLContext | None = None
    transport_error: str = ""          # why no TLS configuration could be built (a 500)
    tls_key: tuple[Any, ...] = ()      # what ssl was built from (rebuilt only when it changes)

    @property
    def server_hostname(self) -> str:
        """The name the backend's certificate must carry. Upstream: BuildTransportConfig's ServerName"""
        return f"{self.service}.{self.namespace}.svc"


def build_tls(spec: dict[str, Any], cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    """The TLS configuration of an APIService: its caBundle (or the system roots), none verified
    with insecureSkipTLSVerify, and the proxy's client certificate. ValueError with why not.
    Upstream: BuildTransportConfig + transport.New"""
    ctx = ssl.create_default_context()
    if spec.get("insecureSkipTLSVerify"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif bundle := spec.get("caBundle"):
        try:
            pem = base64.b64decode(bundle, validate=True).decode("ascii")
            ctx = ssl.create_default_context(cadata=pem)
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError):
            raise ValueError("unable to load root certificates: unable to parse bytes as PEM block") from None
    if cert_file and key_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"unable to load the proxy client certificate: {e}") from None
    return ctx


def escape_extra_key(key: str) -> str:
    """%-encode what may not stand in a header name, and '%' itself. Upstream: headerKeyEscape"""
    out = []
    for b in key.encode():
        c = chr(b)
        if b < 127 and (c.isalnum() or c in "!#$&'*+-.^_`|~"):
            out.append(c)
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


def identity_headers(user: UserInfo) -> list[tuple[str, str]]:
    """The front-proxy headers naming user. Upstream: SetAuthProxyHeaders"""
    out = [("X-Remote-User", user.name)]
    if user.uid:
        out.append(("X-Remote-Uid", user.uid))
    out.extend(("X-Remote-Group", g) for g in user.groups)
    for key, values in user.extra:
        out.extend((f"X-Remote-Extra-{escape_extra_key(key)}", v) for v in values)
    return out


def forwarded_headers(req: Request) -> list[tuple[str, str]]:
    """The client's headers, less hop-by-hop ones, its credentials and any identity headers it
    made up, plus the front-proxy identity of the authenticated user."""
    if req.raw_headers is not None:
        pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in req.raw_headers]
    else:
        pairs = list(req.headers.items())
    listed = {t.strip().lower() for k, v in pairs if k.lower() == "connection" for t in v.split(",")}
    out = [(k, v) for k, v in pairs
           if (low := k.lower()) not in _REQUEST_DROPPED and low not in listed and not low.startswith(_IDENTITY_PREFIXES)]
    return out + identity_headers(req.user)


def is_discovery(info: RequestInfo) -> bool:
    """/apis/<group>/<version>: a discovery document, which must be quick."""
    return not info.is_resource_request and len(info.parts) == 3


async def proxy(session: aiohttp.ClientSession, backend: Backend, address: tuple[str, int], req: Request,
                info: RequestInfo, timeout: float, long_running: bool) -> Response:
    """Send req to the backend at address and answer with what it answers, streamed; 503 with
    the error if it cannot be reached."""
    import aiohttp                  # loaded when an APIService is proxied, not at start-up
    url = f"https://{host_port(*address)}{req.path}"
    if req.query:
        url += "?" + urlencode(sorted(req.query.items()))
    if long_running:
        limits = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    else:
        limits = aiohttp.ClientTimeout(total=DISCOVERY_TIMEOUT if is_discovery(info) else timeout)
    body = req.body or (orjson.dumps(req.obj) if req.obj is not None else b"")   # an in-process write's object
    try:
        resp = await session.request(req.method, url, headers=forwarded_headers(req), data=body or None,
                                     ssl=backend.ssl or True, server_hostname=backend.server_hostname, timeout=limits,
                                     allow_redirects=False, auto_decompress=False,
                                     skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"))
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as e:
        log.info("Error proxying to %s: %s", backend.name, e)
        return plain(503, f"error trying to reach service: {describe(e)}")
    headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in _RESPONSE_DROPPED]
    return Response(resp.status, _stream(resp, backend.name), resp.headers.get("content-type", ""), headers)


async def _stream(resp: aiohttp.ClientResponse, name: str) -> AsyncIterator[bytes]:
    """The backend's body as it arrives; a backend failing or timing out mid-way ends it."""
    import aiohttp                  # loaded when an APIService is proxied, not at start-up
    try:
        async for chunk in resp.content.iter_any():
            yield chunk
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
        log.info("Error reading the answer of %s: %s", name, describe(e))
    finally:
        resp.release()


def describe(e: BaseException) -> str:
    """A connection error as Go words it where it can ("dial tcp ...: connect: connection refused")."""
    import aiohttp                  # loaded when an APIService is proxied, not at start-up
    if isinstance(e, asyncio.TimeoutError):
        return "context deadline exceeded"
    if isinstance(e, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {e.certificate_error}"
    if isinstance(e, aiohttp.ClientConnectorError):
        cause = e.os_error
        reason = "connection refused" if isinstance(cause, ConnectionRefusedError) else (cause.strerror or str(cause))
        return f"dial tcp {host_port(e.host, e.port or 443)}: connect: {reason.lower()}"
    return str(e) or type(e).__name__

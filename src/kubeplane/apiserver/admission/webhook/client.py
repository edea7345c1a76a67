"""Posting an AdmissionReview to a webhook over HTTPS, bounded in time and size.

Upstream: ClientManager.HookClient (apiserver/pkg/util/webhook/client.go) builds a REST client
per clientConfig: TLS verified against `caBundle` (none: the system roots), a `url` as it is, a
`service` reference as `https://<name>.<namespace>.svc:<port><path>` — dialled at one ready
endpoint of the service (the endpoint service resolver: ResolveEndpoint, RandomEndpoint in
apiserver/pkg/util/proxy/proxy.go) while the certificate is checked for `<name>.<namespace>.svc`.
The request carries `?timeout=<n>s`, as client-go's Request.Timeout sets it.

The client is aiohttp's (already the project's HTTP client library, asyncio-native, so a slow
webhook costs the loop nothing; httpx was the other candidate and would be a new dependency
for no gain here): one ClientSession per plugin, its connection pool reused, an SSLContext per
distinct caBundle (loading a bundle costs ~100 us; a webhook configuration changes rarely).

Bounds: the whole call is limited by the webhook's timeoutSeconds (aiohttp's total timeout,
connecting included). client-go reads a response body without a limit; here it is read up to
MAX_RESPONSE_BYTES (a patch of a 3 MiB object, base64-encoded, with room to spare) and a
larger one is a failed call, so a webhook answering an endless body cannot exhaust memory.
Decoding a large answer runs in the worker thread, so it does not hold the event loop.

aiohttp is imported when a webhook is first called, not with the server: most clusters have
no webhook, and the import costs ~0.1 s of CPU at start-up (tests/cmd/test_flags.py).
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import random
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ....api import errors
from ....api.resources import lookup
from ....client.transport import load_client_cert
from ...worker import in_worker
from .authentication import AuthenticationInfoResolver
from ..plugins._index import PrefixIndex
from .errors import service_unavailable

if TYPE_CHECKING:
    import aiohttp

    from ...server import APIServer

Obj = dict[str, Any]

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_OFFLOAD_BYTES = 64 * 1024            # decode larger answers in the worker thread
_MAX_UNSTRUCTURED_RESPONSE_TEXT_BYTES = 2048     # client-go's maxUnstructuredResponseTextBytes
_SSL_CACHE_SIZE = 64

_services = lookup("", "v1", "services")
_slices = lookup("discovery.k8s.io", "v1", "endpointslices")
assert _services is not None and _slices is not None
_SERVICES, _SLICES = _services, _slices
_SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class CallError(Exception):
    """Asking the webhook failed: `message` is client-go's error text (`Post "<url>": ...`),
    `status` the API error it is (a StatusError the server answered, else ServiceUnavailable)."""

    def __init__(self, message: str, status: errors.StatusError) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ClientConfigError(Exception):
    """The clientConfig cannot make a client (a caBundle that is not PEM certificates)."""


class ClientManager:
    """Upstream: ClientManager (util/webhook/client.go) with the endpoint service resolver."""

    def __init__(self, api: APIServer, auth: AuthenticationInfoResolver | None = None) -> None:
        self.api = api
        self.auth = auth or AuthenticationInfoResolver()    # --admission-control-config-file's kubeconfig
        self._session: aiohttp.ClientSession | None = None      # made at the first call
        self._ssl: dict[tuple[str, tuple[bytes, bytes] | None], ssl.SSLContext] = {}
        self._slices: PrefixIndex | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def tls_context(self, ca_bundle: Any, client_cert: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        """The TLS context verifying against caBundle (base64 of PEM, as stored; none: system
        roots), presenting client_cert (PEM certificate and key) when given."""
        key = (ca_bundle if isinstance(ca_bundle, str) else "", client_cert)
        ctx = self._ssl.get(key)
        if ctx is None:
            ctx = _new_tls_context(key[0])
            if client_cert is not None:
                try:
                    load_client_cert(ctx, *client_cert)
                except (ssl.SSLError, OSError) as e:
                    raise ClientConfigError(f"unable to load client certificate: {e}") from None
            if len(self._ssl) >= _SSL_CACHE_SIZE:
                self._ssl.pop(next(iter(self._ssl)))
            self._ssl[key] = ctx
        return ctx

    async def post(self, cc: Obj, body: bytes, timeout: float) -> Any:
        """POST body to the webhook of clientConfig cc and return its decoded JSON answer; raises
        CallError (the call failed) or ClientConfigError."""
        import aiohttp   # here, not at import: see the module docstring

        url, dial_url, server_hostname, host_port = await self._location(cc, timeout)
        auth = self.auth.client_config_for(host_port)
        if auth.error:
            raise ClientConfigError(auth.error)
        ctx = self.tls_context(cc.get("caBundle"), auth.client_cert)
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                json_serialize=lambda o: orjson.dumps(o).decode(), auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=10))
        try:
            return await asyncio.wait_for(self._do(dial_url, ctx, server_hostname, body, auth.headers), timeout)
        except CallError:               # the server answered: client-go's error names no URL
            raise
        except (asyncio.TimeoutError, TimeoutError):
            raise CallError(f'Post "{url}": context deadline exceeded',
                            service_unavailable("error calling webhook")) from None
        except aiohttp.ClientConnectorCertificateError as e:
            raise CallError(f'Post "{url}": tls: failed to verify certificate: {_cert_reason(e)}',
                            service_unavailable("error calling webhook")) from None
        except aiohttp.ClientConnectorError as e:
            raise CallError(f'Post "{url}": {_dial_reason(e)}', service_unavailable("error calling webhook")) from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise CallError(f'Post "{url}": {e or type(e).__name__}',
                            service_unavailable("error calling webhook")) from None

    async def _do(self, url: str, ctx: ssl.SSLContext, server_hostname: str | None, body: bytes,
                  auth_headers: tuple[tuple[str, str], ...] = ()) -> Any:
        assert self._session is not None
        # identity only: a compressed answer could expand a thousandfold in one read (a gzip
        # bomb) before the size bound sees it
        headers: Any = {"Content-Type": "application/json", "Accept": "application/json, */*",
                        "Accept-Encoding": "identity", "User-Agent": "kube-apiserver-admission"}
        if auth_headers:
            headers = [*headers.items(), *auth_headers]      # Impersonate-Group may repeat
        async with self._session.post(url, data=body, headers=headers, ssl=ctx, server_hostname=server_hostname,
                                      allow_redirects=False) as resp:
            data = await _read_bounded(resp)
            if not 200 <= resp.status < 300:
                raise _http_error(resp.status, data, resp.content_type)
        try:
            if len(data) > _OFFLOAD_BYTES:
                return await in_worker(orjson.loads, data)
            return orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise CallError(f"couldn't get version/kind; json parse error: {e}",
                            service_unavailable("error calling webhook")) from None

    async def _location(self, cc: Obj, timeout: float) -> tuple[str, str, str | None, str]:
        """(the URL as named in errors, the URL dialled, the TLS server name when they differ,
        the host:port whose credentials are presented: AuthenticationInfoResolver)."""
        query = f"?timeout={max(1, int(-(-timeout // 1)))}s"
        url = cc.get("url")
        if isinstance(url, str) and url:
            return url + query, url + query, None, _host_port(url)
        svc: Obj = cc["service"] if isinstance(cc.get("service"), dict) else {}
        name, ns = str(svc.get("name") or ""), str(svc.get("namespace") or "")
        port: int = svc["port"] if isinstance(svc.get("port"), int) else 443
        path: str = svc["path"] if isinstance(svc.get("path"), str) else ""
        host = f"{name}.{ns}.svc"
        named = f"https://{host}:{port}{path}{query}"
        try:
            hostport = await self._resolve_endpoint(ns, name, port)
        except errors.StatusError as e:
            raise CallError(f'Post "{named}": {e.message}', e) from None
        return named, f"https://{hostport}{path}{query}", host, f"{host}:{port}"

    async def _resolve_endpoint(self, ns: str, name: str, port: int) -> str:
        """Upstream: ResolveEndpoint + RandomEndpoint — `ip:port` of a ready endpoint of the
        service port, from its EndpointSlices."""
        if not name or not ns or not port:
            raise errors.StatusError(500, "InternalError", "cannot resolve an empty service name or namespace or port")
        kv = await self.api.storage.get(_SERVICES.key(ns, name))
        if kv is None:
            raise errors.NotFound("", "service", name)
        spec = kv.obj.get("spec") or {}
        if spec.get("type", "ClusterIP") not in ("ClusterIP", "LoadBalancer", "NodePort"):
            raise errors.StatusError(500, "InternalError", f'unsupported service type "{spec.get("type")}"')
        svc_port = next((p for p in spec.get("ports") or () if p.get("port") == port), None)
        if svc_port is None:
            raise service_unavailable(f'no service port {port} found for service "{name}"')
        if self._slices is None:
            self._slices = PrefixIndex(self.api.storage, _SLICES.prefix)
        slices = [s for s in await self._slices.namespace(ns)
                  if ((s.get("metadata") or {}).get("labels") or {}).get(_SERVICE_NAME_LABEL) == name]
        random.shuffle(slices)
        port_name = svc_port.get("name") or ""
        for s in slices:
            for sp in s.get("ports") or ():
                if (sp.get("name") or "") != port_name or sp.get("port") is None:
                    continue
                eps = [ep for ep in s.get("endpoints") or ()
                       if (ep.get("conditions") or {}).get("ready") is not False and ep.get("addresses")]
                if eps:
                    ip = random.choice(eps)["addresses"][0]
                    return f"[{ip}]:{sp['port']}" if ":" in ip else f"{ip}:{sp['port']}"
        raise service_unavailable(f'no endpoints available for service "{name}"')


def _host_port(url: str) -> str:
    """Upstream: the URL's host, with ":443" when it names no port (u.Host keeps IPv6's brackets)."""
    netloc = urlsplit(url).netloc.rpartition("@")[2]
    host, sep, port = netloc.rpartition(":")
    if sep and port.isdigit() and (not host.startswith("[") or host.endswith("]")):
        return netloc
    return f"{netloc}:443"


async def _read_bounded(resp: aiohttp.ClientResponse) -> bytes:
    """The body, or a CallError past MAX_RESPONSE_BYTES (read no further)."""
    if resp.content_length is not None and resp.content_length > MAX_RESPONSE_BYTES:
        raise _too_large()
    chunks, size = [], 0
    while chunk := await resp.content.read(256 * 1024):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> CallError:
    return CallError(f"response body larger than {MAX_RESPONSE_BYTES} bytes", service_unavailable("error calling webhook"))


def _new_tls_context(ca_bundle_b64: str) -> ssl.SSLContext:
    if not ca_bundle_b64:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle_b64, validate=True).decode("ascii")
        ctx = ssl.create_default_context(cadata=pem)
    except (binascii.Error, ValueError, ssl.SSLError) as e:
        raise ClientConfigError(f"unable to load root certificates: {e}") from None
    return ctx


def _http_error(code: int, body: bytes, content_type: str) -> CallError:
    """client-go's transformResponse for a non-2xx answer: a Status body is the error it says;
    anything else is NewGenericServerResponse with the body's text (cut to 2048 bytes) as the cause."""
    try:
        st = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        st = None
    if isinstance(st, dict) and st.get("kind") == "Status" and isinstance(st.get("message"), str):
        c: int = st["code"] if isinstance(st.get("code"), int) else code
        reason: str = st["reason"] if isinstance(st.get("reason"), str) else ""
        err = errors.StatusError(c, reason, st["message"],
                                 st.get("details") if isinstance(st.get("details"), dict) else None)
        return CallError(st["message"], err)
    text = body[:_MAX_UNSTRUCTURED_RESPONSE_TEXT_BYTES].decode("utf-8", "replace").strip() \
        if content_type.startswith("text/") or content_type in ("application/json", "") else "unknown"
    err = generic_server_response(code, text)
    return CallError(err.message, err)


_GENERIC = {
    409: ("Conflict", "the server reported a conflict"),
    404: ("NotFound", "the server could not find the requested resource"),
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, "
                     "but may still be processing the request"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
}


def generic_server_response(code: int, server_message: str) -> errors.StatusError:
    """Upstream: NewGenericServerResponse (apimachinery api/errors) for a POST without a resource."""
    if code == 409:
        reason, message = "AlreadyExists", "the server reported a conflict"
    elif code in _GENERIC:
        reason, message = _GENERIC[code]
    elif code in (403, 406, 415):
        reason = {403: "Forbidden", 406: "NotAcceptable", 415: "UnsupportedMediaType"}[code]
        message = server_message
    elif code >= 500:
        reason = "InternalError"
        message = f"an error on the server ({errors.go_quote(server_message)}) has prevented the request from succeeding"
    else:
        reason = ""
        message = f"the server responded with the status code {code} but did not return more information"
    return errors.StatusError(code, reason, message,
                              {"causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]})


def _dial_reason(e: aiohttp.ClientConnectorError) -> str:
    """Go's net error text for a failed dial: `dial tcp <host:port>: connect: connection refused`."""
    os_err = e.os_error
    hostport = f"{e.host}:{e.port}"
    if isinstance(os_err, ConnectionRefusedError):
        return f"dial tcp {hostport}: connect: connection refused"
    if isinstance(os_err, ssl.SSLError):
        return f"remote error: tls: {os_err.reason or os_err}"
    return f"dial tcp {hostport}: {os_err.strerror or os_err}" if isinstance(os_err, OSError) else str(e)


def _cert_reason(e: aiohttp.ClientConnectorCertificateError) -> str:
    """Go's x509 verification texts for the common cases."""
    verify = getattr(e.certificate_error, "verify_message", "") or str(e.certificate_error)
    if "unable to get local issuer" in verify or "self-signed" in verify or "self signed" in verify:
        return "x509: certificate signed by unknown authority"
    if "Hostname mismatch" in verify or "IP address mismatch" in verify:
        return f"x509: certificate is not valid for the requested name ({verify})"
    if "expired" in verify:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {verify}"

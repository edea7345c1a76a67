"""Transports: how a client reaches the API server — HTTPS from a kubeconfig, or in-process.

A Transport is a strict point of cut-off (httpx's term): it moves one request and its answer,
nothing more. HTTPTransport is here; the in-process one, which hands a request straight to the
server, is the server's own (kubeplane.apiserver.inprocess), so the client needs no server code.
"""
from __future__ import annotations

import asyncio
import base64
import os
import pathlib
import ssl
from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol
from urllib.parse import urlencode

import orjson
import yaml


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    body: bytes


class Transport(Protocol):
    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        """Send one request and return its status and whole body (never raises for HTTP errors).

        A dict body is a decoded object: only a transport with `accepts_objects` is given one."""

    def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        """GET a streaming response (a watch) and yield it line by line; ends when the server closes."""

    async def close(self) -> None:
        """Release connections."""


class TokenSource(Protocol):
    async def token(self) -> str:
        """A bearer token that is valid now."""

    def reset(self) -> None:
        """Forget the cached token (the server refused it)."""


def load_kubeconfig(path: str | pathlib.Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (cluster, user) entries of a kubeconfig's current context (the first context when
    none is current); {} for a piece the file lacks."""
    cfg = yaml.safe_load(pathlib.Path(path).read_text()) or {}
    contexts = cfg.get("contexts") or []
    ctx_name = cfg.get("current-context")
    ctx = next((c["context"] for c in contexts if c["name"] == ctx_name), contexts[0]["context"] if contexts else {})
    cluster = next((c.get("cluster") or {} for c in cfg.get("clusters") or [] if c["name"] == ctx.get("cluster")), {})
    user = next((u.get("user") or {} for u in cfg.get("users") or [] if u["name"] == ctx.get("user")), {})
    return cluster, user


def client_cert_of(user: dict[str, Any]) -> tuple[bytes, bytes] | None:
    """(certificate PEM, key PEM) of a kubeconfig user's client certificate (the -data fields or
    the files), or None."""
    def read(key: str) -> bytes | None:
        if user.get(f"{key}-data"):
            return base64.b64decode(user[f"{key}-data"])
        return pathlib.Path(user[key]).read_bytes() if user.get(key) else None
    cert, key = read("client-certificate"), read("client-key")
    return (cert, key) if cert and key else None


def load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate chain from files only: through a private temporary directory."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="kubeplane-client-") as d:     # 0700
        paths = pathlib.Path(d, "tls.crt"), pathlib.Path(d, "tls.key")
        for path, data in zip(paths, (cert, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(*paths)


class RateLimitedTransport:
    """Another transport behind a token bucket: each request, and each watch as it starts,
    first waits for a token (qps per second, up to burst at once; waiters go in the order they
    came, the bucket going into debt as x/time/rate's Limiter.Wait does).

    Upstream: client-go's rest client rate limiter (rest.Config QPS/Burst ->
    flowcontrol.NewTokenBucketRateLimiter; Request.tryThrottle before every request and watch).
    kube-controller-manager's --kube-api-qps / --kube-api-burst (20 / 30 by default) set it for
    each controller's client, and every controller has a bucket of its own (its own clientset).
    Example: qps 100, burst 200 -> 200 creates go at once, the next ones one every 10 ms.
    """

    def __init__(self, inner: Transport, qps: float, burst: int, *, clock: Any = None) -> None:
        from ..utils.clock import REAL_CLOCK
        from .util.workqueue.default_rate_limiters import BucketRateLimiter
        self.inner = inner
        self.clock = clock or REAL_CLOCK
        self.limiter: BucketRateLimiter[None] = BucketRateLimiter(qps, burst, clock=self.clock)
        self.accepts_objects = getattr(inner, "accepts_objects", False)   # the in-process transport's

    async def _throttle(self) -> None:
        delay = self.limiter.when(None)
        if delay > 0:
            await self.clock.sleep(delay)

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        await self._throttle()
        return await self.inner.request(method, path, query, body, content_type)

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        await self._throttle()
        async for line in self.inner.stream(path, query):
            yield line

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:          # the rest of the inner transport's own API
        return getattr(self.inner, name)


class HTTPTransport:
    """HTTPS (or HTTP) with aiohttp, configured from a kubeconfig (CA data and bearer token)."""

    def __init__(self, server: str, *, token: str = "", ca_data: bytes | None = None,
                 user_agent: str = "kubeplane", connections: int = 100,
                 client_cert: tuple[bytes, bytes] | None = None,
                 token_source: TokenSource | None = None) -> None:
        """token_source: a bearer token asked for on every request (one that expires and is
        renewed, as a controller's service account token); a 401 tells it to get a new one."""
        import aiohttp
        self.server = server.rstrip("/")
        self.token_source = token_source
        self._ca_data, self._connections = ca_data, connections
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._headers = headers
        self._aiohttp = aiohttp
        self.session = self._new_session(client_cert)
        self._closing: asyncio.Future[None] | None = None      # the session a rotation replaced

    def _new_session(self, client_cert: tuple[bytes, bytes] | None) -> Any:
        ssl_ctx: ssl.SSLContext | bool = False
        if self.server.startswith("https"):
            ssl_ctx = ssl.create_default_context(cadata=self._ca_data.decode() if self._ca_data else None)
            if client_cert is not None:
                load_client_cert(ssl_ctx, *client_cert)
        return self._aiohttp.ClientSession(
            connector=self._aiohttp.TCPConnector(ssl=ssl_ctx, limit=self._connections), headers=self._headers,
            read_bufsize=1 << 22)   # watch lines are whole objects; allow large ones

    def set_client_cert(self, cert: bytes, key: bytes) -> None:
        """Present this certificate from now on (a rotated one): requests go over new
        connections, and the old ones are closed (watches on them end and are made anew), as
        client-go's certificate rotation closes every connection of the transport."""
        old, self.session = self.session, self._new_session((cert, key))
        self._closing = asyncio.ensure_future(old.close())

    @classmethod
    def from_kubeconfig(cls, path: str | pathlib.Path, *, user_agent: str = "kubeplane") -> HTTPTransport:
        cluster, user = load_kubeconfig(path)
        ca = cluster.get("certificate-authority-data")
        ca_data = base64.b64decode(ca) if ca else (
            pathlib.Path(cluster["certificate-authority"]).read_bytes() if cluster.get("certificate-authority") else None)
        return cls(cluster["server"], token=user.get("token", ""), ca_data=ca_data, user_agent=user_agent,
                   client_cert=client_cert_of(user))

    def _url(self, path: str, query: dict[str, str] | None) -> str:
        return self.server + path + ("?" + urlencode(query) if query else "")

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        if isinstance(body, dict):                  # not sent by our clients (accepts_objects is unset)
            body = orjson.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else {}
        await self._authorize(headers)
        async with self.session.request(method, self._url(path, query), data=body, headers=headers) as r:
            self._check_unauthorized(r.status)
            return RawResponse(r.status, await r.read())

    async def _authorize(self, headers: dict[str, str]) -> None:
        if self.token_source is not None:
            headers["Authorization"] = "Bearer " + await self.token_source.token()

    def _check_unauthorized(self, status: int) -> None:
        """Upstream: ResettableTokenSourceWrapTransport — a 401 resets the cached token."""
        if status == 401 and self.token_source is not None:
            self.token_source.reset()

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        timeout = self._aiohttp.ClientTimeout(total=None, sock_read=None)
        headers: dict[str, str] = {}
        await self._authorize(headers)
        async with self.session.get(self._url(path, query), timeout=timeout, headers=headers) as r:
            if r.status != 200:
                self._check_unauthorized(r.status)
                yield await r.read()
                return
            async for line in r.content:
                line = line.strip()
                if line:
                    yield line

    async def close(self) -> None:
        await self.session.close()
        if self._closing is not None:
            await self._closing

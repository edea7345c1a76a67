"""Transports: how a client reaches the API server — HTTPS from a kubeconfig, or in-process.

A Transport is a strict point of cut-off (httpx's term): it moves one request and its answer,
nothing more. The in-process transport hands a `Request` straight to `APIServer.handle`, so
components sharing the server's process skip sockets, TLS and HTTP parsing but get exactly the
same behaviour (authentication aside: in-process callers are trusted).
"""
from __future__ import annotations

import base64
import pathlib
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Protocol
from urllib.parse import urlencode

import orjson
import yaml

from ..apiserver.request import Request   # a plain dataclass module: no server code comes with it

if TYPE_CHECKING:
    from ..apiserver.server import APIServer


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


class InProcessTransport:
    """Calls APIServer.handle directly: no sockets, no TLS, the same code path as HTTPS requests.

    A create/update body may be a dict (a typed client's object): it reaches the server as
    Request.obj, already decoded.
    """

    accepts_objects = True

    def __init__(self, api: APIServer, user: str = "system:kube-controller-manager",
                 user_agent: str = "kubeplane") -> None:
        self.api = api
        self.user = user
        self.user_agent = user_agent

    def _request(self, method: str, path: str, query: dict[str, str] | None, body: bytes | dict[str, Any] | None,
                 content_type: str) -> Request:
        headers = {"content-type": content_type, "user-agent": self.user_agent}
        if isinstance(body, dict):
            return Request(method, path, dict(query or {}), headers, b"", self.user, body)
        return Request(method, path, dict(query or {}), headers, body or b"", self.user)

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        resp = await self.api.route_trusted(self._request(method, path, query, body, content_type))
        if isinstance(resp.body, (bytes, bytearray)):
            return RawResponse(resp.status, bytes(resp.body))
        chunks = [c async for c in resp.body]
        return RawResponse(resp.status, b"".join(chunks))

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        resp = await self.api.route_trusted(self._request("GET", path, query, None, "application/json"))
        if isinstance(resp.body, (bytes, bytearray)):
            yield bytes(resp.body)            # an error Status: the caller decodes it
            return
        body = resp.body
        try:
            async for chunk in body:
                for line in chunk.splitlines():
                    if line:
                        yield line
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()

    async def close(self) -> None:
        pass


class HTTPTransport:
    """HTTPS (or HTTP) with aiohttp, configured from a kubeconfig (CA data and bearer token)."""

    def __init__(self, server: str, *, token: str = "", ca_data: bytes | None = None,
                 user_agent: str = "kubeplane", connections: int = 100) -> None:
        import aiohttp
        self.server = server.rstrip("/")
        ssl_ctx: ssl.SSLContext | bool = False
        if self.server.startswith("https"):
            ssl_ctx = ssl.create_default_context(cadata=ca_data.decode() if ca_data else None)
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._aiohttp = aiohttp
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ssl_ctx, limit=connections), headers=headers,
            read_bufsize=1 << 22)   # watch lines are whole objects; allow large ones

    @classmethod
    def from_kubeconfig(cls, path: str | pathlib.Path, *, user_agent: str = "kubeplane") -> HTTPTransport:
        cluster, user = load_kubeconfig(path)
        ca = cluster.get("certificate-authority-data")
        ca_data = base64.b64decode(ca) if ca else (
            pathlib.Path(cluster["certificate-authority"]).read_bytes() if cluster.get("certificate-authority") else None)
        return cls(cluster["server"], token=user.get("token", ""), ca_data=ca_data, user_agent=user_agent)

    def _url(self, path: str, query: dict[str, str] | None) -> str:
        return self.server + path + ("?" + urlencode(query) if query else "")

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        if isinstance(body, dict):                  # not sent by our clients (accepts_objects is unset)
            body = orjson.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else {}
        async with self.session.request(method, self._url(path, query), data=body, headers=headers) as r:
            return RawResponse(r.status, await r.read())

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        timeout = self._aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.get(self._url(path, query), timeout=timeout) as r:
            if r.status != 200:
                yield await r.read()
                return
            async for line in r.content:
                line = line.strip()
                if line:
                    yield line

    async def close(self) -> None:
        await self.session.close()

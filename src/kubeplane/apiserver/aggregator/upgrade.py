"""Upgrade requests (WebSocket, SPDY) to an aggregated API: the connection is tunnelled to the
backend once it agrees to switch protocols.

The request goes to the backend as sent (Connection: Upgrade, Upgrade: ...), with the front-proxy
identity headers set on it ahead of time and the client's own credentials and identity headers
dropped, over a TLS connection verified as for any proxied request. If the backend answers 101
Switching Protocols, the client's connection is taken over (apiserver/upgrade.py), the answer
written to it, and from then on bytes are copied both ways until either side closes, with
back-pressure (utils/duplex.py splice: a side that cannot keep up pauses the other's reading).
Any other answer is the response, as the backend sent it (bounded to MAX_BODY), and the client's
connection is closed after it.
Over the in-process transport there is no connection to take: the request is proxied as a plain
one.

Upstream: UpgradeAwareHandler.tryUpgrade (apimachinery pkg/util/proxy/upgradeaware.go), with the
auth proxy headers set on the request first (handler_proxy.go: "If we are upgrading, then the
upgrade path tries to use this request with the TLS config we provide, but it does NOT use the
proxyRoundTripper").
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlencode

from ...utils.duplex import Duplex, open_connection, splice
from ..codec import MAX_BODY
from ..request import Request, Response
from .proxy import CONNECT_TIMEOUT, Backend, describe, forwarded_headers, plain
from .resolver import host_port

HEAD_TIMEOUT = 30.0               # seconds for the backend's answer to the upgrade
Hijack = Callable[[], Duplex]     # req.hijack (apiserver/upgrade.py)


def wants_upgrade(req: Request) -> bool:
    return "upgrade" in req.headers.get("connection", "").lower() and bool(req.headers.get("upgrade"))


def request_head(req: Request, address: tuple[str, int]) -> bytes:
    target = req.path + ("?" + urlencode(sorted(req.query.items())) if req.query else "")
    lines = [f"{req.method} {target} HTTP/1.1", f"Host: {host_port(*address)}",
             "Connection: Upgrade", f"Upgrade: {req.headers['upgrade']}"]
    lines += [f"{k}: {v}" for k, v in forwarded_headers(req) if "\r" not in v and "\n" not in v]
    if req.body:
        lines.append(f"Content-Length: {len(req.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + req.body


async def proxy_upgrade(backend: Backend, address: tuple[str, int], req: Request, hijack: Hijack,
                        tunnels: set[asyncio.Future[None]]) -> Response:
    """Dial the backend, send the upgrade request, and tunnel on 101 (the returned 101 response
    tells the front end that the connection is answered); otherwise its answer."""
    host, port = address
    try:
        conn = await open_connection(host, port, ssl=backend.ssl or True, server_hostname=backend.server_hostname,
                                     timeout=CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as e:
        return plain(503, f"error trying to reach service: {describe(e)}")
    try:
        conn.write(request_head(req, address))
        head = await asyncio.wait_for(conn.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            ValueError, IndexError) as e:
        conn.close()
        return plain(503, f"error trying to reach service: {describe(e) if isinstance(e, OSError) else e}")
    if status != 101:
        return await _plain_answer(status, header_lines, conn)
    client = hijack()
    client.write(head)                 # what the backend sent after it is still in conn: the splice copies it
    task = asyncio.ensure_future(_tunnel(client, conn))
    tunnels.add(task)
    task.add_done_callback(tunnels.discard)
    return Response(101)


async def _tunnel(client: Duplex, backend: Duplex) -> None:
    try:
        await splice(client, backend)
    finally:
        client.close()
        backend.close()


async def _plain_answer(status: int, header_lines: list[str], conn: Duplex) -> Response:
    """The backend refused to switch: its answer as a response (the body bounded)."""
    headers = [tuple(h.split(":", 1)) for h in header_lines if ":" in h]
    fields = {k.strip().lower(): v.strip() for k, v in headers}
    try:
        if (length := fields.get("content-length")) is not None:
            body = await asyncio.wait_for(conn.readexactly(min(int(length), MAX_BODY)), HEAD_TIMEOUT)
        else:
            body = await asyncio.wait_for(conn.read(MAX_BODY), HEAD_TIMEOUT)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
        body = b""
    finally:
        conn.close()
    kept = [(k.strip(), v.strip()) for k, v in headers
            if k.strip().lower() not in ("content-length", "content-type", "connection", "transfer-encoding",
                                         "upgrade", "keep-alive")]
    return Response(status, body, fields.get("content-type", ""), kept)

"""pods/exec, pods/attach and pods/portforward: the API server checks the request and hands
the connection to the pod's node's kubelet.

    GET  /api/v1/namespaces/ns/pods/web/exec?command=sh&stdin=true&stdout=true&tty=true
         (Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Protocol: v5.channel.k8s.io,...)

1. Authorization: the request's verb is its method's (GET: get, POST: create), checked by the
   usual filter; a GET (the WebSocket upgrade) must also be allowed to `create` the
   subresource (upstream's AuthorizePodWebsocketUpgradeCreatePermission, on by default since
   1.35), so `get pods/exec` alone opens no shell.
2. The pod and its container as upstream's streamLocation checks them (400s), its node.
3. The connection is taken over (upgrade.py) and given to the kubelet: an in-process one
   directly (its stream()), any other by dialling its HTTPS server and splicing the bytes both
   ways after passing the request on (upstream's UpgradeAwareHandler: the kubelet's 101 or
   error goes back unchanged, the API server does not parse the protocol).

Upstream: pkg/registry/core/pod/rest/subresources.go (ExecREST, AttachREST, PortForwardREST),
pod.ExecLocation/AttachLocation/PortForwardLocation (strategy.go streamLocation, streamParams).
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlencode

import orjson

from ...api import errors
from ...api.resources import ResourceInfo, lookup
from ...utils.duplex import Duplex, open_connection, splice
from ..request import Request, Response, parse_request_info
from .podlog import DIAL_TIMEOUT, _dial_error, kubelet_port, preferred_node_address, validate_container

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

# Request headers passed on to the kubelet (the upgrade's own; not the client's credentials).
PASSED_HEADERS = frozenset({"connection", "upgrade", "sec-websocket-key", "sec-websocket-version",
                            "sec-websocket-protocol", "sec-websocket-extensions", "x-stream-protocol-version"})
SESSIONS: set[asyncio.Task[None]] = set()


def _flag(q: dict[str, list[str]], name: str) -> bool:
    """A bool parameter as the query decoder reads it (strconv.ParseBool); 400 otherwise."""
    v = (q.get(name) or ["false"])[-1]
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False", ""):
        return False
    raise errors.BadRequest(f'strconv.ParseBool: parsing "{v}": invalid syntax')


def kubelet_query(sub: str, q: dict[str, list[str]], pod: dict, name: str) -> tuple[str, dict[str, list[str]]]:
    """(the container, the kubelet's parameters). Upstream: streamParams / PortForwardLocation"""
    if sub == "portforward":
        return "", {"port": list(q.get("ports") or [])} if q.get("ports") else {}
    container = validate_container(pod, name, (q.get("container") or [""])[-1])
    out: dict[str, list[str]] = {}
    for param, kubelet in (("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty")):
        if _flag(q, param):
            out[kubelet] = ["1"]
    if sub == "exec" and q.get("command"):
        out["command"] = list(q["command"])
    return container, out


async def connect(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str) -> Response:
    if "dryRun" in req.query:
        raise errors.BadRequest("dryRun is not supported")
    if req.method == "GET":                    # AuthorizePodWebsocketUpgradeCreatePermission
        api.authorize(req, replace(parse_request_info(req), verb="create"))
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound("", "pods", name)
    pod = kv.obj
    hijack = req.hijack
    raw = hijack.raw_query if hijack is not None else ""
    q = parse_qs(raw, keep_blank_values=True) if raw else {k: [v] for k, v in req.query.items()}
    container, params = kubelet_query(sub, q, pod, name)
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    if hijack is None:
        raise errors.BadRequest("Upgrade request required")     # upstream: UpgradeAwareHandler.UpgradeRequired
    kubelet = api.nodes.get(node)
    conn: Duplex = hijack()
    headers = joined_headers(req)
    if kubelet is not None and hasattr(kubelet, "stream"):
        run = kubelet.stream(sub, ns, name, container, params, headers, conn)
    else:
        path = "/".join(quote(p, safe="") for p in ("portForward" if sub == "portforward" else sub, ns, name,
                                                     *((container,) if container else ())))
        run = splice_to_kubelet(api, node, f"/{path}?{urlencode(params, doseq=True)}", req, conn)
    task = asyncio.ensure_future(_session(run, conn))
    SESSIONS.add(task)
    task.add_done_callback(SESSIONS.discard)
    return Response(101, b"")              # not sent: the connection is the session's now


def joined_headers(req: Request) -> dict[str, str]:
    """Lower-cased names; a repeated header's values joined with ", " (SPDY clients send one
    X-Stream-Protocol-Version per protocol)."""
    if not req.raw_headers:
        return dict(req.headers)
    out: dict[str, str] = {}
    for k, v in req.raw_headers:
        name, value = k.decode("latin-1").lower(), v.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def _session(run: Any, conn: Duplex) -> None:
    try:
        await run
    except Exception:                       # a bug must not leave the connection open
        log.exception("stream session failed")
    finally:
        conn.close()


async def splice_to_kubelet(api: APIServer, node_name: str, path: str, req: Request, conn: Duplex) -> None:
    """Pass the upgrade request to the node's kubelet server and splice the two connections.
    Upstream: UpgradeAwareHandler.tryUpgrade (the kubelet's certificate unverified, as
    without --kubelet-certificate-authority; the API server's bearer token)."""
    nodes = lookup("", "v1", "nodes")
    assert nodes is not None
    kv = await api.storage.get(nodes.key("", node_name))
    if kv is None:
        conn.write(status_error(errors.NotFound("", "nodes", node_name)))
        return
    try:
        host, port = preferred_node_address(kv.obj), kubelet_port(kv.obj)
    except errors.StatusError as e:
        conn.write(status_error(e))
        return
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        upstream = await open_connection(host, port, ssl=ctx, timeout=DIAL_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as e:
        msg = f"error dialing backend: {_dial_error(e) if not isinstance(e, OSError) else e}"
        conn.write(status_error(errors.InternalError(msg)))
        return
    token = next(iter(api.tokens), "")
    lines = [f"{req.method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    for k, v in req.raw_headers or [(k.encode(), v.encode()) for k, v in req.headers.items()]:
        name = k.decode("latin-1").lower()
        if name in PASSED_HEADERS:
            lines.append(f"{name}: {v.decode('latin-1')}")
    upstream.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    try:
        await splice(conn, upstream)
    finally:
        upstream.close()


def status_error(e: errors.StatusError) -> bytes:
    """An HTTP answer with the error's Status, written on a taken-over connection."""
    body = orjson.dumps(e.status())
    return (f"HTTP/1.1 {e.code} {e.reason or 'Error'}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body

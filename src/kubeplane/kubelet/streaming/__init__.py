"""The kubelet's streaming endpoints: /exec, /attach and /portForward, after an HTTP upgrade.

    await serve(kubelet, "exec", "default", "web", "app", query, headers, conn)

`conn` is the upgraded connection as a Duplex (utils/duplex.py), handed over by the kubelet's HTTPS
server (kubelet/server.py) or, for in-process kubelets, by the API server itself
(apiserver/handlers/connect.py). serve() writes the HTTP answer: 101 and the session, or the
error the kubelet gives before any upgrade (400 for bad parameters, 404 for an unknown pod,
500 with upstream's text for a container that is not running).

Protocols: WebSocket with the channel protocols (wsstream.py; remotecommand.py for exec and
attach, portforward.py); for port-forward also SPDY/3.1 (spdy.py), directly and tunnelled in a
WebSocket ("SPDY/3.1+portforward.k8s.io", what kubectl 1.37 uses); exec and attach also over
SPDY (v4 down to channel.k8s.io: kubectl's fallback when a WebSocket upgrade fails).

Upstream: pkg/kubelet/server/server.go (getExec, getAttach, getPortForward) and
pkg/kubelet/cri/streaming.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import pathlib
import tempfile
from collections.abc import Mapping
from typing import Any

import orjson

from ...api import errors
from ..runtime import RUNNING
from ...utils.duplex import Duplex
from .process import ExecTarget
from . import portforward, remotecommand, spdy
from .wsstream import Channels, WebSocket, WebSocketBytes, check_handshake, handshake_response, is_websocket_request, \
    negotiate, offered_protocols

log = logging.getLogger(__name__)

KINDS = ("exec", "attach", "portforward")


class Feeder:
    """aiohttp's payload parser of an upgraded request (RequestHandler.set_parser): every byte
    after the headers goes to the Duplex."""

    def __init__(self, conn: Duplex) -> None:
        self.conn = conn

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.conn.feed(data)
        return False, b""

    def feed_eof(self) -> None:
        self.conn.lost()


def HIJACKED() -> Any:
    """What an aiohttp handler returns once it has answered on the connection itself: nothing
    more is written, and aiohttp takes the connection as gone."""
    from aiohttp import web

    class Hijacked(web.StreamResponse):
        async def prepare(self, request: Any) -> Any:
            raise ConnectionResetError("the connection was taken over")
    return Hijacked()


def http_error(code: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> bytes:
    reason = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              500: "Internal Server Error", 502: "Bad Gateway"}.get(code, "Error")
    return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


def status_error(e: errors.StatusError) -> bytes:
    return http_error(e.code, orjson.dumps(e.status()), "application/json")


async def serve(host: Any, kind: str, ns: str, name: str, container: str, query: Mapping[str, list[str]],
                headers: Mapping[str, str], conn: Duplex) -> None:
    """Answer one upgrade request on conn and run its session; conn is closed at the end, or
    once nothing has crossed it for the kubelet's streaming idle timeout."""
    timeout = getattr(getattr(host, "options", None), "streaming_connection_idle_timeout", 0)
    watchdog = asyncio.ensure_future(close_when_idle(conn, timeout, host.clock)) if timeout else None
    try:
        await _serve(host, kind, ns, name, container, query, headers, conn)
    except errors.StatusError as e:
        conn.write(status_error(e))
    except ValueError as e:
        conn.write(http_error(400, str(e).encode()))
    except ConnectionError:
        pass
    finally:
        conn.close()
        if watchdog is not None:
            watchdog.cancel()


IDLE_CHECKS = 8          # looks per idle timeout: a connection closes within timeout * (1 + 1/8) of its last byte


async def close_when_idle(conn: Duplex, timeout: float, clock: Any) -> None:
    """Close conn once no byte has been read from or written to it for `timeout` seconds (the
    session then ends as when the client goes: an exec's command is killed). Upstream: the
    kubelet's --streaming-connection-idle-timeout (StreamIdleTimeout: wsstream's deadline
    reset by every message, spdystream's idle timer)"""
    step = timeout / IDLE_CHECKS
    seen, idle = conn.activity, 0.0
    while True:
        await clock.sleep(step)
        if conn.activity != seen:
            seen, idle = conn.activity, 0.0
            continue
        idle += step
        if idle >= timeout:
            log.info("Closing an idle streaming connection", extra={"idleSeconds": timeout})
            conn.close()
            conn.lost()
            return


async def _serve(host: Any, kind: str, ns: str, name: str, container: str, query: Mapping[str, list[str]],
                 headers: Mapping[str, str], conn: Duplex) -> None:
    pod = find_pod(host, ns, name)
    websocket = is_websocket_request(headers)
    if kind == "portforward":
        await _port_forward(host, pod, query, headers, conn, websocket)
        return
    opts = remotecommand.options(query)
    if not _has_container(pod, container):
        raise errors.StatusError(500, "InternalError", f'container not found ("{container}")')
    target: ExecTarget | None = None
    if kind == "exec":
        if not opts.command:
            raise ValueError("you must specify at least one command for the container")
        target = exec_target(host, pod, container)
    else:
        opts = attach_options(pod, container, opts)
    if not websocket:
        await _spdy_remote_command(host, kind, pod, container, opts, target, headers, conn)
        return
    ch = _accept_websocket(headers, conn, remotecommand.PROTOCOLS)
    if ch is None:
        return
    await _run_session(host, kind, remotecommand.Session(ch, opts), pod, container, target)


async def _run_session(host: Any, kind: str, session: remotecommand.Session, pod: Any, container: str,
                       target: ExecTarget | None) -> None:
    """exec: the command in target. attach: once the client's streams are there (as upstream
    calls the runtime's attach only then: a failed upgrade must not count as a stdinOnce
    container's attach), to the runtime's attach connection, or, for a container that keeps
    no stdin, to its output."""
    if kind == "exec":
        assert target is not None
        await session.exec(list(session.opts.command), target)
        return
    m = pod.metadata
    io = await attach_io(host, m.uid, container, session.opts)
    if io is not None:
        await session.attach_io(io)
    else:
        await session.attach(attach_output(host, m.namespace, m.name, m.uid, container))


def attach_options(pod: Any, container: str, opts: remotecommand.Options) -> remotecommand.Options:
    """attach runs with the container's terminal setting, not the request's (a process's TTY
    cannot change once it runs); asking for stderr from a container with a terminal is
    upstream's error. Upstream: Kubelet.GetAttach, the CRI streaming server's validateAttachRequest"""
    spec = container_spec(pod, container)
    tty = bool(spec is not None and spec.tty)
    if tty and opts.stderr:
        raise errors.StatusError(500, "InternalError", "tty and stderr cannot both be true")
    return dataclasses.replace(opts, tty=tty)


async def attach_io(host: Any, uid: str, container: str, opts: remotecommand.Options) -> Any:
    """The runtime's attach connection to a container that keeps its stdin or a terminal
    (the process runtime's), else None."""
    fn = getattr(host.runtime, "attach", None)
    if fn is None:
        return None
    return await fn(uid, container, stdin=opts.stdin, stdout=opts.stdout, stderr=opts.stderr)


def container_spec(pod: Any, name: str) -> Any:
    """Upstream: kubecontainer.GetContainerSpec (app, init and ephemeral containers)."""
    spec = pod.spec
    groups = (spec.containers, spec.init_containers, spec.ephemeral_containers) if spec is not None else ()
    return next((c for g in groups for c in g or () if c.name == name), None)


def _spdy_upgrade(headers: Mapping[str, str], conn: Duplex, supported: tuple[str, ...]) -> str | None:
    """Answer an upgrade to SPDY/3.1 with the protocol negotiated from X-Stream-Protocol-Version
    (101), or upstream's 403 when none matches. Upstream: httpstream.Handshake"""
    if headers.get("upgrade", "").lower() != "spdy/3.1":
        raise ValueError("Upgrade request required")
    clients = [p.strip() for p in headers.get("x-stream-protocol-version", "").split(",") if p.strip()]
    if not clients:
        raise ValueError("unable to upgrade: X-Stream-Protocol-Version is required")
    protocol = next((p for p in clients if p in supported), None)
    if protocol is None:
        conn.write(http_error(403, (f"unable to upgrade: unable to negotiate protocol: client supports "
                                    f"[{' '.join(clients)}], server accepts [{' '.join(supported)}]\n").encode()))
        return None
    conn.write(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
               b"X-Stream-Protocol-Version: " + protocol.encode() + b"\r\n\r\n")
    return protocol


async def _spdy_remote_command(host: Any, kind: str, pod: Any, container: str, opts: remotecommand.Options,
                               target: ExecTarget | None, headers: Mapping[str, str], conn: Duplex) -> None:
    """exec or attach over SPDY (kubectl's fallback): wait for the client's streams, then run
    the session on them. Upstream: remotecommand.createHTTPStreamStreams"""
    protocol = _spdy_upgrade(headers, conn, remotecommand.SPDY_PROTOCOLS)
    if protocol is None:
        return
    ch = remotecommand.SpdyChannels(protocol, opts)
    sp = ch.session = spdy.Session(conn, ch.on_stream)
    serving = asyncio.ensure_future(sp.serve())
    serving.add_done_callback(lambda _: ch.ended.set())
    try:
        waited = asyncio.ensure_future(ch.complete.wait())
        await asyncio.wait([waited, serving], timeout=remotecommand.STREAM_CREATION_TIMEOUT,
                           return_when=asyncio.FIRST_COMPLETED)
        waited.cancel()
        if not ch.complete.is_set():
            return                        # upstream: "timed out waiting for client to create streams"
        await _run_session(host, kind, remotecommand.Session(ch, opts), pod, container, target)
    finally:
        conn.close()
        await asyncio.gather(serving, return_exceptions=True)


def _accept_websocket(headers: Mapping[str, str], conn: Duplex, supported: tuple[str, ...]) -> Channels | None:
    """Answer the WebSocket handshake (101 with the negotiated protocol) and return the channel
    connection; None, after x/net/websocket's 403, when no offered protocol is supported."""
    if (why := check_handshake(headers)) is not None:
        raise ValueError(why)
    protocol = negotiate(offered_protocols(headers), supported)
    if protocol is None:
        conn.write(http_error(403, b"Forbidden"))
        return None
    conn.write(handshake_response(headers, protocol))
    return Channels(WebSocket(conn), protocol)


async def _port_forward(host: Any, pod: Any, query: Mapping[str, list[str]], headers: Mapping[str, str],
                        conn: Duplex, websocket: bool) -> None:
    """Three ways in: SPDY tunnelled in a WebSocket (kubectl 1.37's default), SPDY (kubectl's
    fallback, older clients), the WebSocket channel protocol (the Python client)."""
    ns, name, uid = pod.metadata.namespace, pod.metadata.name, pod.metadata.uid
    address, sandbox = forward_address(host, uid)
    spdy_forwarder = portforward.SpdyForwarder(address, f"{name}_{ns}", uid, sandbox)
    if websocket and portforward.TUNNEL_PROTOCOL in offered_protocols(headers):
        ch = _accept_websocket(headers, conn, (portforward.TUNNEL_PROTOCOL,))
        if ch is not None:
            tunnel = WebSocketBytes(ch.ws)
            await spdy.Session(tunnel, spdy_forwarder.on_stream).serve()
            tunnel.close()
            await ch.ws.close(1000)
        return
    if websocket:
        port_list = portforward.ports(query)
        ch = _accept_websocket(headers, conn, portforward.PROTOCOLS)
        if ch is not None:
            await portforward.Forwarder(ch, port_list, address, f"{name}_{ns}", uid, sandbox).run()
        return
    if _spdy_upgrade(headers, conn, (portforward.SPDY_PROTOCOL,)) is None:
        return
    await spdy.Session(conn, spdy_forwarder.on_stream).serve()


def find_pod(host: Any, ns: str, name: str) -> Any:
    """Upstream: GetPodByName; the kubelet's 404 text."""
    for p in (host.pods.values() if host is not None else ()):
        if p.metadata.name == name and p.metadata.namespace == ns:
            return p
    raise errors.StatusError(404, "NotFound", f'pod "{name}" does not exist')


def _has_container(pod: Any, name: str) -> bool:
    spec = pod.spec
    groups = (spec.containers, spec.init_containers, spec.ephemeral_containers) if spec is not None else ()
    return any(c.name == name for g in groups for c in g or ())


def exec_target(host: Any, pod: Any, container: str) -> ExecTarget:
    """Where the command runs: the process runtime's container (its exec_target: env, working
    directory, namespaces); the sim runtime's, as KWOK's ClusterExec, on the host in a scratch
    directory of the pod with the pod's environment (static values; references resolved by
    nobody). 500 `container not found ("c")` when the container is not running, as upstream's
    kubelet (findContainer)."""
    uid = pod.metadata.uid
    rt = host.runtime.pod_status(uid)
    latest = rt.latest(container) if rt is not None else None
    missing = errors.StatusError(500, "InternalError", f'container not found ("{container}")')
    if latest is None or latest.state != RUNNING:
        raise missing
    fn = getattr(host.runtime, "exec_target", None)
    if fn is not None:
        target: ExecTarget | None = fn(uid, container)
        if target is None:
            raise missing
        return target
    return scratch_target(pod, container)


def scratch_target(pod: Any, container: str) -> ExecTarget:
    """The sim runtime's: <tmp>/kubeplane-exec/<pod uid>, host_env + the container's env values."""
    from ..runtime.process.env import expand, host_env
    spec = next(c for g in (pod.spec.containers, pod.spec.init_containers, pod.spec.ephemeral_containers)
                for c in g or () if c.name == container)
    env = host_env(pod)
    for v in spec.env or ():
        if v.value_from is None:
            env[v.name] = expand(v.value or "", env)
    cwd = pathlib.Path(tempfile.gettempdir(), "kubeplane-exec", pod.metadata.uid)
    cwd.mkdir(parents=True, exist_ok=True, mode=0o700)
    return ExecTarget(env=env, cwd=str(cwd))


def forward_address(host: Any, uid: str) -> tuple[str | None, str]:
    """(the address to dial for the pod's ports, its sandbox id for messages): the runtime's
    port_forward_address; None (nothing listens: the sim runtime's pods run no processes)."""
    fn = getattr(host.runtime, "port_forward_address", None)
    if fn is not None:
        address: tuple[str | None, str] = fn(uid)
        return address
    rt = host.runtime.pod_status(uid)
    return None, (rt.sandbox.id if rt is not None and rt.sandbox is not None else uid)


def attach_output(host: Any, ns: str, name: str, uid: str, container: str) -> Any:
    """The container's log, followed: attach to a container that keeps no stdin, and every
    attach in the sim runtime, as KWOK's (its stdin is ignored). Upstream: KWOK's
    Server.AttachContainer (pkg/kwok/server/attach.go: readLogs of the attach's logsFile, follow)"""
    from ...api.podlog import LogOptions
    return host.container_logs(ns, name, uid, LogOptions(container, True, False, 0, None, False, None))

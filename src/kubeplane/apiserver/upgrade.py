"""Taking over a connection for an HTTP upgrade: the one way the API server's front end hands
a connection out of HTTP, for pods/exec, attach, portforward (handlers/connect.py, to the
kubelet) and for upgrade requests to an aggregated API (aggregator/upgrade.py, to its backend).

A request with `Connection: Upgrade` runs through the filters and routing like any other
(authentication, authorization, the pod look-up; the request deadline and an in-flight slot
unless it is long-running, so Upgrade headers buy no way around the limits until the switch):
an error is answered as usual and the connection closed. A handler that accepts the upgrade
calls `req.hijack()`, which takes the connection away from uvicorn and returns it as a Duplex
(utils/duplex.py): from then on the handler writes the answer (a 101, or an error) and the
session's bytes itself, reads with back-pressure, and returns Response(101), which app.py does
not send (whatever the ASGI app would still send is dropped).

uvicorn hands an upgrade to its WebSocket protocol only with the `websockets` or `wsproto`
library and before the app sees the request (no authentication of ours first); without one it
warns "Unsupported upgrade request" and its parser refuses the bytes that follow the headers.
So HttpToolsProtocol (serving.py) never lets uvicorn's WebSocket protocol have it, parses as
uvicorn does and keeps the bytes after an upgrade request's headers, bounded, for the handler
(upgraded, hold). Plain requests pay one attribute
test per read and one should_upgrade() per request.

Upstream: http.Hijacker in UpgradeAwareHandler (apimachinery/pkg/util/proxy/upgradeaware.go).
"""
from __future__ import annotations

import weakref
from typing import Any

import httptools

from ..utils.duplex import Duplex, take_over

HIJACK_SCOPE_KEY = "kubeplane.hijack"   # the ASGI scope's entry: a callable -> Duplex
MAX_HELD = 1 << 16                       # bytes held between an upgrade request's headers and its answer

# Taken-over connections, closed when the server stops; one that has ended leaves by itself
# (its transport no longer holds it).
OPEN: weakref.WeakSet[Duplex] = weakref.WeakSet()


def upgraded(proto: Any, data: bytes, e: httptools.HttpParserUpgrade) -> None:
    """The parser stopped after an upgrade request's headers: keep the bytes that follow them."""
    proto.upgrade_tail = bytearray(data[e.args[0]:] if e.args else b"")


def hold(proto: Any, data: bytes) -> None:
    """Bytes after an upgrade request, before its handler answers: kept, up to MAX_HELD."""
    proto.upgrade_tail += data
    if len(proto.upgrade_tail) > MAX_HELD:
        proto.transport.pause_reading()


def offer(proto: Any) -> None:
    """The request asks for an upgrade: let its handler take the connection (scope entry), and
    close the connection after any ordinary answer (the bytes after it are no HTTP)."""
    proto.scope[HIJACK_SCOPE_KEY] = Hijack(proto)
    if proto.upgrade_tail is None:
        proto.upgrade_tail = bytearray()


class Hijack:
    """req.hijack: call it to take the connection over. raw_query: the query as received
    (Request.query keeps one value per name; exec's `command` repeats)."""

    __slots__ = ("proto", "raw_query")

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.raw_query: str = (httptools.parse_url(proto.url).query or b"").decode("latin-1")

    def __call__(self) -> Duplex:
        return hijack(self.proto)


def hijack(proto: Any) -> Duplex:
    cycle = proto.cycle
    cycle.response_started = cycle.response_complete = True
    cycle.disconnected = True              # the app's own messages are dropped
    cycle.keep_alive = False
    proto.connections.discard(proto)       # uvicorn's shutdown no longer waits for it (as for its websockets)
    proto.header_deadline = proto.idle_deadline = None
    transport = proto.transport
    transport.flush()                      # CoalescingTransport: anything held goes first
    raw = transport._transport
    tail = bytes(proto.upgrade_tail or b"")
    proto.upgrade_tail = None
    conn = take_over(raw, tail)
    if not raw.is_closing():
        raw.resume_reading()               # hold() or uvicorn's flow control may have paused it
    OPEN.add(conn)
    return conn


def close_all() -> None:
    for conn in list(OPEN):
        conn.close()

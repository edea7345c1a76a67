"""What the kubelet's and the standalone components' HTTPS servers share: the listening socket,
a self-signed serving certificate, the bearer token check, and the /metrics text.

    sock = listen("127.0.0.1", 0)                      # bound now: a port in use fails here
    ctx = self_signed_context("kube-scheduler", ["127.0.0.1"])
    token_matches(bearer_token(headers.get("Authorization", "")), expected)
    body = await metrics_text(REGISTRY)                # Prometheus text format 0.0.4

Upstream: k8s.io/apiserver pkg/server/options/serving.go (CreateListener,
MaybeDefaultWithSelfSignedCerts) and the kubelet's self-signed certificate
(client-go util/cert GenerateSelfSignedCertKey).
"""
from __future__ import annotations

import asyncio
import hmac
import pathlib
import socket
import ssl
import tempfile
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.registry import Collector

from .pki import serving_cert, write_atomic


def listen(address: str, port: int) -> socket.socket:
    """A listening TCP socket on address:port (0: a free port). The OSError of a failed bind
    is the system's own (socket.create_server appends its own words to the message, which
    upstream's "bind: address already in use" must not carry)."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as asyncio's create_server
        sock.bind(sockaddr)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def self_signed_context(name: str, hosts: list[str]) -> ssl.SSLContext:
    """A server TLS context with a fresh self-signed EC certificate for hosts (plus localhost),
    its subject "<name>@<hostname>" as upstream's self-signed certificates are named."""
    cert, key = serving_cert(f"{name}@{socket.gethostname()}", [*hosts, "localhost", "127.0.0.1"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="kubeplane-tls-") as d:   # load_cert_chain reads files
        cert_path, key_path = pathlib.Path(d, "serving.crt"), pathlib.Path(d, "serving.key")
        write_atomic(cert_path, cert)
        write_atomic(key_path, key, private=True)
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header: None when the header is absent
    or of another scheme (an anonymous request), "" when the token is empty (invalid).

    Upstream: bearertoken.Authenticator.AuthenticateRequest
    """
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def token_matches(presented: str | None, expected: str) -> bool:
    """Whether a presented token is the expected one (constant time; "" never matches)."""
    return bool(presented and expected) and hmac.compare_digest(str(presented).encode(), expected.encode())


class _Collected(Collector):
    """Metric families already collected, for generate_latest."""

    def __init__(self, families: list[Any]) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return self.families


async def metrics_text(registry: Collector) -> bytes:
    """The registry in the text format, collected on the event loop (collectors read live
    structures of the loop's components) and formatted in a thread: formatting is most of a
    scrape's cost (72 of 90 ms for a kubelet with 1,000 probed containers, whose prober
    families are 1.9 MB), and in a thread the loop keeps its turns meanwhile."""
    families = list(registry.collect())
    return await asyncio.to_thread(generate_latest, _Collected(families))

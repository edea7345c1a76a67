"""A real HTTPS admission webhook server for tests: a self-signed CA made with
`cryptography`, a server certificate for 127.0.0.1, localhost and `webhook.test.svc`, aiohttp on
a free loopback port. Each path answers with a handler the test sets:

    handler(review) -> the AdmissionReview `response` (uid and kind filled in), or a
                       web.StreamResponse to send as it is (garbage, huge bodies, ...)

Every AdmissionReview received is kept in `reviews`, by path. With `token` set, a request
without `Authorization: Bearer <token>` is answered 401 with a Status (as a webhook behind an
authenticating proxy would), and kept in `refused`.
"""
from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Obj = dict[str, Any]
Handler = Callable[[Obj], Awaitable[Any] | Any]

SERVICE_HOST = "webhook.test.svc"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki() -> tuple[bytes, bytes, bytes]:
    """(CA certificate PEM, server certificate PEM, server key PEM)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("webhook-test-ca")).issuer_name(_name("webhook-test-ca"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("webhook")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.DNSName(SERVICE_HOST),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return (ca.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def allow(review: Obj) -> Obj:
    return {"allowed": True}


def patch_response(ops: list[Obj], **extra: Any) -> Obj:
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(orjson.dumps(ops)).decode(), **extra}


class WebhookServer:
    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.reviews: dict[str, list[Obj]] = {}
        self.token: str | None = None           # the bearer token required, if any
        self.refused: list[str] = []            # Authorization headers of the requests refused
        self.port = 0
        self._runner: web.AppRunner | None = None
        self.ca_pem, self._ssl, self._dir = serving_tls()

    @property
    def ca_bundle(self) -> str:
        """The caBundle field's value (base64 of the CA's PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    async def start(self) -> None:
        self._runner, self.port = await serve_posts(self._serve, self._ssl)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._dir.cleanup()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused.append(request.headers.get("Authorization", ""))
            return web.Response(status=401, content_type="application/json", body=orjson.dumps({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 401,
                "reason": "Unauthorized", "message": "Unauthorized"}))
        review = orjson.loads(await request.read())
        review["query"] = dict(request.query)
        self.reviews.setdefault(path, []).append(review)
        handler = self.handlers.get(path, allow)
        out: Any = handler(review)
        if asyncio.iscoroutine(out):
            out = await out
        if isinstance(out, web.StreamResponse):
            return out
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], **out}}
        return web.Response(body=orjson.dumps(body), content_type="application/json")


class ThreadedWebhookServer:
    """A WebhookServer on its own event loop in a thread, for synchronous tests (kubectl e2e).
    Handlers run on that loop."""

    def __init__(self) -> None:
        import threading

        self.server = WebhookServer()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="webhook-server", daemon=True)
        self._thread.start()
        self._running = False

    def start(self) -> WebhookServer:
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)
        self._running = True
        return self.server

    def stop_serving(self) -> None:
        """Stop answering (the port is then refused), keeping the loop for close()."""
        if self._running:
            asyncio.run_coroutine_threadsafe(self._stop_runner(), self._loop).result(30)
            self._running = False

    async def _stop_runner(self) -> None:
        if self.server._runner is not None:
            await self.server._runner.cleanup()
            self.server._runner = None

    def close(self) -> None:
        self.stop_serving()
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def serve_posts(handler: Any, ssl_context: ssl.SSLContext) -> tuple[web.AppRunner, int]:
    """An HTTPS server on a free loopback port answering every POST with handler: its runner
    (cleanup() stops it) and its port."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/{path:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    server = site._server
    assert server is not None
    return runner, server.sockets[0].getsockname()[1]    # type: ignore[attr-defined]


def serving_tls() -> tuple[bytes, ssl.SSLContext, tempfile.TemporaryDirectory[str]]:
    """A fresh CA's PEM, a server TLS context with a certificate it signed for 127.0.0.1, and
    the temporary directory holding the pair (removed with it)."""
    ca_pem, cert, key = make_pki()
    tmp = tempfile.TemporaryDirectory()
    d = Path(tmp.name)
    (d / "tls.crt").write_bytes(cert)
    (d / "tls.key").write_bytes(key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(d / "tls.crt", d / "tls.key")
    return ca_pem, context, tmp

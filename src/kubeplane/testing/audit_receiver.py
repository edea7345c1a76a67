"""A real HTTPS receiver for the audit webhook backend, for tests: the webhook server's PKI
(webhook_server.make_pki: a certificate for 127.0.0.1 and localhost), aiohttp on a free loopback
port, on its own event loop in a thread (the API server may run in this process or in another).

Each POSTed body is kept in `lists` (the decoded EventLists) with its headers in `headers`. With
`token` set, a request without `Authorization: Bearer <token>` is answered 401; `fail_next` makes
the next requests fail with 500 (a receiver that is down for a while). `kubeconfig()` writes the
--audit-webhook-config-file naming it.
"""
from __future__ import annotations

import asyncio
import base64
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from .webhook_server import serve_posts, serving_tls

Obj = dict[str, Any]


class AuditReceiver:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.lists: list[Obj] = []
        self.headers: list[dict[str, str]] = []
        self.refused = 0
        self.fail_next = 0
        self.port = 0
        self.ca_pem, self._ssl, self._dir = serving_tls()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="audit-receiver", daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/audit"

    def start(self) -> AuditReceiver:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._dir.cleanup()

    def kubeconfig(self, path: Path, token: str | None = None) -> Path:
        """A kubeconfig for --audit-webhook-config-file: this receiver, its CA, the token (if any)."""
        user: Obj = {"token": token} if token else {}
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "audit",
            "clusters": [{"name": "receiver", "cluster": {
                "server": self.url, "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": "apiserver", "user": user}],
            "contexts": [{"name": "audit", "context": {"cluster": "receiver", "user": "apiserver"}}]}))
        return path

    def events(self) -> list[Obj]:
        with self._lock:
            return [e for lst in self.lists for e in lst.get("items") or ()]

    def wait_for(self, predicate: Any, timeout: float = 30.0) -> list[Obj]:
        """The events once predicate(events) holds (polled; for synchronous tests)."""
        deadline = time.monotonic() + timeout
        while True:
            evs = self.events()
            if predicate(evs):
                return evs
            if time.monotonic() > deadline:
                raise AssertionError(f"audit events never matched: {len(evs)} received")
            time.sleep(0.05)

    async def _start(self) -> None:
        self._runner, self.port = await serve_posts(self._serve, self._ssl)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            self.refused += 1
            return web.Response(status=401, text="Unauthorized")
        if self.fail_next > 0:
            self.fail_next -= 1
            return web.Response(status=500, text="receiver is down")
        body = orjson.loads(await request.read())
        with self._lock:
            self.lists.append(body)
            self.headers.append(dict(request.headers))
        return web.Response(status=200, content_type="application/json", text="{}")

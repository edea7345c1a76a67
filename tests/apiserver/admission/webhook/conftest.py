"""Fixtures for the admission webhook tests: an API server on memory storage and a real HTTPS
webhook server (webhook_server.py) on a free loopback port."""
from __future__ import annotations

from typing import Any, AsyncIterator

import orjson
import pytest
from kubeplane.testing.webhook_server import WebhookServer

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

NS = "test"


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    s = WebhookServer()
    await s.start()
    yield s
    await s.stop()


@pytest.fixture
async def api() -> AsyncIterator[APIServer]:
    s = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await s.bootstrap()
    await s.storage.create(f"/registry/namespaces/{NS}", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {"team": "a"}},
        "status": {"phase": "Active"}})
    yield s
    await s.admission.close()
    await s.storage.close()


async def call(api: APIServer, method: str, path: str, body: Any = None, query: str = "",
               content_type: str = "application/json") -> tuple[int, Any, list[tuple[str, str]]]:
    resp = await api.route_trusted(Request.build(method, path, query, {"content-type": content_type},
                                                 orjson.dumps(body) if body is not None else b""))
    assert isinstance(resp.body, bytes)
    return resp.status, orjson.loads(resp.body) if resp.body else None, resp.headers

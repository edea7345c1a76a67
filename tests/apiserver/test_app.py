"""The HTTP front end sends nothing before storage has committed it (storage commits in batches)."""
from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import orjson

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import SqliteStorage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def scope(method: str, path: str, query: str = "") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "query_string": query.encode(),
            "headers": [(b"content-type", b"application/json")]}


class Exchange:
    """One ASGI request/response, recording the store's committed revision at each send."""

    def __init__(self, storage: SqliteStorage, body: bytes = b"") -> None:
        self.storage, self.body = storage, body
        self.sent: list[tuple[dict[str, Any], int]] = []
        self.disconnect = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        if self.body is not None:
            body, self.body = self.body, None  # type: ignore[assignment]
            return {"type": "http.request", "body": body, "more_body": False}
        await self.disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(self, msg: dict[str, Any]) -> None:
        self.sent.append((msg, self.storage.committed_revision))


async def test_a_response_waits_for_the_commit(tmp_path: pathlib.Path) -> None:
    storage = SqliteStorage(tmp_path / "state.db")
    api = APIServer(storage, options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    ex = Exchange(storage, orjson.dumps(POD))
    await ASGIApp(api)(scope("POST", "/api/v1/namespaces/default/pods"), ex.receive, ex.send)
    (start, committed), (body, _) = ex.sent
    rv = int(orjson.loads(body["body"])["metadata"]["resourceVersion"])
    assert start["status"] == 201 and committed >= rv
    await storage.close()


async def test_a_watch_chunk_waits_for_the_commit(tmp_path: pathlib.Path) -> None:
    storage = SqliteStorage(tmp_path / "state.db")
    api = APIServer(storage, options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    ex = Exchange(storage)
    rv = storage.revision
    task = asyncio.ensure_future(ASGIApp(api)(
        scope("GET", "/api/v1/namespaces/default/pods", f"watch=1&resourceVersion={rv}"), ex.receive, ex.send))
    while not ex.sent:
        await asyncio.sleep(0)
    await _create(api)              # an in-process write: applied at once, committed later
    while not any(b'"ADDED"' in m.get("body", b"") for m, _ in ex.sent):
        await asyncio.sleep(0)
    (msg, committed), = [(m, c) for m, c in ex.sent if b'"ADDED"' in m.get("body", b"")]
    event_rv = int(orjson.loads(msg["body"].splitlines()[0])["object"]["metadata"]["resourceVersion"])
    assert committed >= event_rv > rv
    ex.disconnect.set()
    await asyncio.wait_for(task, 5)
    await storage.close()


async def _create(api: APIServer) -> None:
    from kubeplane.apiserver.request import Request
    r = await api.route_trusted(Request.build("POST", "/api/v1/namespaces/default/pods", "", {}, orjson.dumps(POD)))
    assert r.status == 201

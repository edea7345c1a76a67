"""In-process API server fixtures: memory storage, a fake clock, and a small request helper.

    r = await api.call("POST", "/api/v1/namespaces/default/pods", body=pod("web"))
    assert r.status == 201 and r.json["metadata"]["name"] == "web"

Requests go through `APIServer.route_trusted`, the entry the in-process transport uses, so
what the tests see is what a client sees (status code, Status body), without TLS or sockets.
"""
from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any, AsyncIterator
from urllib.parse import urlencode

import orjson
import pytest

try:
    import kubeplane  # noqa: F401
except ImportError:     # not installed in the venv: test from the source tree
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "src"))

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER
from kubeplane.utils.clock import FakeClock

START = 1_700_000_000.0          # 2023-11-14T22:13:20Z


@dataclass
class Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = ""

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


class API:
    """An APIServer on memory storage with helpers that send requests and decode replies."""

    def __init__(self, server: APIServer, clock: FakeClock) -> None:
        self.server, self.clock, self.storage = server, clock, server.storage

    async def call(self, method: str, path: str, query: dict[str, Any] | str | None = None, *,
                   body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        """One request; a dict/list body is sent as JSON, bytes/str as they are."""
        qs = query if isinstance(query, str) else urlencode(query or {})
        if body is None:
            raw = b""
        elif isinstance(body, bytes):
            raw = body
        elif isinstance(body, str):
            raw = body.encode()
        else:
            raw = json.dumps(body).encode()
        hdrs = {"content-type": "application/json"} if raw and not headers else {}
        hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
        resp = await self.server.route_trusted(Request.build(method, path, qs, hdrs, raw))
        assert isinstance(resp.body, bytes), "a streaming reply: use open_watch()"
        return Reply(resp.status, resp.body, resp.headers, resp.content_type)

    async def open_watch(self, path: str, query: dict[str, Any] | None = None,
                         headers: dict[str, str] | None = None) -> Watch:
        resp = await self.server.route_trusted(Request.build("GET", path, urlencode({"watch": "1", **(query or {})}),
                                                             {k.lower(): v for k, v in (headers or {}).items()}))
        return Watch(resp.status, resp.body)

    async def get(self, path: str, query: dict[str, Any] | None = None) -> Reply:
        return await self.call("GET", path, query)

    async def create(self, path: str, obj: Any, query: dict[str, Any] | None = None) -> Reply:
        return await self.call("POST", path, query, body=obj)

    async def rv(self, path: str) -> str:
        """The stored resourceVersion of the object at path (asserts it exists)."""
        r = await self.get(path)
        assert r.status == 200, r.json
        return r.json["metadata"]["resourceVersion"]


class Watch:
    """A watch stream read event by event; the body is an async iterator of chunks.

    A read that finds nothing yet stays pending (cancelling it would close the generator),
    and the next read picks it up.
    """

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self._it = body.__aiter__() if not isinstance(body, bytes) else None
        self.body = body if isinstance(body, bytes) else b""
        self._buf = b""
        self._task: asyncio.Future[bytes] | None = None
        self.ended = False

    def _read(self) -> asyncio.Future[bytes]:
        assert self._it is not None
        if self._task is None:
            self._task = asyncio.ensure_future(self._it.__anext__())
        return self._task

    def _take(self) -> None:
        task, self._task = self._task, None
        assert task is not None
        try:
            self._buf += task.result()
        except StopAsyncIteration:
            self.ended = True

    def _lines(self, n: int | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while b"\n" in self._buf and (n is None or len(out) < n):
            line, self._buf = self._buf.split(b"\n", 1)
            if line.strip():
                out.append(orjson.loads(line))
        return out

    async def events(self, n: int) -> list[dict[str, Any]]:
        """The next n events (waits for them: the test must have caused them)."""
        out = self._lines(n)
        while len(out) < n:
            if self.ended:
                raise AssertionError(f"stream ended after {out}")
            await asyncio.wait_for(asyncio.shield(self._read()), 5)
            self._take()
            out += self._lines(n - len(out))
        return out

    async def pending(self) -> list[dict[str, Any]]:
        """Every event already produced, without waiting for more (runs the stream a few steps)."""
        while not self.ended:
            task = self._read()
            for _ in range(20):
                if task.done():
                    break
                await asyncio.sleep(0)
            if not task.done():
                break
            self._take()
        return self._lines(None)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
        self._task = None
        if self._it is not None and hasattr(self._it, "aclose"):
            await self._it.aclose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def api(clock: FakeClock) -> AsyncIterator[API]:
    server = APIServer(new_storage("memory"), clock=clock, options=WITHOUT_CONTROLLER_MANAGER)
    await server.bootstrap()
    yield API(server, clock)
    await server.storage.close()


EVERY_ADMISSION_PLUGIN = "every_admission_plugin"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{EVERY_ADMISSION_PLUGIN}: the `server` fixture runs every default "
                                       "admission plugin, as `kubeplane up` does")


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[APIServer]:
    """An API server on memory storage (real clock) with no controller-manager beside it: the
    admission plugins that need one's objects are off (WITHOUT_CONTROLLER_MANAGER: ServiceAccount,
    TaintNodesByCondition), and objects of kinds not served yet go straight into its storage.
    A test (or module: `pytestmark = pytest.mark.every_admission_plugin`) marked
    every_admission_plugin gets every default plugin, as `kubeplane up` runs them (a pod's
    create path as it is in a cluster)."""
    every = request.node.get_closest_marker(EVERY_ADMISSION_PLUGIN) is not None
    s = APIServer(new_storage("memory"), options=None if every else WITHOUT_CONTROLLER_MANAGER)
    await s.bootstrap()
    yield s
    await s.storage.close()


# --- object builders ---------------------------------------------------------------------

def pod(name: str, ns: str = "default", labels: dict[str, str] | None = None, node: str = "",
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if name else {}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    s: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}], **spec}
    if node:
        s["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {"k": "v"}}


def deployment(name: str, replicas: int = 1, labels: dict[str, str] | None = None,
               selector: dict[str, Any] | None = None) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": selector or {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def replicaset(name: str, replicas: int = 1) -> dict[str, Any]:
    d = deployment(name, replicas)
    d["kind"] = "ReplicaSet"
    return d


PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
RSS = "/apis/apps/v1/namespaces/default/replicasets"


# Test modules reach the builders through the fixture (api.pod(...), api.PODS), so they need
# no import of this conftest (whose module name pytest does not keep stable).
for _name in ("pod", "configmap", "deployment", "replicaset"):
    setattr(API, _name, staticmethod(globals()[_name]))
API.PODS, API.CMS, API.DEPLOYS, API.RSS = PODS, CMS, DEPLOYS, RSS

"""pods/proxy throughput and memory: a large download and upload through the API server's HTTP
front end (app.py ASGIApp, in memory: no TLS, no sockets on the client side) to an aiohttp
backend on loopback, the pod on the process runtime's 127.0.0.1.

    PYTHONPATH=src .venv/bin/python benchmarks/proxy_stream.py [--mib 256]

Prints MB/s each way and the process's peak RSS growth: streaming means the growth stays at a
few chunks (64 KiB reads), whatever --mib is.
"""
from __future__ import annotations

import argparse
import asyncio
import resource
import time
from typing import Any

from aiohttp import web

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

CHUNK = 1 << 20


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def backend(mib: int) -> tuple[web.AppRunner, int]:
    async def download(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await resp.prepare(request)
        block = b"x" * CHUNK
        for _ in range(mib):
            await resp.write(block)
        await resp.write_eof()
        return resp

    async def upload(request: web.Request) -> web.Response:
        n = 0
        async for chunk in request.content.iter_any():
            n += len(chunk)
        return web.Response(text=str(n))

    app = web.Application()
    app.router.add_get("/download", download)
    app.router.add_put("/upload", upload)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]     # type: ignore[union-attr]


async def setup(api: APIServer, port: int) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "nodeInfo": {"containerRuntimeVersion": "kubeplane-process://0.1.0"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "x",
                                                          "ports": [{"containerPort": port}]}]}}
    import orjson
    for path, obj in (("/api/v1/nodes", node), ("/api/v1/namespaces/default/pods", pod)):
        r = await api.route_trusted(Request.build("POST", path, "", {"content-type": "application/json"},
                                                  orjson.dumps(obj)))
        assert r.status == 201, r.body
    r = await api.route_trusted(Request.build("GET", "/api/v1/namespaces/default/pods/web"))
    st = orjson.loads(r.body)       # type: ignore[arg-type]
    st["status"].update({"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]})
    r = await api.route_trusted(Request.build("PUT", "/api/v1/namespaces/default/pods/web/status", "",
                                              {"content-type": "application/json"}, orjson.dumps(st)))
    assert r.status == 200, r.body


async def through(app: ASGIApp, method: str, path: str, body_mib: int) -> tuple[int, int]:
    """(response status, response bytes) of one request through the front end."""
    sent = {"n": 0, "status": 0}
    block = b"y" * CHUNK
    pending = [(block, i < body_mib - 1) for i in range(body_mib)] or [(b"", False)]
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if pending:
            body, more = pending.pop(0)
            return {"type": "http.request", "body": body, "more_body": more}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(msg: dict[str, Any]) -> None:
        if msg["type"] == "http.response.start":
            sent["status"] = msg["status"]
        else:
            sent["n"] += len(msg.get("body", b""))
            if not msg.get("more_body"):
                done.set()

    headers = [(b"content-length", str(body_mib * CHUNK).encode())] if body_mib else []
    await app({"type": "http", "method": method, "path": path, "query_string": b"", "headers": headers},
              receive, send)
    return sent["status"], sent["n"]


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args()
    runner, port = await backend(args.mib)
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    await setup(api, port)
    app = ASGIApp(api)
    base = rss_mib()
    try:
        t = time.perf_counter()
        status, n = await through(app, "GET", "/api/v1/namespaces/default/pods/web/proxy/download", 0)
        dt = time.perf_counter() - t
        assert status == 200 and n == args.mib * CHUNK, (status, n)
        print(f"download {args.mib} MiB: {args.mib / dt:.0f} MiB/s, peak RSS +{rss_mib() - base:.0f} MiB")
        t = time.perf_counter()
        status, n = await through(app, "PUT", "/api/v1/namespaces/default/pods/web/proxy/upload", args.mib)
        dt = time.perf_counter() - t
        assert status == 200, status
        print(f"upload   {args.mib} MiB: {args.mib / dt:.0f} MiB/s, peak RSS +{rss_mib() - base:.0f} MiB")
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())

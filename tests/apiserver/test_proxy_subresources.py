"""pods/proxy, services/proxy and nodes/proxy against real backends on loopback ports.

The pods run "on the process runtime": their node reports containerRuntimeVersion
kubeplane-process and InternalIP 127.0.0.1 = their podIP, the one loopback case the proxy
allows (handlers/proxy_location.py). The API server is conftest's in-process one (memory
storage, fake clock); requests that need the HTTP front end (streamed bodies) go through
app.py's ASGIApp with an in-memory ASGI channel.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import orjson
import pytest
from aiohttp import web

from kubeplane.apiserver.app import ASGIApp
from kubeplane.apiserver.handlers.proxy import (forwarded_uri, request_headers, rewrite_location,
                                                split_proxy_path)
from kubeplane.apiserver.handlers.proxy_location import (KUBELET, Location, is_global_unicast,
                                                         split_scheme_name_port)
from kubeplane.apiserver.request import Request

API = Any
NS = "/api/v1/namespaces/default"


class Backend:
    """An HTTP server on a free loopback port that records what it was sent."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.gate = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> int:
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]      # type: ignore[union-attr]
        return self.port

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append({"method": request.method, "path": request.path, "query": request.query_string,
                          "headers": dict(request.headers), "body": body})
        if request.path == "/redirect":
            return web.Response(status=302, headers={"Location": "/login?next=1"})
        if request.path == "/away":
            return web.Response(status=302, headers={"Location": "http://example.com/x"})
        if request.path == "/cors":
            return web.Response(text="c", headers={"Access-Control-Allow-Origin": "*", "X-Mine": "1"})
        if request.path == "/hang":               # no answer at all until the gate opens
            await self.gate.wait()
        if request.path == "/stream":
            resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await resp.prepare(request)
            await resp.write(b"first\n")
            await self.gate.wait()
            await resp.write(b"second\n")
            await resp.write_eof()
            return resp
        return web.Response(body=b"hello " + request.method.encode() + b" " + body, content_type="text/plain")


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    b = Backend()
    await b.start()
    yield b
    await b.stop()


def node_obj(name: str, runtime: str = "kubeplane-process://0.1.0", address: str = "127.0.0.1",
             port: int = 10250) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": address}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                       "nodeInfo": {"containerRuntimeVersion": runtime}}}


async def make_pod(api: API, name: str, ip: str, port: int | None = None, node: str = "node-0",
                   labels: dict[str, str] | None = None, ready: bool = True) -> None:
    ports = [{"containerPort": port, "name": "http"}] if port else []
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", "ports": ports}]}}
    r = await api.call("POST", f"{NS}/pods", body=pod)
    assert r.status == 201, r.body
    st = r.json
    st["status"] = {**st["status"], "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": ip,
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    r = await api.call("PUT", f"{NS}/pods/{name}/status", body=st)
    assert r.status == 200, r.body


@pytest.fixture
async def process_node(api: API) -> None:
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0"))).status == 201


async def proxy_get(api: API, path: str, method: str = "GET", body: bytes = b"", query: str = "",
                    headers: dict[str, str] | None = None) -> tuple[int, bytes, list[tuple[str, str]], str]:
    resp = await api.server.route_trusted(Request.build(method, path, query, headers or {}, body))
    data = resp.body if isinstance(resp.body, bytes) else b"".join([c async for c in resp.body])
    return resp.status, data, resp.headers, resp.content_type


# --- the pieces ------------------------------------------------------------------------------

def test_split_scheme_name_port() -> None:
    assert split_scheme_name_port("web") == ("", "web", "", True)
    assert split_scheme_name_port("web:80") == ("", "web", "80", True)
    assert split_scheme_name_port("https:web:443") == ("https", "web", "443", True)
    assert split_scheme_name_port("ftp:web:21")[3] is False
    assert split_scheme_name_port("a:b:c:d")[3] is False
    assert split_scheme_name_port(":80")[3] is False


def test_global_unicast() -> None:
    assert is_global_unicast("10.244.0.5") and is_global_unicast("2001:db8::1")
    for ip in ("127.0.0.1", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "x", ""):
        assert not is_global_unicast(ip), ip


def test_split_proxy_path() -> None:
    assert split_proxy_path(f"{NS}/pods/web/proxy/a/b/") == (f"{NS}/pods/web/proxy", "/a/b/")
    assert split_proxy_path(f"{NS}/pods/web/proxy") == (f"{NS}/pods/web/proxy", "")
    assert split_proxy_path(f"{NS}/pods/web/proxy/") == (f"{NS}/pods/web/proxy", "/")
    assert split_proxy_path("/api/v1/nodes/proxy/proxy/proxy/x") == ("/api/v1/nodes/proxy/proxy", "/proxy/x")
    assert split_proxy_path(f"{NS}/services/proxy/proxy/a//b") == (f"{NS}/services/proxy/proxy", "/a//b")


def test_rewrite_location() -> None:
    be = Location("http", "127.0.0.1", 8080)
    prefix = f"{NS}/pods/web/proxy"
    assert rewrite_location("/login?next=1", be, "localhost:8001", prefix) == f"{prefix}/login?next=1"
    assert rewrite_location("http://127.0.0.1:8080/a/", be, "localhost:8001", prefix) == f"{prefix}/a/"
    assert rewrite_location("http://localhost:8001/a", be, "localhost:8001", prefix) == f"http://localhost:8001{prefix}/a"
    assert rewrite_location("http://example.com/x", be, "localhost:8001", prefix) == "http://example.com/x"
    assert rewrite_location("relative/y", be, "localhost:8001", prefix) == "relative/y"
    assert rewrite_location(f"{prefix}/z", be, "", prefix) == f"{prefix}/z"


def test_request_headers_drop_credentials_and_hop_by_hop() -> None:
    req = Request.build("GET", "/x", "", {"authorization": "Bearer secret", "impersonate-user": "admin",
                                          "connection": "keep-alive, x-drop", "x-drop": "1", "keep-alive": "5",
                                          "accept": "text/html", "host": "localhost:8001", "upgrade": "h2c",
                                          "expect": "100-continue", "x-forwarded-uri": "/spoofed"})
    out = dict(request_headers(req, Location("http", "10.0.0.1", 80), "/p/x"))
    assert out == {"accept": "text/html", "host": "localhost:8001", "X-Forwarded-Uri": "/p/x"}
    kubelet = dict(request_headers(req, Location("https", "127.0.0.1", 1, KUBELET, "tok"), "/p"))
    assert kubelet["Authorization"] == "Bearer tok"
    req = Request.build("GET", "/x", "", {"x-forwarded-for": "10.0.0.1"})
    req.remote_addr = "127.0.0.1"
    assert dict(request_headers(req, Location("http", "10.0.0.2", 80), "/"))["X-Forwarded-For"] == "10.0.0.1, 127.0.0.1"


def test_forwarded_uri() -> None:
    assert forwarded_uri("/api/v1/nodes/n/proxy", "/metrics") == "/api/v1/nodes/n/proxy/metrics"
    assert forwarded_uri("/api/v1/nodes/n/proxy", "/a/") == "/api/v1/nodes/n/proxy/a/"


# --- pods/proxy ------------------------------------------------------------------------------

async def test_pod_proxy_passes_method_path_query_body(api: API, process_node: None, backend: Backend) -> None:
    await make_pod(api, "web", "127.0.0.1", backend.port)
    status, body, headers, ctype = await proxy_get(api, f"{NS}/pods/web/proxy/a/b/", "POST", b"payload",
                                                   "x=1&x=2&y", {"authorization": "Bearer secret",
                                                                 "content-type": "text/plain"})
    assert (status, body, ctype) == (200, b"hello POST payload", "text/plain")
    seen = backend.seen[-1]
    assert (seen["method"], seen["path"], seen["query"], seen["body"]) == ("POST", "/a/b/", "x=1&x=2&y", b"payload")
    assert "Authorization" not in seen["headers"]
    assert seen["headers"]["X-Forwarded-Uri"] == f"{NS}/pods/web/proxy/a/b/"


async def test_pod_proxy_explicit_port_and_verbs(api: API, process_node: None, backend: Backend) -> None:
    await make_pod(api, "web", "127.0.0.1")               # no declared port: the request names it
    for method in ("GET", "PUT", "PATCH", "DELETE"):
        status, body, _, _ = await proxy_get(api, f"{NS}/pods/web:{backend.port}/proxy/x", method)
        assert status == 200 and body.startswith(b"hello " + method.encode())


async def test_pod_proxy_root_redirects_to_slash(api: API, process_node: None, backend: Backend) -> None:
    await make_pod(api, "web", "127.0.0.1", backend.port)
    status, _, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy", query="a=b")
    assert status == 301 and ("location", f"{NS}/pods/web/proxy/?a=b") in headers
    assert not backend.seen


async def test_pod_proxy_rewrites_redirects_and_drops_cors(api: API, process_node: None, backend: Backend) -> None:
    await make_pod(api, "web", "127.0.0.1", backend.port)
    status, _, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy/redirect")
    assert status == 302 and ("location", f"{NS}/pods/web/proxy/login?next=1") in headers
    status, _, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy/away")
    assert ("location", "http://example.com/x") in headers
    status, _, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy/cors")
    names = {k for k, _ in headers}
    assert "x-mine" in names and "access-control-allow-origin" not in names


async def test_pod_proxy_dial_error_is_503(api: API, process_node: None) -> None:
    await make_pod(api, "web", "127.0.0.1", 1)           # nothing listens on port 1
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web/proxy/")
    st = orjson.loads(body)
    assert status == 503 and st["reason"] == "ServiceUnavailable"
    assert st["message"] == "error trying to reach service: dial tcp 127.0.0.1:1: connect: connection refused"


async def test_pod_proxy_sim_pod_is_not_dialled(api: API) -> None:
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0", "kubeplane-sim://0.1.0",
                                                                  "172.18.0.2"))).status == 201
    await make_pod(api, "web", "10.244.0.7", 8080)
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web/proxy/")
    assert status == 503
    assert orjson.loads(body)["message"] == "error trying to reach service: dial tcp 10.244.0.7:8080: connect: no route to host"


@pytest.mark.parametrize("ip, runtime", [("127.0.0.1", "kubeplane-sim://0.1.0"),     # loopback, not the process runtime's
                                         ("127.0.0.2", "kubeplane-process://0.1.0"),  # not the node's address
                                         ("169.254.169.254", "kubeplane-process://0.1.0"),
                                         ("", "kubeplane-process://0.1.0")])
async def test_pod_proxy_address_not_allowed(api: API, ip: str, runtime: str) -> None:
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0", runtime))).status == 201
    await make_pod(api, "web", ip or "10.0.0.1", 80)
    if not ip:                                       # no podIPs at all
        r = await api.get(f"{NS}/pods/web")
        st = r.json
        st["status"] = {"phase": "Pending", "qosClass": st["status"]["qosClass"]}
        assert (await api.call("PUT", f"{NS}/pods/web/status", body=st)).status == 200
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web/proxy/")
    assert (status, orjson.loads(body)["message"]) == (400, "address not allowed")


async def test_pod_proxy_bad_names(api: API) -> None:
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/a:b:c:d/proxy/")
    assert (status, orjson.loads(body)["message"]) == (400, 'invalid pod request "a:b:c:d"')
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/missing/proxy/")
    assert (status, orjson.loads(body)["message"]) == (404, 'pods "missing" not found')


async def test_pod_proxy_streams_the_answer(api: API, process_node: None, backend: Backend) -> None:
    await make_pod(api, "web", "127.0.0.1", backend.port)
    resp = await api.server.route_trusted(Request.build("GET", f"{NS}/pods/web/proxy/stream"))
    assert resp.status == 200 and not isinstance(resp.body, bytes)
    it = resp.body.__aiter__()
    assert await it.__anext__() == b"first\n"          # before the backend has finished
    backend.gate.set()
    rest = b"".join([c async for c in it])
    assert rest == b"second\n"


# --- services/proxy --------------------------------------------------------------------------

async def make_service(api: API, name: str = "svc", port: int = 80, target: Any = "http") -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": port, "targetPort": target}]}}
    assert (await api.call("POST", f"{NS}/services", body=svc)).status == 201


async def make_endpoints(api: API, name: str, ip: str, port: int, pod: str | None) -> None:
    addr: dict[str, Any] = {"ip": ip}
    if pod:
        addr["targetRef"] = {"kind": "Pod", "namespace": "default", "name": pod}
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name},
          "subsets": [{"addresses": [addr], "ports": [{"name": "web", "port": port}]}]}
    assert (await api.call("POST", f"{NS}/endpoints", body=ep)).status == 201, "endpoints"


async def test_service_proxy_no_endpoints(api: API) -> None:
    await make_service(api)
    status, body, _, _ = await proxy_get(api, f"{NS}/services/svc:80/proxy/")
    st = orjson.loads(body)
    assert status == 404 and st["message"] == 'endpoints "svc" not found'
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "svc"}}
    assert (await api.call("POST", f"{NS}/endpoints", body=ep)).status == 201
    status, body, _, _ = await proxy_get(api, f"{NS}/services/svc:80/proxy/")
    assert (status, orjson.loads(body)["message"]) == (503, 'no endpoints available for service "svc"')
    status, body, _, _ = await proxy_get(api, f"{NS}/services/svc:81/proxy/")
    assert (status, orjson.loads(body)["message"]) == (503, 'no service port 81 found for service "svc"')


async def test_service_proxy_endpoint_must_be_its_pods_ip(api: API) -> None:
    """An Endpoints address that is not the IP of the pod its targetRef names is never used
    (upstream's isValidAddress): hand-written Endpoints cannot point the proxy anywhere."""
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0", "kubeplane-sim://0.1.0",
                                                                  "172.18.0.2"))).status == 201
    await make_pod(api, "web-1", "10.244.0.9", 8080, labels={"app": "web"})
    await make_service(api)
    await make_endpoints(api, "svc", "93.184.216.34", 8080, "web-1")
    status, body, _, _ = await proxy_get(api, f"{NS}/services/svc:80/proxy/")
    assert (status, orjson.loads(body)["message"]) == (503, 'no endpoints available for service "svc:80"')


async def test_service_proxy_to_endpoint(api: API) -> None:
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0", "kubeplane-sim://0.1.0",
                                                                  "172.18.0.2"))).status == 201
    await make_pod(api, "web-1", "10.244.0.9", 8080, labels={"app": "web"})
    await make_service(api)
    await make_endpoints(api, "svc", "10.244.0.9", 8080, "web-1")
    for name in ("svc:80", "svc:web", "http:svc:web"):
        status, body, _, _ = await proxy_get(api, f"{NS}/services/{name}/proxy/")
        assert status == 503, name           # a sim pod: resolved to its address, never dialled
        assert orjson.loads(body)["message"] == ("error trying to reach service: dial tcp 10.244.0.9:8080: "
                                                 "connect: no route to host")


async def test_service_proxy_reaches_loopback_process_pod(api: API, process_node: None, backend: Backend) -> None:
    """Endpoints cannot hold 127.0.0.1: the service's ready process-runtime pods are found by
    its selector instead (the documented exception)."""
    await make_pod(api, "not-ready", "127.0.0.1", 1, labels={"app": "web"}, ready=False)
    await make_pod(api, "web-1", "127.0.0.1", backend.port, labels={"app": "web"})
    await make_pod(api, "other", "127.0.0.1", 1, labels={"app": "other"})
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("sim-node", "kubeplane-sim://0.1.0"))).status == 201
    await make_pod(api, "spoofed", "127.0.0.1", 1, labels={"app": "web"}, node="sim-node")   # not its runtime's
    await make_service(api)
    for _ in range(5):
        status, body, _, _ = await proxy_get(api, f"{NS}/services/svc:80/proxy/index.html")
        assert (status, body) == (200, b"hello GET ")
    assert backend.seen[-1]["path"] == "/index.html"


# --- nodes/proxy -----------------------------------------------------------------------------

class FakeKubelet:
    """What KubeletServer needs of its host (no pods), and the Summary API's source."""

    def __init__(self) -> None:
        from kubeplane.utils.clock import FakeClock
        from kubeplane.api.types import core_v1, from_dict
        self.pods: dict[str, Any] = {
            f"uid-{n}": from_dict({"metadata": {"name": f"pod-{n}", "namespace": "default", "uid": f"uid-{n}"},
                                   "spec": {"nodeName": f"node-{n}", "containers": [{"name": "c", "image": "x"}]}},
                                  core_v1.Pod) for n in (0, 1)}
        self.clock = FakeClock(1_700_000_000.0)
        self.node_names = ["node-0", "node-1"]

    def container_logs(self, *a: Any) -> Any:
        raise AssertionError("not called")

    async def kubelet_server(self) -> tuple[int, str]:
        from kubeplane.kubelet.loopback_server import start_for
        return await start_for(self)

    def resource_usage(self, node: str) -> Any:
        from fractions import Fraction
        return {"cpu": Fraction(1, 10), "memory": Fraction(1024)}, []


async def test_node_proxy_in_process_kubelet(api: API, process_node: None) -> None:
    """An in-process kubelet (api.nodes) gets a loopback server of its own on first use
    (kubelet/loopback_server.py)."""
    from kubeplane.kubelet.loopback_server import stop_for
    kubelet = api.server.nodes["node-0"] = FakeKubelet()
    try:
        status, body, _, ctype = await proxy_get(api, "/api/v1/nodes/node-0/proxy/healthz")
        assert (status, body) == (200, b"ok")
        status, body, _, ctype = await proxy_get(api, "/api/v1/nodes/node-0:10250/proxy/metrics")
        assert status == 200 and b"# TYPE" in body and ctype.startswith("text/plain")
        status, body, _, _ = await proxy_get(api, "/api/v1/nodes/node-0/proxy/stats/summary")
        assert status == 200 and orjson.loads(body)["node"]["nodeName"] == "node-0"
        # one server for the kubelet's two nodes: each node's paths answer for that node
        assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-1"))).status == 201
        api.server.nodes["node-1"] = api.server.nodes["node-0"]
        status, body, _, _ = await proxy_get(api, "/api/v1/nodes/node-1/proxy/stats/summary")
        assert status == 200 and orjson.loads(body)["node"]["nodeName"] == "node-1"
        status, body, _, _ = await proxy_get(api, "/api/v1/nodes/node-1/proxy/pods")
        doc = orjson.loads(body)
        assert doc["kind"] == "PodList" and [p["metadata"]["name"] for p in doc["items"]] == ["pod-1"]
        port, token = await kubelet.kubelet_server()       # one server, started once, only on loopback
        assert (port, token) == await kubelet.kubelet_server() and len(token) >= 32
    finally:
        await stop_for(kubelet)


async def test_node_proxy_standalone_kubelet(api: API) -> None:
    """A kubelet server in another process: the node's address and kubelet port, the API
    server's kubelet token; the user's own credentials are not passed on."""
    from kubeplane.kubelet.server import KubeletServer
    server = KubeletServer(FakeKubelet(), token="kubelet-token", port=0)       # type: ignore[arg-type]
    await server.start()
    api.server.tokens = {"kubelet-token": "kubeplane-admin"}
    try:
        assert (await api.call("POST", "/api/v1/nodes", body=node_obj("node-0", port=server.port))).status == 201
        status, body, _, _ = await proxy_get(api, "/api/v1/nodes/node-0/proxy/healthz",
                                             headers={"authorization": "Bearer user-token"})
        assert (status, body) == (200, b"ok")
        status, body, _, _ = await proxy_get(api, "/api/v1/nodes/node-0/proxy/nope")
        assert status == 404
    finally:
        await server.stop()


async def test_node_proxy_loopback_other_port_refused(api: API, process_node: None, backend: Backend) -> None:
    """A node on loopback is reached at its kubelet port only: another port would be any
    service of the API server's host."""
    status, body, _, _ = await proxy_get(api, f"/api/v1/nodes/node-0:{backend.port}/proxy/")
    assert (status, orjson.loads(body)["message"]) == (400, "address not allowed")
    assert not backend.seen
    status, body, _, _ = await proxy_get(api, "/api/v1/nodes/missing/proxy/")
    assert (status, orjson.loads(body)["message"]) == (404, 'nodes "missing" not found')
    status, body, _, _ = await proxy_get(api, "/api/v1/nodes/ftp:node-0:1/proxy/")
    assert (status, orjson.loads(body)["message"]) == (400, 'invalid node request "ftp:node-0:1"')


# --- through the HTTP front end: the body is streamed ----------------------------------------

class Channel:
    """An ASGI receive/send pair: the body in chunks, then a disconnect when asked."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()
        self.reads = 0

    async def receive(self) -> dict[str, Any]:
        if self.chunks:
            self.reads += 1
            chunk = self.chunks.pop(0)
            await asyncio.sleep(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks)}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, msg: dict[str, Any]) -> None:
        self.sent.append(msg)


def asgi_scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "query_string": b"q=1", "headers": headers,
            "client": ("127.0.0.9", 40000)}


async def test_asgi_streams_a_large_body_to_the_backend(api: API, process_node: None, backend: Backend) -> None:
    """A body far past the API server's 3 MiB limit for objects goes through in chunks."""
    await make_pod(api, "web", "127.0.0.1", backend.port)
    chunk = b"x" * (1 << 20)
    ch = Channel([chunk] * 5)
    app = ASGIApp(api.server)
    await app(asgi_scope("PUT", f"{NS}/pods/web/proxy/upload",
                         [(b"content-length", str(5 << 20).encode()), (b"content-type", b"application/octet-stream")]),
              ch.receive, ch.send)
    assert ch.sent[0]["status"] == 200
    assert len(backend.seen[-1]["body"]) == 5 << 20 and backend.seen[-1]["query"] == "q=1"
    assert backend.seen[-1]["headers"]["X-Forwarded-For"] == "127.0.0.9"
    assert b"".join(m.get("body", b"") for m in ch.sent[1:]) == b"hello PUT " + chunk * 5


async def test_asgi_refused_before_reading_the_body(api: API, backend: Backend) -> None:
    """A proxy that cannot be served (no such pod) answers without reading the body, and
    closes the connection rather than read the rest."""
    ch = Channel([b"a", b"b"])
    await ASGIApp(api.server)(asgi_scope("POST", f"{NS}/pods/nope/proxy/", [(b"content-length", b"2")]),
                              ch.receive, ch.send)
    start = ch.sent[0]
    assert start["status"] == 404 and (b"connection", b"close") in start["headers"]
    assert ch.reads == 0 and not backend.seen


async def test_pod_proxy_options_and_head(api: API, process_node: None, backend: Backend) -> None:
    """OPTIONS has no verb of its own (upstream's RequestInfo leaves it empty) and is proxied
    too; HEAD is a get."""
    await make_pod(api, "web", "127.0.0.1", backend.port)
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web/proxy/x", "OPTIONS")
    assert status == 200 and backend.seen[-1]["method"] == "OPTIONS"
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web/proxy/x", "HEAD")
    assert (status, body) == (200, b"") and backend.seen[-1]["method"] == "HEAD"


async def test_pod_proxy_bad_ports(api: API, process_node: None) -> None:
    await make_pod(api, "web", "127.0.0.1")
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web:99999/proxy/")
    assert (status, orjson.loads(body)["message"]) == (503, "error trying to reach service: dial tcp: address 99999: "
                                                             "invalid port")
    status, body, _, _ = await proxy_get(api, f"{NS}/pods/web:nosuchport/proxy/")
    assert (status, orjson.loads(body)["message"]) == (503, "error trying to reach service: dial tcp: lookup "
                                                             "tcp/nosuchport: unknown port")


# --- HTML answers --------------------------------------------------------------------------

def test_rewrite_html_changes_only_url_attributes() -> None:
    from kubeplane.apiserver.handlers.proxy_html import rewrite_html
    be = Location("http", "127.0.0.1", 8080)
    prefix = f"{NS}/pods/web/proxy"
    page = (b'<!DOCTYPE html>\n<html><head><link rel="stylesheet" href="/s.css">\n'
            b"<script>var x = '<a href=\"/not-a-tag\">';</script></head>\n"
            b'<body><a href="/metrics" class=x>m</a> <a href="rel/y">r</a> <A HREF=http://example.com/z>z</A>'
            b'<img src="http://127.0.0.1:8080/i.png"/><p data-href="/no">caf\xc3\xa9</p></body></html>')
    out = rewrite_html(page, lambda u: rewrite_location(u, be, "localhost:8001", prefix))
    assert out == (b'<!DOCTYPE html>\n<html><head><link rel="stylesheet" href="' + prefix.encode() + b'/s.css">\n'
                   b"<script>var x = '<a href=\"/not-a-tag\">';</script></head>\n"
                   b'<body><a href="' + prefix.encode() + b'/metrics" class="x">m</a> <a href="rel/y">r</a> '
                   b'<A HREF=http://example.com/z>z</A><img src="' + prefix.encode() + b'/i.png"/>'
                   b'<p data-href="/no">caf\xc3\xa9</p></body></html>')


async def test_pod_proxy_rewrites_html_links(api: API, process_node: None) -> None:
    import gzip

    async def page(request: web.Request) -> web.Response:
        body = b'<a href="/x">x</a>'
        if request.path == "/gz":
            return web.Response(body=gzip.compress(body), headers={"Content-Type": "text/html; charset=utf-8",
                                                                     "Content-Encoding": "gzip"})
        return web.Response(body=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]      # type: ignore[union-attr]
    try:
        await make_pod(api, "web", "127.0.0.1", port)
        status, body, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy/")
        assert body == f'<a href="{NS}/pods/web/proxy/x">x</a>'.encode()
        assert "content-length" not in {k for k, _ in headers}
        status, body, headers, _ = await proxy_get(api, f"{NS}/pods/web/proxy/gz")
        assert gzip.decompress(body) == f'<a href="{NS}/pods/web/proxy/x">x</a>'.encode()
        assert ("content-encoding", "gzip") in headers
    finally:
        await runner.cleanup()


async def test_large_or_undecodable_html_passes_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubeplane.apiserver.handlers import proxy_html

    async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
        for p in parts:
            yield p

    def add_p(u: str) -> str:
        return "/p" + u

    monkeypatch.setattr(proxy_html, "MAX_REWRITE", 20)
    big = [b'<a href="/x">', b"0123456789", b"0123456789", b"</a>"]
    assert [c async for c in proxy_html.rewritten(chunks(*big), "", add_p)] == big
    small = [b'<a href="/x">x</a>']
    assert [c async for c in proxy_html.rewritten(chunks(*small), "", add_p)] == [b'<a href="/p/x">x</a>']
    assert [c async for c in proxy_html.rewritten(chunks(b"not gzip"), "gzip", add_p)] == [b"not gzip"]
    assert [c async for c in proxy_html.rewritten(chunks(b"<a href=/x>"), "br", add_p)] == [b"<a href=/x>"]


# --- slow backends ---------------------------------------------------------------------------

async def test_backend_that_never_answers_ends_when_the_client_goes(api: API, process_node: None,
                                                                    backend: Backend) -> None:
    """Waiting for a backend's headers holds nothing once the client has gone: the wait ends
    and the backend connection is closed."""
    await make_pod(api, "web", "127.0.0.1", backend.port)
    for path in ("hang", "stream"):         # no headers yet; headers and a first chunk only
        backend.seen.clear()
        ch = Channel([b""])
        call = asyncio.ensure_future(ASGIApp(api.server)(asgi_scope("GET", f"{NS}/pods/web/proxy/{path}", []),
                                                         ch.receive, ch.send))
        while not backend.seen:             # the backend has the request
            await asyncio.sleep(0.01)
        ch.gone.set()
        await asyncio.wait_for(call, 10)    # a guard against a hang, not a timing assertion
        assert call.exception() is None


async def test_tls_handshake_that_never_completes_is_a_bounded_503(api: API, process_node: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """https to a backend that accepts and says nothing: the connect deadline (dial + TLS
    handshake) ends it with a 503."""
    from kubeplane.apiserver.handlers import proxy
    monkeypatch.setattr(proxy, "DIAL_TIMEOUT", 0.2)
    monkeypatch.setattr(proxy, "TLS_HANDSHAKE_TIMEOUT", 0.2)
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        await make_pod(api, "web", "127.0.0.1", port)
        status, body, _, _ = await proxy_get(api, f"{NS}/pods/https:web:{port}/proxy/")
        assert (status, orjson.loads(body)["message"]) == (
            503, f"error trying to reach service: dial tcp 127.0.0.1:{port}: i/o timeout")
    finally:
        silent.close()


async def test_node_proxy_never_sends_kubelet_credentials_to_the_api_server(api: API) -> None:
    """A Node naming the API server's own address and port as its kubelet: refused, since the
    kubelet client's token would go to the API server with a path of the caller's choosing."""
    api.server.server_address = "127.0.0.1:6443"
    api.server.tokens = {"admin-token": "kubeplane-admin"}
    assert (await api.call("POST", "/api/v1/nodes", body=node_obj("evil", port=6443))).status == 201
    status, body, _, _ = await proxy_get(api, "/api/v1/nodes/evil/proxy/api/v1/secrets")
    assert (status, orjson.loads(body)["message"]) == (400, "address not allowed")

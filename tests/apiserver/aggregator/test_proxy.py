"""The aggregator end to end in process: a real HTTPS adapter (kubeplane.testing.aggregated_server)
behind a selectorless Service and a manual EndpointSlice, registered as
v1beta2.custom.metrics.k8s.io; requests reach it through APIServer.route_trusted as an
authenticated user, with the front-proxy certificate and headers."""
from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest

from kubeplane.apiserver.aggregator import controller as aggregator
from kubeplane.apiserver.aggregator.frontproxy import (CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, ensure_front_proxy_pki,
                                                       publish_authentication_config)
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.authorization.authorizer import AlwaysAllow, Decision
from kubeplane.apiserver.request import Request, parse_request_info
from kubeplane.testing.aggregated_server import AggregatedServer, routable_address

API = Any
USER = UserInfo("alice", "uid-1", ("devs", "system:authenticated"), (("scopes", ("a b", "c")),))
METRIC_PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/requests_per_second"
NAME = "v1beta2.custom.metrics.k8s.io"


def service(port: int = 443, port_name: str = "https") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "custom-metrics", "namespace": "default"},
            "spec": {"ports": [{"name": port_name, "port": port, "targetPort": 6443}]}}


def endpoint_slice(port: int, ready: bool = True, host: str = "") -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "custom-metrics-1", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "custom-metrics"}},
            "addressType": "IPv4", "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [host or routable_address()], "conditions": {"ready": ready}}]}


def api_service(ca_bundle: str, port: int = 443) -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": NAME},
            "spec": {"group": "custom.metrics.k8s.io", "version": "v1beta2", "groupPriorityMinimum": 100,
                     "versionPriority": 200, "caBundle": ca_bundle,
                     "service": {"name": "custom-metrics", "namespace": "default", "port": port}}}


class Deny:
    """An authorizer that refuses alice everything (records what it was asked)."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def authorize(self, a: Any) -> tuple[Decision, str]:
        self.asked.append(a)
        if a.user.name == "alice":
            return Decision.DENY, ""
        return AlwaysAllow().authorize(a)


async def call(api: API, path: str, user: UserInfo = USER, headers: dict[str, str] | None = None,
               method: str = "GET", query: str = "") -> tuple[int, bytes, str]:
    req = Request.build(method, path, query, headers or {})
    req.user = user
    resp = await api.server.route_trusted(req)
    if isinstance(resp.body, bytes):
        return resp.status, resp.body, resp.content_type
    return resp.status, b"".join([c async for c in resp.body]), resp.content_type


async def available(api: API, status: str = "True", reason: str = "Passed") -> dict[str, Any]:
    for _ in range(500):
        r = await api.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{NAME}")
        cond = next((c for c in (r.json.get("status") or {}).get("conditions") or [] if c["type"] == "Available"), None)
        if cond is not None and cond["status"] == status and cond["reason"] == reason:
            return dict(cond)
        await asyncio.sleep(0.01)
    raise AssertionError(f"Available never became {status}/{reason}: {cond}")


@pytest.fixture
async def adapter(tmp_path: Any) -> Any:
    front = ensure_front_proxy_pki(tmp_path)
    a = AggregatedServer(requestheader_ca=front.ca_cert.read_bytes())
    a.pod_metrics["requests_per_second"] = {"web-1": "250m", "web-2": "1500m"}
    await a.start()
    a.front = front
    yield a
    await a.stop()


@pytest.fixture
async def aggregated(api: API, adapter: Any) -> Any:
    for path, obj in (("/api/v1/namespaces/default/services", service()),
                      ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", endpoint_slice(adapter.port)),
                      ("/apis/apiregistration.k8s.io/v1/apiservices", api_service(adapter.ca_bundle))):
        r = await api.create(path, obj)
        assert r.status == 201, r.json
    tasks = await aggregator.start(api.server, proxy_client_cert=str(adapter.front.client_cert),
                                   proxy_client_key=str(adapter.front.client_key))
    yield api.server.aggregator
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_request_reaches_the_adapter_as_the_authenticated_user(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    status, body, ct = await call(api, METRIC_PATH, headers={
        "x-remote-user": "system:admin", "x-remote-group": "system:masters", "authorization": "Bearer secret",
        "impersonate-user": "root", "accept": "application/json"})
    assert status == 200 and ct == "application/json", body
    items = orjson.loads(body)["items"]
    assert [(i["describedObject"]["name"], i["value"]) for i in items] == [("web-1", "250m"), ("web-2", "1500m")]
    # The aggregator's own OpenAPI/discovery fetches may reach the adapter after the request.
    seen = next(s for s in reversed(adapter.seen) if s.path == METRIC_PATH)
    assert seen.client_cn == "front-proxy-client"
    assert seen.headers["x-remote-user"] == ["alice"] and seen.headers["x-remote-uid"] == ["uid-1"]
    assert seen.headers["x-remote-group"] == ["devs", "system:authenticated"]
    assert seen.headers["x-remote-extra-scopes"] == ["a b", "c"]
    assert "authorization" not in seen.headers and "impersonate-user" not in seen.headers
    assert seen.headers["accept"] == ["application/json"]


async def test_the_availability_check_asks_as_the_aggregator(api: API, adapter: Any, aggregated: Any) -> None:
    cond = await available(api)
    assert cond["message"] == "all checks passed"
    check = next(s for s in adapter.seen if s.path == "/apis/custom.metrics.k8s.io/v1beta2")
    assert check.headers["x-remote-user"] == ["system:kube-aggregator"]
    assert check.headers["x-remote-group"] == ["system:masters"]


async def test_a_user_without_rights_gets_403_and_the_adapter_is_not_called(api: API, adapter: Any,
                                                                           aggregated: Any) -> None:
    await available(api)
    before = len(adapter.seen)
    api.server.authorizer = Deny()
    status, body, _ = await call(api, METRIC_PATH)
    assert status == 403
    assert orjson.loads(body)["message"] == ('pods.custom.metrics.k8s.io "*" is forbidden: User "alice" cannot get '
                                             'resource "pods/requests_per_second" in API group "custom.metrics.k8s.io" '
                                             'in the namespace "default"')
    assert len(adapter.seen) == before


async def test_stopped_adapter_gives_503_and_failed_discovery_check(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    await adapter.stop()
    status, body, ct = await call(api, METRIC_PATH)
    assert status == 503 and ct.startswith("text/plain")
    assert body.decode().startswith(f"error trying to reach service: dial tcp {adapter.host}:{adapter.port}: "
                                    "connect: connection refused")
    cond = await available(api, "False", "FailedDiscoveryCheck")
    url = f"https://{adapter.host}:{adapter.port}/apis/custom.metrics.k8s.io/v1beta2"
    assert cond["message"] == (f'failing or missing response from {url}: Get "{url}": dial tcp '
                               f"{adapter.host}:{adapter.port}: connect: connection refused")
    status, body, _ = await call(api, METRIC_PATH)
    assert (status, body) == (503, b"service unavailable\n")


async def test_endpoints_gone_is_missing_endpoints_and_503(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/custom-metrics-1"
    r = await api.call("PUT", path, body={**endpoint_slice(adapter.port, ready=False),
                                          "metadata": {**endpoint_slice(0)["metadata"], "resourceVersion": await api.rv(path)}})
    assert r.status == 200, r.json
    cond = await available(api, "False", "MissingEndpoints")
    assert cond["message"] == 'endpointslices for service/custom-metrics in "default" have no addresses with port name "https"'
    assert await call(api, METRIC_PATH) == (503, b"service unavailable\n", "text/plain; charset=utf-8")


async def test_a_wrong_ca_fails_the_discovery_check(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    other = AggregatedServer()
    other.tls()
    path = f"/apis/apiregistration.k8s.io/v1/apiservices/{NAME}"
    obj = (await api.get(path)).json
    obj["spec"]["caBundle"] = other.ca_bundle
    assert (await api.call("PUT", path, body=obj)).status == 200
    cond = await available(api, "False", "FailedDiscoveryCheck")
    assert "tls: failed to verify certificate" in cond["message"]
    other._tmp.cleanup()


async def test_invalid_ca_bundle(api: API, adapter: Any, aggregated: Any) -> None:
    """No transport can be built: the check fails with why, and requests get 503 (a 500 with
    why while the APIService still says Available, as upstream's transportBuildingError)."""
    await available(api)
    path = f"/apis/apiregistration.k8s.io/v1/apiservices/{NAME}"
    obj = (await api.get(path)).json
    obj["spec"]["caBundle"] = base64.b64encode(b"not a certificate").decode()
    assert (await api.call("PUT", path, body=obj)).status == 200
    cond = await available(api, "False", "FailedDiscoveryCheck")
    assert cond["message"] == "unable to load root certificates: unable to parse bytes as PEM block"
    assert (await call(api, METRIC_PATH))[:2] == (503, b"service unavailable\n")
    backend = aggregated.backends[("custom.metrics.k8s.io", "v1beta2")]
    backend.available = True
    req = Request.build("GET", METRIC_PATH)
    req.user = USER
    resp = await aggregated.serve(req, parse_request_info(req),
                                  backend)
    assert (resp.status, resp.body) == (500, b"unable to load root certificates: unable to parse bytes as PEM block\n")


async def test_discovery_lists_the_remote_group(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    groups = orjson.loads((await call(api, "/apis"))[1])["groups"]
    assert {"name": "custom.metrics.k8s.io", "versions": [{"groupVersion": "custom.metrics.k8s.io/v1beta2",
                                                           "version": "v1beta2"}],
            "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}} in groups
    status, body, _ = await call(api, "/apis/custom.metrics.k8s.io")
    assert status == 200 and orjson.loads(body)["kind"] == "APIGroup"
    status, body, ct = await call(api, "/apis", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    item = next(i for i in orjson.loads(body)["items"] if i["metadata"].get("name") == "custom.metrics.k8s.io")
    assert item["versions"][0]["version"] == "v1beta2"
    assert item["versions"][0]["resources"][0]["resource"] == "pods"
    assert item["versions"][0]["resources"][0]["subresources"][0]["subresource"] == "requests_per_second"
    status, body, _ = await call(api, "/apis/custom.metrics.k8s.io/v1beta2")      # proxied
    assert status == 200 and orjson.loads(body)["groupVersion"] == "custom.metrics.k8s.io/v1beta2"


async def test_the_authentication_config_map(api: API, tmp_path: Any) -> None:
    front = ensure_front_proxy_pki(tmp_path)
    await publish_authentication_config(api.server, b"CLUSTER CA", front.ca_cert.read_bytes())
    await publish_authentication_config(api.server, b"CLUSTER CA", front.ca_cert.read_bytes())     # idempotent
    r = await api.get(f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps/{CONFIGMAP_NAME}")
    data = r.json["data"]
    assert data["client-ca-file"] == "CLUSTER CA"
    assert data["requestheader-client-ca-file"] == front.ca_cert.read_text()
    assert data["requestheader-allowed-names"] == '["front-proxy-client"]'
    assert data["requestheader-username-headers"] == '["X-Remote-User"]'
    assert data["requestheader-group-headers"] == '["X-Remote-Group"]'
    assert data["requestheader-extra-headers-prefix"] == '["X-Remote-Extra-"]'
    assert r.json["metadata"]["resourceVersion"] == await api.rv(f"/api/v1/namespaces/kube-system/configmaps/"
                                                                   f"{CONFIGMAP_NAME}")


WATCH_PATH = "/apis/custom.metrics.k8s.io/v1beta2/watchables"


async def test_a_watch_is_streamed_as_it_comes(api: API, adapter: Any, aggregated: Any) -> None:
    """The backend sends an event, then waits: the client has the first event while the backend
    is still answering, and the server goes on serving others meanwhile."""
    gate = asyncio.Event()

    async def watch(request: Any) -> Any:
        from aiohttp import web
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b'{"type":"ADDED","object":{"n":1}}\n')
        await gate.wait()
        await resp.write(b'{"type":"ADDED","object":{"n":2}}\n')
        return resp
    adapter.routes[WATCH_PATH] = watch
    await available(api)
    req = Request.build("GET", WATCH_PATH, "watch=1", {})
    req.user = USER
    resp = await api.server.route_trusted(req)
    assert resp.status == 200 and resp.content_type == "application/json"
    chunks = resp.body.__aiter__()
    first = await asyncio.wait_for(chunks.__anext__(), 5)
    assert first == b'{"type":"ADDED","object":{"n":1}}\n'
    assert (await api.get("/api/v1/namespaces/default")).status == 200       # the loop is free
    gate.set()
    assert await asyncio.wait_for(chunks.__anext__(), 5) == b'{"type":"ADDED","object":{"n":2}}\n'
    await chunks.aclose()


async def test_a_huge_answer_is_passed_on_in_pieces(api: API, adapter: Any, aggregated: Any) -> None:
    big = b"x" * (8 << 20)

    async def huge(request: Any) -> Any:
        from aiohttp import web
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await resp.prepare(request)
        for i in range(0, len(big), 1 << 20):
            await resp.write(big[i:i + (1 << 20)])
        return resp
    adapter.routes[WATCH_PATH] = huge
    await available(api)
    req = Request.build("GET", WATCH_PATH, "", {})
    req.user = USER
    resp = await api.server.route_trusted(req)
    sizes = [len(c) async for c in resp.body]
    assert sum(sizes) == len(big) and max(sizes) < len(big)


async def test_a_slow_backend_is_cut_at_the_request_timeout(api: API, adapter: Any, aggregated: Any) -> None:
    async def slow(request: Any) -> Any:
        await asyncio.sleep(30)
    adapter.routes[WATCH_PATH] = slow
    await available(api)
    import dataclasses
    api.server.options = dataclasses.replace(api.server.options, request_timeout=0.2)
    status, body, _ = await call(api, WATCH_PATH)
    assert status == 503 and body == b"error trying to reach service: context deadline exceeded\n"
    # a discovery document gets 5 s whatever the request timeout (aggregatedDiscoveryTimeout)
    assert aggregator.proxying.DISCOVERY_TIMEOUT == 5.0


async def test_openapi_v3_lists_and_serves_the_remote_document(api: API, adapter: Any, aggregated: Any) -> None:
    obj = api_service(adapter.ca_bundle)
    obj["metadata"]["name"] = "v1alpha1.wardle.example.com"
    obj["spec"].update(group="wardle.example.com", version="v1alpha1")
    assert (await api.create("/apis/apiregistration.k8s.io/v1/apiservices", obj)).status == 201
    for _ in range(500):
        index = orjson.loads((await call(api, "/openapi/v3"))[1])["paths"]
        if "apis/wardle.example.com/v1alpha1" in index:
            break
        await asyncio.sleep(0.01)
    url = index["apis/wardle.example.com/v1alpha1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/wardle.example.com/v1alpha1?hash=")
    assert "apis/apps/v1" in index                                  # the local ones stay
    status, body, _ = await call(api, "/openapi/v3/apis/wardle.example.com/v1alpha1")
    assert status == 200 and "com.example.wardle.v1alpha1.Flunder" in orjson.loads(body)["components"]["schemas"]
    status, _, _ = await call(api, "/openapi/v3/apis/apps/v1")
    assert status == 200


async def test_a_deleted_api_service_is_no_longer_proxied(api: API, adapter: Any, aggregated: Any) -> None:
    await available(api)
    assert (await api.call("DELETE", f"/apis/apiregistration.k8s.io/v1/apiservices/{NAME}")).status == 200
    for _ in range(500):
        if not aggregated.backends:
            break
        await asyncio.sleep(0.01)
    before = len(adapter.seen)
    status, body, _ = await call(api, METRIC_PATH)
    assert status == 404 and len(adapter.seen) == before
    groups = orjson.loads((await call(api, "/apis"))[1])["groups"]
    assert "custom.metrics.k8s.io" not in {g["name"] for g in groups}


async def test_availability_metrics(api: API, adapter: Any, aggregated: Any) -> None:
    """Upstream: aggregator_unavailable_apiservice and aggregator_unavailable_apiservice_total."""
    from prometheus_client import generate_latest
    from prometheus_client.core import CollectorRegistry

    from kubeplane.apiserver.aggregator import metrics

    class Only:
        def collect(self) -> Any:
            return metrics.collect()
    registry = CollectorRegistry()
    registry.register(Only())  # type: ignore[arg-type]
    await available(api)
    assert f'aggregator_unavailable_apiservice{{name="{NAME}"}} 0.0' in generate_latest(registry).decode()
    await adapter.stop()
    api.clock.step(aggregator.RESYNC)          # the resync re-checks it
    await available(api, "False", "FailedDiscoveryCheck")
    text = generate_latest(registry).decode()
    assert f'aggregator_unavailable_apiservice{{name="{NAME}"}} 1.0' in text
    assert f'aggregator_unavailable_apiservice_total{{name="{NAME}",reason="FailedDiscoveryCheck"}}' in text
    assert text.count("# TYPE aggregator_unavailable_apiservice gauge") == 1
    assert text.count("# TYPE aggregator_unavailable_apiservice_total counter") == 1


async def test_insecure_skip_tls_verify_reaches_any_certificate(api: API, adapter: Any, aggregated: Any) -> None:
    """What charts shipping metrics-server's APIService set: no caBundle, nothing verified."""
    await available(api)
    path = f"/apis/apiregistration.k8s.io/v1/apiservices/{NAME}"
    obj = (await api.get(path)).json
    del obj["spec"]["caBundle"]
    obj["spec"]["insecureSkipTLSVerify"] = True
    assert (await api.call("PUT", path, body=obj)).status == 200
    for _ in range(500):
        if aggregated.backends[("custom.metrics.k8s.io", "v1beta2")].tls_key[1]:
            break
        await asyncio.sleep(0.01)
    status, body, _ = await call(api, METRIC_PATH)
    assert status == 200 and len(orjson.loads(body)["items"]) == 2
    assert (await available(api))["reason"] == "Passed"


async def test_an_in_process_write_sends_its_object(api: API, adapter: Any, aggregated: Any) -> None:
    """An in-process client's body arrives decoded (Request.obj): it is encoded for the backend."""
    got: list[bytes] = []

    async def echo(request: Any) -> Any:
        from aiohttp import web
        got.append(await request.read())
        return web.json_response({"kind": "Status", "status": "Success"}, status=201)
    adapter.routes[WATCH_PATH] = echo
    await available(api)
    req = Request("POST", WATCH_PATH, {}, {"content-type": "application/json"}, b"", USER, {"kind": "Watchable"})
    resp = await api.server.route_trusted(req)
    assert resp.status == 201 and orjson.loads(b"".join([c async for c in resp.body]))["status"] == "Success"
    assert got == [b'{"kind":"Watchable"}']


async def test_a_hanging_backend_does_not_hold_back_the_others(api: API, adapter: Any, tmp_path: Any) -> None:
    """Checks run side by side (upstream's workers): while one backend does not answer its
    discovery check, another APIService is checked and turns Available."""
    gate = asyncio.Event()
    slow = AggregatedServer(service="slow")

    async def hang(request: Any) -> Any:
        from aiohttp import web
        await gate.wait()
        return web.json_response({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1",
                                  "resources": []})
    slow.routes["/apis/wardle.example.com/v1alpha1"] = hang
    await slow.start()
    slow_service = {**service(), "metadata": {"name": "slow", "namespace": "default"}}
    slow_slice = endpoint_slice(slow.port)
    slow_slice["metadata"] = {"name": "slow-1", "namespace": "default", "labels": {"kubernetes.io/service-name": "slow"}}
    slow_api_service = api_service(slow.ca_bundle)
    slow_api_service["metadata"]["name"] = "v1alpha1.wardle.example.com"
    slow_api_service["spec"].update(group="wardle.example.com", version="v1alpha1",
                                    service={"name": "slow", "namespace": "default", "port": 443})
    tasks: list[Any] = []
    try:
        for path, obj in (("/api/v1/namespaces/default/services", slow_service),
                          ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", slow_slice),
                          ("/apis/apiregistration.k8s.io/v1/apiservices", slow_api_service),
                          ("/api/v1/namespaces/default/services", service()),
                          ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", endpoint_slice(adapter.port)),
                          ("/apis/apiregistration.k8s.io/v1/apiservices", api_service(adapter.ca_bundle))):
            assert (await api.create(path, obj)).status == 201
        tasks = await aggregator.start(api.server, proxy_client_cert=str(adapter.front.client_cert),
                                       proxy_client_key=str(adapter.front.client_key))
        await available(api)                                  # while the other check hangs
        assert any(s.path == "/apis/wardle.example.com/v1alpha1" for s in slow.seen) and not gate.is_set()
        gate.set()
        r = await api.get("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com")
        for _ in range(500):
            r = await api.get("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com")
            if (r.json.get("status") or {}).get("conditions"):
                break
            await asyncio.sleep(0.01)
        assert r.json["status"]["conditions"][0]["reason"] == "Passed"
    finally:
        gate.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await slow.stop()

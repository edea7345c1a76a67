"""/metrics: the text format parses, and upstream's families carry upstream's labels.

The metrics live in prometheus_client's process-wide registry, so tests compare values before
and after their own requests instead of expecting absolute counts.
"""
from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.apiserver import metrics
from kubeplane.apiserver.metrics import InstrumentedStorage, request_labels
from kubeplane.apiserver.request import Request, parse_request_info
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock

CMS = "/api/v1/namespaces/default/configmaps"
UPSTREAM_LATENCY_BUCKETS = ["0.005", "0.025", "0.05", "0.1", "0.2", "0.4", "0.6", "0.8", "1.0", "1.25", "1.5",
                            "2.0", "3.0", "4.0", "5.0", "6.0", "8.0", "10.0", "15.0", "20.0", "30.0", "45.0",
                            "60.0", "+Inf"]


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def cm(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


@pytest.fixture
async def api() -> Any:
    server = APIServer(InstrumentedStorage(new_storage("memory")), tokens={"t": "admin"}, clock=FakeClock())
    await server.bootstrap()
    yield server
    await server.storage.close()


async def call(api: APIServer, method: str, path: str, query: str = "", body: bytes = b"",
               content_type: str = "application/json") -> Any:
    return await api.route_trusted(Request.build(method, path, query, {"content-type": content_type}, body))


async def scrape(api: APIServer) -> dict[str, Any]:
    req = Request.build("GET", "/metrics", "", {"authorization": "Bearer t"})
    resp = await api.handle(req)
    assert resp.status == 200 and resp.content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert isinstance(resp.body, bytes)
    return {f.name: f for f in text_string_to_metric_families(resp.body.decode())}


async def test_metrics_needs_authentication(api: APIServer) -> None:
    resp = await api.handle(Request.build("GET", "/metrics"))
    assert resp.status == 401


async def test_requests_are_counted_with_upstreams_labels(api: APIServer) -> None:
    labels = {"verb": "POST", "dry_run": "", "group": "", "version": "v1", "resource": "configmaps",
              "subresource": "", "scope": "resource", "component": "apiserver"}
    before = value("apiserver_request_total", **labels, code="201")
    before_conflict = value("apiserver_request_total", **labels, code="409")
    assert (await call(api, "POST", CMS, body=cm("a"))).status == 201
    assert (await call(api, "POST", CMS, body=cm("a"))).status == 409
    families = await scrape(api)
    total = families["apiserver_request"]            # the parser names a counter without _total
    assert total.type == "counter"
    samples = {tuple(sorted(s.labels.items())): s.value for s in total.samples if s.name == "apiserver_request_total"}
    assert samples[tuple(sorted({**labels, "code": "201"}.items()))] == before + 1
    assert samples[tuple(sorted({**labels, "code": "409"}.items()))] == before_conflict + 1
    duration = families["apiserver_request_duration_seconds"]
    assert duration.type == "histogram"
    les = [s.labels["le"] for s in duration.samples
           if s.name.endswith("_bucket") and s.labels["resource"] == "configmaps" and s.labels["verb"] == "POST"]
    assert les == UPSTREAM_LATENCY_BUCKETS
    assert not any(s.name.endswith("_created") for f in families.values() for s in f.samples)


async def test_list_response_sizes_and_scopes(api: APIServer) -> None:
    labels = {"verb": "LIST", "group": "", "version": "v1", "resource": "configmaps", "subresource": "",
              "scope": "namespace", "component": "apiserver"}
    before = value("apiserver_response_sizes_count", **labels)
    before_cluster = value("apiserver_request_total", **{**labels, "scope": "cluster"}, dry_run="", code="200")
    await call(api, "GET", CMS)
    await call(api, "GET", "/api/v1/configmaps")
    assert value("apiserver_response_sizes_count", **labels) == before + 1
    assert value("apiserver_request_total", **{**labels, "scope": "cluster"}, dry_run="", code="200") \
        == before_cluster + 1
    families = await scrape(api)
    les = {s.labels["le"] for s in families["apiserver_response_sizes"].samples if s.name.endswith("_bucket")}
    assert les == {"1000.0", "10000.0", "100000.0", "1e+06", "1e+07", "1e+08", "1e+09", "+Inf"}


async def test_a_watch_is_long_running_while_it_streams(api: APIServer) -> None:
    labels = {"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps", "subresource": "",
              "scope": "namespace", "component": "apiserver"}
    before = value("apiserver_longrunning_requests", **labels)
    resp = await call(api, "GET", CMS, f"watch=1&resourceVersion={api.storage.revision}")
    it = resp.body.__aiter__()
    assert await asyncio.wait_for(it.__anext__(), 5) == b""      # the stream has started
    assert value("apiserver_longrunning_requests", **labels) == before + 1
    await it.aclose()
    assert value("apiserver_longrunning_requests", **labels) == before


async def test_storage_metrics(api: APIServer) -> None:
    labels = {"operation": "create", "group": "", "resource": "configmaps"}
    before = value("etcd_requests_total", **labels)
    before_errors = value("etcd_request_errors_total", **labels)
    await call(api, "POST", CMS, body=cm("s1"))
    await call(api, "POST", CMS, body=cm("s1"))               # AlreadyExists: an answer, not an error
    assert value("etcd_requests_total", **labels) == before + 2
    assert value("etcd_request_duration_seconds_count", **labels) == before + 2
    assert value("etcd_request_errors_total", **labels) == before_errors
    families = await scrape(api)
    objects = {s.labels["resource"]: s.value for s in families["apiserver_storage_objects"].samples}
    assert objects["configmaps"] == 1 and objects["namespaces"] == 4
    assert objects["deployments.apps"] == 0
    resource_objects = {(s.labels["group"], s.labels["resource"]): s.value
                        for s in families["apiserver_resource_objects"].samples}
    assert resource_objects[("apps", "deployments")] == 0


async def test_families_present(api: APIServer) -> None:
    families = await scrape(api)
    for name in ("apiserver_request", "apiserver_request_duration_seconds", "apiserver_response_sizes",
                 "apiserver_current_inflight_requests", "apiserver_longrunning_requests", "apiserver_storage_objects",
                 "etcd_request_duration_seconds", "etcd_requests"):
        assert name in families, name
    assert families["apiserver_request"].documentation.startswith("[STABLE] Counter of apiserver requests")


@pytest.mark.parametrize(("method", "path", "query", "headers", "expected"), [
    pytest.param("GET", "/api/v1/namespaces/default/pods/web", "", {},
                 ("GET", "", "", "v1", "pods", "", "resource"), id="get"),
    pytest.param("GET", "/api/v1/namespaces/default/pods", "", {},
                 ("LIST", "", "", "v1", "pods", "", "namespace"), id="list"),
    pytest.param("GET", "/api/v1/pods", "watch=true", {},
                 ("WATCH", "", "", "v1", "pods", "", "cluster"), id="watch"),
    pytest.param("GET", "/api/v1/watch/namespaces/default/pods", "", {},
                 ("WATCH", "", "", "v1", "pods", "", "namespace"), id="watch-path"),
    pytest.param("POST", "/apis/apps/v1/namespaces/default/deployments", "dryRun=All", {},
                 ("POST", "All", "apps", "v1", "deployments", "", "resource"), id="create-dry-run"),
    pytest.param("POST", "/apis/apps/v1/namespaces/default/deployments", "dryRun=Some", {},
                 ("POST", "invalid", "apps", "v1", "deployments", "", "resource"), id="dry-run-invalid"),
    pytest.param("PATCH", "/api/v1/namespaces/default/pods/web/status", "",
                 {"content-type": "application/merge-patch+json"},
                 ("PATCH", "", "", "v1", "pods", "status", "resource"), id="status-patch"),
    pytest.param("PATCH", "/api/v1/namespaces/default/configmaps/c", "",
                 {"content-type": "application/apply-patch+yaml"},
                 ("APPLY", "", "", "v1", "configmaps", "", "resource"), id="apply"),
    pytest.param("GET", "/api/v1/namespaces/default/pods/web/log", "", {},
                 ("CONNECT", "", "", "v1", "pods", "log", "resource"), id="connect"),
    pytest.param("DELETE", "/api/v1/namespaces/default/configmaps", "", {},
                 ("DELETE", "", "", "v1", "configmaps", "", "namespace"), id="deletecollection"),
    pytest.param("OPTIONS", "/api/v1/namespaces/default/configmaps", "", {},
                 ("other", "", "", "v1", "configmaps", "", "namespace"), id="other"),
    pytest.param("GET", "/apis", "", {}, ("GET", "", "", "", "", "/apis", ""), id="discovery"),
    pytest.param("GET", "/api/v1/namespaces/default/widgets", "", {}, None, id="unknown-resource"),
    pytest.param("GET", "/api/v1/namespaces/default/pods/web/nope", "", {}, None, id="unknown-subresource"),
    pytest.param("GET", "/random/path", "", {}, None, id="unknown-path"),
])
def test_request_labels(method: str, path: str, query: str, headers: dict[str, str],
                        expected: tuple[str, ...] | None) -> None:
    req = Request.build(method, path, query, headers)
    got = request_labels(req, parse_request_info(req))
    assert got == (None if expected is None else (*expected, "apiserver"))


async def test_render_survives_a_scrape_during_requests(api: APIServer) -> None:
    """A scrape and writes interleave on the loop without error."""
    results = await asyncio.gather(scrape(api), *(call(api, "POST", CMS, body=cm(f"g{i}")) for i in range(5)))
    assert all(r.status == 201 for r in results[1:])
    assert metrics.CONTENT_TYPE.startswith("text/plain")

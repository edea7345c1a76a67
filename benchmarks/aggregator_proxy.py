"""Proxied GETs to an aggregated API against local GETs, in process: wall and CPU time per
request through APIServer.handle (authentication, authorization, the aggregator) to a custom
metrics adapter over HTTPS (kubeplane.testing.aggregated_server, in this process, so its CPU is
counted too), and, for comparison, a local ConfigMap GET before and after the APIService exists
(what the aggregator's routing check costs the local path).

Run:  PYTHONPATH=src .venv/bin/python benchmarks/aggregator_proxy.py [N]
"""
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from kubeplane.apiserver.aggregator import controller as aggregator
from kubeplane.apiserver.aggregator.frontproxy import ensure_front_proxy_pki
from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.aggregated_server import AggregatedServer
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
H = {"authorization": "Bearer t", "content-type": "application/json"}


async def timed(api: APIServer, path: str, n: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per GET, the streamed body read."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        r = await api.handle(Request.build("GET", path, "", H))
        assert r.status == 200, r.body
        if not isinstance(r.body, bytes):
            async for _chunk in r.body:
                pass
    return (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6


async def main() -> None:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    api.authenticator.token_file.tokens["t"] = authenticated("admin", "system:masters")
    cm = "/api/v1/namespaces/default/configmaps/c"
    r = await api.handle(Request.build("POST", "/api/v1/namespaces/default/configmaps", "", H, json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode()))
    assert r.status == 201
    await timed(api, cm, 300)
    before = await timed(api, cm, N)
    with tempfile.TemporaryDirectory() as d:
        front = ensure_front_proxy_pki(Path(d))
        adapter = AggregatedServer(requestheader_ca=front.ca_cert.read_bytes())
        adapter.pod_metrics["qps"] = {f"web-{i}": "1" for i in range(10)}
        port = await adapter.start()
        for path, obj in (
                ("/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service", "metadata": {
                    "name": "custom-metrics"}, "spec": {"ports": [{"name": "https", "port": 443}]}}),
                ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {
                        "name": "cm-1", "labels": {"kubernetes.io/service-name": "custom-metrics"}},
                    "addressType": "IPv4", "ports": [{"name": "https", "port": port}],
                    "endpoints": [{"addresses": [adapter.host]}]}),
                ("/apis/apiregistration.k8s.io/v1/apiservices", {
                    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1beta2.custom.metrics.k8s.io"},
                    "spec": {"group": "custom.metrics.k8s.io", "version": "v1beta2", "groupPriorityMinimum": 100,
                             "versionPriority": 200, "caBundle": adapter.ca_bundle,
                             "service": {"name": "custom-metrics", "namespace": "default", "port": 443}}})):
            r = await api.handle(Request.build("POST", path, "", H, json.dumps(obj).encode()))
            assert r.status == 201, r.body
        tasks = await aggregator.start(api, proxy_client_cert=str(front.client_cert),
                                       proxy_client_key=str(front.client_key))
        metric = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/qps"
        for _ in range(500):
            r = await api.handle(Request.build("GET", metric, "", H))
            if r.status == 200:
                break
            await asyncio.sleep(0.01)
        await timed(api, metric, 100)
        proxied = await timed(api, metric, N)
        after = await timed(api, cm, N)
        for t in tasks:
            t.cancel()
        await adapter.stop()
    print(f"local GET before: {before[0]:.1f} µs wall, {before[1]:.1f} µs CPU")
    print(f"local GET with an APIService: {after[0]:.1f} µs wall, {after[1]:.1f} µs CPU")
    print(f"proxied GET (adapter in process): {proxied[0]:.1f} µs wall, {proxied[1]:.1f} µs CPU")


asyncio.run(main())

"""The HPA's metrics client through the aggregator to a real adapter (in process): the Pods
metric of custom.metrics.k8s.io and an External metric, as the HPA controller asks for them,
and what it gets once the adapter is gone."""
from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.apiserver.aggregator import controller as aggregator
from kubeplane.apiserver.aggregator.frontproxy import ensure_front_proxy_pki
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.controller.podautoscaler.clients import ScaleClient, fetch_metric
from kubeplane.testing.aggregated_server import AggregatedServer

API = Any
HPA_USER = "system:kube-controller-manager"
PODS = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}}
EXTERNAL = {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                             "target": {"type": "Value", "value": "1"}}}


def objects(adapter: AggregatedServer) -> list[tuple[str, dict[str, Any]]]:
    def api_service(group: str, version: str) -> dict[str, Any]:
        return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": f"{version}.{group}"},
                "spec": {"group": group, "version": version, "groupPriorityMinimum": 100, "versionPriority": 100,
                         "caBundle": adapter.ca_bundle,
                         "service": {"name": "custom-metrics", "namespace": "default", "port": 443}}}
    return [("/api/v1/namespaces/default/services", {
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": "custom-metrics", "namespace": "default"},
                "spec": {"ports": [{"name": "https", "port": 443}]}}),
            ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "cm-1", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "custom-metrics"}},
                "addressType": "IPv4", "ports": [{"name": "https", "port": adapter.port}],
                "endpoints": [{"addresses": [adapter.host]}]}),
            ("/apis/apiregistration.k8s.io/v1/apiservices", api_service("custom.metrics.k8s.io", "v1beta2")),
            ("/apis/apiregistration.k8s.io/v1/apiservices", api_service("external.metrics.k8s.io", "v1beta1"))]


async def test_the_hpa_reads_custom_and_external_metrics_through_the_aggregator(api: API, tmp_path: Any) -> None:
    front = ensure_front_proxy_pki(tmp_path)
    adapter = AggregatedServer(requestheader_ca=front.ca_cert.read_bytes())
    adapter.pod_metrics["qps"] = {"web-0": "2", "web-1": "500m"}
    adapter.external_metrics["queue"] = [({"q": "a"}, "30"), ({"q": "b"}, "7"), ({"q": "a"}, "12")]
    await adapter.start()
    tasks: list[Any] = []
    try:
        for path, obj in objects(adapter):
            assert (await api.create(path, obj)).status == 201
        tasks = await aggregator.start(api.server, proxy_client_cert=str(front.client_cert),
                                       proxy_client_key=str(front.client_key))
        transport = InProcessTransport(api.server, HPA_USER)
        scale = ScaleClient(transport)
        for _ in range(500):
            if all(b.available for b in api.server.aggregator.backends.values()):
                break
            await asyncio.sleep(0.01)
        answer = await fetch_metric(transport, scale, "default", PODS, "app=web")
        assert answer.error == ""
        pods, _ = answer.get_raw_metric("qps", "default", None, None)
        assert {name: m.value for name, m in pods.items()} == {"web-0": 2000, "web-1": 500}
        assert {name: m.window for name, m in pods.items()} == {"web-0": 60.0, "web-1": 60.0}
        asked = next(s for s in adapter.seen if s.path.endswith("/pods/*/qps"))
        assert asked.query == {"labelSelector": "app=web"} and asked.headers["x-remote-user"] == [HPA_USER]
        answer = await fetch_metric(transport, scale, "default", EXTERNAL, "app=web")
        assert answer.get_external_metric("queue", "default", None)[0] == [30000, 12000]
        await adapter.stop()
        answer = await fetch_metric(transport, scale, "default", PODS, "app=web")
        assert answer.error.startswith("the server is currently unable to handle the request "
                                       "(get pods.custom.metrics.k8s.io *)"), answer.error
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await adapter.stop()

"""metrics.k8s.io/v1beta1 served from the kubelets' resource usage: discovery, get/list of
NodeMetrics and PodMetrics (selectors, Table), the 15 s reading cache, the APIService."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.kubelet.resource_usage import node_usage


def pod(name: str, node: str, cpu: str = "", running: bool = True, app: str = "web") -> dict[str, Any]:
    annotations = {"sim.kubeplane.io/cpu-usage": cpu} if cpu else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}, "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx", "resources": {
                "requests": {"cpu": "500m", "memory": "100Mi"}}}]},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "c", "ready": True, "restartCount": 0, "image": "nginx", "imageID": "", "containerID": "sim://1",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}} if running else {"waiting": {}}}]}}


class Kubelet:
    """An in-process kubelet's connection: resource_usage over the pods it runs."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = [types.from_dict(p, core_v1.Pod) for p in pods]
        self.calls = 0

    def resource_usage(self, node: str) -> Any:
        self.calls += 1
        return node_usage(self.pods, node)


async def setup(api: Any, pods: list[dict[str, Any]]) -> Kubelet:
    kubelet = Kubelet(pods)
    for node in ("n1", "n2"):
        r = await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                               "metadata": {"name": node, "labels": {"zone": node}}})
        assert r.status == 201, r.json
        api.server.nodes[node] = kubelet
    for p in pods:
        r = await api.create("/api/v1/namespaces/default/pods", p)
        assert r.status == 201, r.json
    return kubelet


async def test_discovery_and_the_api_service(api: Any) -> None:
    r = await api.get("/apis/metrics.k8s.io/v1beta1")
    assert [(x["name"], x["kind"], x["namespaced"], x["verbs"]) for x in r.json["resources"]] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]), ("pods", "PodMetrics", True, ["get", "list"])]
    r = await api.get("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io")
    assert r.json["spec"]["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 443}
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in r.json["status"]["conditions"]] == [
        ("Available", "True", "Passed", "all checks passed")]


async def test_pod_metrics_from_annotations_and_requests(api: Any) -> None:
    await setup(api, [pod("a", "n1", "250m"), pod("b", "n2"), pod("idle", "n1", running=False),
                      pod("other", "n2", "1", app="db")])
    r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", {"labelSelector": "app=web"})
    assert r.json["kind"] == "PodMetricsList"
    by_name = {m["metadata"]["name"]: m for m in r.json["items"]}
    assert sorted(by_name) == ["a", "b"]             # "idle" runs nothing: no metrics
    assert by_name["a"]["containers"] == [{"name": "c", "usage": {"cpu": "250m", "memory": "10Mi"}}]
    assert by_name["b"]["containers"][0]["usage"]["cpu"] == "50m"       # a tenth of the 500m request
    assert by_name["a"]["window"] == "15s" and by_name["a"]["metadata"]["labels"] == {"app": "web"}
    r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/idle")
    assert r.status == 404 and r.json["reason"] == "NotFound"
    r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods")
    assert r.json["items"] == []


async def test_node_metrics_sum_their_pods_plus_a_base(api: Any) -> None:
    await setup(api, [pod("a", "n1", "250m"), pod("b", "n1", "1")])
    r = await api.get("/apis/metrics.k8s.io/v1beta1/nodes/n1")
    assert r.json["kind"] == "NodeMetrics" and r.json["metadata"]["labels"] == {"zone": "n1"}
    assert r.json["usage"] == {"cpu": "1300m", "memory": "276Mi"}        # 50m and 256Mi of base
    r = await api.get("/apis/metrics.k8s.io/v1beta1/nodes", {"fieldSelector": "metadata.name=n2"})
    assert [(m["metadata"]["name"], m["usage"]["cpu"]) for m in r.json["items"]] == [("n2", "50m")]


async def test_table_has_metrics_servers_columns(api: Any) -> None:
    await setup(api, [pod("a", "n1", "250m")])
    r = await api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
                       headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert [c["name"] for c in r.json["columnDefinitions"]] == ["Name", "CPU", "Memory", "Window"]
    assert [row["cells"] for row in r.json["rows"]] == [["a", "250m", "10Mi", "15s"]]


async def test_a_reading_is_kept_for_the_resolution(api: Any, clock: Any) -> None:
    """One collection per node per 15 s, as metrics-server's scrape interval: a load change
    shows at the next reading."""
    kubelet = await setup(api, [pod("a", "n1", "250m")])
    await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")
    calls = kubelet.calls
    kubelet.pods[0].metadata.annotations["sim.kubeplane.io/cpu-usage"] = "750m"
    r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a")
    assert kubelet.calls == calls and r.json["containers"][0]["usage"]["cpu"] == "250m"
    clock.step(15)
    r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a")
    assert r.json["containers"][0]["usage"]["cpu"] == "750m"


async def test_writes_are_refused(api: Any) -> None:
    r = await api.create("/apis/metrics.k8s.io/v1beta1/nodes", {"apiVersion": "metrics.k8s.io/v1beta1",
                                                                "kind": "NodeMetrics", "metadata": {"name": "x"}})
    assert r.status == 405 and r.json["reason"] == "MethodNotAllowed"


def test_per_container_annotation_wins() -> None:
    p = pod("a", "n1", "250m")
    p["metadata"]["annotations"]["sim.kubeplane.io/cpu-usage.c"] = "2"
    total, [usage] = node_usage([types.from_dict(p, core_v1.Pod)], "n1")
    assert usage.containers[0].cpu == 2 and total["cpu"] == Fraction(205, 100)


class StandaloneKubelet(Kubelet):
    """A kubelet of another process: reached only through its server's /stats/summary."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        super().__init__(pods)
        from kubeplane.utils.clock import FakeClock
        self.clock = FakeClock(1_700_000_000.0)
        self.node_names = ["n1"]

    def container_logs(self, *args: Any) -> Any:
        raise AssertionError("not asked")


async def test_a_kubelet_in_another_process_is_scraped_over_https(api: Any) -> None:
    """A node with no in-process connection: its kubelet server's Summary API, with the API
    server's token; a node whose kubelet cannot be reached is left out."""
    from kubeplane.kubelet.server import KubeletServer
    host = StandaloneKubelet([pod("a", "n1", "250m")])
    server = KubeletServer(host, token="t0k3n", port=0)       # type: ignore[arg-type]
    await server.start()
    api.server.tokens = {"t0k3n": "kubeplane-admin"}
    try:
        for name, port in (("n1", server.port), ("gone", 1)):
            r = await api.create("/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
            assert r.status == 201, r.json
        assert (await api.create("/api/v1/namespaces/default/pods", pod("a", "n1", "250m"))).status == 201
        r = await api.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a")
        assert r.status == 200, r.json
        assert r.json["containers"] == [{"name": "c", "usage": {"cpu": "250m", "memory": "10Mi"}}]
        r = await api.get("/apis/metrics.k8s.io/v1beta1/nodes")
        assert [(m["metadata"]["name"], m["usage"]["cpu"]) for m in r.json["items"]] == [("n1", "300m")]
    finally:
        await server.stop()

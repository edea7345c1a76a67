"""An aggregated API under real kubectl (`kubeplane up --nodes 1`): a tiny custom metrics
adapter (kubeplane.testing.aggregated_server: aiohttp over HTTPS with its own CA, trusting the
front proxy through kube-system/extension-apiserver-authentication) runs in this process,
reached through a selectorless Service and a manual EndpointSlice, registered as
v1beta2.custom.metrics.k8s.io. Requests reach it through kubeplane as the authenticated user;
an HPA with a Pods metric scales a Deployment on its answers; stopped, the APIService turns
unavailable and requests get 503.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from kubeplane.testing.aggregated_server import AggregatedServer, InThread, flunder

from .cluster import Cluster, eventually, namespace_for_test, running

SLOW = 120.0            # the HPA syncs every 15 s; pods start on a loaded machine
METRIC = "requests_per_second"
NAME = "v1beta2.custom.metrics.k8s.io"


@pytest.fixture(scope="module")
def kube() -> Iterator[Cluster]:
    yield from running(nodes=1)


@pytest.fixture
def ns(kube: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(kube, request.node.name)


def register(kube: Cluster, ns: str, adapter: AggregatedServer, name: str = NAME) -> None:
    kube.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": adapter.service, "namespace": ns},
                     "spec": {"ports": [{"name": "https", "port": 443, "targetPort": adapter.port}]}})
    kube.apply_yaml({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                     "metadata": {"name": f"{adapter.service}-1", "namespace": ns,
                                  "labels": {"kubernetes.io/service-name": adapter.service}},
                     "addressType": "IPv4", "ports": [{"name": "https", "port": adapter.port, "protocol": "TCP"}],
                     "endpoints": [{"addresses": [adapter.host], "conditions": {"ready": True}}]})
    version, group = name.split(".", 1)
    kube.apply_yaml({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
                     "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                              "versionPriority": 200, "caBundle": adapter.ca_bundle,
                              "service": {"name": adapter.service, "namespace": ns, "port": 443}}})


def available(kube: Cluster, name: str = NAME) -> tuple[str, str, str]:
    conds = (kube.get_json("apiservice", name).get("status") or {}).get("conditions") or []
    c = next((c for c in conds if c["type"] == "Available"), {})
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def web(ns: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def running_pods(kube: Cluster, ns: str, n: int) -> list[str]:
    pods = kube.get_json("pods", "-n", ns, "-l", "app=web")["items"]
    ready = [p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running"
             and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])]
    return ready if len(ready) == n else []


def test_a_custom_metrics_adapter_serves_through_kubeplane(kube: Cluster, ns: str) -> None:
    front_proxy_ca = kube.get_json("configmap", "extension-apiserver-authentication", "-n", "kube-system")[
        "data"]["requestheader-client-ca-file"]
    adapter = AggregatedServer(namespace=ns, requestheader_ca=front_proxy_ca.encode())
    served = InThread(adapter)
    try:
        served.start()
        register(kube, ns, adapter)
        eventually(lambda: available(kube)[:2] == ("True", "Passed"), "Available=True", timeout=SLOW)
        row = kube.kubectl("get", "apiservice", NAME).stdout.splitlines()[1].split()
        assert row[:3] == [NAME, f"{ns}/custom-metrics", "True"], row
        assert "custom.metrics.k8s.io/v1beta2" in kube.kubectl("api-versions").stdout.split()

        kube.apply_yaml(web(ns, 2))
        pods = eventually(lambda: running_pods(kube, ns, 2), "2 running pods", timeout=SLOW)
        adapter.pod_metrics[METRIC] = {p: "30" for p in pods}
        path = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/{METRIC}"
        answer = json.loads(kube.kubectl("get", "--raw", path).stdout)
        assert sorted((i["describedObject"]["name"], i["value"]) for i in answer["items"]) == \
            sorted((p, "30") for p in pods)
        seen = next(s for s in reversed(adapter.seen) if s.path == path)
        assert seen.client_cn == "front-proxy-client"
        assert seen.headers["x-remote-user"] == ["kubernetes-admin"]
        assert "kubeadm:cluster-admins" in seen.headers["x-remote-group"]
        assert "authorization" not in seen.headers

        # A user without rights: kubeplane's 403, the adapter never asked.
        before = len(adapter.seen)
        denied = kube.kubectl("get", "--raw", path, "--as=mallory", check=False)
        assert denied.returncode != 0 and "forbidden" in denied.stderr, denied.stderr
        assert 'User "mallory" cannot get resource "pods/requests_per_second" in API group ' \
               '"custom.metrics.k8s.io"' in denied.stderr
        assert len(adapter.seen) == before

        # An HPA on the Pods metric: 2 pods at 30 against 10 per pod -> 6, bounded by max 4.
        kube.apply_yaml({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 4,
                     "metrics": [{"type": "Pods", "pods": {"metric": {"name": METRIC},
                                                           "target": {"type": "AverageValue", "averageValue": "10"}}}]}})
        eventually(lambda: kube.get_json("deployment", "web", "-n", ns)["spec"]["replicas"] == 4, "scaled up to 4",
                   timeout=SLOW)
        events = kube.kubectl("get", "events", "-n", ns, "--field-selector", "reason=SuccessfulRescale").stdout
        assert f"New size: 4; reason: pods metric {METRIC} above target" in events
        hpa_seen = [s for s in adapter.seen if s.path == path and s.headers["x-remote-user"] ==
                    ["system:serviceaccount:kube-system:horizontal-pod-autoscaler"]]     # its own credentials
        assert hpa_seen and hpa_seen[0].query.get("labelSelector") == "app=web", \
            [(s.path, s.headers.get("x-remote-user")) for s in adapter.seen]

        # The adapter stops: 503, then Available=False FailedDiscoveryCheck.
        served.stop()
        down = kube.kubectl("get", "--raw", path, check=False)
        assert down.returncode != 0 and "ServiceUnavailable" in down.stderr, down.stderr
        status, reason, message = eventually(lambda: (lambda c: c[0] == "False" and c)(available(kube)),
                                             "Available=False", timeout=SLOW)
        assert reason == "FailedDiscoveryCheck"
        assert message.startswith(f"failing or missing response from https://{adapter.host}:{adapter.port}/apis/"
                                  "custom.metrics.k8s.io/v1beta2: ") and "connection refused" in message
        down = kube.kubectl("get", "--raw", path, check=False)
        assert "the server is currently unable to handle the request" in down.stderr, down.stderr
    finally:
        served.close()
        kube.kubectl("delete", "apiservice", NAME, "--ignore-not-found")


def test_kubectl_gets_and_explains_a_remote_resource(kube: Cluster, ns: str) -> None:
    """A sample-apiserver-like group (wardle.example.com/v1alpha1 flunders) behind the same kind of
    registration: discovery, OpenAPI v3 and the resource itself come from the backend."""
    adapter = AggregatedServer(service="wardle", namespace=ns)
    adapter.flunders[(ns, "first")] = flunder(ns, "first", "second")
    served = InThread(adapter)
    name = "v1alpha1.wardle.example.com"
    try:
        served.start()
        register(kube, ns, adapter, name)
        eventually(lambda: available(kube, name)[:2] == ("True", "Passed"), "Available=True", timeout=SLOW)
        rows = eventually(lambda: (lambda r: r.returncode == 0 and "flunders" in r.stdout and r.stdout)(
            kube.kubectl("api-resources", "--api-group=wardle.example.com", check=False)), "api-resources")
        assert rows.splitlines()[1].split() == ["flunders", "fl", "wardle.example.com/v1alpha1", "true", "Flunder"]
        out = kube.kubectl("get", "flunders", "-n", ns).stdout
        assert out.splitlines()[0].split()[0] == "NAME" and out.splitlines()[1].split()[0] == "first", out
        got = kube.get_json("fl", "first", "-n", ns)
        assert got["spec"] == {"reference": "second"}
        missing = kube.kubectl("get", "flunder", "nope", "-n", ns, check=False)
        assert 'flunders.wardle.example.com "nope" not found' in missing.stderr
        explained = eventually(lambda: (lambda r: r.returncode == 0 and r.stdout)(
            kube.kubectl("explain", "flunders.spec.reference", check=False)), "kubectl explain")
        assert "Reference names another flunder." in explained and "GROUP:      wardle.example.com" in explained
    finally:
        served.close()
        kube.kubectl("delete", "apiservice", name, "--ignore-not-found")


def test_an_upgrade_is_tunnelled_to_the_backend(kube: Cluster, ns: str) -> None:
    """A WebSocket to a remote subresource goes through kubeplane to the backend (an echo), as
    the authenticated user; a backend that will not switch protocols answers as itself."""
    import asyncio
    import ssl

    import aiohttp
    from aiohttp import web

    adapter = AggregatedServer(service="wardle", namespace=ns)
    path = f"/apis/wardle.example.com/v1alpha1/namespaces/{ns}/flunders/first/echo"

    async def echo(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            await ws.send_str(f"{request.headers.get('X-Remote-User')}: {msg.data}")
        return ws
    adapter.routes[path] = echo
    served = InThread(adapter)
    name = "v1alpha1.wardle.example.com"
    server = kube.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    token = (kube.data_dir / "pki" / "admin.token").read_text().strip()
    tls = ssl.create_default_context(cafile=str(kube.data_dir / "pki" / "ca.crt"))

    async def talk() -> list[str]:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session:
            async with session.ws_connect(server + path, ssl=tls) as ws:
                got = []
                for text in ("hello", "x" * 200_000):
                    await ws.send_str(text)
                    got.append((await ws.receive(timeout=10)).data)
                return got

    async def refused() -> tuple[int, str]:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session:
            try:
                async with session.ws_connect(server + path.replace("/echo", "/nope"), ssl=tls):
                    return 101, ""
            except aiohttp.WSServerHandshakeError as e:
                return e.status, e.message
    try:
        served.start()
        register(kube, ns, adapter, name)
        eventually(lambda: available(kube, name)[:2] == ("True", "Passed"), "Available=True", timeout=SLOW)
        first, big = asyncio.run(talk())
        assert first == "kubernetes-admin: hello"
        assert big == "kubernetes-admin: " + "x" * 200_000
        seen = next(s for s in adapter.seen if s.path == path)
        assert seen.headers["x-remote-user"] == ["kubernetes-admin"] and seen.headers["upgrade"] == ["websocket"]
        assert "authorization" not in seen.headers
        assert asyncio.run(refused())[0] == 404
    finally:
        served.close()
        kube.kubectl("delete", "apiservice", name, "--ignore-not-found")

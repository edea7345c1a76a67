"""pods/proxy, services/proxy and nodes/proxy with real kubectl and the official client.

A process-runtime cluster (as root: each pod in a network namespace of its own, listening on its
pod IP, as test_pod_network.py's) runs `python -m http.server` behind a Service: `kubectl proxy` then
an HTTP GET of /api/v1/namespaces/default/services/web:80/proxy/ reaches it, as do
`kubectl get --raw .../pods/<pod>/proxy/` and the client's connect_get_namespaced_*_proxy_with_path;
the node's kubelet answers /metrics, /stats/summary and /healthz through nodes/proxy. A user
without the proxy subresource gets 403 before anything is dialled. On a sim cluster, a pod's
address is simulated: pods/proxy answers upstream's 503 for a dial that fails.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.kubelet.network import unavailable_reason
from kubeplane.kubelet.runtime.process.records import kill_recorded

from .cluster import KUBECTL, Cluster, eventually, running
from .test_process_runtime import deployment, free_port, is_ready, pods

PY = sys.executable
# `python -m http.server PORT` in a working directory with a subdirectory (http.server redirects
# /sub to /sub/: the Location comes back under the proxy path)
SERVE = ("import os, runpy, sys; os.makedirs('sub', exist_ok=True); "
         "sys.argv = ['http.server', sys.argv[1], '--bind', '0.0.0.0']; runpy.run_module('http.server', run_name='__main__')")
NODE = "kubeplane-node-0"


@pytest.fixture(scope="module")
def pcluster() -> Iterator[Cluster]:
    c = Cluster(nodes=1, extra_args=("--runtime", "process")).start()
    try:
        yield c
    finally:
        c.stop(signal.SIGTERM)
        kill_recorded(c.data_dir / "kubelet")
        c.cleanup()


@pytest.fixture(scope="module")
def web(pcluster: Cluster) -> dict[str, Any]:
    """A Ready `python -m http.server` pod behind Service web (port 80 -> the pod's http port)."""
    port = free_port()
    pcluster.apply_yaml(deployment("web", {
        "name": "web", "image": "python:3", "command": [PY, "-c", SERVE, str(port)],
        "ports": [{"containerPort": port, "name": "http"}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}}))
    pcluster.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}})
    return eventually(lambda: next((p for p in pods(pcluster, "web") if is_ready(p)), None), "a Ready web pod")


@pytest.fixture
def kubectl_proxy(pcluster: Cluster) -> Iterator[str]:
    """`kubectl proxy --port 0`: its base URL."""
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(pcluster.kubeconfig), "proxy", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"Starting to serve on ([\d.]+:\d+)", line)
        assert m, line
        yield f"http://{m.group(1)}"
    finally:
        proc.terminate()
        proc.wait(10)


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_kubectl_proxy_reaches_service_and_pod(pcluster: Cluster, web: dict[str, Any], kubectl_proxy: str) -> None:
    out = subprocess.run(["curl", "-sS", "--fail", f"{kubectl_proxy}/api/v1/namespaces/default/services/web:80/proxy/"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "Directory listing for /" in out
    pod = web["metadata"]["name"]
    status, body = fetch(f"{kubectl_proxy}/api/v1/namespaces/default/pods/{pod}/proxy/?x=1")
    assert status == 200 and "Directory listing for /" in body
    status, _ = fetch(f"{kubectl_proxy}/api/v1/namespaces/default/services/web/proxy/nope")
    assert status == 404                       # the pod's answer, passed through
    # http.server redirects a directory without its slash: the Location stays under the proxy path
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as e:
        opener.open(f"{kubectl_proxy}/api/v1/namespaces/default/services/web/proxy/sub?a=1", timeout=30)
    assert e.value.code == 301
    assert e.value.headers["Location"] == "/api/v1/namespaces/default/services/web/proxy/sub/?a=1"
    status, body = fetch(f"{kubectl_proxy}/api/v1/namespaces/default/services/web/proxy/sub?a=1")   # followed
    assert status == 200 and "Directory listing for /sub/" in body


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def pod_network_log(c: Cluster) -> str:
    return "\n".join(line for line in c.log_path.read_text(errors="replace").splitlines() if "Pod network" in line)


def test_kubectl_get_raw_pod_proxy(pcluster: Cluster, web: dict[str, Any]) -> None:
    pod = web["metadata"]["name"]
    out = pcluster.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod}/proxy/").stdout
    assert "Directory listing for /" in out
    res = pcluster.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod}:1/proxy/", check=False)
    assert res.returncode != 0
    ip = web["status"]["podIP"]                # its own address (or, on the host's network, 127.0.0.1)
    # a network namespace wherever one can be made; if not, up's log says why (pod_network.py)
    assert (ip == "127.0.0.1") == bool(unavailable_reason()), pod_network_log(pcluster)
    assert f"error trying to reach service: dial tcp {ip}:1: connect: connection refused" in res.stderr


def test_python_client_connect_proxy(pcluster: Cluster, web: dict[str, Any]) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(pcluster.python_client())
    pod = web["metadata"]["name"]
    assert "Directory listing" in api.connect_get_namespaced_pod_proxy_with_path(pod, "default", "")
    assert "Directory listing" in api.connect_get_namespaced_service_proxy_with_path("web:80", "default", "/")
    with pytest.raises(ApiException) as e:              # http.server has no POST: its 501 comes back
        api.connect_post_namespaced_pod_proxy_with_path(pod, "default", "x")
    assert e.value.status == 501


def test_node_proxy_to_the_kubelet(pcluster: Cluster) -> None:
    metrics = pcluster.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics").stdout
    assert "# TYPE" in metrics and "kubelet_" in metrics
    summary = json.loads(pcluster.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/stats/summary").stdout)
    assert summary["node"]["nodeName"] == NODE
    assert pcluster.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz").stdout == "ok"
    pod_list = json.loads(pcluster.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/pods").stdout)
    assert pod_list["kind"] == "PodList" and all(p["spec"]["nodeName"] == NODE for p in pod_list["items"])


def test_proxy_needs_the_subresource_right(pcluster: Cluster, web: dict[str, Any]) -> None:
    res = pcluster.kubectl("get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/", "--as", "mallory",
                           check=False)
    assert res.returncode != 0
    assert ('services "web:80" is forbidden: User "mallory" cannot get resource "services/proxy" '
            'in API group "" in the namespace "default"') in res.stderr
    res = pcluster.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics", "--as", "mallory", check=False)
    assert 'cannot get resource "nodes/proxy"' in res.stderr


@pytest.fixture(scope="module")
def scluster() -> Iterator[Cluster]:
    yield from running(nodes=1)


def test_sim_pod_proxy_is_503(scluster: Cluster) -> None:
    c = scluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sim", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 8080}]}]}})
    pod = eventually(lambda: (p := c.get_json("pod", "sim")).get("status", {}).get("podIP") and p, "a pod IP")
    res = c.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/sim/proxy/", check=False)
    ip = pod["status"]["podIP"]
    assert res.returncode != 0
    assert (f"Error from server (ServiceUnavailable): error trying to reach service: dial tcp {ip}:8080: "
            "connect: no route to host") in res.stderr
    # the sim node's kubelet is in process: its server is started for nodes/proxy
    assert c.kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz").stdout == "ok"

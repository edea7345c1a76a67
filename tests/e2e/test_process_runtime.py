"""`kubeplane up --runtime process`: pods are real local processes, driven by real kubectl.

A Deployment running `python -m http.server PORT` becomes Ready through a real httpGet probe
and answers a real HTTP request; `kubectl logs` shows the request; `kubectl delete` stops the
process. A rolling update whose new pods fail their readiness probe stalls at maxUnavailable.
All process pods share 127.0.0.1 here (--pod-network host; test_pod_network.py has pods in
network namespaces of their own), so each test picks a free port of its own.
"""
from __future__ import annotations

import json
import signal
import socket
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.kubelet.runtime.process.records import (
    alive,
    kill_recorded,
    recorded_pods,
)

from .cluster import Cluster, eventually, running_process_on_host

PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def pcluster() -> Iterator[Cluster]:
    yield from running_process_on_host()


def deployment(name: str, container: dict[str, Any], *, replicas: int = 1,
               strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"terminationGracePeriodSeconds": 5, "containers": [container]}}}
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def pods(c: Cluster, app: str) -> list[dict[str, Any]]:
    return [p for p in c.get_json("pods", "-l", f"app={app}")["items"] if not p["metadata"].get("deletionTimestamp")]


def is_ready(p: dict[str, Any]) -> bool:
    return any(cond["type"] == "Ready" and cond["status"] == "True"
               for cond in (p.get("status") or {}).get("conditions") or ())


def test_deployment_serves_http_shows_logs_and_stops_on_delete(pcluster: Cluster) -> None:
    port = free_port()
    pcluster.apply_yaml(deployment("web", {
        "name": "web", "image": "python:3", "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        "ports": [{"containerPort": port, "name": "http"}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}}))
    pod = eventually(lambda: next((p for p in pods(pcluster, "web") if is_ready(p)), None), "a Ready web pod")
    assert pod["status"]["podIP"] == "127.0.0.1"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/?from=e2e", timeout=5) as resp:
        assert resp.status == 200 and b"Directory listing" in resp.read()
    name = pod["metadata"]["name"]
    logs = eventually(lambda: (out := pcluster.kubectl("logs", name).stdout) and "from=e2e" in out and out,
                      "the request in kubectl logs")
    assert '"GET /?from=e2e HTTP/1.1" 200' in logs
    tail = pcluster.kubectl("logs", name, "--tail", "1", "-c", "web").stdout
    assert tail.count("\n") == 1
    prev = pcluster.kubectl("logs", name, "--previous", check=False)
    assert prev.returncode != 0 and f'previous terminated container "web" in pod "{name}" not found' in prev.stderr
    pcluster.kubectl("delete", "deployment", "web")
    eventually(lambda: not port_open(port), "the server to stop")
    eventually(lambda: not pods(pcluster, "web"), "the pods to go")


def test_failing_readiness_stalls_a_rolling_update_at_max_unavailable(pcluster: Cluster) -> None:
    def container(probe_exit: int) -> dict[str, Any]:
        return {"name": "app", "image": "python:3", "command": [PY, "-c", "import time; time.sleep(3600)"],
                "readinessProbe": {"exec": {"command": [PY, "-c", f"raise SystemExit({probe_exit})"]},
                                   "periodSeconds": 1}}
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    pcluster.apply_yaml(deployment("roll", container(0), replicas=3, strategy=strategy))
    pcluster.kubectl("rollout", "status", "deployment/roll", "--timeout", "60s", timeout=70)
    pcluster.apply_yaml(deployment("roll", container(1), replicas=3, strategy=strategy))

    def unready_new_pod_probed() -> bool:
        events = pcluster.get_json("events", "--field-selector", "reason=Unhealthy")["items"]
        return sum(e.get("count") or 1 for e in events if e["involvedObject"]["name"].startswith("roll-")) >= 3
    eventually(unready_new_pod_probed, "the new pod to fail its readiness probe three times")
    d = pcluster.get_json("deployment", "roll")
    st = d["status"]
    assert (st.get("updatedReplicas"), st.get("readyReplicas"), st.get("availableReplicas"),
            st.get("unavailableReplicas")) == (1, 2, 2, 1), json.dumps(st)
    live = pods(pcluster, "roll")
    assert len(live) == 3 and sum(is_ready(p) for p in live) == 2         # exactly maxUnavailable short
    rss = pcluster.get_json("replicasets", "-l", "app=roll")["items"]
    assert sorted(rs["spec"]["replicas"] for rs in rss) == [1, 2]
    res = pcluster.kubectl("rollout", "status", "deployment/roll", "--timeout", "2s", check=False)
    assert res.returncode != 0 and "1 out of 3 new replicas have been updated" in res.stdout
    pcluster.kubectl("delete", "deployment", "roll")
    eventually(lambda: not pods(pcluster, "roll"), "the pods to go")


def container_processes(c: Cluster) -> list[tuple[int, int]]:
    """(pid, start time) of every container process the kubelet recorded that is still running."""
    return [(a.state["pid"], a.state["start"]) for _, attempts in recorded_pods(c.data_dir / "kubelet").values()
            for a in attempts if "pid" in a.state and alive(a.state["pid"], a.state["start"])]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_containers_survive_a_restart_of_up(sig: int) -> None:
    """kill -9 (or a clean stop) of `up` and a restart on the same data dir: the server keeps
    serving throughout, the pod is the same object (same container, no restart, still Ready,
    no new container event), its log keeps growing in the same file; deleting the Deployment
    then stops the process."""
    port = free_port()
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--pod-network", "host")).start()
    try:
        c.apply_yaml(deployment("web", {
            "name": "web", "image": "python:3", "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            "readinessProbe": {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1}}))
        before = eventually(lambda: next((p for p in pods(c, "web") if is_ready(p)), None), "a Ready web pod")
        name = before["metadata"]["name"]
        c.stop(sig)
        assert port_open(port) and len(container_processes(c)) == 1           # serving while `up` is down
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?while=down", timeout=5) as resp:
            assert resp.status == 200
        c.start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?after=restart", timeout=5) as resp:
            assert resp.status == 200
        logs = eventually(lambda: (out := c.kubectl("logs", name).stdout) and "after=restart" in out and out,
                          "the request after the restart in kubectl logs")
        assert "while=down" in logs and '"GET / HTTP/1.1" 200' in logs             # one log, no gap
        after = c.get_json("pod", name)
        assert after["status"] == before["status"]            # same containerID, restartCount 0, Ready since
        started = [e for e in c.get_json("events", "--field-selector", f"involvedObject.name={name}")["items"]
                   if e["reason"] == "Started"]
        assert sum(e.get("count") or 1 for e in started) == 1
        c.kubectl("delete", "deployment", "web")
        eventually(lambda: not port_open(port), "the server to stop")
        eventually(lambda: not container_processes(c), "no container process left")
    finally:
        c.stop(signal.SIGKILL)
        kill_recorded(c.data_dir / "kubelet")
        c.cleanup()


def test_secret_string_data_reaches_the_container_environment(pcluster: Cluster) -> None:
    """A Secret applied with stringData (kubectl apply) and one wrapped PEM-style: envFrom and
    secretKeyRef see the values, as upstream's conversion merges stringData into data."""
    pcluster.apply_yaml({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                         "data": {"USER": "b2xk"}, "stringData": {"USER": "admin", "PASSWORD": "s3cr3t"}})
    pcluster.apply_yaml({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrapped"},
                         "data": {"token": "aGVs\nbG8="}})
    show = "import os; print(os.environ['USER'], os.environ['PASSWORD'], os.environ['TOKEN'])"
    pcluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "env"}, "spec": {
        "restartPolicy": "Never", "containers": [{
            "name": "c", "image": "python:3", "command": [PY, "-c", show],
            "envFrom": [{"secretRef": {"name": "creds"}}],
            "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "wrapped", "key": "token"}}}]}]}})
    eventually(lambda: pcluster.get_json("pod", "env").get("status", {}).get("phase") == "Succeeded",
               "the env pod to succeed")
    assert pcluster.kubectl("logs", "env").stdout == "admin s3cr3t hello\n"
    stored = pcluster.get_json("secret", "creds")
    assert "stringData" not in stored and stored["data"]["USER"] == "YWRtaW4="
    pcluster.kubectl("delete", "pod", "env", "--wait=false")

"""Fidelity bugs found by clients, each driven by the client that found it (real kubectl, the
official `kubernetes` client) against `kubeplane up` with one simulated node."""
from __future__ import annotations

import base64
import re
from typing import Iterator

import pytest
import yaml

from .cluster import Cluster, running


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=1)


# --- Secrets ------------------------------------------------------------------------------------


def test_kubectl_secret_string_data_is_merged_into_data(cluster: Cluster) -> None:
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sd"},
                        "data": {"a": "b2xk"}, "stringData": {"a": "new", "b": "two"}})
    s = cluster.get_json("secret", "sd")
    assert s["data"] == {"a": "bmV3", "b": "dHdv"} and "stringData" not in s
    out = cluster.kubectl("get", "secret", "sd", "-o", "jsonpath={.data.b}").stdout
    assert base64.b64decode(out) == b"two"
    # A second apply of the same manifest changes nothing (stringData is never stored to differ).
    rv = s["metadata"]["resourceVersion"]
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sd"},
                        "data": {"a": "b2xk"}, "stringData": {"a": "new", "b": "two"}})
    assert cluster.get_json("secret", "sd")["metadata"]["resourceVersion"] == rv


def test_kubectl_create_secret_sends_protobuf_and_is_stored(cluster: Cluster) -> None:
    cluster.kubectl("create", "secret", "generic", "lit", "--from-literal=user=admin")
    assert cluster.get_json("secret", "lit")["data"] == {"user": "YWRtaW4="}


def test_kubectl_invalid_base64_is_refused_with_upstreams_message(cluster: Cluster) -> None:
    bad = yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "data": {"k": "aGVsbG8"}})
    res = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
    assert res.returncode == 1
    assert ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4'
            in res.stderr), res.stderr
    wrapped = "aGVs\nbG8="
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pem"}, "data": {"k": wrapped}})
    assert cluster.get_json("secret", "pem")["data"] == {"k": "aGVsbG8="}


# --- DeleteOptions in protobuf ----------------------------------------------------------------


def test_kubectl_drain_deletes_with_protobuf_delete_options(cluster: Cluster) -> None:
    """`kubectl drain --disable-eviction` deletes through client-go's typed client: protobuf
    DeleteOptions bodies carrying dryRun, then gracePeriodSeconds."""
    node = cluster.get_json("nodes")["items"][0]["metadata"]["name"]
    cluster.kubectl("create", "deployment", "drained", "--image", "nginx", "--replicas", "2")
    cluster.kubectl("rollout", "status", "deployment/drained", "--timeout", "30s", timeout=40)
    before = {p["metadata"]["name"] for p in cluster.get_json("pods", "-l", "app=drained")["items"]}
    try:
        out = cluster.kubectl("drain", node, "--disable-eviction", "--dry-run=server").stdout
        assert "drained (server dry run)" in out
        pods = cluster.get_json("pods", "-l", "app=drained")["items"]
        assert {p["metadata"]["name"] for p in pods} == before
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods)
        out = cluster.kubectl("drain", node, "--disable-eviction", "--grace-period", "7", "--timeout", "30s",
                              timeout=40).stdout
        assert f"node/{node} drained" in out
        after = {p["metadata"]["name"] for p in cluster.get_json("pods", "-l", "app=drained")["items"]}
        assert not after & before
    finally:
        cluster.kubectl("uncordon", node)
        cluster.kubectl("delete", "deployment", "drained")


# --- Nodes: the fields Go always writes -------------------------------------------------------


def test_python_client_lists_nodes_with_every_node_info_field(cluster: Cluster) -> None:
    """The official client (pydantic models) refuses a NodeSystemInfo without kubeProxyVersion,
    as lightkube 1.0 does; Go always writes it, "" since kubelets stopped reporting it."""
    from kubernetes import client
    cluster.kubectl("create", "-f", "-", input='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}')
    try:
        nodes = client.CoreV1Api(cluster.python_client()).list_node().items
        by_name = {n.metadata.name: n for n in nodes}
        assert by_name["bare"].status.node_info.kube_proxy_version == ""
        assert by_name["bare"].status.daemon_endpoints.kubelet_endpoint.port == 0
        kubelet_node = next(n for name, n in by_name.items() if name != "bare")
        assert kubelet_node.status.node_info.kube_proxy_version == ""
        assert kubelet_node.status.node_info.kubelet_version.startswith("v1.37")
    finally:
        cluster.kubectl("delete", "node", "bare")


# --- Pod QoS class --------------------------------------------------------------------------------


@pytest.mark.parametrize("resources,qos", [
    pytest.param({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1000m", "memory": "1024Mi"}},
                 "Guaranteed", id="1000m-equals-1"),
    pytest.param({"requests": {"cpu": "0", "memory": "0"}}, "BestEffort", id="zero-requests"),
    pytest.param({"limits": {"cpu": "1", "memory": "1Gi", "example.com/dongle": "1"}}, "Guaranteed",
                 id="extended-resource-ignored"),
])
def test_kubectl_sees_upstreams_qos_class(cluster: Cluster, resources: dict, qos: str) -> None:
    name = f"qos-{qos.lower()}-{len(resources)}"
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                        "spec": {"nodeName": "nowhere",           # stays unscheduled: no kubelet runs it
                                 "containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
    try:
        assert cluster.kubectl("get", "pod", name, "-o", "jsonpath={.status.qosClass}").stdout == qos
        assert re.search(rf"^QoS Class:\s+{qos}$", cluster.kubectl("describe", "pod", name).stdout, re.M)
    finally:
        cluster.kubectl("delete", "pod", name, "--wait=false")


# --- pods/ephemeralcontainers ---------------------------------------------------------------------


def test_kubectl_debug_adds_an_ephemeral_container(cluster: Cluster) -> None:
    """`kubectl debug` patches pods/ephemeralcontainers (it panicked on the detail-less 404)."""
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debugged"},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
    try:
        res = cluster.kubectl("debug", "debugged", "--image=busybox", "--target=app", "--container=dbg")
        assert "panic" not in res.stderr
        pod = cluster.get_json("pod", "debugged")
        (ec,) = pod["spec"]["ephemeralContainers"]
        assert (ec["name"], ec["image"], ec["targetContainerName"]) == ("dbg", "busybox", "app")
        assert ec["terminationMessagePath"] == "/dev/termination-log"
        # The same name again: the strategic merge (by name) changes the existing one.
        res = cluster.kubectl("debug", "debugged", "--image=alpine", "--container=dbg", check=False)
        assert res.returncode == 1 and "panic" not in res.stderr
        assert ('The Pod "debugged" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
                'containers "dbg" may not be changed') in res.stderr, res.stderr
        res = cluster.kubectl("debug", "nosuchpod", "--image=busybox", check=False)
        assert res.returncode == 1 and "panic" not in res.stderr
        assert 'pods "nosuchpod" not found' in res.stderr
    finally:
        cluster.kubectl("delete", "pod", "debugged", "--wait=false")


# --- kubectl cluster-info dump ------------------------------------------------------------------


def test_kubectl_cluster_info_dump(cluster: Cluster, tmp_path) -> None:
    cluster.kubectl("create", "deployment", "dumped", "--image", "nginx")
    try:
        cluster.kubectl("rollout", "status", "deployment/dumped", "--timeout", "30s", timeout=40)
        out = cluster.kubectl("cluster-info", "dump", "--output-directory", str(tmp_path)).stdout
        assert f"Cluster info dumped to {tmp_path}" in out
        for name in ("nodes.json", "default/events.json", "default/replication-controllers.json",
                     "default/services.json", "default/daemonsets.json", "default/deployments.json",
                     "default/replicasets.json", "default/pods.json", "kube-system/events.json"):
            assert (tmp_path / name).is_file(), name
        pod = cluster.get_json("pods", "-l", "app=dumped")["items"][0]["metadata"]["name"]
        logs = (tmp_path / "default" / pod / "logs.txt").read_text()
        assert f"==== START logs for container nginx of pod default/{pod} ====" in logs
    finally:
        cluster.kubectl("delete", "deployment", "dumped")

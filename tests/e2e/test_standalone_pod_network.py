"""`kubeplane kubelet --runtime process --pod-network netns` joined to `kubeplane up --runtime
process --pod-network netns`: the standalone node gets a podCIDR of its own (the next one no
other Node has, as the node IPAM controller would give it), its pods run in network namespaces
with addresses from it, and a pod of up's node reaches them at their IP and through a
ClusterIP Service. Skipped, with the reason, where network namespaces cannot be made.
"""
from __future__ import annotations

import ipaddress
import pathlib
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.kubelet.network import netns_name, unavailable_reason
from kubeplane.kubelet.runtime.process.records import kill_recorded

from .cluster import Cluster, eventually
from .test_kubelet_logs import Kubelet, node_ready
from .test_pod_network import PORT, SERVE, netns_list, whoami
from .test_process_runtime import PY, is_ready

UP_NODE, NODE = "kubeplane-node-0", "standalone-0"


@pytest.fixture(scope="module")
def joined() -> Iterator[tuple[Cluster, Kubelet]]:
    if reason := unavailable_reason():
        pytest.skip(f"network namespaces are unavailable: {reason}")
    tmp = tempfile.TemporaryDirectory(prefix="kubeplane-e2e-standalone-net-")
    root = pathlib.Path(tmp.name)
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--pod-network", "netns"))
    kl: Kubelet | None = None
    try:
        c.start()
        kl = Kubelet(c.kubeconfig, root, ("--pod-network", "netns"))
        yield c, kl
    finally:
        if kl is not None:
            kl.stop()
        kill_recorded(root / "pods")          # containers, namespaces, veths and the bridge it left
        c.cleanup()
        tmp.cleanup()


def pod(name: str, node: str, command: list[str], probe: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "python:3", "command": command}
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 1}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                          "labels": {"app": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [container]}}


FETCH = ("import sys, time, urllib.request\n"
         "for url in sys.argv[1:]:\n"
         "    for _ in range(100):\n"
         "        try:\n"
         "            print(urllib.request.urlopen(url, timeout=3).read().decode().strip(), flush=True)\n"
         "            break\n"
         "        except OSError:\n"
         "            time.sleep(0.2)\n"
         "time.sleep(3600)\n")


def test_a_standalone_kubelet_runs_pods_in_network_namespaces_from_its_own_pod_cidr(joined: Any) -> None:
    c, kl = joined
    n = eventually(lambda: node_ready(c, kl), "the standalone node to be Ready", timeout=60)
    cidr = ipaddress.ip_network(n["spec"]["podCIDR"])
    assert cidr != ipaddress.ip_network(c.get_json("node", UP_NODE)["spec"]["podCIDR"])   # not up's node's
    c.apply_yaml(pod("far", NODE, SERVE, probe=True))
    far = eventually(lambda: (p := c.get_json("pod", "far")) and is_ready(p) and p, "the far pod Ready", timeout=60)
    ip = far["status"]["podIP"]
    assert ipaddress.ip_address(ip) in cidr and ip != str(next(cidr.hosts()))
    assert netns_name(far["metadata"]["uid"]) in netns_list()
    assert eventually(lambda: whoami(ip), "the far pod from the host") == "far"
    # A pod of up's node reaches it at its IP (through the host, between the two bridges) and
    # through a ClusterIP Service.
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "far", "namespace": "default"},
                  "spec": {"selector": {"app": "far"}, "ports": [{"port": 80, "targetPort": PORT}]}})
    cluster_ip = c.get_json("service", "far")["spec"]["clusterIP"]
    c.apply_yaml(pod("near", UP_NODE, [PY, "-c", FETCH, f"http://{ip}:{PORT}/whoami.txt",
                                       f"http://{cluster_ip}/whoami.txt"]))
    out = eventually(lambda: (o := c.kubectl("logs", "near", check=False).stdout).count("\n") >= 2 and o,
                     "the near pod's two answers", timeout=60)
    assert out.splitlines()[:2] == ["far", "far"]
    near = c.get_json("pod", "near")
    assert ipaddress.ip_address(near["status"]["podIP"]) not in cidr

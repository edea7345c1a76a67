"""Services with the real kubectl: ClusterIPs from 10.96.0.0/12, NodePorts from 30000-32767,
upstream's refusals, allocations that survive a restart of `kubeplane up`, and the
default/kubernetes Service at 10.96.0.1."""
from __future__ import annotations

import ipaddress
from typing import Iterator

import pytest

from .cluster import Cluster, running

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


@pytest.fixture(scope="module")
def services_cluster() -> Iterator[Cluster]:
    """A cluster of its own: the test restarts it."""
    yield from running()


def service(name: str, type_: str = "ClusterIP", **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": type_, "selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}], **spec}}


def test_service_allocation_and_restart(services_cluster: Cluster) -> None:
    c = services_cluster
    out = c.kubectl("get", "svc", "kubernetes").stdout
    assert "10.96.0.1 " in out and "443/TCP" in out, out

    for name in ("alpha", "beta", "gamma"):
        c.apply_yaml(service(name))
    c.kubectl("create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30080")
    c.apply_yaml(service("dns", clusterIP="10.96.0.11"))       # 10.96.0.10 is kube-dns's
    svcs = {s["metadata"]["name"]: s["spec"] for s in c.get_json("svc")["items"]}
    ips = [s["clusterIP"] for s in svcs.values()]
    assert len(set(ips)) == len(ips) == 6
    assert all(ipaddress.ip_address(ip) in SERVICE_CIDR for ip in ips)
    assert svcs["dns"]["clusterIP"] == "10.96.0.11"
    assert svcs["web"]["ports"][0]["nodePort"] == 30080

    r = c.kubectl("create", "service", "clusterip", "dns2", "--clusterip=10.96.0.11", "--tcp=53:53", check=False)
    assert r.returncode != 0
    assert ('Service "dns2" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.11"]: '
            "failed to allocate IP 10.96.0.11: provided IP is already allocated") in r.stderr, r.stderr
    r = c.kubectl("create", "service", "nodeport", "web2", "--tcp=80:8080", "--node-port=30080", check=False)
    assert ('Service "web2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
            "provided port is already allocated") in r.stderr, r.stderr
    r = c.kubectl("create", "service", "nodeport", "web3", "--tcp=80:8080", "--node-port=80", check=False)
    assert ("spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
            "The range of valid ports is 30000-32767") in r.stderr, r.stderr
    r = c.kubectl("create", "service", "clusterip", "far", "--clusterip=10.0.0.1", "--tcp=80:80", check=False)
    assert "failed to allocate IP 10.0.0.1: the provided network does not match the current range" in r.stderr

    c.stop()
    c.start()
    after = {s["metadata"]["name"]: s["spec"] for s in c.get_json("svc")["items"]}
    assert {n: s["clusterIP"] for n, s in after.items()} == {n: s["clusterIP"] for n, s in svcs.items()}
    r = c.kubectl("create", "service", "clusterip", "dns3", "--clusterip=10.96.0.11", "--tcp=53:53", check=False)
    assert "provided IP is already allocated" in r.stderr, r.stderr
    r = c.kubectl("create", "service", "nodeport", "web4", "--tcp=80:8080", "--node-port=30080", check=False)
    assert "provided port is already allocated" in r.stderr, r.stderr

    c.kubectl("delete", "svc", "web", "dns")                 # released: both can be had again
    c.apply_yaml(service("dns-again", clusterIP="10.96.0.11"))
    c.kubectl("create", "service", "nodeport", "web-again", "--tcp=80:8080", "--node-port=30080")
    events = c.kubectl("get", "events", "--field-selector", "involvedObject.kind=Service").stdout
    assert "NotAllocated" not in events and "AlreadyAllocated" not in events, events


def test_service_flags() -> None:
    c = Cluster(extra_args=("--service-cluster-ip-range", "10.200.0.0/24", "--service-node-port-range", "31000-31010"))
    try:
        c.start()
        assert "10.200.0.1 " in c.kubectl("get", "svc", "kubernetes").stdout
        c.apply_yaml(service("np", "NodePort"))
        spec = c.get_json("svc", "np")["spec"]
        assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.200.0.0/24")
        assert 31000 <= spec["ports"][0]["nodePort"] <= 31010
    finally:
        c.cleanup()

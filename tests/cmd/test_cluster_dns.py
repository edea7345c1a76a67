"""kubeadm's CoreDNS addon objects and the up-front check of the cluster DNS addresses."""
from __future__ import annotations

import argparse
import socket

import pytest

from kubeplane.cmd.cluster_dns import check_listen, dns_ip, rbac_objects, service
from kubeplane.cmd.errors import Fatal


@pytest.mark.parametrize("cidr,ip", [("10.96.0.0/12", "10.96.0.10"), ("10.200.0.0/24", "10.200.0.10"),
                                     ("fd00:10:96::/112,10.96.0.0/12", "fd00:10:96::a")])
def test_dns_ip_is_the_tenth_address_of_the_first_service_cidr(cidr: str, ip: str) -> None:
    """Upstream: GetDNSIP (kubeadm)"""
    assert dns_ip(cidr) == ip


def test_kube_dns_service_and_role_are_kubeadms() -> None:
    svc = service("10.96.0.10")
    assert svc["metadata"]["labels"]["k8s-app"] == "kube-dns" and svc["spec"]["selector"] == {"k8s-app": "kube-dns"}
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == [
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    role, binding = rbac_objects()
    assert role["metadata"] == {"name": "system:coredns"}
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in role["rules"]} == {
        (("",), ("endpoints", "namespaces", "pods", "services")), (("discovery.k8s.io",), ("endpointslices",))}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}]


def args(port: int, *, controllers: bool = True, extra: list[tuple[str, int]] | None = None) -> argparse.Namespace:
    return argparse.Namespace(controllers=controllers, cluster_dns_address="127.0.0.1", cluster_dns_port=port,
                              cluster_dns_listen=extra or [])


def test_check_listen_refuses_a_port_in_use_in_one_line() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        with pytest.raises(Fatal, match=f"^failed to create cluster DNS listener: listen udp 127.0.0.1:{port}: "
                                        "bind: address already in use$"):
            check_listen(args(port))
        with pytest.raises(Fatal, match=f"listen udp 127.0.0.1:{port}"):
            check_listen(args(0, extra=[("127.0.0.1", port)]))
        check_listen(args(port, controllers=False))       # no controllers: no DNS server
    check_listen(args(0))                                   # a free port is picked later


def test_the_pod_networks_listener_is_the_cluster_dns_ip_port_53() -> None:
    """Only where up's process-runtime pods get network namespaces; not twice when the user
    named it with --cluster-dns-listen."""
    from kubeplane.cmd.cluster_dns import pod_network_listeners

    def up_args(runtime: str = "process", pod_network: str = "netns", nodes: int = 1,
                listen: list[tuple[str, int]] | None = None) -> argparse.Namespace:
        return argparse.Namespace(runtime=runtime, pod_network=pod_network, nodes=nodes,
                                  service_cluster_ip_range="10.200.0.0/16", cluster_dns_listen=listen or [])
    assert pod_network_listeners(up_args()) == [("10.200.0.10", 53)]
    assert pod_network_listeners(up_args(runtime="sim")) == []
    assert pod_network_listeners(up_args(pod_network="host")) == []
    assert pod_network_listeners(up_args(nodes=0)) == []
    assert pod_network_listeners(up_args(listen=[("10.200.0.10", 53)])) == []

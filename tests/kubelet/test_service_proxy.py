"""The process runtime's kube-proxy: which Service ports it serves and where it sends each
connection (pure: no sockets); the forwarding itself is in tests/e2e/test_pod_network.py."""
from __future__ import annotations

from typing import Any

from kubeplane.api.types import core_v1, discovery_v1, from_dict
from kubeplane.kubelet.network.proxy import DEFAULT_AFFINITY_TIMEOUT, PortRule, desired_rules


def service(name: str, spec: dict[str, Any]) -> core_v1.Service:
    return from_dict({"metadata": {"name": name, "namespace": "default"}, "spec": spec}, core_v1.Service)


def slice_(svc: str, ports: list[dict[str, Any]], endpoints: list[dict[str, Any]],
           address_type: str = "IPv4") -> discovery_v1.EndpointSlice:
    return from_dict({"metadata": {"name": f"{svc}-abc", "namespace": "default",
                                   "labels": {"kubernetes.io/service-name": svc}},
                      "addressType": address_type, "ports": ports, "endpoints": endpoints},
                     discovery_v1.EndpointSlice)


def ep(ip: str, ready: bool | None = True) -> dict[str, Any]:
    return {"addresses": [ip], **({"conditions": {"ready": ready}} if ready is not None else {})}


def test_ready_endpoints_per_named_port_cluster_ips_and_node_ports() -> None:
    svcs = [service("web", {"type": "NodePort", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
                            "ports": [{"name": "http", "port": 80, "nodePort": 30080},
                                      {"name": "dns", "port": 53, "protocol": "UDP"}]}),
            service("empty", {"clusterIP": "10.96.0.21", "ports": [{"port": 80}]}),
            service("headless", {"clusterIP": "None", "ports": [{"port": 80}]}),
            service("ext", {"type": "ExternalName", "externalName": "example.com"})]
    slices = [slice_("web", [{"name": "http", "port": 8080}, {"name": "dns", "port": 53, "protocol": "UDP"}],
                     [ep("10.244.0.3"), ep("10.244.0.2", ready=None), ep("10.244.0.4", ready=False)]),
              slice_("web", [{"name": "http", "port": 8080}], [ep("fd00::3")], address_type="IPv6"),
              slice_("empty", [{"port": 8080}], [ep("10.244.0.9", ready=False)]),
              slice_("headless", [{"port": 8080}], [ep("10.244.0.7")])]
    rules = desired_rules(svcs, slices, "127.0.0.1")
    assert set(rules) == {("10.96.0.20", 80), ("127.0.0.1", 30080)}      # no UDP, no endpoint-less port
    rule = rules[("10.96.0.20", 80)]
    assert rule.endpoints == [("10.244.0.2", 8080), ("10.244.0.3", 8080)]  # unset ready counts as ready
    assert (rule.service, rule.affinity_timeout) == ("default/web:http", 0.0)


def test_round_robin_and_client_ip_affinity_with_its_timeout() -> None:
    rr = PortRule("s", [("a", 1), ("b", 1)])
    assert [rr.pick("c1", 0)[0] for _ in range(4)] == [("a", 1), ("b", 1), ("a", 1), ("b", 1)]
    assert rr.pick("c1", 0) == [("a", 1), ("b", 1)]                 # the rest to try after the first
    sticky = PortRule("s", [("a", 1), ("b", 1)], affinity_timeout=10)
    assert [sticky.pick("c1", t)[0] for t in (0, 5, 14)] == [("a", 1)] * 3
    assert sticky.pick("c2", 14)[0] == ("b", 1)                     # another client, the next endpoint
    assert sticky.pick("c1", 30)[0] == ("a", 1)                     # expired (16 s idle): round robin again
    sticky.endpoints = [("b", 1)]
    assert sticky.pick("c1", 31) == [("b", 1)]                      # its endpoint went away
    assert PortRule("s", []).pick("c", 0) == []


def test_client_ip_affinity_defaults_to_upstreams_timeout() -> None:
    svcs = [service("s", {"clusterIP": "10.96.0.5", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]})]
    rules = desired_rules(svcs, [slice_("s", [{"port": 80}], [ep("10.244.0.2")])], "127.0.0.1")
    assert rules[("10.96.0.5", 80)].affinity_timeout == DEFAULT_AFFINITY_TIMEOUT == 10800

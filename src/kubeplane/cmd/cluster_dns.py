"""kubeadm's CoreDNS addon objects, created by `kubeplane up`: the kube-system/kube-dns Service
(the cluster DNS IP, the 10th address of the Service CIDR: 10.96.0.10 by default, ports
53/UDP, 53/TCP, 9153/TCP, selector k8s-app=kube-dns), the ServiceAccount kube-system/coredns,
and the ClusterRole system:coredns (list/watch endpoints, services, pods, namespaces,
endpointslices) bound to it. The DNS server (kubeplane.dns) runs in `up`'s process as that
service account, on --cluster-dns-address:--cluster-dns-port (default 127.0.0.1 and a free
port, logged), zone --cluster-domain, forwarding other names to /etc/resolv.conf's servers.

Pods' resolv.conf names the cluster DNS IP (10.96.0.10, port 53). When the process runtime
gives pods network namespaces (`--pod-network` netns, or auto as root), the server also listens
on that IP's port 53 (pod_network_listeners): the kubelet's kube-proxy makes the kubelet's
--cluster-dns addresses local on its interface (kubelet/network/proxy.py), as NodeLocal
DNSCache binds the kube-dns IP on a dummy interface, and the listener is bound with IP_FREEBIND,
so neither has to start first. Pods reach it through their default route, the host. Elsewhere
`--cluster-dns-listen IP:PORT` adds listeners on addresses that are local already.

The bootstrap policy's system:kube-dns role (services and endpoints) is kube-dns's, which read
Endpoints; CoreDNS reads EndpointSlices and namespaces, so kubeadm gives it system:coredns.

Upstream: kubeadm phases/addons/dns (dns.go GetDNSIP, manifests.go CoreDNSService,
CoreDNSClusterRole, CoreDNSClusterRoleBinding, CoreDNSServiceAccount).
"""
from __future__ import annotations

import asyncio
import copy
import ipaddress
import logging
import socket
from typing import TYPE_CHECKING, Any, Callable

from ..apiserver.authentication.user import authenticated

if TYPE_CHECKING:
    from ..apiserver.server import APIServer

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
SERVICE_NAME = "kube-dns"
SERVICE_ACCOUNT = "coredns"
CLUSTER_ROLE = "system:coredns"
DNS_LABEL = {"k8s-app": "kube-dns"}
DNS_PORT = 53                           # the kube-dns Service's dns and dns-tcp ports
METRICS_PORT = 9153
USER = authenticated(f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}", "system:serviceaccounts",
                     f"system:serviceaccounts:{NAMESPACE}")


def dns_ip(service_cidr: str) -> str:
    """The 10th address of the (first) Service CIDR. Upstream: GetDNSIP (kubeadm dns.go)"""
    net = ipaddress.ip_network(service_cidr.split(",")[0].strip(), strict=False)
    return str(net.network_address + 10)


def service(cluster_ip: str) -> dict[str, Any]:
    """Upstream: CoreDNSService (kubeadm manifests.go)"""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE_NAME, "namespace": NAMESPACE,
                         "labels": {**DNS_LABEL, "kubernetes.io/cluster-service": "true",
                                    "kubernetes.io/name": "CoreDNS"},
                         "annotations": {"prometheus.io/port": str(METRICS_PORT), "prometheus.io/scrape": "true"}},
            "spec": {"clusterIP": cluster_ip, "selector": dict(DNS_LABEL),
                     "ports": [{"name": "dns", "port": DNS_PORT, "protocol": "UDP", "targetPort": DNS_PORT},
                               {"name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP", "targetPort": DNS_PORT},
                               {"name": "metrics", "port": METRICS_PORT, "protocol": "TCP",
                                "targetPort": METRICS_PORT}]}}


def rbac_objects() -> list[dict[str, Any]]:
    """Upstream: CoreDNSClusterRole, CoreDNSClusterRoleBinding (kubeadm manifests.go)"""
    from ..apiserver.authorization.rbac import bootstrappolicy as policy
    role = policy.cluster_role(CLUSTER_ROLE,
                               policy.rule(("list", "watch"), policy.LEGACY,
                                           ("endpoints", "services", "pods", "namespaces")),
                               policy.rule(("list", "watch"), "discovery.k8s.io", ("endpointslices",)))
    binding = policy.cluster_role_binding(CLUSTER_ROLE, CLUSTER_ROLE, policy.sa(NAMESPACE, SERVICE_ACCOUNT))
    for obj in (role, binding):          # kubeadm's, not the API server's rbac-defaults
        obj["metadata"] = {"name": obj["metadata"]["name"]}
    return [role, binding]


async def ensure_addon(api: APIServer, args: Any) -> None:
    """Create what is missing (an existing kube-dns Service is left as the user made it)."""
    cluster_ip = dns_ip(args.service_cluster_ip_range)
    from ..api.resources import lookup
    from ..apiserver.authorization.rbac.reconcile import ensure_objects
    from ..apiserver.registry import store
    await ensure_objects(api, rbac_objects())
    opts = store.WriteOptions(user_agent="kubeplane-up")
    sa: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}
    objs: list[tuple[str, dict[str, Any]]] = [("serviceaccounts", sa), ("services", service(cluster_ip))]
    for plural, obj in objs:
        ri = lookup("", "v1", plural)
        assert ri is not None
        if await api.storage.get(ri.key(NAMESPACE, obj["metadata"]["name"])) is not None:
            continue
        try:
            await store.create(api, opts, ri, NAMESPACE, copy.deepcopy(obj), [])
        except Exception as err:          # e.g. the ClusterIP is taken: DNS still serves on its address
            log.warning("cluster DNS: cannot create %s/%s: %s", NAMESPACE, obj["metadata"]["name"], err)


def check_listen(args: Any) -> None:
    """Fatal, before anything starts, when a fixed cluster DNS address cannot be bound (UDP or
    TCP), in the words of the API server's listener: Go's net.OpError text."""
    from .errors import Fatal
    from .flags import host_port
    if not args.controllers:
        return
    for host, port in [(args.cluster_dns_address, args.cluster_dns_port), *args.cluster_dns_listen]:
        if port == 0:
            continue
        for kind, proto in ((socket.SOCK_DGRAM, "udp"), (socket.SOCK_STREAM, "tcp")):
            try:
                with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind) as s:
                    if kind == socket.SOCK_STREAM:
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as the listener will
                    s.bind((host, port))
            except OSError as err:
                addr = host_port(host, port)
                raise Fatal(f"failed to create cluster DNS listener: listen {proto} {addr}: bind: "
                            f"{(err.strerror or str(err)).lower()}") from None


def pod_network_listeners(args: Any) -> list[tuple[str, int]]:
    """The cluster DNS IP's port 53 when `up`'s process-runtime pods get network namespaces
    (see the module docstring), else nothing."""
    if getattr(args, "runtime", "sim") != "process" or not getattr(args, "nodes", 0):
        return []
    mode = getattr(args, "pod_network", "host")
    if mode == "host":
        return []
    if mode == "auto":
        from ..kubelet.network import unavailable_reason
        if unavailable_reason():
            return []
    listener = (dns_ip(args.service_cluster_ip_range), DNS_PORT)
    return [] if listener in args.cluster_dns_listen else [listener]


async def run(api: APIServer, args: Any, clientset_for: Callable[[Any], Any]) -> None:
    """Serve the cluster DNS until cancelled (a supervised component of `up`)."""
    from ..dns.app import DNSOptions, run_cluster_dns
    options = DNSOptions(address=args.cluster_dns_address, port=args.cluster_dns_port,
                         cluster_domain=args.cluster_domain,
                         cluster_dns_ips=(dns_ip(args.service_cluster_ip_range),),
                         extra_listeners=list(args.cluster_dns_listen),
                         nonlocal_listeners=await asyncio.to_thread(pod_network_listeners, args))
    def listening(addrs: list[tuple[str, int]]) -> None:
        log.info("Serving cluster DNS on %s", ", ".join(f"{h}:{p}" for h, p in addrs),
                 extra={"zone": args.cluster_domain, "clusterDNS": options.cluster_dns_ips[0]})
    await run_cluster_dns(clientset_for(USER), options, on_listening=listening)

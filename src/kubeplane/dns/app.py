"""Run the cluster DNS server: informers (as the coredns service account) feed a ClusterZone,
listeners answer on the configured address.

    await run_cluster_dns(clientset, DNSOptions(address="127.0.0.1", port=0),
                          on_listening=lambda addrs: print(addrs))

Hook for the pod network: `nonlocal_listeners` are addresses that need not be local when the
server starts (bound with IP_FREEBIND), e.g. the cluster DNS IP 10.96.0.10:53, which the
kubelet's kube-proxy puts on its interface for pods in network namespaces
(kubelet/network/proxy.py); one that cannot be bound (a port taken by another kubeplane on the
machine) is logged and left out, the server goes on. `ClusterDNS.listen(host, port)` adds a
listener to a running server.

Upstream: coredns plugin/kubernetes controller.go (dnsControl: the informers), setup.go.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import dns.name

from .forward import Forwarder, upstreams_from_resolv_conf
from .records import DEFAULT_TTL, PODS_INSECURE, ClusterZone
from .server import DNSListener, DNSServer

log = logging.getLogger(__name__)


@dataclass
class DNSOptions:
    address: str = "127.0.0.1"
    port: int = 0                         # 0: a free port (logged; DNSListener.address)
    cluster_domain: str = "cluster.local"
    cluster_dns_ips: tuple[str, ...] = ("10.96.0.10",)
    resolv_conf: str = "/etc/resolv.conf"
    ttl: int = DEFAULT_TTL
    pods: str = PODS_INSECURE
    extra_listeners: list[tuple[str, int]] = field(default_factory=list)
    nonlocal_listeners: list[tuple[str, int]] = field(default_factory=list)    # IP_FREEBIND, failures logged


class ClusterDNS:
    """The zone, the server and its listeners; informers attach with `watch(factory)`."""

    def __init__(self, options: DNSOptions, *, upstreams: list[tuple[str, int]] | None = None) -> None:
        self.options = options
        self.zone = ClusterZone(zone=dns.name.from_text(options.cluster_domain.rstrip(".") + "."),
                                ttl=options.ttl, pods=options.pods, dns_ips=options.cluster_dns_ips)
        own = frozenset({(options.address, options.port), *options.extra_listeners, *options.nonlocal_listeners})
        self.forwarder = Forwarder(upstreams if upstreams is not None
                                   else upstreams_from_resolv_conf(options.resolv_conf, own))
        self.server = DNSServer(self.zone, self.forwarder)
        self.listeners: list[DNSListener] = []

    def watch(self, factory: Any) -> list[Any]:
        """Add the zone's handlers to the factory's Service, EndpointSlice and Namespace
        informers; returns the informers (for has_synced)."""
        from ..client.tools.cache.shared_informer import ResourceEventHandlerFuncs
        z = self.zone
        pairs = ((factory.core_v1().services(), z.set_service, z.delete_service, _new_of(z.set_service)),
                 (factory.discovery_v1().endpointslices(), z.set_slice, z.delete_slice, z.update_slice),
                 (factory.core_v1().namespaces(), z.set_namespace, z.delete_namespace, _new_of(z.set_namespace)))
        informers = []
        for inf, upsert, delete, update in pairs:
            shared = inf.informer()
            shared.add_event_handler(ResourceEventHandlerFuncs(add_func=upsert, update_func=update,
                                                               delete_func=delete))
            informers.append(shared)
        z.synced = lambda: all(i.has_synced() for i in informers)
        return informers

    async def listen(self, host: str, port: int, *, freebind: bool = False) -> tuple[str, int]:
        listener = DNSListener(self.server)
        addr = await listener.start(host, port, freebind=freebind)
        self.listeners.append(listener)
        log.info("cluster DNS listening", extra={"address": f"{addr[0]}:{addr[1]}", "zone": self.options.cluster_domain,
                                                 "upstreams": ",".join(f"{h}:{p}" for h, p in self.forwarder.upstreams)})
        return addr

    async def stop(self) -> None:
        for listener in self.listeners:
            await listener.stop()
        self.listeners.clear()


def _new_of(upsert: Callable[[Any], None]) -> Callable[[Any, Any], None]:
    """An update handler that upserts the new object."""
    return lambda old, new: upsert(new)


async def run_cluster_dns(clientset: Any, options: DNSOptions,
                          on_listening: Callable[[list[tuple[str, int]]], None] | None = None) -> None:
    """Serve until cancelled: informers of its own (the coredns identity's), then the listeners."""
    from ..client.informers import SharedInformerFactory
    factory = SharedInformerFactory(clientset)
    cluster_dns = ClusterDNS(options)
    cluster_dns.watch(factory)
    factory.start()
    try:
        # answer at once: until the informers sync, a name the zone lacks is SERVFAIL, not NXDOMAIN
        addrs = [await cluster_dns.listen(options.address, options.port)]
        for host, port in options.extra_listeners:
            addrs.append(await cluster_dns.listen(host, port))
        for host, port in options.nonlocal_listeners:
            try:
                addrs.append(await cluster_dns.listen(host, port, freebind=True))
            except OSError as err:
                log.error("cluster DNS: cannot listen on %s:%d (%s): pods in network namespaces get no cluster "
                          "DNS there", host, port, err.strerror or err)
        if on_listening is not None:
            on_listening(addrs)
        await factory.wait_for_cache_sync()
        await asyncio.Event().wait()
    finally:
        await cluster_dns.stop()
        await factory.shutdown()

"""ClusterDNS fed by real informers over the fake clientset: what is created, changed and
deleted through the API is what the server answers, with no list per query."""
from __future__ import annotations

import asyncio
import socket
from typing import Any

import dns.message
import dns.rcode

from kubeplane.client.informers import SharedInformerFactory
from kubeplane.dns.app import ClusterDNS, DNSOptions
from kubeplane.testing.fake import FakeClientset


def a_records(c: ClusterDNS, name: str) -> tuple[int, list[str]]:
    out = c.server.handle(dns.message.make_query(name, "A").to_wire(), False)
    assert isinstance(out, bytes)
    m = dns.message.from_wire(out)
    return m.rcode(), sorted(rd.to_text() for rrset in m.answer for rd in rrset)


async def until(check: object, what: str) -> None:
    for _ in range(200):
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_informers_feed_the_zone() -> None:
    cs = await FakeClientset.new()
    factory = SharedInformerFactory(cs)
    c = ClusterDNS(DNSOptions(), upstreams=[])
    informers = c.watch(factory)
    factory.start()
    try:
        await factory.wait_for_cache_sync()
        assert all(i.has_synced() for i in informers) and c.zone.synced()
        svcs = cs.core_v1().services("default")
        await svcs.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                           "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}})
        await until(lambda: a_records(c, "web.default.svc.cluster.local.") == (dns.rcode.NOERROR, ["10.96.0.50"]),
                    "web's A record")
        await cs.discovery_v1().endpointslices("default").create({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-x", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.1.7"], "hostname": "web-0"}],
            "ports": [{"name": "", "port": 8080, "protocol": "TCP"}]})
        await until(lambda: a_records(c, "web-0.web.default.svc.cluster.local.") == (dns.rcode.NOERROR, ["10.244.1.7"]),
                    "the endpoint's A record")
        await svcs.delete("web")
        await until(lambda: a_records(c, "web.default.svc.cluster.local.")[0] == dns.rcode.NXDOMAIN, "web's NXDOMAIN")
    finally:
        await factory.shutdown()
        await cs.close()


async def test_a_nonlocal_listener_that_cannot_bind_is_logged_and_left_out(caplog: Any) -> None:
    """Another kubeplane on the machine holds the cluster DNS IP's port: this server still
    serves on its own address."""
    from kubeplane.dns.app import run_cluster_dns
    cs = await FakeClientset.new()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()
        started: list[list[tuple[str, int]]] = []
        task = asyncio.ensure_future(run_cluster_dns(cs, DNSOptions(nonlocal_listeners=[taken]),
                                                     on_listening=started.append))
        try:
            await until(lambda: started, "the listeners")
            assert len(started[0]) == 1 and started[0][0] != taken
            assert f"cannot listen on 127.0.0.1:{taken[1]}" in caplog.text
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await cs.close()

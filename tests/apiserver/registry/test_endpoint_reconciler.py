"""The lease endpoint reconciler (upstream: pkg/controlplane/reconcilers/lease_test.go): several
API servers on one storage, each renewing its lease; default/kubernetes names the live ones."""
from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.apiserver.controlplane.kubernetesservice import (
    ENDPOINT_SLICE_KEY, ENDPOINTS_KEY, KubernetesServiceController,
)
from kubeplane.apiserver.controlplane.reconcilers import LEASE_TTL, LEASES_PREFIX, lease_key
from kubeplane.apiserver.server import APIServer

API = Any          # tests/apiserver/conftest.py API


async def peer(api: API, address: str) -> KubernetesServiceController:
    """Another API server on the same storage and clock, serving at address."""
    server = APIServer(api.storage, clock=api.clock)
    server.server_address = address
    return KubernetesServiceController(server)


async def endpoint_ips(api: API) -> list[str]:
    ep = (await api.storage.get(ENDPOINTS_KEY)).obj
    return [a["ip"] for a in ep["subsets"][0]["addresses"]]


async def slice_ips(api: API) -> list[str]:
    s = (await api.storage.get(ENDPOINT_SLICE_KEY)).obj
    return [e["addresses"][0] for e in s["endpoints"]]


async def test_every_live_server_is_listed_sorted(api: API) -> None:
    a, b = await peer(api, "10.0.0.20:6443"), await peer(api, "10.0.0.3:6443")
    await a.update_kubernetes_service()
    assert await endpoint_ips(api) == ["10.0.0.20"]
    await b.update_kubernetes_service()
    assert await endpoint_ips(api) == ["10.0.0.3", "10.0.0.20"]          # numeric order
    assert await slice_ips(api) == ["10.0.0.3", "10.0.0.20"]
    ep = (await api.storage.get(ENDPOINTS_KEY)).obj
    assert ep["subsets"][0]["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    rev = (await api.storage.get(ENDPOINTS_KEY)).mod_revision
    await a.update_kubernetes_service()
    assert (await api.storage.get(ENDPOINTS_KEY)).mod_revision == rev      # unchanged: not rewritten


async def test_a_server_that_stops_renewing_drops_out_after_the_ttl(api: API) -> None:
    a, b = await peer(api, "10.0.0.1:6443"), await peer(api, "10.0.0.2:6443")
    await a.update_kubernetes_service()
    await b.update_kubernetes_service()
    api.clock.step(LEASE_TTL - 1)           # b is killed: only a renews
    await a.update_kubernetes_service()
    assert await endpoint_ips(api) == ["10.0.0.1", "10.0.0.2"]              # b's lease is still live
    api.clock.step(2)
    await a.update_kubernetes_service()
    assert await endpoint_ips(api) == ["10.0.0.1"]
    assert await slice_ips(api) == ["10.0.0.1"]
    assert await api.storage.get(lease_key("10.0.0.2")) is None             # the expired lease is deleted
    await b.update_kubernetes_service()                                    # b comes back
    assert await endpoint_ips(api) == ["10.0.0.1", "10.0.0.2"]


async def test_stopping_removes_the_server_at_once(api: API) -> None:
    a, b = await peer(api, "10.0.0.1:6443"), await peer(api, "10.0.0.2:6443")
    await a.update_kubernetes_service()
    task = asyncio.ensure_future(b.run())
    await asyncio.sleep(0)                   # running: parked in its interval's sleep
    await b.update_kubernetes_service()
    assert await endpoint_ips(api) == ["10.0.0.1", "10.0.0.2"]
    task.cancel()                            # upstream: Controller.Stop -> RemoveEndpoints
    await asyncio.gather(task, return_exceptions=True)
    assert await endpoint_ips(api) == ["10.0.0.1"]
    assert await api.storage.get(lease_key("10.0.0.2")) is None
    await b.update_kubernetes_service()      # stopped: it writes no lease again
    assert await endpoint_ips(api) == ["10.0.0.1"]


async def test_the_last_server_stopping_leaves_its_address(api: API) -> None:
    """No lease listed: upstream refuses to erase every endpoint of the kubernetes Service."""
    a = await peer(api, "10.0.0.1:6443")
    await a.update_kubernetes_service()
    await a.stop()
    assert await endpoint_ips(api) == ["10.0.0.1"]
    assert (await api.storage.list(LEASES_PREFIX))[0] == []


async def test_a_renewal_racing_an_expiry_keeps_the_lease(api: API) -> None:
    """The expired-lease delete is guarded by the revision read: a renewal in between wins."""
    a, b = await peer(api, "10.0.0.1:6443"), await peer(api, "10.0.0.2:6443")
    await a.update_kubernetes_service()
    await b.update_kubernetes_service()
    api.clock.step(LEASE_TTL + 1)
    storage_list = api.storage.list

    async def racing_list(prefix: str) -> Any:
        result = await storage_list(prefix)
        if prefix == LEASES_PREFIX:
            api.storage.list = storage_list
            await b.endpoints.leases.update_lease("10.0.0.2")      # b renews after a's list
        return result

    api.storage.list = racing_list
    await a.endpoints.leases.update_lease("10.0.0.1")
    assert await a.endpoints.leases.list_leases() == ["10.0.0.1"]          # b's was expired when listed
    assert await api.storage.get(lease_key("10.0.0.2")) is not None        # but its renewal is kept


async def test_reconciler_none_writes_no_endpoints(api: API) -> None:
    server = APIServer(api.storage, clock=api.clock)
    server.server_address = "10.0.0.1:6443"
    await KubernetesServiceController(server, reconciler="none").update_kubernetes_service()
    assert await api.storage.get(ENDPOINTS_KEY) is None
    assert (await api.storage.list(LEASES_PREFIX))[0] == []


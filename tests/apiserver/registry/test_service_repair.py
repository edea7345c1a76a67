"""The repair loops (upstream: ipallocator/portallocator controller repair_test.go) and the
kubernetes Service bootstrap controller (controlplane/controller/kubernetesservice)."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.controlplane.kubernetesservice import (
    ENDPOINTS_KEY, KubernetesServiceController, repair_services,
)
from kubeplane.apiserver.registry.core.service.alloc import Allocators
from kubeplane.apiserver.registry.core.service.repair import Repair
from kubeplane.apiserver.server import APIServer

API = Any          # tests/apiserver/conftest.py API
SVCS = "/api/v1/namespaces/default/services"


def stored_svc(name: str, ip: str = "", node_ports: tuple[int, ...] = (), ns: str = "default") -> dict[str, Any]:
    """A Service as it sits in storage (written there directly, as after a restart or by an
    older server)."""
    spec: dict[str, Any] = {"type": "NodePort" if node_ports else "ClusterIP",
                            "ports": [{"port": 80 + i, "nodePort": p} for i, p in enumerate(node_ports)] or [{"port": 80}]}
    if ip:
        spec.update(clusterIP=ip, clusterIPs=[ip], ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack")
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": "2023-11-14T22:13:20Z"},
            "spec": spec}


async def restart(api: API) -> API:
    """A new API server on the same storage (what `kubeplane up` does after a restart)."""
    server = APIServer(api.storage, clock=api.clock)
    await server.bootstrap()
    return type(api)(server, api.clock)


async def events(api: API) -> list[tuple[str, str, str]]:
    r = await api.get("/api/v1/namespaces/default/events")
    return [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in r.json["items"]]


async def test_allocations_survive_a_restart(api: API) -> None:
    r = await api.create(SVCS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}})
    ip = r.json["spec"]["clusterIP"]
    api = await restart(api)
    taken = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "again"},
             "spec": {"type": "NodePort", "clusterIP": ip, "ports": [{"port": 80}]}}
    r = await api.create(SVCS, taken)
    assert r.status == 422 and r.json["message"].endswith(f"failed to allocate IP {ip}: provided IP is already allocated")
    taken["spec"] = {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}
    r = await api.create(SVCS, taken)
    assert r.json["message"].endswith("spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated")
    assert await events(api) == []          # loading is not repairing: no events


async def test_restart_reports_duplicates_and_out_of_range(api: API) -> None:
    for obj in (stored_svc("a", "10.96.0.5", (30001,)), stored_svc("b", "10.96.0.5", (30001,)),
                stored_svc("c", "192.168.0.5", (80,)), stored_svc("d", "not-an-ip")):
        await api.storage.create(f"/registry/services/default/{obj['metadata']['name']}", obj)
    api = await restart(api)
    assert sorted(await events(api)) == [
        ("b", "ClusterIPAlreadyAllocated", "Cluster IP 10.96.0.5 was assigned to multiple services; please recreate service"),
        ("b", "PortAlreadyAllocated", "Port 30001 was assigned to multiple services; please recreate service"),
        ("c", "ClusterIPOutOfRange", "Cluster IP 192.168.0.5 is not within the service CIDR 10.96.0.0/12; "
                                     "please recreate service"),
        ("c", "PortOutOfRange", "Port 80 is not within the port range 30000-32767; please recreate service"),
        ("d", "ClusterIPNotValid", "Cluster IP not-an-ip is not a valid IP; please recreate service"),
    ]
    assert api.server.service_alloc.primary.has("10.96.0.5")


def test_missing_allocation_is_repaired_after_loading() -> None:
    alloc = Allocators.from_flags()
    repair = Repair(alloc)
    assert repair.run_once([]) == []
    problems = repair.run_once([stored_svc("a", "10.96.0.7", (30007,))])
    assert [(p.reason, p.message) for p in problems] == [
        ("ClusterIPNotAllocated", "Cluster IP 10.96.0.7 is not allocated; repairing"),
        ("PortNotAllocated", "Port 30007 is not allocated; repairing")]
    assert alloc.primary.has("10.96.0.7") and alloc.node_ports.has(30007)


def test_leaked_allocations_are_freed_after_three_runs() -> None:
    """checkLeaked: an IP or port no Service holds is kept for numRepairsBeforeLeakCleanup runs
    (a create may hold it a moment before its Service is stored), then freed."""
    alloc = Allocators.from_flags()
    repair = Repair(alloc)
    repair.run_once([])
    alloc.primary.allocate("10.96.0.9")
    alloc.node_ports.allocate(30009)
    for _ in range(2):
        repair.run_once([])
        assert alloc.primary.has("10.96.0.9") and alloc.node_ports.has(30009)
    repair.run_once([])
    assert not alloc.primary.has("10.96.0.9") and not alloc.node_ports.has(30009)


def test_a_leak_that_turns_out_used_is_kept() -> None:
    alloc = Allocators.from_flags()
    repair = Repair(alloc)
    repair.run_once([])
    alloc.primary.allocate("10.96.0.9")
    repair.run_once([])
    for _ in range(5):
        repair.run_once([stored_svc("late", "10.96.0.9")])
    assert alloc.primary.has("10.96.0.9")


async def test_repair_retries_when_allocations_move_during_the_list(api: API) -> None:
    repair = api.server.service_repair
    storage_list = api.storage.list
    calls = 0

    async def racing_list(prefix: str) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:          # a create allocates while the first list is read
            api.server.service_alloc.primary.allocate("10.96.0.77")
        return await storage_list(prefix)

    api.storage.list = racing_list
    await repair_services(api.server, repair)
    assert calls == 2


# --- the kubernetes Service --------------------------------------------------------------------

async def test_kubernetes_service_and_endpoints(api: API) -> None:
    api.server.server_address = "127.0.0.1:6443"
    controller = KubernetesServiceController(api.server)
    await controller.update_kubernetes_service()
    svc = (await api.get(f"{SVCS}/kubernetes")).json
    assert svc["metadata"]["labels"] == {"provider": "kubernetes", "component": "apiserver"}
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]
    assert "selector" not in svc["spec"]
    ep = (await api.storage.get(ENDPOINTS_KEY)).obj
    assert ep["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}],
                              "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    rev = api.storage.revision
    await controller.update_kubernetes_service()
    assert api.storage.revision == rev + 1          # the lease renewed, nothing else written

    api.server.server_address = "127.0.0.1:7443"    # a restart on another port
    assert (await api.call("DELETE", f"{SVCS}/kubernetes")).status == 200
    await controller.update_kubernetes_service()
    svc = (await api.get(f"{SVCS}/kubernetes")).json
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["ports"][0]["targetPort"] == 7443
    assert (await api.storage.get(ENDPOINTS_KEY)).obj["subsets"][0]["ports"][0]["port"] == 7443


async def test_kubernetes_service_runs_every_interval(api: API) -> None:
    import asyncio
    api.server.server_address = "127.0.0.1:6443"
    task = asyncio.ensure_future(KubernetesServiceController(api.server, interval=10).run())
    try:
        await asyncio.sleep(0)
        assert (await api.get(f"{SVCS}/kubernetes")).status == 404
        api.clock.step(10)
        for _ in range(50):
            await asyncio.sleep(0)
        assert (await api.get(f"{SVCS}/kubernetes")).status == 200
    finally:
        task.cancel()

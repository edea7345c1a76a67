"""ClusterIPs and NodePorts shared through storage by several API servers (registry/core/service/
shared.py): IPAddress objects and the RangeAllocation bitmap, as upstream 1.37 stores them.
The same on a real etcd, two API servers creating Services at once: tests/storage/test_etcd_service_alloc.py."""
from __future__ import annotations

import random
from typing import Any

from kubeplane.apiserver.controlplane.kubernetesservice import repair_services
from kubeplane.apiserver.registry.core.service.shared import IP_PREFIX, RANGE_KEY, range_offsets
from kubeplane.apiserver.server import APIServer

API = Any          # tests/apiserver/conftest.py API
SVCS = "/api/v1/namespaces/default/services"


async def peer(api: API) -> API:
    """A second API server on the same storage (and clock)."""
    server = APIServer(api.storage, clock=api.clock)
    await server.bootstrap()
    return type(api)(server, api.clock)


def svc(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}], **spec}}


def node_port(name: str, port: int = 0) -> dict[str, Any]:
    return svc(name, type="NodePort", ports=[{"port": 80, **({"nodePort": port} if port else {})}])


async def ip_objects(api: API) -> dict[str, dict[str, Any]]:
    kvs, _ = await api.storage.list(IP_PREFIX)
    return {kv.obj["metadata"]["name"]: kv.obj for kv in kvs}


async def stored_ports(api: API) -> set[int]:
    kv = await api.storage.get(RANGE_KEY)
    return {30000 + o for o in range_offsets(kv.obj)} if kv else set()


async def test_a_service_ip_is_an_ip_address_object(api: API) -> None:
    r = await api.create(SVCS, svc("web"))
    ip = r.json["spec"]["clusterIP"]
    obj = (await ip_objects(api))[ip]
    assert obj["spec"]["parentRef"] == {"group": "", "resource": "services", "namespace": "default", "name": "web"}
    assert obj["metadata"]["labels"] == {"ipaddress.kubernetes.io/ip-family": "IPv4",
                                         "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}
    got = await api.get(f"/apis/networking.k8s.io/v1/ipaddresses/{ip}")     # served, as upstream
    assert got.status == 200 and got.json["spec"]["parentRef"]["name"] == "web"
    assert (await api.call("DELETE", f"{SVCS}/web")).status == 200
    assert ip not in await ip_objects(api)


async def test_node_ports_are_the_range_allocation(api: API) -> None:
    r = await api.create(SVCS, node_port("np"))
    port = r.json["spec"]["ports"][0]["nodePort"]
    assert await stored_ports(api) == {port}
    kv = await api.storage.get(RANGE_KEY)
    assert kv.obj["range"] == "30000-32767" and kv.obj["kind"] == "RangeAllocation"
    await api.call("DELETE", f"{SVCS}/np")
    assert await stored_ports(api) == set()


async def test_another_server_sees_the_ip_and_port_taken(api: API) -> None:
    a = api
    b = await peer(api)
    r = await a.create(SVCS, node_port("one", 30080) | {"spec": {"type": "NodePort", "clusterIP": "10.96.7.7",
                                                                  "ports": [{"port": 80, "nodePort": 30080}]}})
    assert r.status == 201, r.json
    r = await b.create(SVCS, svc("two", clusterIP="10.96.7.7"))
    assert r.status == 422
    assert r.json["message"].endswith("failed to allocate IP 10.96.7.7: provided IP is already allocated")
    r = await b.create(SVCS, node_port("three", 30080))
    assert r.status == 422
    assert r.json["message"].endswith("spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated")
    # deleted through b, the IP and the port are free for a again (a's view is corrected from storage)
    assert (await b.call("DELETE", f"{SVCS}/one")).status == 200
    r = await a.create(SVCS, node_port("four", 30080) | {"spec": {"type": "NodePort", "clusterIP": "10.96.7.7",
                                                                   "ports": [{"port": 80, "nodePort": 30080}]}})
    assert r.status == 201, r.json


async def test_the_same_random_pick_on_two_servers_is_retried(api: API) -> None:
    a = api
    b = await peer(api)
    for server in (a.server, b.server):           # both would pick the same IP and port first
        server.service_alloc.primary.rand = random.Random(7)
        server.service_alloc.node_ports.rand = random.Random(7)
    r1 = await a.create(SVCS, node_port("x"))
    r2 = await b.create(SVCS, node_port("y"))
    assert r1.status == r2.status == 201
    assert r1.json["spec"]["clusterIP"] != r2.json["spec"]["clusterIP"]
    assert r1.json["spec"]["ports"][0]["nodePort"] != r2.json["spec"]["ports"][0]["nodePort"]
    objs = await ip_objects(api)
    assert objs[r2.json["spec"]["clusterIP"]]["spec"]["parentRef"]["name"] == "y"
    assert await stored_ports(api) == {r1.json["spec"]["ports"][0]["nodePort"], r2.json["spec"]["ports"][0]["nodePort"]}


async def test_a_failed_create_gives_everything_back(api: API) -> None:
    assert (await api.create(SVCS, svc("dup"))).status == 201
    before_ips, before_ports = await ip_objects(api), await stored_ports(api)
    r = await api.create(SVCS, node_port("dup"))           # AlreadyExists after allocating
    assert r.status == 409
    assert await ip_objects(api) == before_ips and await stored_ports(api) == before_ports


async def test_dry_run_stores_nothing(api: API) -> None:
    r = await api.create(SVCS, node_port("dry"), {"dryRun": "All"})
    assert r.status == 201
    assert await ip_objects(api) == {} or all(o["spec"]["parentRef"]["name"] != "dry"
                                             for o in (await ip_objects(api)).values())
    assert await stored_ports(api) == set()


async def test_type_change_releases_the_node_port_in_storage(api: API) -> None:
    r = await api.create(SVCS, node_port("t"))
    port = r.json["spec"]["ports"][0]["nodePort"]
    obj = r.json
    obj["spec"]["type"] = "ClusterIP"
    obj["spec"]["ports"][0].pop("nodePort")
    r = await api.call("PUT", f"{SVCS}/t", body=obj)
    assert r.status == 200, r.json
    assert port not in await stored_ports(api)


async def test_repair_stores_what_services_hold(api: API) -> None:
    """Services stored before IPAddresses existed (or written straight to storage) get theirs
    and their bits at the repair; an IPAddress no Service holds goes after the leak count."""
    obj = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "old", "namespace": "default", "uid": "u1", "creationTimestamp": "2023-11-14T22:13:20Z"},
           "spec": {"type": "NodePort", "clusterIP": "10.96.9.9", "clusterIPs": ["10.96.9.9"],
                    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                    "ports": [{"port": 80, "nodePort": 31000}]}}
    await api.storage.create("/registry/services/default/old", obj)
    leak = {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": "10.96.8.8", "labels": {"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "gone"}}}
    await api.storage.create(IP_PREFIX + "10.96.8.8", leak)
    users = {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": "10.96.8.9"},
             "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "mine"}}}
    await api.storage.create(IP_PREFIX + "10.96.8.9", users)          # not the allocator's: never deleted
    repair = api.server.service_repair
    await repair_services(api.server, repair)
    objs = await ip_objects(api)
    assert objs["10.96.9.9"]["spec"]["parentRef"]["name"] == "old"
    assert 31000 in await stored_ports(api)
    assert "10.96.8.8" in objs                    # maybe on its way to a Service: kept a while
    for _ in range(3):
        await repair_services(api.server, repair)
    assert "10.96.8.8" not in await ip_objects(api)
    assert "10.96.9.9" in await ip_objects(api) and "10.96.8.9" in await ip_objects(api)
    r = await api.create(SVCS, svc("taken", clusterIP="10.96.8.9"))
    assert r.status == 422                      # an IPAddress someone made is taken all the same


async def test_the_default_service_cidr(api: API) -> None:
    from kubeplane.apiserver.controlplane.kubernetesservice import ensure_default_service_cidr
    await ensure_default_service_cidr(api.server)
    await ensure_default_service_cidr(api.server)          # once
    r = await api.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes")
    assert r.status == 200 and r.json["spec"]["cidrs"] == ["10.96.0.0/12"]
    [cond] = r.json["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["message"]) == ("Ready", "True", "Kubernetes default Service CIDR is ready")

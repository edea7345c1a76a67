"""Two API servers on one real etcd creating Services at the same time never hand out one
ClusterIP or NodePort twice (registry/core/service/shared.py: IPAddress objects and the
RangeAllocation bitmap, as upstream 1.37)."""
from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.registry import store
from kubeplane.apiserver.registry.core.service.shared import IP_PREFIX, RANGE_KEY, range_offsets
from kubeplane.apiserver.registry.core.service.strategy import SERVICES
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.etcd import EtcdCluster

ADMIN = UserInfo("admin", groups=("system:masters",))
PER_SERVER = 40
OPTIONS = dict(service_cluster_ip_range="10.0.0.0/24", service_node_port_range="30000-30199")


def node_port_service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}}


async def test_two_api_servers_allocate_disjoint_ips_and_ports(etcd_cluster: EtcdCluster,
                                                               tmp_path: pathlib.Path) -> None:
    config = etcd_cluster.config(prefix=f"/{tmp_path.name}/registry")
    storages = [new_storage("etcd", etcd=config) for _ in range(2)]
    for s in storages:
        await s.start()
    try:
        servers = [APIServer(s, options=ServerRunOptions(**OPTIONS)) for s in storages]   # type: ignore[arg-type]
        for server in servers:
            await server.bootstrap()

        async def create(server: APIServer, name: str) -> dict[str, Any]:
            obj, _ = await store.create(server, store.WriteOptions(), SERVICES, "default", node_port_service(name), [])
            return obj

        made = await asyncio.gather(*(create(server, f"s{i}-{n}") for n in range(PER_SERVER)
                                      for i, server in enumerate(servers)))
        ips = [o["spec"]["clusterIP"] for o in made]
        ports = [o["spec"]["ports"][0]["nodePort"] for o in made]
        assert len(set(ips)) == len(ips) == 2 * PER_SERVER
        assert len(set(ports)) == len(ports) == 2 * PER_SERVER
        kvs, _ = await storages[0].list(IP_PREFIX)
        owners = {kv.obj["metadata"]["name"]: kv.obj["spec"]["parentRef"]["name"] for kv in kvs}
        assert owners == {o["spec"]["clusterIP"]: o["metadata"]["name"] for o in made}
        kv = await storages[1].get(RANGE_KEY)
        assert {30000 + o for o in range_offsets(kv.obj)} == set(ports)

        # deleted through the other server: given back in etcd
        from kubeplane.apiserver.registry.deletion import DeleteOptions, delete
        victim = made[0]
        kv = await storages[1].get(SERVICES.key("default", victim["metadata"]["name"]))
        await delete(servers[1], ADMIN, SERVICES, kv, DeleteOptions())
        assert await storages[0].get(IP_PREFIX + victim["spec"]["clusterIP"]) is None
        kv = await storages[0].get(RANGE_KEY)
        assert victim["spec"]["ports"][0]["nodePort"] - 30000 not in range_offsets(kv.obj)
    finally:
        for s in storages:
            await s.close()


@pytest.fixture(autouse=True)
def _etcd_only(etcd_cluster: EtcdCluster) -> None:
    """Skips (with the fixture's reason) where there is no etcd binary."""

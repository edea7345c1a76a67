"""The Service REST store's allocation, end to end through the API server: upstream's
storage_test.go cases (pkg/registry/core/service/storage) with their messages."""
from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

API = Any          # tests/apiserver/conftest.py API
SVCS = "/api/v1/namespaces/default/services"
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


def svc(name: str, type_: str = "ClusterIP", ports: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": type_, "selector": {"app": name},
                     "ports": ports if ports is not None else [{"port": 80}], **spec}}


def used(api: API) -> tuple[int, int]:
    alloc = api.server.service_alloc
    assert alloc is not None
    return alloc.primary.used(), alloc.node_ports.used()


async def create(api: API, obj: dict[str, Any], query: dict[str, str] | None = None) -> dict[str, Any]:
    r = await api.create(SVCS, obj, query)
    assert r.status == 201, r.json
    return r.json


async def refused(api: API, method: str, path: str, obj: dict[str, Any], status: int = 422) -> str:
    r = await api.call(method, path, body=obj)
    assert r.status == status, r.json
    return r.json["message"]


# --- create --------------------------------------------------------------------------------

async def test_cluster_ip_allocated_with_families_defaulted(api: API) -> None:
    spec = (await create(api, svc("a")))["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in SERVICE_CIDR
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert used(api) == (1, 0)


async def test_cluster_ips_are_distinct(api: API) -> None:
    ips = {(await create(api, svc(f"s{i}")))["spec"]["clusterIP"] for i in range(20)}
    assert len(ips) == 20


async def test_requested_cluster_ip_honoured_or_refused(api: API) -> None:
    spec = (await create(api, svc("dns", clusterIP="10.96.0.10")))["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"]) == ("10.96.0.10", ["10.96.0.10"])
    assert await refused(api, "POST", SVCS, svc("b", clusterIP="10.96.0.10")) == (
        'Service "b" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: '
        "failed to allocate IP 10.96.0.10: provided IP is already allocated")
    assert await refused(api, "POST", SVCS, svc("c", clusterIP="10.0.0.1")) == (
        'Service "c" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: '
        "failed to allocate IP 10.0.0.1: the provided network does not match the current range")
    assert await refused(api, "POST", SVCS, svc("d", clusterIP="10.111.255.255")) == (
        'Service "d" is invalid: spec.clusterIPs: Invalid value: ["10.111.255.255"]: failed to allocate IP '
        "10.111.255.255: the provided IP (10.111.255.255) is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12")
    assert used(api) == (1, 0)


@pytest.mark.parametrize("spec, message", [
    pytest.param({"clusterIP": "abc"}, 'spec.clusterIPs[0]: Invalid value: "abc": must be a valid IP address, '
                                       "(e.g. 10.9.8.7 or 2001:db8::ffff)", id="not an IP"),
    pytest.param({"clusterIP": "010.96.0.5"}, 'spec.clusterIPs[0]: Invalid value: "010.96.0.5": '
                                              "must not have leading 0s", id="leading zeros"),
    pytest.param({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.6"]},
                 'spec.clusterIPs: Invalid value: ["10.96.0.6"]: first value must match `clusterIP`', id="mismatch"),
    pytest.param({"clusterIPs": ["10.96.0.6"]},
                 'spec.clusterIPs: Invalid value: ["10.96.0.6"]: must be empty when `clusterIP` is not specified',
                 id="plural only"),
    pytest.param({"ipFamilyPolicy": "RequireDualStack"}, 'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
                                                         "this cluster is not configured for dual-stack services",
                 id="dual-stack required"),
    pytest.param({"ipFamilies": ["IPv6"]}, 'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster',
                 id="family not configured"),
    pytest.param({"ipFamilyPolicy": "Sometimes"}, 'spec.ipFamilyPolicy: Unsupported value: "Sometimes": '
                                                  'supported values: "PreferDualStack", "RequireDualStack", '
                                                  '"SingleStack"', id="policy"),
    pytest.param({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5", "10.96.0.6"], "ipFamilyPolicy": "SingleStack"},
                 'spec.clusterIPs: Invalid value: ["10.96.0.5","10.96.0.6"]: may specify no more than one IP for '
                 "each IP family", id="two of a family"),
])
async def test_cluster_ip_fields_refused(api: API, spec: dict[str, Any], message: str) -> None:
    """initIPFamilyFields' pre-validation (ValidateServiceClusterIPsRelatedFields and policy checks)."""
    assert await refused(api, "POST", SVCS, svc("x", **spec)) == f'Service "x" is invalid: {message}'
    assert used(api) == (0, 0)


async def test_headless_and_external_name_get_no_ip(api: API) -> None:
    headless = (await create(api, svc("h", clusterIP="None")))["spec"]
    assert (headless["clusterIPs"], headless["ipFamilies"], headless["ipFamilyPolicy"]) == (
        ["None"], ["IPv4"], "SingleStack")
    selectorless = svc("hs", clusterIP="None")
    del selectorless["spec"]["selector"]
    spec = (await create(api, selectorless))["spec"]       # upstream: headless + selectorless is dual
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4", "IPv6"], "RequireDualStack")
    ext = (await create(api, svc("e", "ExternalName", ports=[], externalName="example.com")))["spec"]
    assert "clusterIP" not in ext and "ipFamilies" not in ext and "ipFamilyPolicy" not in ext
    assert used(api) == (0, 0)


async def test_node_ports_allocated_requested_and_refused(api: API) -> None:
    spec = (await create(api, svc("np", "NodePort", ports=[{"port": 80, "name": "http"},
                                                            {"port": 443, "name": "https", "nodePort": 30443}])))["spec"]
    port0 = spec["ports"][0]["nodePort"]
    assert 30086 <= port0 <= 32767 and spec["ports"][1]["nodePort"] == 30443     # the dynamic block first
    assert await refused(api, "POST", SVCS, svc("np2", "NodePort", ports=[{"port": 80, "nodePort": 30443}])) == (
        'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated')
    assert await refused(api, "POST", SVCS, svc("np3", "NodePort", ports=[{"port": 80, "nodePort": 80}])) == (
        'Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid '
        "range. The range of valid ports is 30000-32767")
    assert used(api) == (1, 2)          # np2 and np3 gave back the IPs they had taken


async def test_tcp_and_udp_of_one_port_share_a_node_port(api: API) -> None:
    spec = (await create(api, svc("dns", "NodePort", ports=[{"port": 53, "protocol": "TCP", "name": "tcp"},
                                                             {"port": 53, "protocol": "UDP", "name": "udp"}])))["spec"]
    assert spec["ports"][0]["nodePort"] == spec["ports"][1]["nodePort"]
    assert used(api) == (1, 1)


async def test_load_balancer_ports(api: API) -> None:
    lb = (await create(api, svc("lb", "LoadBalancer", externalTrafficPolicy="Local")))["spec"]
    assert lb["ports"][0]["nodePort"] and lb["healthCheckNodePort"]
    bare = (await create(api, svc("lb2", "LoadBalancer", allocateLoadBalancerNodePorts=False)))["spec"]
    assert "nodePort" not in bare["ports"][0]
    assert used(api) == (2, 2)


async def test_a_failed_create_gives_everything_back(api: API) -> None:
    await create(api, svc("first", "NodePort", ports=[{"port": 80, "nodePort": 30100}]))
    before = used(api)
    bad = svc("second", "NodePort", ports=[{"port": 80, "name": "a"}, {"port": 81, "name": "b", "nodePort": 30100}])
    assert "provided port is already allocated" in await refused(api, "POST", SVCS, bad)
    assert used(api) == before
    invalid_name = svc("Not_A_Name", "NodePort", clusterIP="10.96.0.50")
    await refused(api, "POST", SVCS, invalid_name)                          # validation, after allocation
    assert used(api) == before
    await create(api, svc("third", clusterIP="10.96.0.50"))                # so the IP is free again


async def test_dry_run_reserves_nothing(api: API) -> None:
    r = await api.create(SVCS, svc("dry", "NodePort", clusterIP="10.96.0.20", ports=[{"port": 80, "nodePort": 30200}]),
                         {"dryRun": "All"})
    assert r.status == 201 and r.json["spec"]["clusterIP"] == "10.96.0.20"
    assert used(api) == (0, 0)
    await create(api, svc("real", "NodePort", clusterIP="10.96.0.20", ports=[{"port": 80, "nodePort": 30200}]))


# --- delete --------------------------------------------------------------------------------

async def test_delete_releases_and_answers_the_object(api: API) -> None:
    await create(api, svc("d", "NodePort", clusterIP="10.96.0.30", ports=[{"port": 80, "nodePort": 30300}]))
    r = await api.call("DELETE", f"{SVCS}/d")
    assert r.status == 200 and r.json["kind"] == "Service"       # ReturnDeletedObject, as upstream
    assert used(api) == (0, 0)
    await create(api, svc("d2", "NodePort", clusterIP="10.96.0.30", ports=[{"port": 80, "nodePort": 30300}]))


async def test_dry_run_delete_keeps_the_allocations(api: API) -> None:
    await create(api, svc("d", clusterIP="10.96.0.31"))
    r = await api.call("DELETE", f"{SVCS}/d", {"dryRun": "All"})
    assert r.status == 200
    assert used(api) == (1, 0)


async def test_deletion_by_finalizer_removal_releases(api: API) -> None:
    obj = svc("f", clusterIP="10.96.0.32")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    await create(api, obj)
    assert (await api.call("DELETE", f"{SVCS}/f")).status == 200
    assert used(api) == (1, 0)                              # only marked: still allocated
    r = await api.call("PATCH", f"{SVCS}/f", body={"metadata": {"finalizers": None}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200, r.json
    assert used(api) == (0, 0)


async def test_deletecollection_releases(api: API) -> None:
    for i in range(3):
        await create(api, svc(f"c{i}", "NodePort"))
    assert (await api.call("DELETE", SVCS)).status == 200
    assert used(api) == (0, 0)


# --- update --------------------------------------------------------------------------------

async def test_update_keeps_allocated_values_and_refuses_changes(api: API) -> None:
    created = await create(api, svc("u", "NodePort"))
    ip, port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    r = await api.call("PUT", f"{SVCS}/u", body=svc("u", "NodePort"))        # the original manifest again
    assert r.status == 200, r.json
    assert (r.json["spec"]["clusterIP"], r.json["spec"]["ports"][0]["nodePort"]) == (ip, port)
    other = "10.96.0.99" if ip != "10.96.0.99" else "10.96.0.98"
    assert await refused(api, "PUT", f"{SVCS}/u", svc("u", "NodePort", clusterIP=other)) == (
        f'Service "u" is invalid: spec.clusterIPs[0]: Invalid value: ["{other}"]: may not change once set')
    assert used(api) == (1, 1)


async def test_type_changes_allocate_and_release(api: API) -> None:
    await create(api, svc("t", "NodePort", ports=[{"port": 80, "nodePort": 30400}]))
    r = await api.call("PUT", f"{SVCS}/t", body=svc("t", "ClusterIP", ports=[{"port": 80}]))
    assert r.status == 200, r.json
    assert "nodePort" not in r.json["spec"]["ports"][0] and used(api) == (1, 0)
    r = await api.call("PUT", f"{SVCS}/t", body=svc("t", "ExternalName", ports=[], externalName="example.com"))
    assert r.status == 200, r.json
    assert "clusterIP" not in r.json["spec"] and used(api) == (0, 0)
    r = await api.call("PUT", f"{SVCS}/t", body=svc("t", "NodePort"))
    assert r.status == 200, r.json
    assert r.json["spec"]["clusterIP"] and r.json["spec"]["ports"][0]["nodePort"] and used(api) == (1, 1)


async def test_update_node_ports_added_changed_removed(api: API) -> None:
    await create(api, svc("p", "NodePort", ports=[{"port": 80, "name": "a", "nodePort": 30500},
                                                  {"port": 81, "name": "b", "nodePort": 30501}]))
    body = svc("p", "NodePort", ports=[{"port": 80, "name": "a", "nodePort": 30502}, {"port": 82, "name": "c"}])
    r = await api.call("PUT", f"{SVCS}/p", body=body)
    assert r.status == 200, r.json
    ports = [p["nodePort"] for p in r.json["spec"]["ports"]]
    assert ports[0] == 30502 and ports[1] not in (30500, 30501)
    alloc = api.server.service_alloc
    assert alloc is not None and sorted(alloc.node_ports) == sorted(ports)
    await create(api, svc("q", "NodePort", ports=[{"port": 80, "nodePort": 30500}]))   # released on commit


async def test_a_failed_update_keeps_the_old_ports(api: API) -> None:
    await create(api, svc("taken", "NodePort", ports=[{"port": 80, "nodePort": 30600}]))
    await create(api, svc("p", "NodePort", ports=[{"port": 80, "name": "a", "nodePort": 30601}]))
    body = svc("p", "NodePort", ports=[{"port": 80, "name": "a", "nodePort": 30602},
                                       {"port": 81, "name": "b", "nodePort": 30600}])
    assert await refused(api, "PUT", f"{SVCS}/p", body) == (
        'Service "p" is invalid: spec.ports[1].nodePort: Invalid value: 30600: provided port is already allocated')
    alloc = api.server.service_alloc
    assert alloc is not None and sorted(alloc.node_ports) == [30600, 30601]


async def test_status_update_allocates_nothing(api: API) -> None:
    created = await create(api, svc("s", "LoadBalancer"))
    created["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    r = await api.call("PUT", f"{SVCS}/s/status", body=created)
    assert r.status == 200, r.json
    assert used(api) == (1, 1)


# --- dual-stack ------------------------------------------------------------------------------

async def test_dual_stack_cluster(api: API) -> None:
    server = APIServer(new_storage("memory"), clock=api.clock, options=ServerRunOptions(
        service_cluster_ip_range="10.96.0.0/12,fd00:10:96::/108"))
    await server.bootstrap()
    api = type(api)(server, api.clock)
    try:
        spec = (await create(api, svc("pref", ipFamilyPolicy="PreferDualStack")))["spec"]
        assert spec["ipFamilies"] == ["IPv4", "IPv6"] and len(spec["clusterIPs"]) == 2
        assert ipaddress.ip_address(spec["clusterIPs"][1]) in ipaddress.ip_network("fd00:10:96::/108")
        single = (await create(api, svc("single")))["spec"]
        assert single["ipFamilies"] == ["IPv4"] and len(single["clusterIPs"]) == 1
        v6 = (await create(api, svc("v6", ipFamilies=["IPv6"])))["spec"]
        assert v6["clusterIP"].startswith("fd00:10:96::")
        r = await api.call("DELETE", f"{SVCS}/pref")
        assert r.status == 200
        assert server.service_alloc is not None
        assert [r.used() for r in server.service_alloc.by_family.values()] == [1, 1]
    finally:
        await server.storage.close()


@pytest.mark.parametrize("obj, message", [
    pytest.param(svc("x", ports=[{"port": 80, "nodePort": 30001}]),
                 "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'", id="nodePort on ClusterIP"),
    pytest.param(svc("x", "NodePort", clusterIP="None"),
                 "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services",
                 id="headless NodePort"),
    pytest.param(svc("x", "ExternalName", externalName="example.com", clusterIP="10.96.0.5"),
                 "spec.clusterIPs: Forbidden: may not be set for ExternalName services", id="ExternalName with an IP"),
    pytest.param(svc("x", "NodePort", ports=[{"port": 80, "name": "a", "nodePort": 30001},
                                             {"port": 81, "name": "b", "nodePort": 30001}]),
                 # allocation comes first (BeginCreate), so not validation's "Duplicate value"
                 "spec.ports[1].nodePort: Invalid value: 30001: provided port is already allocated",
                 id="one node port twice"),
])
async def test_type_fields_refused_and_nothing_kept(api: API, obj: dict[str, Any], message: str) -> None:
    """ValidateService's type rules run after allocation (upstream's order): the allocation is rolled back."""
    assert message in await refused(api, "POST", SVCS, obj)
    assert used(api) == (0, 0)


async def test_type_change_by_patch_drops_what_the_old_type_needed(api: API) -> None:
    """dropTypeDependentFields: `kubectl patch -p '{"spec":{"type":"ClusterIP"}}'` of a NodePort
    Service works, its node ports released; to ExternalName, the ClusterIP goes too."""
    merge = {"content-type": "application/merge-patch+json"}
    await create(api, svc("p", "LoadBalancer", externalTrafficPolicy="Local"))
    assert used(api) == (1, 2)
    r = await api.call("PATCH", f"{SVCS}/p", body={"spec": {"type": "ClusterIP"}}, headers=merge)
    assert r.status == 200, r.json
    spec = r.json["spec"]
    assert "nodePort" not in spec["ports"][0] and "healthCheckNodePort" not in spec
    assert "externalTrafficPolicy" not in spec and "allocateLoadBalancerNodePorts" not in spec
    assert used(api) == (1, 0)
    r = await api.call("PATCH", f"{SVCS}/p", body={"spec": {"type": "ExternalName", "externalName": "example.com"}},
                       headers=merge)
    assert r.status == 200, r.json
    assert not {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"} & set(r.json["spec"])
    assert used(api) == (0, 0)
    r = await api.call("PATCH", f"{SVCS}/p", body={"spec": {"type": "NodePort", "externalName": None}}, headers=merge)
    assert r.status == 200, r.json
    assert r.json["spec"]["clusterIP"] and r.json["spec"]["ports"][0]["nodePort"] and used(api) == (1, 1)


def test_a_cancelled_write_leaks_rather_than_double_allocates() -> None:
    """Cancelled while storing (the object may or may not be written): nothing is given back
    (upstream: "It is better to leak ports than to double-allocate them"); repair frees leaks."""
    import asyncio

    from kubeplane.apiserver.registry.core.service.alloc import Allocators

    alloc = Allocators.from_flags()
    obj = svc("c", "NodePort", clusterIP="10.96.0.40", ports=[{"port": 80, "nodePort": 30040}])
    with pytest.raises(asyncio.CancelledError), alloc.allocate_create(obj, False):
        raise asyncio.CancelledError
    assert alloc.primary.has("10.96.0.40") and alloc.node_ports.has(30040)
    obj = svc("d", "NodePort", clusterIP="10.96.0.41", ports=[{"port": 80, "nodePort": 30041}])
    with pytest.raises(ValueError), alloc.allocate_create(obj, False):
        raise ValueError("storage failed")
    assert not alloc.primary.has("10.96.0.41") and not alloc.node_ports.has(30041)

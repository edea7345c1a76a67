"""The Endpoints controller: cases of upstream's endpoints_controller_test.go (syncService,
RepackSubsets, truncateEndpoints), with Services and pods in the informers' caches and the
Endpoints written through the fake clientset."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.endpoint import EndpointsController
from kubeplane.controller.endpoint.endpoints_controller import (ENDPOINTS_OVER_CAPACITY, repack_subsets,
                                                                truncate_endpoints)
from kubeplane.controller.endpointslice import utils as u
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
KEY = ObjectName("default", "foo")


def service(*, ports: list[dict[str, Any]] | None = None, cluster_ip: str = "10.0.0.10", publish_not_ready: bool = False,
            labels: dict[str, str] | None = None, selector: dict[str, str] | None = None) -> core_v1.Service:
    spec: dict[str, Any] = {"selector": {"foo": "bar"} if selector is None else selector, "clusterIP": cluster_ip,
                            "ports": ports if ports is not None else [
                                {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    return types.from_dict({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": "foo", "namespace": "default", "uid": "svc-uid", "labels": labels,
                                         "creationTimestamp": rfc3339(NOW - 100)}, "spec": spec}, core_v1.Service)


def pod(i: int, *, ready: bool = True, phase: str = "Running", terminating: bool = False,
        ports: list[dict[str, Any]] | None = None) -> core_v1.Pod:
    meta: dict[str, Any] = {"name": f"pod{i}", "namespace": "default", "uid": f"uid-{i}", "resourceVersion": "1",
                            "labels": {"foo": "bar"}}
    if terminating:
        meta["deletionTimestamp"] = rfc3339(NOW)
    ip = f"1.2.{i // 250}.{i % 250 + 1}"
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i",
                                                                           "ports": ports or []}]},
                            "status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}],
                                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                       "lastTransitionTime": rfc3339(NOW - 50)}]}}, core_v1.Pod)


@dataclass
class Fixture:
    fake: FakeClientset
    factory: SharedInformerFactory
    ec: EndpointsController
    recorder: FakeRecorder

    def add(self, *objs: Any) -> None:
        for obj in objs:
            informer = {core_v1.Pod: self.factory.core_v1().pods(), core_v1.Service: self.factory.core_v1().services(),
                        core_v1.Endpoints: self.factory.core_v1().endpoints()}[type(obj)]
            informer.informer().get_indexer().update(obj)

    async def endpoints(self) -> dict[str, Any]:
        return types.to_dict(await self.fake.core_v1().endpoints("default").get("foo"))

    async def sync(self) -> None:
        await self.ec.sync_service(KEY)
        try:
            self.add(await self.fake.core_v1().endpoints("default").get("foo"))
        except Exception:
            pass


@pytest.fixture
async def f() -> Fixture:
    clock = FakeClock(NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    ec = EndpointsController(factory.core_v1().pods(), factory.core_v1().services(), factory.core_v1().endpoints(),
                             fake, clock=clock, recorder=recorder)
    return Fixture(fake, factory, ec, recorder)


def addr(i: int) -> dict[str, Any]:
    return {"ip": f"1.2.0.{i + 1}", "nodeName": "node-1",
            "targetRef": {"kind": "Pod", "namespace": "default", "name": f"pod{i}", "uid": f"uid-{i}"}}


async def test_sync_endpoints_items(f: Fixture) -> None:
    """TestSyncEndpointsItems: three pods, two ports -> one subset with three addresses and
    both ports; the trigger time is the Service's creation."""
    ports = [{"name": "http", "containerPort": 8080}, {"name": "https", "containerPort": 8443}]
    f.add(service(ports=[{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                         {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]),
          *(pod(i, ports=ports) for i in range(3)))
    await f.sync()
    assert f.fake.verbs() == [("create", "endpoints", "")]
    ep = await f.endpoints()
    assert ep["subsets"] == [{"addresses": [addr(0), addr(1), addr(2)],
                              "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                                        {"name": "https", "port": 8443, "protocol": "TCP"}]}]
    assert ep["metadata"]["annotations"] == {u.LAST_CHANGE_TRIGGER_TIME: rfc3339(NOW - 100)}


async def test_not_ready_and_terminal_pods(f: Fixture) -> None:
    """Unready pods go to notReadyAddresses; terminal and terminating pods are left out
    (ShouldPodBeInEndpoints without publishNotReadyAddresses)."""
    f.add(service(), pod(0), pod(1, ready=False), pod(2, phase="Failed"), pod(3, terminating=True))
    await f.sync()
    [subset] = (await f.endpoints())["subsets"]
    assert subset["addresses"] == [addr(0)] and subset["notReadyAddresses"] == [addr(1)]


async def test_publish_not_ready_addresses(f: Fixture) -> None:
    """TestSyncEndpointsItemsPublishNotReady..., tolerate unready: every address is ready."""
    f.add(service(publish_not_ready=True), pod(0, ready=False))
    await f.sync()
    [subset] = (await f.endpoints())["subsets"]
    assert subset["addresses"] == [addr(0)] and "notReadyAddresses" not in subset


async def test_preexisting_identical_is_not_rewritten(f: Fixture) -> None:
    """TestSyncEndpointsItemsPreexistingIdentical"""
    f.add(service(labels={"a": "b"}), pod(0))
    await f.sync()
    f.fake.clear_actions()
    await f.sync()
    assert f.fake.verbs() == []


async def test_labels_follow_service_and_headless(f: Fixture) -> None:
    """TestSyncEndpointsItemsWithLabels, TestSyncEndpointsHeadlessService: the Service's labels,
    plus service.kubernetes.io/headless for a headless one (ports optional there)."""
    f.add(service(labels={"app": "x"}, cluster_ip="None", ports=[]), pod(0))
    await f.sync()
    ep = await f.endpoints()
    assert ep["metadata"]["labels"] == {"app": "x", u.IS_HEADLESS_SERVICE: ""}
    assert ep["subsets"] == [{"addresses": [addr(0)]}]
    f.fake.clear_actions()
    await f.sync()                                 # the headless label is no difference
    assert f.fake.verbs() == []


async def test_service_gone_deletes_endpoints(f: Fixture) -> None:
    """TestSyncEndpointsServiceNotFound"""
    f.add(service(), pod(0))
    await f.sync()
    f.factory.core_v1().services().informer().get_indexer().delete(service())
    f.fake.clear_actions()
    await f.ec.sync_service(KEY)
    assert f.fake.verbs() == [("delete", "endpoints", "")]


async def test_no_selector_and_external_name_untouched(f: Fixture) -> None:
    """TestSyncEndpointsItemsPreserveNoSelector and ExternalName (#105986)."""
    svc = service()
    svc.spec.selector = None
    f.add(svc, pod(0))
    await f.sync()
    ext = service()
    ext.spec.type = "ExternalName"
    f.add(ext)
    await f.sync()
    assert f.fake.verbs() == []


async def test_over_capacity_truncated(f: Fixture) -> None:
    """TestSyncServiceOverCapacity: 1001 ready pods -> 1000 addresses and the annotation."""
    f.add(service(), *(pod(i) for i in range(1001)))
    await f.sync()
    ep = await f.endpoints()
    assert sum(len(s.get("addresses", [])) for s in ep["subsets"]) == 1000
    assert ep["metadata"]["annotations"][ENDPOINTS_OVER_CAPACITY] == "truncated"


async def test_stale_lister_is_retried(f: Fixture) -> None:
    """An update whose result the lister has not delivered: the next sync waits (#127370)."""
    f.add(service(), pod(0))
    await f.sync()
    f.add(pod(1))
    await f.ec.sync_service(KEY)                   # updates; the cache keeps the old version
    f.add(pod(2))
    with pytest.raises(RuntimeError, match="endpoints informer cache is out of date"):
        await f.ec.sync_service(KEY)


def subset(ready: list[str], not_ready: list[str], ports: list[int]) -> core_v1.EndpointSubset:
    def a(ip: str) -> core_v1.EndpointAddress:
        return core_v1.EndpointAddress(ip=ip)
    return core_v1.EndpointSubset(addresses=[a(i) for i in ready] or None,
                                  not_ready_addresses=[a(i) for i in not_ready] or None,
                                  ports=[core_v1.EndpointPort(port=p, protocol="TCP") for p in ports] or None)


def shape(subsets: list[core_v1.EndpointSubset]) -> list[tuple[list[str], list[str], list[int]]]:
    return [([a.ip for a in s.addresses or []], [a.ip for a in s.not_ready_addresses or []],
             [p.port for p in s.ports or []]) for s in subsets]


@pytest.mark.parametrize("given,want", [
    pytest.param([], [], id="empty"),
    pytest.param([subset(["1.1.1.1"], [], [])], [(["1.1.1.1"], [], [])], id="one address no ports"),
    pytest.param([subset(["1.1.1.1"], [], [11]), subset(["1.1.1.1"], [], [22])],
                 [(["1.1.1.1"], [], [11, 22])], id="ports merge"),
    pytest.param([subset(["1.1.1.1"], [], [11]), subset(["2.2.2.2"], [], [11])],
                 [(["1.1.1.1", "2.2.2.2"], [], [11])], id="addresses merge"),
    pytest.param([subset(["1.1.1.1"], [], [11]), subset(["2.2.2.2"], [], [22])],
                 [(["1.1.1.1"], [], [11]), (["2.2.2.2"], [], [22])], id="distinct"),
    pytest.param([subset(["1.1.1.1"], [], [11]), subset([], ["1.1.1.1"], [11])],
                 [([], ["1.1.1.1"], [11])], id="not ready trumps ready"),
    pytest.param([subset(["1.1.1.1"], ["2.2.2.2"], [11]), subset(["3.3.3.3"], [], [11])],
                 [(["1.1.1.1", "3.3.3.3"], ["2.2.2.2"], [11])], id="ready and not ready together"),
])
def test_repack_subsets(given: list[core_v1.EndpointSubset], want: list[Any]) -> None:
    """TestPackSubsets (pkg/api/v1/endpoints/util_test.go), orders aside."""
    assert shape(repack_subsets(given)) == want


@pytest.mark.parametrize("ready,not_ready,want_ready,want_not_ready", [
    pytest.param([500], [500], [500], [500], id="at capacity: untouched"),
    pytest.param([600], [450], [600], [400], id="not ready truncated"),
    pytest.param([1001], [1], [1000], [0], id="ready over capacity, not ready dropped"),
    pytest.param([300, 300], [300, 300], [300, 300], [200, 200], id="proportional over subsets"),
    pytest.param([600, 600], [100, 100], [500, 500], [0, 0], id="ready proportional"),
])
def test_truncate_endpoints(ready: list[int], not_ready: list[int], want_ready: list[int],
                            want_not_ready: list[int]) -> None:
    """TestTruncateEndpoints"""
    n = iter(range(10_000))
    ep = core_v1.Endpoints(subsets=[subset([f"10.0.{(k := next(n)) // 250}.{k % 250}" for _ in range(r)],
                                           [f"10.1.{(k := next(n)) // 250}.{k % 250}" for _ in range(nr)], [80])
                                    for r, nr in zip(ready, not_ready)])
    assert truncate_endpoints(ep) == (sum(ready) + sum(not_ready) > 1000)
    assert [len(s.addresses or []) for s in ep.subsets] == want_ready
    assert [len(s.not_ready_addresses or []) for s in ep.subsets] == want_not_ready


async def test_preexisting_updated_in_place(f: Fixture) -> None:
    """TestSyncEndpointsItemsPreexisting: an Endpoints written by hand for the Service is
    replaced by the pods' addresses, keeping its name and annotations."""
    f.fake.recorder.recording = False
    [ep] = await f.fake.seed({"apiVersion": "v1", "kind": "Endpoints",
                              "metadata": {"name": "foo", "namespace": "default", "annotations": {"keep": "me"}},
                              "subsets": [{"addresses": [{"ip": "6.7.8.9"}], "ports": [{"port": 1000}]}]})
    f.fake.recorder.recording = True
    f.add(ep, service(), pod(0))
    await f.sync()
    assert f.fake.verbs() == [("update", "endpoints", "")]
    got = await f.endpoints()
    assert got["subsets"] == [{"addresses": [addr(0)], "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]
    assert got["metadata"]["annotations"]["keep"] == "me"


async def test_hostname_published_for_subdomain(f: Fixture) -> None:
    """ShouldSetHostname: hostname only when the pod's subdomain is the Service's name."""
    p = pod(0)
    p.spec.hostname, p.spec.subdomain = "db-0", "foo"
    q = pod(1)
    q.spec.hostname, q.spec.subdomain = "db-1", "other"
    f.add(service(), p, q)
    await f.sync()
    [subset] = (await f.endpoints())["subsets"]
    assert [a.get("hostname") for a in subset["addresses"]] == ["db-0", None]


async def test_leftover_sweep(f: Fixture) -> None:
    """checkLeftoverEndpoints: every Endpoints is queued once at start (its Service may be gone),
    but not a leader-election record."""
    orphan = types.from_dict({"apiVersion": "v1", "kind": "Endpoints",
                              "metadata": {"name": "gone", "namespace": "default"}}, core_v1.Endpoints)
    leader = types.from_dict({"apiVersion": "v1", "kind": "Endpoints", "metadata": {
        "name": "lock", "namespace": "kube-system",
        "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}}, core_v1.Endpoints)
    f.add(orphan, leader)
    f.ec.check_leftover_endpoints()
    assert f.ec.queue.len() == 1
    key, _ = await f.ec.queue.get()
    assert key == ObjectName("default", "gone")

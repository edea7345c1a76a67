"""The EndpointSlice mirroring controller: cases of upstream's reconciler_test.go and
endpointslicemirroring_controller_test.go, with Endpoints and Services in the caches and the
slices written through the fake clientset."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName, core_v1, discovery_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.endpointslice import utils as su
from kubeplane.controller.endpointslicemirroring import EndpointSliceMirroringController
from kubeplane.controller.endpointslicemirroring.reconciler import CONTROLLER_NAME
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

KEY = ObjectName("default", "ext")


def svc(selector: dict[str, str] | None = None) -> core_v1.Service:
    spec: dict[str, Any] = {"ports": [{"port": 80}], "clusterIP": "10.0.0.9"}
    if selector is not None:
        spec["selector"] = selector
    return types.from_dict({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": "ext", "namespace": "default", "uid": "svc-uid"}, "spec": spec},
                           core_v1.Service)


def endpoints(subsets: list[dict[str, Any]], *, labels: dict[str, str] | None = None,
              annotations: dict[str, str] | None = None, rv: str = "1") -> core_v1.Endpoints:
    return types.from_dict({"apiVersion": "v1", "kind": "Endpoints",
                            "metadata": {"name": "ext", "namespace": "default", "uid": "ep-uid", "resourceVersion": rv,
                                         "labels": labels or {}, "annotations": annotations or {}},
                            "subsets": subsets}, core_v1.Endpoints)


def subset(ready: list[str], not_ready: list[str] = (), ports: list[int] = (80,)) -> dict[str, Any]:  # type: ignore[assignment]
    out: dict[str, Any] = {"ports": [{"name": f"p{p}", "port": p, "protocol": "TCP"} for p in ports]}
    if ready:
        out["addresses"] = [{"ip": ip, "hostname": "h" if i == 0 else ""} for i, ip in enumerate(ready)]
    if not_ready:
        out["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return out


@dataclass
class Fixture:
    fake: FakeClientset
    factory: SharedInformerFactory
    c: EndpointSliceMirroringController
    recorder: FakeRecorder

    def add(self, *objs: Any) -> None:
        for obj in objs:
            inf = {core_v1.Service: self.factory.core_v1().services(), core_v1.Endpoints: self.factory.core_v1().endpoints(),
                   }[type(obj)]
            inf.informer().get_indexer().update(obj)

    async def slices(self) -> list[discovery_v1.EndpointSlice]:
        return (await self.fake.discovery_v1().endpointslices("default").list()).items or []

    async def sync(self) -> None:
        await self.c.sync_endpoints(KEY)
        indexer = self.factory.discovery_v1().endpointslices().informer().get_indexer()
        for s in indexer.list():
            indexer.delete(s)
        for s in await self.slices():
            indexer.add(s)


async def new_fixture(max_per_subset: int = 1000) -> Fixture:
    clock = FakeClock(1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    c = EndpointSliceMirroringController(factory.core_v1().endpoints(), factory.discovery_v1().endpointslices(),
                                         factory.core_v1().services(), fake, clock=clock, recorder=recorder,
                                         max_endpoints_per_subset=max_per_subset)
    return Fixture(fake, factory, c, recorder)


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def shape(slices: list[discovery_v1.EndpointSlice]) -> list[tuple[str, list[int], list[tuple[str, bool]]]]:
    return sorted((s.address_type, [p.port for p in s.ports or []],
                   sorted((ep.addresses[0], ep.conditions.ready) for ep in s.endpoints or [])) for s in slices)


async def test_one_subset_mirrored(f: Fixture) -> None:
    """Endpoints with 1 subset, port, and address: labels and annotations carried (but the
    trigger time and last-applied configuration), owned by the Endpoints."""
    f.add(svc(), endpoints([subset(["10.0.0.1"], ["10.0.0.2"])], labels={"team": "a"},
                           annotations={"note": "x", su.LAST_CHANGE_TRIGGER_TIME: "t",
                                        "kubectl.kubernetes.io/last-applied-configuration": "{}"}))
    await f.sync()
    [s] = await f.slices()
    assert shape([s]) == [("IPv4", [80], [("10.0.0.1", True), ("10.0.0.2", False)])]
    assert s.metadata.labels == {"team": "a", su.LABEL_SERVICE_NAME: "ext", su.LABEL_MANAGED_BY: CONTROLLER_NAME}
    assert s.metadata.annotations == {"note": "x"}
    [ref] = s.metadata.owner_references
    assert (ref.kind, ref.name, ref.uid) == ("Endpoints", "ext", "ep-uid")
    hostnames = {ep.addresses[0]: ep.hostname for ep in s.endpoints}
    assert hostnames == {"10.0.0.1": "h", "10.0.0.2": None}
    f.fake.clear_actions()
    await f.sync()
    assert f.fake.verbs() == []                    # matching: nothing written


async def test_subsets_and_families_make_slices(f: Fixture) -> None:
    """Two port sets and two address families: one slice per (family, ports)."""
    f.add(svc(), endpoints([subset(["10.0.0.1", "fd00::1"], ports=[80]), subset(["10.0.0.2"], ports=[443])]))
    await f.sync()
    assert shape(await f.slices()) == [("IPv4", [80], [("10.0.0.1", True)]), ("IPv4", [443], [("10.0.0.2", True)]),
                                       ("IPv6", [80], [("fd00::1", True)])]


async def test_invalid_ip_and_too_many(f: Fixture) -> None:
    """Invalid IPs are skipped with an InvalidIPAddress event; addresses over the per-subset
    maximum with TooManyAddressesToMirror."""
    f2 = await new_fixture(max_per_subset=2)
    f2.add(svc(), endpoints([subset(["10.0.0.1", "1.2.3", "10.0.0.2", "10.0.0.3"])]))
    await f2.sync()
    [s] = await f2.slices()
    assert len(s.endpoints) == 2
    assert "Warning InvalidIPAddress Skipped 1 invalid IP addresses when mirroring to EndpointSlices" in f2.recorder.events
    assert ("Warning TooManyAddressesToMirror A max of 2 addresses can be mirrored to EndpointSlices per Endpoints "
            "subset. 2 addresses were skipped") in f2.recorder.events


async def test_update_changes_slice_in_place(f: Fixture) -> None:
    f.add(svc(), endpoints([subset(["10.0.0.1"])]))
    await f.sync()
    [before] = await f.slices()
    f.add(endpoints([subset(["10.0.0.1", "10.0.0.5"])], rv="2"))
    f.fake.clear_actions()
    await f.sync()
    assert f.fake.verbs() == [("update", "endpointslices", "")]
    [after] = await f.slices()
    assert after.metadata.name == before.metadata.name and len(after.endpoints) == 2
    f.add(endpoints([subset(["10.0.0.1"], ports=[8080])], rv="3"))     # new ports: the slice recycled
    f.fake.clear_actions()
    await f.sync()
    assert f.fake.verbs() == [("update", "endpointslices", "")]
    assert shape(await f.slices()) == [("IPv4", [8080], [("10.0.0.1", True)])]


@pytest.mark.parametrize("change", ["selector", "skip-mirror", "leader", "endpoints gone"])
async def test_not_mirrored_any_more(f: Fixture, change: str) -> None:
    """A Service given a selector, an Endpoints labelled skip-mirror or holding a leader
    record, or gone: the mirrored slices are deleted."""
    f.add(svc(), endpoints([subset(["10.0.0.1"])]))
    await f.sync()
    assert len(await f.slices()) == 1
    if change == "selector":
        f.add(svc(selector={"app": "x"}))
    elif change == "skip-mirror":
        f.add(endpoints([subset(["10.0.0.1"])], labels={"endpointslice.kubernetes.io/skip-mirror": "true"}))
    elif change == "leader":
        f.add(endpoints([subset(["10.0.0.1"])], annotations={"control-plane.alpha.kubernetes.io/leader": "{}"}))
    else:
        f.factory.core_v1().endpoints().informer().get_indexer().delete(endpoints([]))
    await f.sync()
    assert await f.slices() == []


async def test_no_service_no_mirror(f: Fixture) -> None:
    f.add(endpoints([subset(["10.0.0.1"])]))
    await f.sync()
    assert await f.slices() == [] and f.fake.verbs() == []

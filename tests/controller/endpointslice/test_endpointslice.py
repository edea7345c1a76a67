"""The EndpointSlice controller and reconciler: cases of upstream's reconciler_test.go and
endpointslice_controller_test.go. Services, pods and nodes go straight into the informers'
caches; slices are written through the fake clientset (the real API in-process), and the test
feeds what was written back into the slice cache as the informer would."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName, core_v1, discovery_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.endpointslice import EndpointSliceController
from kubeplane.controller.endpointslice import utils as u
from kubeplane.controller.endpointslice.endpointslice_controller import StaleInformerCache
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
KEY = ObjectName("default", "foo")


def service(*, ports: list[dict[str, Any]] | None = None, publish_not_ready: bool = False, cluster_ip: str = "10.0.0.10",
            labels: dict[str, str] | None = None, selector: dict[str, str] | None = None) -> core_v1.Service:
    spec: dict[str, Any] = {"selector": {"foo": "bar"} if selector is None else selector, "clusterIP": cluster_ip,
                            "ipFamilies": ["IPv4"], "ports": ports if ports is not None else [
                                {"name": "foo", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    return types.from_dict({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": "foo", "namespace": "default", "uid": "svc-uid",
                                         "resourceVersion": "1", "labels": labels or {},
                                         "creationTimestamp": rfc3339(NOW - 100)},
                            "spec": spec}, core_v1.Service)


def pod(i: int, *, ready: bool = True, node: str = "node-1", ip: str | None = None, terminating: bool = False,
        ports: list[dict[str, Any]] | None = None, phase: str = "Running", rv: str = "1",
        labels: dict[str, str] | None = None, ready_at: float = NOW - 50) -> core_v1.Pod:
    meta: dict[str, Any] = {"name": f"pod{i}", "namespace": "default", "uid": f"uid-{i}", "resourceVersion": rv,
                            "labels": {"foo": "bar"} if labels is None else labels}
    if terminating:
        meta["deletionTimestamp"] = rfc3339(NOW)
    ip = ip or f"1.2.{i // 250}.{i % 250 + 1}"
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                                                                        "ports": ports or []}]},
                            "status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}],
                                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                       "lastTransitionTime": rfc3339(ready_at)}]}},
                           core_v1.Pod)


def node(name: str = "node-1", zone: str | None = None) -> core_v1.Node:
    labels = {u.LABEL_TOPOLOGY_ZONE: zone} if zone else {}
    return types.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
                           core_v1.Node)


@dataclass
class Fixture:
    fake: FakeClientset
    factory: SharedInformerFactory
    esc: EndpointSliceController
    recorder: FakeRecorder

    def add(self, *objs: Any) -> None:
        for obj in objs:
            informer = {core_v1.Pod: self.factory.core_v1().pods(), core_v1.Service: self.factory.core_v1().services(),
                        core_v1.Node: self.factory.core_v1().nodes(),
                        discovery_v1.EndpointSlice: self.factory.discovery_v1().endpointslices()}[type(obj)]
            informer.informer().get_indexer().update(obj)

    def remove(self, obj: Any) -> None:
        self.factory.core_v1().pods().informer().get_indexer().delete(obj)

    async def slices(self) -> list[discovery_v1.EndpointSlice]:
        return (await self.fake.discovery_v1().endpointslices("default").list()).items or []

    async def sync(self, key: ObjectName = KEY) -> None:
        """Sync, then let the slice cache catch up with what is stored."""
        await self.esc.sync_service(key)
        await self.refresh()

    async def refresh(self) -> None:
        indexer = self.factory.discovery_v1().endpointslices().informer().get_indexer()
        for s in indexer.list():
            indexer.delete(s)
        for s in await self.slices():
            indexer.add(s)

    def writes(self) -> list[tuple[str, str, str]]:
        return self.fake.verbs()


async def new_fixture(max_per_slice: int = 100) -> Fixture:
    clock = FakeClock(NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    esc = EndpointSliceController(factory.core_v1().pods(), factory.core_v1().services(), factory.core_v1().nodes(),
                                  factory.discovery_v1().endpointslices(), fake, clock=clock, recorder=recorder,
                                  max_endpoints_per_slice=max_per_slice)
    f = Fixture(fake, factory, esc, recorder)
    f.add(node())
    return f


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def endpoints_of(slices: list[discovery_v1.EndpointSlice]) -> dict[str, tuple[bool | None, bool | None, bool | None]]:
    """pod name -> (ready, serving, terminating), over all slices."""
    out = {}
    for s in slices:
        for ep in s.endpoints or []:
            c = ep.conditions or discovery_v1.EndpointConditions()
            out[ep.target_ref.name] = (c.ready, c.serving, c.terminating)
    return out


# --- reconciler_test.go ------------------------------------------------------------------------

async def test_reconcile_no_pods_makes_placeholder_once(f: Fixture) -> None:
    """TestReconcileEmpty, then TestReconcileEndpointSlicesReplaceDeprecated's no-op: an empty
    placeholder slice (no ports, no endpoints), left alone by the next sync."""
    f.add(service())
    await f.sync()
    [s] = await f.slices()
    assert (s.address_type, s.endpoints, s.ports) == ("IPv4", None, None) or (s.endpoints or []) == []
    assert s.metadata.generate_name == "foo-" and s.metadata.name.startswith("foo-")
    assert s.metadata.labels == {u.LABEL_SERVICE_NAME: "foo", u.LABEL_MANAGED_BY: u.CONTROLLER_NAME}
    [ref] = s.metadata.owner_references
    assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == ("Service", "foo", "svc-uid",
                                                                                      True, True)
    f.fake.clear_actions()
    await f.sync()
    assert f.writes() == []


async def test_reconcile_one_pod(f: Fixture) -> None:
    """TestReconcile1Pod (IPv4): one endpoint with addresses, conditions, node, target and zone;
    the slice carries the Service's labels and the trigger time (the Service's creation)."""
    f.add(node("node-1", zone="us-central1-a"), service(labels={"team": "a"}), pod(1))
    await f.sync()
    [s] = await f.slices()
    assert s.address_type == "IPv4"
    assert [(p.name, p.port, p.protocol) for p in s.ports] == [("foo", 8080, "TCP")]
    [ep] = s.endpoints
    assert ep.addresses == ["1.2.0.2"]
    assert (ep.conditions.ready, ep.conditions.serving, ep.conditions.terminating) == (True, True, False)
    assert (ep.node_name, ep.zone) == ("node-1", "us-central1-a")
    assert (ep.target_ref.kind, ep.target_ref.name, ep.target_ref.uid) == ("Pod", "pod1", "uid-1")
    assert s.metadata.labels == {"team": "a", u.LABEL_SERVICE_NAME: "foo", u.LABEL_MANAGED_BY: u.CONTROLLER_NAME}
    assert s.metadata.annotations == {u.LAST_CHANGE_TRIGGER_TIME: rfc3339(NOW - 100)}


async def test_reconcile_headless_labels() -> None:
    """A headless Service's slices carry service.kubernetes.io/headless."""
    f = await new_fixture()
    f.add(service(cluster_ip="None"), pod(1))
    await f.sync()
    for s in await f.slices():
        assert s.metadata.labels[u.IS_HEADLESS_SERVICE] == ""


async def test_reconcile_many_pods_fills_slices_of_100(f: Fixture) -> None:
    """TestReconcileManyPods: 250 pods make three slices of 100, 100 and 50."""
    f.add(service(), *(pod(i) for i in range(250)))
    await f.sync()
    assert sorted(len(s.endpoints) for s in await f.slices()) == [50, 100, 100]
    assert f.writes() == [("create", "endpointslices", "")] * 3


async def test_max_endpoints_per_slice_flag() -> None:
    """--max-endpoints-per-slice: 5 pods at 2 per slice make 3 slices."""
    f = await new_fixture(max_per_slice=2)
    f.add(service(), *(pod(i) for i in range(5)))
    await f.sync()
    assert sorted(len(s.endpoints) for s in await f.slices()) == [1, 2, 2]


async def test_readiness_conditions(f: Fixture) -> None:
    """podToEndpoint: unready -> ready/serving false; terminating -> ready false, serving kept,
    terminating true; terminal and IP-less pods are left out."""
    no_ip = pod(4)
    no_ip.status.pod_ip, no_ip.status.pod_ips = None, None
    f.add(service(), pod(1), pod(2, ready=False), pod(3, terminating=True), no_ip, pod(5, phase="Succeeded"))
    await f.sync()
    assert endpoints_of(await f.slices()) == {"pod1": (True, True, False), "pod2": (False, False, False),
                                               "pod3": (False, True, True)}


async def test_publish_not_ready_addresses(f: Fixture) -> None:
    """publishNotReadyAddresses: every endpoint is ready, whatever the pod says."""
    f.add(service(publish_not_ready=True), pod(1, ready=False), pod(2, terminating=True))
    await f.sync()
    assert endpoints_of(await f.slices()) == {"pod1": (True, False, False), "pod2": (True, True, True)}


async def test_named_ports_resolved_per_pod(f: Fixture) -> None:
    """TestReconcileEndpointSlicesNamedPorts: a named targetPort resolves per pod; pods whose
    ports differ go into different slices; a pod without the name has no port."""
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}])
    f.add(svc, pod(1, ports=[{"name": "http", "containerPort": 8080}]),
          pod(2, ports=[{"name": "http", "containerPort": 8080}]),
          pod(3, ports=[{"name": "http", "containerPort": 9090}]),
          pod(4, ports=[{"name": "http", "containerPort": 9090, "protocol": "UDP"}]))
    await f.sync()
    by_port = {tuple(p.port for p in s.ports or []): sorted(ep.target_ref.name for ep in s.endpoints)
               for s in await f.slices()}
    assert by_port == {(8080,): ["pod1", "pod2"], (9090,): ["pod3"], (): ["pod4"]}


async def test_update_changes_only_the_slice_concerned(f: Fixture) -> None:
    """TestReconcileEndpointSlicesUpdating: a pod's readiness change updates its slice in
    place (same name), and nothing else is written."""
    f.add(service(), *(pod(i) for i in range(150)))
    await f.sync()
    names = sorted(s.metadata.name for s in await f.slices())
    f.fake.clear_actions()
    f.add(pod(7, ready=False, rv="2", ready_at=NOW))
    await f.sync()
    assert f.writes() == [("update", "endpointslices", "")]
    assert sorted(s.metadata.name for s in await f.slices()) == names
    assert endpoints_of(await f.slices())["pod7"] == (False, False, False)
    [changed] = [s for s in await f.slices() if any(ep.target_ref.name == "pod7" for ep in s.endpoints)]
    assert changed.metadata.annotations[u.LAST_CHANGE_TRIGGER_TIME] == rfc3339(NOW)


async def test_removed_pods_then_placeholder(f: Fixture) -> None:
    """Pods going away shrink the slice; the last one leaves the placeholder (an update of the
    slice, not a delete + create: finalize turns the pair into one update)."""
    f.add(service(), pod(1), pod(2))
    await f.sync()
    [before] = await f.slices()
    f.remove(pod(2))
    f.fake.clear_actions()
    await f.sync()
    assert f.writes() == [("update", "endpointslices", "")]
    f.remove(pod(1))
    f.fake.clear_actions()
    await f.sync()
    assert f.writes() == [("update", "endpointslices", "")]
    [after] = await f.slices()
    assert after.metadata.name == before.metadata.name and not after.endpoints


async def test_new_endpoints_go_to_closest_fitting_slice() -> None:
    """TestReconcileEndpointSlicesSomePreexisting's rule (getSliceToFill): with slices of 3 and
    9 endpoints (max 10), one new pod goes into the fuller one; no slice is created."""
    f = await new_fixture(max_per_slice=10)
    f.add(service(), *(pod(i) for i in range(10)))
    await f.sync()
    f.add(*(pod(i) for i in range(10, 12)))
    await f.sync()                                 # 10 + 2: slices of 10 and 2
    assert sorted(len(s.endpoints) for s in await f.slices()) == [2, 10]
    f.remove(pod(0))                               # 9 and 2 now, one update
    await f.sync()
    f.fake.clear_actions()
    f.add(pod(20))
    await f.sync()
    assert f.writes() == [("update", "endpointslices", "")]
    assert sorted(len(s.endpoints) for s in await f.slices()) == [2, 10]


async def test_unowned_slices_are_deleted(f: Fixture) -> None:
    """A managed slice owned by an older Service of the same name (another UID) goes."""
    f.add(service(), pod(1))
    await f.sync()
    [s] = await f.slices()
    old = s.deep_copy()
    old.metadata.owner_references[0].uid = "older-uid"
    f.fake.recorder.recording = False
    await f.fake.discovery_v1().endpointslices("default").update(old)
    f.fake.recorder.recording = True
    f.esc.endpoint_slice_tracker.generations_by_service.clear()
    await f.refresh()
    await f.sync()
    [now] = await f.slices()
    assert now.metadata.owner_references[0].uid == "svc-uid" and len(now.endpoints) == 1


async def test_missing_node_skips_pod_and_retries(f: Fixture) -> None:
    """A pod on a Node that is gone is skipped (the rest published) and the sync fails so the
    Service is retried, with a FailedToUpdateEndpointSlices event."""
    f.add(service(), pod(1), pod(2, node="gone"))
    with pytest.raises(Exception, match="skipping Pod pod2 for Service default/foo: Node gone Not Found"):
        await f.esc.sync_service(KEY)
    assert endpoints_of(await f.slices()) == {"pod1": (True, True, False)}
    assert f.recorder.events[0].startswith("Warning FailedToUpdateEndpointSlices Error updating Endpoint Slices "
                                           "for Service default/foo:")


async def test_external_name_and_selectorless_services_are_skipped(f: Fixture) -> None:
    svc = service()
    svc.spec.type = "ExternalName"
    f.add(svc, pod(1))
    await f.sync()
    svc2 = service()
    svc2.spec.selector = None
    f.add(svc2)
    await f.sync()
    assert f.writes() == [] and await f.slices() == []


async def test_stale_informer_cache_waits(f: Fixture) -> None:
    """TestSyncServiceStaleInformer: a slice we created that the cache has not delivered makes
    the next sync fail instead of creating a duplicate."""
    f.add(service(), pod(1))
    await f.esc.sync_service(KEY)                  # the cache does not see the new slice
    with pytest.raises(StaleInformerCache, match="EndpointSlice informer cache is out of date"):
        await f.esc.sync_service(KEY)
    assert len(await f.slices()) == 1


async def test_deleted_service_forgets_trackers(f: Fixture) -> None:
    f.add(service(), pod(1))
    await f.sync()
    f.factory.core_v1().services().informer().get_indexer().delete(service())
    await f.sync()
    assert f.esc.endpoint_slice_tracker.generations_by_service == {}
    assert f.esc.trigger_time_tracker.service_states == {}


# --- handlers (endpointslice_controller_test.go) ----------------------------------------------

def drain(esc: EndpointSliceController) -> set[ObjectName]:
    out = set()
    while esc.queue.len():
        key = esc.queue._queue.popleft()
        esc.queue._dirty.discard(key)
        out.add(key)
    return out


async def test_pod_handlers_enqueue_member_services(f: Fixture) -> None:
    """TestPodAddsBatching / TestPodUpdatesBatching / GetServicesToUpdateOnPodChange: an added
    pod wakes its Services; an update only if readiness, IPs, deletion or labels changed; a
    label change wakes the old and the new Service."""
    other = service(selector={"app": "other"})
    other.metadata.name = "other"
    f.add(service(), other)
    f.esc.add_pod(pod(1))
    assert drain(f.esc) == {KEY}
    f.esc.update_pod(pod(1), pod(1))               # a resync: same resourceVersion
    f.esc.update_pod(pod(1), pod(1, rv="2"))       # nothing that matters changed
    assert drain(f.esc) == set()
    f.esc.update_pod(pod(1), pod(1, rv="2", ready=False))
    assert drain(f.esc) == {KEY}
    f.esc.update_pod(pod(1), pod(1, rv="2", labels={"app": "other"}))
    assert drain(f.esc) == {KEY, ObjectName("default", "other")}
    f.esc.delete_pod(pod(1))
    assert drain(f.esc) == {KEY}


async def test_slice_changed_by_someone_else_resyncs(f: Fixture) -> None:
    """onEndpointSliceUpdate: our own write (known generation) does not wake the Service; a
    newer generation does."""
    f.add(service(), pod(1))
    await f.sync()
    [s] = await f.slices()
    assert not f.esc.endpoint_slice_tracker.should_sync(s)
    newer = s.deep_copy()
    newer.metadata.generation = (s.metadata.generation or 0) + 1
    newer.metadata.resource_version = "999"
    assert f.esc.endpoint_slice_tracker.should_sync(newer)


def test_rfc3339_nano() -> None:
    assert u.rfc3339_nano(1_700_000_000.0) == "2023-11-14T22:13:20Z"
    assert u.rfc3339_nano(1_700_000_000.25) == "2023-11-14T22:13:20.25Z"



async def test_ipv6_service_and_hostname(f: Fixture) -> None:
    """TestReconcile1Pod (IPv6), ShouldSetHostname: an IPv6 Service gets an IPv6 slice of the
    pods' IPv6 addresses; a pod whose subdomain names the Service publishes its hostname."""
    svc = service()
    svc.spec.ip_families = ["IPv6"]
    svc.spec.cluster_ip = "fd00::10"
    p = pod(1, ip="fd00::1")
    p.spec.hostname, p.spec.subdomain = "web-1", "foo"
    other = pod(2, ip="1.2.3.4")                   # no IPv6 address: no endpoint
    f.add(svc, p, other)
    await f.sync()
    [s] = await f.slices()
    assert s.address_type == "IPv6"
    [ep] = s.endpoints
    assert (ep.addresses, ep.hostname) == (["fd00::1"], "web-1")


async def test_dual_stack_makes_slices_per_family(f: Fixture) -> None:
    """A dual-stack Service: one slice per family, each pod in both."""
    svc = service()
    svc.spec.ip_families = ["IPv4", "IPv6"]
    p = pod(1)
    p.status.pod_ips = [core_v1.PodIP(ip="1.2.0.2"), core_v1.PodIP(ip="fd00::2")]
    f.add(svc, p)
    await f.sync()
    got = sorted((s.address_type, s.endpoints[0].addresses) for s in await f.slices())
    assert got == [("IPv4", ["1.2.0.2"]), ("IPv6", ["fd00::2"])]


async def test_service_labels_follow(f: Fixture) -> None:
    """A label added to the Service reaches its slices (setEndpointSliceLabels: DeepEqual)."""
    f.add(service(), pod(1))
    await f.sync()
    f.add(service(labels={"tier": "web"}))
    f.fake.clear_actions()
    await f.sync()
    assert f.writes() == [("update", "endpointslices", "")]
    [s] = await f.slices()
    assert s.metadata.labels["tier"] == "web"

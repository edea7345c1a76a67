"""The controller on the fake clientset. ResourceQuota is not served yet, so its informer is
built by hand over a ResourceInfo of upstream's shape and preloaded, and status writes go
through the `quota_client` seam to a recorder; pods and services are real objects in the fake's
API server (seeded, then loaded into the monitor's caches)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.resources import ResourceInfo, Subresource
from kubeplane.api.types import core_v1
from kubeplane.client.informers import ResourceInformer, SharedInformerFactory
from kubeplane.client.rest import ResourceClient
from kubeplane.client.tools.cache.listers import GenericLister
from kubeplane.client.tools.cache.shared_informer import SharedIndexInformer
from kubeplane.controller.resourcequota import ResourceQuotaController, ResourceQuotaControllerOptions, served
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

RQ_INFO = ResourceInfo("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", True,
                       "io.k8s.api.core.v1.ResourceQuota", ("quota",), (),
                       (Subresource("status", "ResourceQuota", ("get", "patch", "update")),))


@dataclass
class StatusWrites:
    """Stands in for clientset.core_v1().resourcequotas(ns) until the kind is served."""
    type: type = core_v1.ResourceQuota
    written: list[dict[str, Any]] = field(default_factory=list)

    async def update_status(self, obj: core_v1.ResourceQuota) -> core_v1.ResourceQuota:
        self.written.append(types.to_dict(obj))
        return obj


@dataclass
class Fixture:
    fake: FakeClientset
    clock: FakeClock
    factory: SharedInformerFactory
    rq_informer: ResourceInformer[GenericLister[Any]]
    rqc: ResourceQuotaController
    writes: StatusWrites

    def add_quota(self, d: dict[str, Any]) -> None:
        self.rq_informer.informer().get_indexer().add(types.from_dict(d, core_v1.ResourceQuota))

    async def add(self, *objs: dict[str, Any]) -> None:
        for stored in await self.fake.seed(*objs):
            plural = "pods" if isinstance(stored, core_v1.Pod) else "services"
            getattr(self.factory.core_v1(), plural)().informer().get_indexer().add(stored)


@pytest.fixture
async def f() -> Fixture:
    clock = FakeClock(1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    shared = SharedIndexInformer(ResourceClient(fake.transport, RQ_INFO), name="resourcequotas", clock=clock)
    rq_informer: ResourceInformer[GenericLister[Any]] = ResourceInformer(RQ_INFO, shared, GenericLister)
    rqc = ResourceQuotaController(rq_informer, factory, fake, clock=clock)
    writes = StatusWrites()
    rqc.quota_client = lambda ns: writes            # type: ignore[method-assign,assignment,return-value]
    return Fixture(fake, clock, factory, rq_informer, rqc, writes)


def quota(hard: dict[str, str], status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": "default"},
            "spec": {"hard": hard, **spec}, "status": status or {}}


def pod(name: str, cpu: str, phase: str = "Running") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def test_resource_quotas_are_served() -> None:
    """The controller-manager starts the controller only when ResourceQuota is a served kind."""
    assert served("", "resourcequotas") is not None


async def test_sync_computes_usage_and_writes_status(f: Fixture) -> None:
    await f.add(pod("a", "100m"), pod("b", "1"), pod("done", "2", phase="Succeeded"),
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                 "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    f.add_quota(quota({"requests.cpu": "4", "pods": "10", "count/pods": "10", "services.nodeports": "2",
                       "count/deployments.apps": "1"}))
    f.fake.clear_actions()
    await f.rqc.sync_handler("default/quota")
    [written] = f.writes.written
    assert written["status"] == {
        "hard": {"requests.cpu": "4", "pods": "10", "count/pods": "10", "services.nodeports": "2",
                 "count/deployments.apps": "1"},
        "used": {"requests.cpu": "1100m", "pods": "2", "count/pods": "3", "services.nodeports": "1",
                 "count/deployments.apps": "0"}}
    # pods and services came from the monitor's caches; deployments (not watched) were listed
    assert [(a.verb, a.resource) for a in f.fake.actions] == [("list", "deployments")]


async def test_sync_without_changes_writes_nothing(f: Fixture) -> None:
    await f.add(pod("a", "100m"))
    f.add_quota(quota({"pods": "10"}, {"hard": {"pods": "10"}, "used": {"pods": "1"}}))
    await f.rqc.sync_handler("default/quota")
    assert f.writes.written == []


async def test_deleted_quota_is_a_no_op(f: Fixture) -> None:
    await f.rqc.sync_handler("default/gone")
    assert f.writes.written == []


def test_new_quota_goes_to_the_priority_queue(f: Fixture) -> None:
    f.rqc.add_quota(types.from_dict(quota({"pods": "1"}), core_v1.ResourceQuota))
    f.rqc.add_quota(types.from_dict(quota({"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "0"}})
                                    | {"metadata": {"name": "synced", "namespace": "default"}}, core_v1.ResourceQuota))
    assert len(f.rqc.missing_usage_queue) == 1 and len(f.rqc.queue) == 1


def test_status_only_updates_are_ignored(f: Fixture) -> None:
    old = types.from_dict(quota({"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "0"}}), core_v1.ResourceQuota)
    new = types.from_dict(quota({"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "1"}}), core_v1.ResourceQuota)
    f.rqc.update_quota(old, new)
    assert len(f.rqc.queue) == 0 and len(f.rqc.missing_usage_queue) == 0
    f.rqc.update_quota(old, types.from_dict(quota({"pods": "2"}, {"hard": {"pods": "1"}, "used": {"pods": "1"}}),
                                            core_v1.ResourceQuota))
    assert len(f.rqc.missing_usage_queue) == 1


async def test_pod_termination_and_deletion_replenish(f: Fixture) -> None:
    """The monitor's handlers on the pod informer queue the quotas tracking pods (not the
    services quota) when a pod finishes or is deleted; a status heartbeat queues nothing."""
    f.add_quota(quota({"pods": "1"}, {"hard": {"pods": "1"}, "used": {"pods": "1"}}))
    f.add_quota(quota({"services": "1"}, {"hard": {"services": "1"}, "used": {"services": "0"}})
                | {"metadata": {"name": "svc", "namespace": "default"}})
    pods = f.factory.core_v1().pods().informer()
    pods.add(types.from_dict(pod("a", "1"), core_v1.Pod))
    pods.update(types.from_dict(pod("a", "1"), core_v1.Pod))                        # heartbeat
    assert len(f.rqc.queue) == 0
    pods.update(types.from_dict(pod("a", "1", phase="Succeeded"), core_v1.Pod))     # finished
    assert await queued(f) == ["default/quota"]
    pods.delete(types.from_dict(pod("a", "1", phase="Succeeded"), core_v1.Pod))
    assert await queued(f) == ["default/quota"]


async def test_namespaces_without_quotas_are_not_looked_at(f: Fixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod finishing or deleted in a namespace without a quota asks nothing more (replenish_quota
    would find no quota there); a quota in another namespace does not change that, one in the
    pod's namespace does."""
    from kubeplane.controller.resourcequota import resource_quota_monitor as monitor
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(f.rqc.monitor, "replenish", lambda group, resource, ns: calls.append((resource, ns)))
    real_filter = monitor.update_gives_back
    filtered: list[str] = []

    def counting(resource: str, old: Any, new: Any, now: Any) -> bool:
        filtered.append(new.metadata.name)
        return real_filter(resource, old, new, now)
    monkeypatch.setattr(monitor, "update_gives_back", counting)
    f.add_quota(quota({"pods": "1"}) | {"metadata": {"name": "q", "namespace": "other"}})
    pods = f.factory.core_v1().pods().informer()
    pods.add(types.from_dict(pod("a", "1"), core_v1.Pod))
    pods.update(types.from_dict(pod("a", "1", phase="Succeeded"), core_v1.Pod))
    pods.delete(types.from_dict(pod("a", "1", phase="Succeeded"), core_v1.Pod))
    assert calls == [] and filtered == []
    f.add_quota(quota({"pods": "1"}))
    pods.add(types.from_dict(pod("b", "1"), core_v1.Pod))
    pods.update(types.from_dict(pod("b", "1", phase="Succeeded"), core_v1.Pod))
    pods.delete(types.from_dict(pod("b", "1", phase="Succeeded"), core_v1.Pod))
    assert calls == [("pods", "default"), ("pods", "default")] and filtered == ["b"]


async def queued(f: Fixture) -> list[str]:
    out = []
    while len(f.rqc.queue):
        key, _ = await f.rqc.queue.get()
        f.rqc.queue.done(key)
        out.append(key)
    return out


def test_periodic_resync_enqueues_every_quota(f: Fixture) -> None:
    f.add_quota(quota({"pods": "1"}))
    f.add_quota(quota({"pods": "1"}) | {"metadata": {"name": "b", "namespace": "other"}})
    f.rqc.enqueue_all()
    f.clock.step(1)
    assert len(f.rqc.queue) == 2


def test_options_are_upstreams_defaults() -> None:
    assert ResourceQuotaControllerOptions() == ResourceQuotaControllerOptions(workers=5, resync_period=300.0)

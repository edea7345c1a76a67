"""The pod garbage collector: upstream's TestGCTerminated, TestGCOrphaned,
TestGCUnscheduledTerminating and TestGCTerminating tables (gc_controller_test.go), as facts.

Pods and nodes live in a real in-process API server (FakeClientset); the listers are filled
by hand, as upstream's tests fill their informer stores.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.types import core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.podgc import PodGCController, PodGCControllerOptions
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


class Env:
    def __init__(self, clock: FakeClock, fake: FakeClientset, factory: SharedInformerFactory,
                 gcc: PodGCController) -> None:
        self.clock, self.fake, self.factory, self.gcc = clock, fake, factory, gcc

    async def pod(self, name: str, *, phase: str = "Running", node: str = "", created: float = 0,
                  reason: str = "", deleting: bool = False, keep: bool = False) -> core_v1.Pod:
        d: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        if node:
            d["spec"]["nodeName"] = node
        if deleting or keep:
            d["metadata"]["finalizers"] = ["test/keep"]
        [p] = await self.fake.seed(d)
        self.fake.recorder.recording = False
        try:
            p = p.deep_copy()
            p.status.phase, p.status.reason = phase, reason or None
            p = await self.fake.core_v1().pods("default").update_status(p)
            if deleting:
                await self.fake.core_v1().pods("default").delete(name)
                p = await self.fake.core_v1().pods("default").get(name)
        finally:
            self.fake.recorder.recording = True
        p.metadata.creation_timestamp = rfc3339(NOW + created)      # the order the test wants
        self.factory.core_v1().pods().informer().get_indexer().add(p)
        return p

    async def node(self, name: str, *, ready: bool = True, out_of_service: bool = False) -> None:
        d: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}
        if out_of_service:
            d["spec"]["taints"] = [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]
        [n] = await self.fake.seed(d)
        n = n.deep_copy()
        n.status = core_v1.NodeStatus(conditions=[core_v1.NodeCondition(type="Ready",
                                                                         status="True" if ready else "False")])
        self.factory.core_v1().nodes().informer().get_indexer().add(n)

    def deleted(self) -> list[str]:
        return sorted(a.name for a in self.fake.actions if a.verb == "delete" and a.resource == "pods")

    def status_patches(self) -> list[dict[str, Any]]:
        return [a.body for a in self.fake.actions if a.verb == "patch" and a.subresource == "status"]


async def new_env(threshold: int = 12500) -> Env:
    clock = FakeClock(start=NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    gcc = PodGCController(fake, factory.core_v1().pods(), factory.core_v1().nodes(), clock=clock,
                          options=PodGCControllerOptions(terminated_pod_threshold=threshold))
    return Env(clock, fake, factory, gcc)


@pytest.mark.parametrize("pods,threshold,want", [
    pytest.param([("a", "Failed", ""), ("b", "Succeeded", "")], 1, ["a"], id="oldest-first"),
    pytest.param([("a", "Failed", ""), ("b", "Succeeded", "")], 0, [], id="threshold-0-disables"),
    pytest.param([("a", "Failed", ""), ("b", "Succeeded", "")], 5, [], id="under-threshold"),
    pytest.param([("a", "Failed", ""), ("b", "Running", ""), ("c", "Succeeded", "")], 1, ["a"],
                 id="running-pods-not-counted"),
    pytest.param([("a", "Failed", ""), ("b", "Succeeded", ""), ("c", "Failed", "Evicted")], 1, ["a", "c"],
                 id="evicted-first"),
    pytest.param([("a", "Failed", "Evicted"), ("b", "Failed", "Evicted"), ("c", "Failed", "Evicted")], 1,
                 ["a", "b"], id="all-evicted-oldest-first"),
])
async def test_gc_terminated(pods, threshold, want) -> None:
    env = await new_env(threshold)
    for i, (name, phase, reason) in enumerate(pods):
        await env.pod(name, phase=phase, created=i, reason=reason, node="n")
    await env.node("n")
    await env.gcc.gc()
    assert env.deleted() == want
    assert env.status_patches() == []          # already finished: deleted as they are


async def test_gc_orphaned_waits_out_the_quarantine_then_fails_and_deletes() -> None:
    env = await new_env()
    await env.node("present")
    await env.pod("on-present", node="present")
    await env.pod("on-gone", node="gone", keep=True)       # a finalizer keeps it readable once deleted
    await env.pod("done-on-gone", node="gone", phase="Succeeded")
    await env.gcc.gc()
    assert env.deleted() == []                 # quarantined for 40 s
    env.clock.step(41)
    await env.gcc.gc()
    assert env.deleted() == ["done-on-gone", "on-gone"]
    (patch,) = env.status_patches()            # only the unfinished one is marked Failed first
    assert patch["status"]["phase"] == "Failed"
    (cond,) = patch["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == \
        ("DisruptionTarget", "True", "DeletionByPodGC", "PodGC: node no longer exists")
    gone = await env.fake.core_v1().pods("default").get("on-gone")
    assert gone.status.phase == "Failed" and gone.metadata.deletion_timestamp is not None
    assert any(m.manager == "PodGC" and m.operation == "Apply" and m.subresource == "status"
               for m in gone.metadata.managed_fields or ())


async def test_gc_orphaned_spares_a_node_that_exists_but_is_not_in_the_informer_yet() -> None:
    env = await new_env()
    await env.fake.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"}})
    await env.pod("p", node="late")
    await env.gcc.gc()
    env.clock.step(41)
    await env.gcc.gc()
    assert env.deleted() == []


async def test_gc_unscheduled_terminating() -> None:
    env = await new_env()
    await env.node("n")
    await env.pod("unscheduled-deleting", deleting=True)
    await env.pod("scheduled-deleting", node="n", deleting=True)
    await env.pod("unscheduled", phase="Pending")
    await env.gcc.gc()
    assert env.deleted() == ["unscheduled-deleting"]
    (patch,) = env.status_patches()
    assert patch["status"] == {"phase": "Failed"}


@pytest.mark.parametrize("ready,out_of_service,want", [
    pytest.param(False, True, ["p"], id="not-ready-and-out-of-service"),
    pytest.param(True, True, [], id="ready"),
    pytest.param(False, False, [], id="not-tainted"),
])
async def test_gc_terminating_on_out_of_service_nodes(ready, out_of_service, want) -> None:
    env = await new_env()
    await env.node("n", ready=ready, out_of_service=out_of_service)
    await env.pod("p", node="n", deleting=True)
    await env.pod("q", node="n")
    await env.gcc.gc()
    assert env.deleted() == want


async def test_force_deletions_are_counted_by_reason() -> None:
    from prometheus_client import REGISTRY

    def value() -> float:
        return REGISTRY.get_sample_value("pod_gc_collector_force_delete_pods_total",
                                         {"namespace": "default", "reason": "terminated"}) or 0.0
    before = value()
    env = await new_env(1)
    await env.node("n")
    for i in range(3):
        await env.pod(f"p{i}", phase="Succeeded", node="n", created=i)
    await env.gcc.gc()
    assert value() == before + 2

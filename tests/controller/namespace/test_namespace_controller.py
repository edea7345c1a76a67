"""The namespace controller against a real in-process API server, on a fake clock.

Upstream's timings are reproduced: a deleted namespace is looked at after a 5 s grace period;
content with a graceful termination (pods, 30 s by default) makes it look again after
30/2 + 1 = 16 s; then the namespace is finalized and the API server removes it.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.types import core_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.namespace import NamespaceController
from kubeplane.controller.namespace.deletion.status_condition_utils import (
    AllGVRDeletionMetadata, NamespaceConditionUpdater, update_conditions,
)
from kubeplane.utils.clock import FakeClock

NS = "team-a"


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, NamespaceController, FakeClock]]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    nc = NamespaceController(cs, factory.core_v1().namespaces(), clock=clock, workers=2)
    factory.start()
    task = asyncio.create_task(nc.run())
    await factory.wait_for_cache_sync()
    try:
        yield cs, nc, clock
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()


async def get_ns(cs: FakeClientset) -> Any:
    try:
        return await cs.core_v1().namespaces().get(NS)
    except errors.NotFound:
        return None


async def waiting(nc: NamespaceController) -> bool:
    """The controller has parked the namespace in its delaying queue (open watches also sleep
    on the clock, so clock.has_waiters() alone would not say the controller is waiting)."""
    return nc.queue._num_waiting() > 0


async def test_namespace_content_deleted_then_namespace_finalized(
        env: tuple[FakeClientset, NamespaceController, FakeClock]) -> None:
    cs, nc, clock = env
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}},
                  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    await cs.core_v1().namespaces().delete(NS)
    ns = await get_ns(cs)
    assert ns.status.phase == "Terminating" and ns.spec.finalizers == ["kubernetes"]

    # nothing happens during the 5 s grace period
    await eventually(lambda: waiting(nc), "the namespace to be queued after the grace period")
    assert collection_deletes(cs) == set()
    clock.step(4.9)
    assert not await _content_gone(cs)

    # after it: the content is deleted; the pod's 30 s grace period makes the deleter report
    # content remaining, but writing the conditions re-queues the namespace after the 5 s grace
    # period, and the earlier add wins (as upstream): the next look is 5 s later.
    clock.step(0.1)
    await eventually(lambda: _content_gone(cs), "the configmap and the pod to be deleted")
    await eventually(lambda: _conditions_written(cs), "the content conditions to be written")
    assert await get_ns(cs) is not None
    assert not [a for a in cs.actions if a.subresource == "finalize"]
    clock.step(4.9)
    await asyncio.sleep(0.05)
    assert await get_ns(cs) is not None, "finalized before the namespace was looked at again"

    clock.step(0.1)
    await eventually(lambda: _gone(cs), "the namespace to be finalized and removed")
    finalize = [a for a in cs.actions if a.subresource == "finalize"]
    assert len(finalize) == 1 and finalize[0].verb == "update"
    assert finalize[0].body["spec"]["finalizers"] == []
    assert {"pods", "configmaps", "secrets", "replicasets", "deployments", "leases"} <= collection_deletes(cs)


def collection_deletes(cs: FakeClientset) -> set[str]:
    """Resources whose whole collection in NS was deleted (the fake records DELETE without a
    name as verb "deletecollection")."""
    return {a.resource for a in cs.actions if a.verb == "deletecollection" and a.namespace == NS}


async def _content_gone(cs: FakeClientset) -> bool:
    cms = (await cs.core_v1().configmaps(NS).list()).items
    pods = (await cs.core_v1().pods(NS).list()).items
    return not cms and not pods


async def _conditions_written(cs: FakeClientset) -> bool:
    ns = await get_ns(cs)
    conds = {c.type: c for c in (ns.status.conditions or [])}
    if "NamespaceContentRemaining" not in conds:
        return False
    assert conds["NamespaceDeletionContentFailure"].status == "False"
    assert conds["NamespaceDeletionContentFailure"].reason == "ContentDeleted"
    return True


async def _gone(cs: FakeClientset) -> bool:
    return await get_ns(cs) is None


async def test_live_namespace_is_ignored(env: tuple[FakeClientset, NamespaceController, FakeClock]) -> None:
    cs, nc, clock = env
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}})
    await cs.core_v1().namespaces().patch(NS, {"metadata": {"labels": {"x": "y"}}}, "merge")
    clock.step(60)
    await nc.sync_namespace_from_key(NS)      # even a sync does nothing without deletionTimestamp
    assert [a.verb for a in cs.actions if a.verb not in ("get", "list", "watch")] == ["patch"]
    assert (await cs.core_v1().configmaps(NS).list()).items


async def test_content_with_finalizers_waits_15s(env: tuple[FakeClientset, NamespaceController, FakeClock]) -> None:
    """An object held by a finalizer is a normal reason to wait: requeue after 15/2 + 1 = 8 s."""
    cs, nc, clock = env
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                  {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "held", "namespace": NS, "finalizers": ["example.com/hold"]}})
    await cs.core_v1().namespaces().delete(NS)
    await eventually(lambda: waiting(nc), "the grace period")
    clock.step(5)

    async def marked() -> bool:
        cm = (await cs.core_v1().configmaps(NS).list()).items
        return bool(cm) and cm[0].metadata.deletion_timestamp is not None
    await eventually(marked, "the held configmap to be marked for deletion")

    async def finalizer_condition() -> Any:
        ns = await get_ns(cs)
        return next((c for c in ns.status.conditions or [] if c.type == "NamespaceFinalizersRemaining"
                     and c.status == "True"), None)
    cond = await eventually(finalizer_condition, "the finalizers-remaining condition")
    assert cond.reason == "SomeFinalizerRemain"
    assert cond.message == "Some finalizers are remaining: example.com/hold in 1 resource instances"

    # writing the conditions re-queued the namespace after 5 s; that look finds the object still
    # held and changes no condition, so the next look is 15/2 + 1 = 8 s later.
    clock.step(5)
    await eventually(lambda: _sync_count(cs, 2), "the second look")
    await eventually(lambda: waiting(nc), "the requeue")
    await cs.core_v1().configmaps(NS).patch("held", {"metadata": {"finalizers": None}}, "merge")
    clock.step(7.9)
    await asyncio.sleep(0.05)
    assert await get_ns(cs) is not None
    clock.step(0.1)
    await eventually(lambda: _gone(cs), "the namespace to be removed")


async def _sync_count(cs: FakeClientset, n: int) -> bool:
    return sum(1 for a in cs.actions if a.verb == "deletecollection" and a.resource == "configmaps") >= n


class _Remaining:
    def __init__(self, estimate: int) -> None:
        self.estimate, self.calls = estimate, 0

    async def delete(self, name: str) -> None:
        from kubeplane.controller.namespace.deletion import ResourcesRemainingError
        self.calls += 1
        raise ResourcesRemainingError(self.estimate)


async def test_remaining_content_requeues_after_half_the_estimate() -> None:
    """Pods with a 30 s grace period remain: look again after 30/2 + 1 = 16 s."""
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    factory = SharedInformerFactory(cs, clock=clock)
    nc = NamespaceController(cs, factory.core_v1().namespaces(), clock=clock)
    factory.start()
    try:
        await factory.wait_for_cache_sync()
        nc.namespaced_resources_deleter = _Remaining(30)      # type: ignore[assignment]
        nc.queue.add(NS)
        assert await nc.process_next_work_item()
        assert nc.namespaced_resources_deleter.calls == 1
        clock.step(15.9)
        assert nc.queue.len() == 0
        clock.step(0.1)
        assert nc.queue.len() == 1
        assert nc.queue.num_requeues(NS) == 0                 # a wait, not a failure backoff
    finally:
        await factory.shutdown()


def test_condition_updater_messages() -> None:
    u = NamespaceConditionUpdater("2024-01-01T00:00:00Z")
    u.process_content_totals(AllGVRDeletionMetadata({("", "pods"): 2, ("apps", "replicasets"): 1},
                                                    {"orphan": 1}))
    u.process_delete_content_err(RuntimeError("b failed"))
    u.process_delete_content_err(RuntimeError("a failed"))
    status = core_v1.NamespaceStatus()
    assert u.update(status)
    conds = {c.type: c for c in status.conditions}
    assert conds["NamespaceContentRemaining"].message == (
        "Some resources are remaining: pods. has 2 resource instances, replicasets.apps has 1 resource instances")
    assert conds["NamespaceFinalizersRemaining"].message == "Some finalizers are remaining: orphan in 1 resource instances"
    assert conds["NamespaceDeletionContentFailure"].message == (
        "Failed to delete all resource types, 2 remaining: a failed, b failed")
    assert conds["NamespaceDeletionDiscoveryFailure"].status == "False"
    assert conds["NamespaceDeletionDiscoveryFailure"].reason == "ResourcesDiscovered"
    # the same conditions again change nothing; a fix flips status and moves the transition time
    assert not update_conditions(status, [c for c in status.conditions if c.status == "True"], "2024-01-01T00:00:09Z")
    assert update_conditions(status, [], "2024-01-01T00:01:00Z")
    remaining = {c.type: c for c in status.conditions}["NamespaceContentRemaining"]
    assert (remaining.status, remaining.reason, remaining.last_transition_time) == (
        "False", "ContentRemoved", "2024-01-01T00:01:00Z")

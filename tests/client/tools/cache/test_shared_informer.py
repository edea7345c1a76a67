"""SharedIndexInformer: handler notifications, tombstones on relist, sync, resync.

Mirrors client-go shared_informer_test.go / controller_test.go behaviour with a scripted
ListerWatcher and a FakeClock.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.client.rest import ObjectList
from kubeplane.client.tools.cache import (
    DeletedFinalStateUnknown, ResourceEventHandlerFuncs, SharedIndexInformer, wait_for_cache_sync,
)
from kubeplane.utils.clock import FakeClock

from .fakes import FakeListerWatcher, added, cm, deleted, modified, settle


class Recorder:
    """A ResourceEventHandler that logs (verb, name, resourceVersions..., extra)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.same_object_updates = 0

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.log.append(("add", obj.metadata.name, obj.metadata.resource_version, is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.same_object_updates += old is new
        self.log.append(("update", new.metadata.name, old.metadata.resource_version, new.metadata.resource_version))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.log.append(("tombstone", obj.key, obj.obj.metadata.resource_version))
        else:
            self.log.append(("delete", obj.metadata.name, obj.metadata.resource_version))


class Broken:
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        raise RuntimeError("add")

    def on_update(self, old: Any, new: Any) -> None:
        raise RuntimeError("update")

    def on_delete(self, obj: Any) -> None:
        raise RuntimeError("delete")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def run(inf: SharedIndexInformer) -> asyncio.Task[None]:
    return asyncio.create_task(inf.run())


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_handler_sees_initial_list_then_watch_events(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "5"))
    inf = SharedIndexInformer(lw, name="configmaps", clock=clock)
    rec = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        await wait_for_cache_sync(inf)
        lw.push(added(cm("c", "6")), modified(cm("a", "7")), deleted(cm("b", "8")))
        assert await settle(lambda: len(rec.log) == 5)
        assert rec.log == [
            ("add", "a", "1", True), ("add", "b", "2", True),      # the first list: in the initial list
            ("add", "c", "6", False),
            ("update", "a", "1", "7"),                            # (old, new)
            ("delete", "b", "8"),                                 # the final state from the watch
        ]
        assert sorted(inf.get_store().list_keys()) == ["default/a", "default/c"]
        assert inf.last_sync_resource_version() == "8"
    finally:
        await stop(task)


async def test_relist_turns_missing_objects_into_tombstones(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "5"),
                           ObjectList([cm("a", "9"), cm("d", "10")], "12"))
    inf = SharedIndexInformer(lw, clock=clock)
    rec = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(errors.Gone())
        assert await settle(lambda: lw.count("list") == 2 and len(rec.log) == 5)
        assert rec.log[2:] == [
            ("update", "a", "1", "9"),
            ("add", "d", "10", False),                            # a relist is not the initial list
            ("tombstone", "default/b", "2"),                      # last state the cache knew
        ]
        assert sorted(inf.get_store().list_keys()) == ["default/a", "default/d"]
        assert inf.reflector.lists == 2
    finally:
        await stop(task)


async def test_tombstone_carries_the_cached_object(clock: FakeClock) -> None:
    last = cm("b", "2", data={"k": "v"})
    lw = FakeListerWatcher(ObjectList([last], "5"), ObjectList([], "9"))
    inf = SharedIndexInformer(lw, clock=clock)
    seen: list[Any] = []
    inf.add_event_handler(ResourceEventHandlerFuncs(delete_func=seen.append))
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(errors.Gone())
        assert await settle(lambda: bool(seen))
        assert seen == [DeletedFinalStateUnknown("default/b", last)]
        assert seen[0].obj is last
    finally:
        await stop(task)


async def test_late_handler_gets_adds_for_the_cache(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    early = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        await inf.wait_synced()
        late = inf.add_event_handler(Recorder())
        assert sorted(late.log) == [("add", "a", "1", True), ("add", "b", "2", True)]
        lw.push(modified(cm("a", "6")))
        assert await settle(lambda: len(late.log) == 3)
        assert late.log[-1] == early.log[-1] == ("update", "a", "1", "6")
    finally:
        await stop(task)


async def test_handler_registered_from_a_callback_gets_no_duplicate(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    inner = Recorder()
    inf.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda obj: inf.add_event_handler(inner)))
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(cm("a", "6")))
        assert await settle(lambda: bool(inner.log))
        await settle()
        assert inner.log == [("add", "a", "6", True)]           # the replay only, not a second ADD
    finally:
        await stop(task)


async def test_removed_handler_is_not_called(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    keep, drop = inf.add_event_handler(Recorder()), inf.add_event_handler(Recorder())
    inf.remove_event_handler(drop)
    task = await run(inf)
    try:
        lw.push(added(cm("a", "6")))
        assert await settle(lambda: bool(keep.log))
        assert drop.log == []
    finally:
        await stop(task)


async def test_mixed_handlers_are_called_in_registration_order(clock: FakeClock) -> None:
    """ResourceEventHandlerFuncs are dispatched to their functions directly (absent ones
    skipped), other handlers through their methods: one order for every event, the
    registration order, as upstream's listeners."""
    lw = FakeListerWatcher(ObjectList([cm("a", "1")], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    calls: list[tuple[str, str]] = []

    class Named(Recorder):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            calls.append((self.name, f"add {obj.metadata.name} {is_in_initial_list}"))

        def on_update(self, old: Any, new: Any) -> None:
            calls.append((self.name, f"update {new.metadata.name}"))

        def on_delete(self, obj: Any) -> None:
            calls.append((self.name, f"delete {obj.metadata.name}"))

    inf.add_event_handler(Named("h1"))
    inf.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda o: calls.append(("f2", f"add {o.metadata.name}")),
        delete_func=lambda o: calls.append(("f2", f"delete {o.metadata.name}"))))
    inf.add_event_handler(ResourceEventHandlerFuncs(
        update_func=lambda old, new: calls.append(("f3", f"update {new.metadata.name}"))))
    inf.add_event_handler(Named("h4"))
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(cm("b", "6")), modified(cm("b", "7")), deleted(cm("b", "8")))
        assert await settle(lambda: len(calls) == 12)
        assert calls == [
            ("h1", "add a True"), ("f2", "add a"), ("h4", "add a True"),
            ("h1", "add b False"), ("f2", "add b"), ("h4", "add b False"),
            ("h1", "update b"), ("f3", "update b"), ("h4", "update b"),
            ("h1", "delete b"), ("f2", "delete b"), ("h4", "delete b")]
    finally:
        await stop(task)


async def test_handler_removed_from_a_callback_still_gets_the_current_event(clock: FakeClock) -> None:
    """Dispatch iterates a snapshot of the handlers: one removed by an earlier handler's
    callback still sees the event being delivered, and none after it."""
    lw = FakeListerWatcher(ObjectList([], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    later = Recorder()
    inf.add_event_handler(ResourceEventHandlerFuncs(update_func=lambda old, new: inf.remove_event_handler(later)))
    inf.add_event_handler(later)
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(cm("a", "6")), modified(cm("a", "7")), modified(cm("a", "8")))
        assert await settle(lambda: len(later.log) == 2)
        await settle()
        assert later.log == [("add", "a", "6", False), ("update", "a", "6", "7")]
    finally:
        await stop(task)


async def test_has_synced_and_wait_for_cache_sync(clock: FakeClock) -> None:
    lw1 = FakeListerWatcher(ObjectList([cm("a", "1")], "5"))
    lw2 = FakeListerWatcher()                                 # its list has not answered yet
    inf1, inf2 = SharedIndexInformer(lw1, clock=clock), SharedIndexInformer(lw2, clock=clock)
    assert not inf1.has_synced()
    t1, t2 = await run(inf1), await run(inf2)
    try:
        waiter = asyncio.create_task(wait_for_cache_sync(inf1, inf2))
        assert await settle(inf1.has_synced)
        await settle()
        assert not inf2.has_synced() and not waiter.done()
        lw2.add_list(ObjectList([], "3"))
        assert await asyncio.wait_for(waiter, 5) is True
        assert inf2.has_synced()
    finally:
        await stop(t1)
        await stop(t2)


async def test_resync_redelivers_cached_objects_as_updates(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "5"))
    inf = SharedIndexInformer(lw, resync_period=30.0, clock=clock)
    rec = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        await inf.wait_synced()
        assert await settle(clock.has_waiters)
        clock.step(29.9)
        await settle()
        assert len(rec.log) == 2                                  # not yet
        clock.step(0.1)
        assert await settle(lambda: len(rec.log) == 4)
        assert sorted(rec.log[2:]) == [("update", "a", "1", "1"), ("update", "b", "2", "2")]
        assert rec.same_object_updates == 2                       # old is new on a resync
        clock.step(30)
        assert await settle(lambda: len(rec.log) == 6)
    finally:
        await stop(task)


async def test_resync_waits_for_the_first_list(clock: FakeClock) -> None:
    lw = FakeListerWatcher()
    inf = SharedIndexInformer(lw, resync_period=10.0, clock=clock)
    rec = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        assert await settle(clock.has_waiters)
        clock.step(10)
        await settle()
        assert rec.log == [] and not inf.has_synced()
    finally:
        await stop(task)


async def test_failing_handler_does_not_stop_the_others(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1")], "5"), ObjectList([], "20"))
    inf = SharedIndexInformer(lw, resync_period=60.0, clock=clock)
    inf.add_event_handler(Broken())
    rec = inf.add_event_handler(Recorder())
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(cm("b", "6")), modified(cm("b", "7")), deleted(cm("b", "8")))
        assert await settle(lambda: len(rec.log) == 4)
        clock.step(60)                                            # resync: Broken raises again
        assert await settle(lambda: len(rec.log) == 5)
        lw.push(errors.Gone())                                    # relist: tombstone for "a"
        assert await settle(lambda: len(rec.log) == 6)
        assert [e[0] for e in rec.log] == ["add", "add", "update", "delete", "update", "tombstone"]
        assert not task.done()
    finally:
        await stop(task)


async def test_custom_indexers_are_maintained(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1", labels={"app": "web"}), cm("b", "2", labels={"app": "db"})], "5"))
    inf = SharedIndexInformer(lw, clock=clock, indexers={"app": lambda o: [(o.metadata.labels or {})["app"]]})
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(modified(cm("b", "6", labels={"app": "web"})))
        assert await settle(lambda: inf.last_sync_resource_version() == "6")
        idx = inf.get_indexer()
        assert sorted(o.metadata.name for o in idx.by_index("app", "web")) == ["a", "b"]
        assert idx.list_index_func_values("app") == ["web"]
        idx._check_invariants()
    finally:
        await stop(task)


def with_managed_fields(obj: Any) -> Any:
    from kubeplane.api.types import meta_v1
    obj.metadata.managed_fields = [meta_v1.ManagedFieldsEntry(manager="kubectl", operation="Update")]
    return obj


async def test_transform_applies_to_listed_and_watched_objects_before_caching(clock: FakeClock) -> None:
    """Upstream: TestSharedInformerTransformer (shared_informer_test.go) — every object the
    handlers and the cache see has been through the transform; a tombstone is not transformed."""
    from kubeplane.client.tools.cache.shared_informer import transform_strip_managed_fields
    lw = FakeListerWatcher(ObjectList([with_managed_fields(cm("a", "1")), cm("b", "2")], "5"),
                           ObjectList([], "12"))
    inf = SharedIndexInformer(lw, clock=clock)
    inf.set_transform(transform_strip_managed_fields)
    seen: list[Any] = []
    inf.add_event_handler(ResourceEventHandlerFuncs(add_func=seen.append, update_func=lambda old, new: seen.append(new),
                                                    delete_func=seen.append))
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(with_managed_fields(cm("c", "6"))), modified(with_managed_fields(cm("a", "7"))),
                deleted(with_managed_fields(cm("c", "8"))))
        assert await settle(lambda: len(seen) == 5)
        assert [o.metadata.name for o in seen] == ["a", "b", "c", "a", "c"]
        assert all(o.metadata.managed_fields is None for o in seen)
        assert all(o.metadata.managed_fields is None for o in inf.get_store().list())
        lw.push(errors.Gone())                  # the relist finds nothing: tombstones of cached objects
        assert await settle(lambda: len(seen) == 7)
        assert {o.key for o in seen[5:]} == {"default/a", "default/b"}
    finally:
        await stop(task)


async def test_transform_can_replace_the_object(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1")], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    inf.set_transform(lambda obj: cm(obj.metadata.name, obj.metadata.resource_version, data={"t": "1"}))
    task = await run(inf)
    try:
        await inf.wait_synced()
        lw.push(added(cm("b", "6")))
        assert await settle(lambda: len(inf.get_store().list()) == 2)
        assert all(o.data == {"t": "1"} for o in inf.get_store().list())
    finally:
        await stop(task)


async def test_set_transform_after_start_is_refused(clock: FakeClock) -> None:
    """Upstream: SetTransform returns "informer has already started"."""
    lw = FakeListerWatcher(ObjectList([], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    task = await run(inf)
    try:
        await inf.wait_synced()
        with pytest.raises(RuntimeError, match="already started"):
            inf.set_transform(lambda obj: obj)
    finally:
        await stop(task)


def test_strip_managed_fields_leaves_objects_without_metadata() -> None:
    from kubeplane.client.tools.cache.shared_informer import transform_strip_managed_fields
    obj = with_managed_fields(cm("a", "1"))
    assert transform_strip_managed_fields(obj) is obj and obj.metadata.managed_fields is None
    assert transform_strip_managed_fields("x") == "x"


def pod(name: str, rv: str, *, image: str = "nginx", phase: str = "Pending", spec: bool = True) -> Any:
    from kubeplane.api.types import core_v1, meta_v1
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace="default", resource_version=rv),
                       spec=core_v1.PodSpec(containers=[core_v1.Container(name="c", image=image)]) if spec else None,
                       status=core_v1.PodStatus(phase=phase))


async def test_an_informer_sharing_specs_asks_its_watch_to_share_them(clock: FakeClock) -> None:
    """share_unchanged_specs makes every watch of the reflector hand unchanged specs over
    (ResourceClient.watch's share_unchanged_specs; tests/client/test_watch_decode.py); an
    informer that was not asked watches as before."""
    for share in (True, False):
        lw = FakeListerWatcher(ObjectList([pod("a", "1")], "5"))
        inf = SharedIndexInformer(lw, clock=clock)
        if share:
            inf.share_unchanged_specs()
        task = await run(inf)
        try:
            assert await settle(lambda lw=lw: lw.count("watch") == 1)     # type: ignore[misc]
            assert lw.watch_kwargs[0]["share_unchanged_specs"] is share
        finally:
            await stop(task)


async def test_a_status_write_reaches_the_handlers_with_the_cached_spec() -> None:
    """End to end through an in-process API server: the pod's status writes keep its stored
    spec's bytes, so the update's new object holds the cached object's spec (the kubelet's and
    the scheduler's spec comparisons find it the same at once); a changed spec is the new one.
    The watch compares with the object's previous event in the stream: its first event there
    (here after the list) is decoded as it is. Every object equals what the server stored."""
    from kubeplane.apiserver.server import APIServer
    from kubeplane.cmd.up import in_process_clientset
    from kubeplane.storage.memory import MemoryStorage
    from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

    api = APIServer(MemoryStorage(), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    pods = in_process_clientset(api, "test").core_v1().pods("default")
    await pods.create(pod("a", "", image="nginx"))
    inf = SharedIndexInformer(pods, clock=FakeClock())
    inf.share_unchanged_specs()
    updates: list[tuple[Any, Any]] = []
    inf.add_event_handler(ResourceEventHandlerFuncs(update_func=lambda old, new: updates.append((old, new))))
    task = await run(inf)
    try:
        await inf.wait_synced()
        await asyncio.sleep(0.05)                                  # the watch has started
        stored = []
        for change, sub in (({"status": {"phase": "Running"}}, "status"),
                            ({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "status"),
                            ({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}, ""),
                            ({"status": {"phase": "Succeeded"}}, "status")):
            stored.append(await pods.patch("a", change, subresource=sub))
        assert await settle(lambda: len(updates) == 4)
        (old1, new1), (old2, new2), (old3, new3), (old4, new4) = updates
        assert new1.spec is not old1.spec and new1.spec == old1.spec    # its first event in this watch
        assert new2.spec is new1.spec and new2.status.conditions[0].type == "Ready"
        assert new3.spec is not new2.spec and new3.spec.containers[0].image == "nginx:2"
        assert new4.spec is new3.spec and new4.status.phase == "Succeeded"
        assert new2.spec.containers[0].image == "nginx"                     # the old objects untouched
        assert [new1, new2, new3, new4] == stored
    finally:
        await stop(task)


async def test_specs_are_not_compared_unless_asked_for(clock: FakeClock) -> None:
    """An informer whose handlers do not compare specs (kube-controller-manager's) leaves
    every update's object as decoded."""
    lw = FakeListerWatcher(ObjectList([pod("a", "1")], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    task = await run(inf)
    try:
        await inf.wait_synced()
        first = inf.get_store().get_by_key("default/a")
        running = pod("a", "6", phase="Running")
        spec = running.spec
        lw.push(modified(running))
        assert await settle(lambda: inf.get_store().get_by_key("default/a") is running)
        assert running.spec is spec and running.spec is not first.spec and running.spec == first.spec
    finally:
        await stop(task)


async def test_objects_without_a_spec_are_left_as_they_are(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1", data={"k": "v"})], "5"))
    inf = SharedIndexInformer(lw, clock=clock)
    inf.share_unchanged_specs()
    task = await run(inf)
    try:
        await inf.wait_synced()
        new = cm("a", "6", data={"k": "v"})
        lw.push(modified(new))
        assert await settle(lambda: inf.get_store().get_by_key("default/a") is new)
        assert new.data == {"k": "v"}
    finally:
        await stop(task)

"""Reflector: list, watch from the list's resourceVersion, resume, relist on 410, back off.

Mirrors client-go reflector_test.go (TestReflectorListAndWatch, TestReflectorWatchHandler,
TestBackoff...) with a scripted ListerWatcher and a FakeClock: nothing sleeps.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.api.resources import lookup
from kubeplane.client.rest import ObjectList, ResourceClient
from kubeplane.client.tools.cache import Reflector
from kubeplane.client.tools.cache.reflector import Backoff
from kubeplane.client.transport import RawResponse
from kubeplane.utils.clock import FakeClock

from .fakes import END, FakeListerWatcher, RecordingStore, added, bookmark, cm, deleted, modified, settle


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def start(lw: FakeListerWatcher, clock: FakeClock) -> tuple[Reflector, RecordingStore, asyncio.Task[None]]:
    store = RecordingStore()
    r = Reflector("test", lw, store, clock=clock)
    r.backoff = Backoff(clock, jitter=0.0)      # exact delays
    return r, store, asyncio.create_task(r.run())


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_list_then_watch_from_the_lists_resource_version(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "10"))
    r, store, task = await start(lw, clock)
    try:
        assert await settle(lambda: lw.count("watch") == 1)
        assert lw.calls == [("list", ""), ("watch", "10")]
        assert store.ops == [("replace", (["a", "b"], "10"))]
        assert r.last_sync_resource_version == "10"
        kw = lw.watch_kwargs[0]
        assert kw["allow_watch_bookmarks"] is True
        assert 300 <= kw["timeout_seconds"] < 600          # randomised in [min, 2·min)

        lw.push(added(cm("c", "11")), modified(cm("a", "12")), deleted(cm("b", "13")))
        assert await settle(lambda: len(store.ops) == 4)
        assert store.ops[1:] == [("add", "c"), ("update", "a"), ("delete", "b")]
        assert r.last_sync_resource_version == "13"
    finally:
        await stop(task)


async def test_ended_watch_resumes_from_last_rv_without_relist(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    r, store, task = await start(lw, clock)
    try:
        lw.push(added(cm("a", "6")), modified(cm("a", "7")), END)
        assert await settle(lambda: lw.count("watch") == 2)
        assert lw.calls == [("list", ""), ("watch", "5"), ("watch", "7")]
        lw.push(added(cm("b", "8")), END)
        assert await settle(lambda: lw.count("watch") == 3)
        assert lw.calls[-1] == ("watch", "8")
        assert lw.count("list") == 1
        # every event applied exactly once across the three streams
        assert store.ops == [("replace", ([], "5")), ("add", "a"), ("update", "a"), ("add", "b")]
        assert not clock.has_waiters()                      # a productive watch is resumed at once
    finally:
        await stop(task)


async def test_very_short_empty_watch_backs_off(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    _, _, task = await start(lw, clock)
    try:
        lw.push(END)                                        # closed at once, nothing delivered
        assert await settle(clock.has_waiters)
        assert lw.count("watch") == 1
        clock.step(0.8)
        assert await settle(lambda: lw.count("watch") == 2)
        assert lw.calls[-1] == ("watch", "5")
    finally:
        await stop(task)


async def test_bookmark_only_advances_the_resource_version(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1")], "5"))
    r, store, task = await start(lw, clock)
    try:
        lw.push(bookmark("20"))
        assert await settle(lambda: r.last_sync_resource_version == "20")
        assert store.ops == [("replace", (["a"], "5"))]     # the store never saw the bookmark
        lw.push(END)
        assert await settle(lambda: lw.count("watch") == 2)
        assert lw.calls[-1] == ("watch", "20")
    finally:
        await stop(task)


async def test_gone_triggers_a_relist(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([cm("a", "1"), cm("b", "2")], "5"),
                           ObjectList([cm("a", "30")], "40"))
    r, store, task = await start(lw, clock)
    try:
        lw.push(added(cm("c", "6")), errors.Gone("too old resource version: 6 (30)"))
        assert await settle(lambda: lw.count("watch") == 2)
        assert lw.calls == [("list", ""), ("watch", "5"), ("list", ""), ("watch", "40")]
        assert store.ops == [("replace", (["a", "b"], "5")), ("add", "c"), ("replace", (["a"], "40"))]
        assert r.last_sync_resource_version == "40"
        assert r.lists == 2
    finally:
        await stop(task)


async def test_other_watch_errors_back_off_and_resume_without_relist(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    r, _, task = await start(lw, clock)
    try:
        lw.push(added(cm("a", "6")), ConnectionResetError("server went away"))
        assert await settle(clock.has_waiters)
        assert lw.count("watch") == 1
        clock.step(0.79)
        await settle()
        assert lw.count("watch") == 1                       # still backing off
        clock.step(0.01)
        assert await settle(lambda: lw.count("watch") == 2)
        assert lw.calls == [("list", ""), ("watch", "5"), ("watch", "6")]
        lw.push(errors.InternalError("etcd unavailable"))   # an ERROR event that is not 410
        assert await settle(clock.has_waiters)
        clock.step(1.6)                                     # second failure: doubled
        assert await settle(lambda: lw.count("watch") == 3)
        assert lw.calls[-1] == ("watch", "6") and r.lists == 1
    finally:
        await stop(task)


async def test_list_failures_back_off_exponentially_capped_at_30s(clock: FakeClock) -> None:
    delays = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    lw = FakeListerWatcher(*[errors.InternalError("boom")] * len(delays), ObjectList([cm("a", "1")], "9"))
    r, store, task = await start(lw, clock)
    try:
        for i, delay in enumerate(delays):
            assert await settle(clock.has_waiters)
            assert lw.count("list") == i + 1
            clock.step(delay - 0.005)
            await settle()
            assert lw.count("list") == i + 1, f"retried before {delay}s"
            clock.step(0.005)
            assert await settle(lambda n=i + 2: lw.count("list") == n)
        assert await settle(lambda: lw.count("watch") == 1)
        assert store.ops == [("replace", (["a"], "9"))]
        assert lw.calls[-1] == ("watch", "9")
    finally:
        await stop(task)


def test_backoff_jitter_and_reset() -> None:
    clock = FakeClock()
    b = Backoff(clock)
    for base in (0.8, 1.6, 3.2):
        assert base <= b.next() <= base * 1.1
    clock.step(121)                                         # quiet for longer than reset_after
    assert 0.8 <= b.next() <= 0.88
    clock.step(119)
    assert 1.6 <= b.next() <= 1.76


async def test_cancel_closes_the_watch_stream(clock: FakeClock) -> None:
    lw = FakeListerWatcher(ObjectList([], "5"))
    _, _, task = await start(lw, clock)
    assert await settle(lambda: lw.open_streams == 1)
    await stop(task)
    assert lw.open_streams == 0


async def test_cancel_during_backoff_propagates(clock: FakeClock) -> None:
    lw = FakeListerWatcher(errors.InternalError("boom"))
    _, _, task = await start(lw, clock)
    assert await settle(clock.has_waiters)
    await stop(task)
    assert not clock.has_waiters()


# --- ResourceClient.watch: the ListerWatcher the informers use ------------------------------------


class LinesTransport:
    """Answers every stream() with fixed lines (one watch response)."""

    def __init__(self, *lines: bytes) -> None:
        self.lines = lines
        self.queries: list[dict[str, str]] = []

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | None = None, content_type: str = "application/json") -> RawResponse:
        raise AssertionError("no plain requests expected")

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        self.queries.append(query)
        for line in self.lines:
            yield line

    async def close(self) -> None:
        pass


def line(type_: str, obj: dict) -> bytes:
    return orjson.dumps({"type": type_, "object": obj})


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default",
                                                            "resourceVersion": "7"}, "data": {"k": "v"}}
EXPIRED = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
           "message": "too old resource version: 3 (9)"}


async def test_resource_client_watch_decodes_events() -> None:
    tr = LinesTransport(line("ADDED", CM), line("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                                                             "metadata": {"resourceVersion": "12"}}),
                        line("DELETED", CM))
    rc = ResourceClient(tr, lookup("", "v1", "configmaps"), "default")
    evs = [ev async for ev in rc.watch(resource_version="5", allow_watch_bookmarks=True, timeout_seconds=300)]
    assert [(e.type, e.resource_version) for e in evs] == [("ADDED", "7"), ("BOOKMARK", "12"), ("DELETED", "7")]
    assert evs[0].obj.data == {"k": "v"} and evs[0].obj.metadata.name == "a"
    assert tr.queries == [{"watch": "true", "resourceVersion": "5", "timeoutSeconds": "300",
                           "allowWatchBookmarks": "true"}]


@pytest.mark.parametrize("lines", [
    pytest.param((line("ERROR", EXPIRED),), id="error-event"),
    pytest.param((orjson.dumps(EXPIRED),), id="plain-status"),
])
async def test_resource_client_watch_raises_gone(lines: tuple[bytes, ...]) -> None:
    rc = ResourceClient(LinesTransport(*lines), lookup("", "v1", "configmaps"))
    with pytest.raises(errors.Gone, match="too old resource version"):
        async for _ in rc.watch(resource_version="3"):
            pass

"""Test doubles for the cache tests: a scripted ListerWatcher and a recording store."""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, AsyncIterator, Callable

from kubeplane.api.types import core_v1, meta_v1
from kubeplane.client.rest import Event, ObjectList

END = object()          # put on FakeListerWatcher.events: the current watch stream ends


def cm(name: str, rv: str, ns: str = "default", *, labels: dict[str, str] | None = None,
       data: dict[str, str] | None = None) -> core_v1.ConfigMap:
    return core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name=name, namespace=ns or None, resource_version=rv,
                                                         labels=labels), data=data)


def added(obj: Any) -> Event[Any]:
    return Event("ADDED", obj, obj.metadata.resource_version)


def modified(obj: Any) -> Event[Any]:
    return Event("MODIFIED", obj, obj.metadata.resource_version)


def deleted(obj: Any) -> Event[Any]:
    return Event("DELETED", obj, obj.metadata.resource_version)


def bookmark(rv: str) -> Event[Any]:
    return Event("BOOKMARK", core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(resource_version=rv)), rv)


class FakeListerWatcher:
    """list() answers from `lists` (an ObjectList, or an exception to raise; empty: wait).

    Every watch() reads the shared `events` queue: an Event is delivered, an exception is
    raised, END finishes that stream. `calls` records ("list", rv) / ("watch", rv) in order.
    """

    def __init__(self, *lists: ObjectList[Any] | Exception) -> None:
        self.lists: deque[ObjectList[Any] | Exception] = deque(lists)
        self.events: asyncio.Queue[Any] = asyncio.Queue()
        self.calls: list[tuple[str, str]] = []
        self.watch_kwargs: list[dict[str, Any]] = []
        self.open_streams = 0
        self._more_lists = asyncio.Event()

    def add_list(self, lst: ObjectList[Any] | Exception) -> None:
        self.lists.append(lst)
        self._more_lists.set()

    def push(self, *items: Any) -> None:
        for item in items:
            self.events.put_nowait(item)

    async def list(self, *, resource_version: str = "") -> ObjectList[Any]:
        self.calls.append(("list", resource_version))
        while not self.lists:
            self._more_lists.clear()
            await self._more_lists.wait()
        item = self.lists.popleft()
        if isinstance(item, Exception):
            raise item
        return item

    async def watch(self, *, resource_version: str = "", allow_watch_bookmarks: bool = False,
                    timeout_seconds: int | None = None, share_unchanged_specs: bool = False
                    ) -> AsyncIterator[Event[Any]]:
        self.calls.append(("watch", resource_version))
        self.watch_kwargs.append({"allow_watch_bookmarks": allow_watch_bookmarks, "timeout_seconds": timeout_seconds,
                                  "share_unchanged_specs": share_unchanged_specs})
        self.open_streams += 1
        try:
            while True:
                item = await self.events.get()
                if item is END:
                    return
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.open_streams -= 1

    def count(self, verb: str) -> int:
        return sum(1 for v, _ in self.calls if v == verb)


class RecordingStore:
    """A ReflectorStore that records what the reflector asked of it."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, Any]] = []

    def replace(self, objs: list[Any], resource_version: str) -> None:
        self.ops.append(("replace", ([o.metadata.name for o in objs], resource_version)))

    def add(self, obj: Any) -> None:
        self.ops.append(("add", obj.metadata.name))

    def update(self, obj: Any) -> None:
        self.ops.append(("update", obj.metadata.name))

    def delete(self, obj: Any) -> None:
        self.ops.append(("delete", obj.metadata.name))


async def settle(cond: Callable[[], bool] = lambda: False, *, rounds: int = 200) -> bool:
    """Let other tasks run (no wall-clock time passes) until cond() holds; returns cond()."""
    for _ in range(rounds):
        if cond():
            return True
        await asyncio.sleep(0)
    return cond()

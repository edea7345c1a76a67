"""The objects under one storage prefix, kept current from a watch, for plugins on the pod
create path (LimitRanger, Priority) that must cost nothing when there is nothing to find.

Upstream's plugins read an informer's lister; here the plugin lists the prefix once, then opens
a storage watch after that revision and, on each look-up, applies the events the watch has
ready (a store's watcher that offers `changes()`, as the memory and SQLite stores' do). So a
look-up is always as current as a storage read (no informer lag: a LimitRange created just
before a pod applies to it) and, while nothing under the prefix changes, costs a look at one
future plus dict look-ups, instead of a list or a prefix count per pod (~2-9 us each) or a
scan of every write since the previous look-up (which grew with the cluster's write rate).
A watcher without `changes()`, or one that fell out of the history window, means a list.
"""
from __future__ import annotations

from typing import Any

from ....storage.interface import Compacted, Storage

Obj = dict[str, Any]


def _none() -> None:
    return None


class NotReady:
    """PrefixIndex.get_now's answer when only an awaited look-up can tell."""


NOT_READY = NotReady()


class PrefixIndex:
    def __init__(self, storage: Storage, prefix: str) -> None:
        self.storage = storage
        self.prefix = prefix
        self._by_ns: dict[str, dict[str, Obj]] = {}     # namespace ("" if cluster-scoped) -> key -> object
        self._watcher: Any = None
        # The future the next write under the prefix resolves (LogWatcher.waiter(), armed by
        # changes()): while it is pending, a look-up is one done() call.
        self._waiter: Any = None
        # Bumped by every change applied: a plugin may keep what it derived from the objects
        # (Priority's default class) until it moves.
        self.generation = 0

    async def namespace(self, ns: str) -> list[Obj]:
        """The current objects of namespace ns (read-only), in key order."""
        by_ns = self._by_ns if self.poll() is not None else await self._current()
        objs = by_ns.get(ns)
        return [objs[k] for k in sorted(objs)] if objs else []

    async def has(self, ns: str) -> bool:
        """Whether namespace ns holds any object under the prefix."""
        return ns in (self._by_ns if self.poll() is not None else await self._current())

    async def get(self, ns: str, key: str) -> Obj | None:
        """The current object stored under key (in namespace ns), or None (read-only)."""
        objs = (self._by_ns if self.poll() is not None else await self._current()).get(ns)
        return objs.get(key) if objs else None

    # The *_now look-ups answer without waiting, for a plugin's admit_now/validate_now; they
    # answer NOT_READY (None for has_now) when a (re)list is due: the plugin then awaits.

    # Each first looks at the waiter itself: while nothing under the prefix was written (nearly
    # every request), that is the whole freshness check, without the call of poll().

    def namespace_now(self, ns: str) -> list[Obj] | None:
        """namespace(ns), or None when a (re)list is due."""
        waiter = self._waiter
        if (waiter is None or waiter.done()) and self.poll() is None:
            return None
        objs = self._by_ns.get(ns)
        return [objs[k] for k in sorted(objs)] if objs else []

    def has_now(self, ns: str) -> bool | None:
        """has(ns), or None when a (re)list is due."""
        waiter = self._waiter
        if (waiter is None or waiter.done()) and self.poll() is None:
            return None
        return ns in self._by_ns

    def get_now(self, ns: str, key: str) -> Obj | None | NotReady:
        """get(ns, key), or NOT_READY when a (re)list is due."""
        waiter = self._waiter
        if (waiter is None or waiter.done()) and self.poll() is None:
            return NOT_READY
        objs = self._by_ns.get(ns)
        return objs.get(key) if objs else None

    async def all(self) -> list[Obj]:
        """Every current object under the prefix (read-only), in key order."""
        await self._current()
        return self.polled()

    def polled(self) -> list[Obj]:
        """Every object as of the last poll() or look-up (read-only), in key order."""
        by_ns = self._by_ns
        return [obj for ns in sorted(by_ns) for _, obj in sorted(by_ns[ns].items())]

    def stop(self) -> None:
        """Stop following the store (the next look-up lists again)."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = self._waiter = None

    async def refresh(self) -> int:
        """Apply what changed since the last look-up; the generation after it."""
        await self._current()
        return self.generation

    def poll(self) -> int | None:
        """The generation after applying what changed, without waiting (no coroutine, for a
        plugin with nothing to do on most requests); None when a (re)list is due: refresh()."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():       # nothing written under the prefix since
            return self.generation
        watcher = self._watcher
        changes = getattr(watcher, "changes", None)
        if changes is None:
            return None
        try:
            for ev in changes():
                self._apply(ev.type, ev.kv.key, ev.kv.obj)
        except Compacted:
            return None
        self._waiter = getattr(watcher, "waiter", _none)()
        return self.generation

    async def _current(self) -> dict[str, dict[str, Obj]]:
        if self.poll() is not None:
            return self._by_ns
        await self._relist()
        self.generation += 1
        return self._by_ns

    async def _relist(self) -> None:
        kvs, rev = await self.storage.list(self.prefix)
        self._by_ns = {}
        for kv in kvs:
            self._apply("ADDED", kv.key, kv.obj)
        if self._watcher is not None:
            self._watcher.stop()
        self._waiter = None
        watcher = self.storage.watch(self.prefix, rev)
        if hasattr(watcher, "changes"):
            self._watcher = watcher
        else:                                     # no way to read it without waiting: list each time
            watcher.stop()
            self._watcher = None

    def _apply(self, type_: str, key: str, obj: Obj) -> None:
        self.generation += 1
        rest = key[len(self.prefix):]
        ns = rest.split("/", 1)[0] if "/" in rest else ""
        if type_ == "DELETED":
            objs = self._by_ns.get(ns)
            if objs is not None:
                objs.pop(key, None)
                if not objs:
                    del self._by_ns[ns]
        else:
            self._by_ns.setdefault(ns, {})[key] = obj

"""Hypothesis stateful test: each backend against a dict model, including its watch stream,
the history window (bounded by count and bytes, compacted) and, for sqlite, restarts: after a
reopen the window holds the same events with the same prev objects."""
from __future__ import annotations

import asyncio
import pathlib
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Coroutine, TypeVar

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kubeplane.storage import (
    DEFAULT_HISTORY_BYTES, Compacted, KeyExists, KeyNotFound, MemoryStorage, RevisionMismatch,
    Storage, Watcher, new_storage,
)
from kubeplane.storage import watch_log

T = TypeVar("T")
KEYS = ["/r/a/x", "/r/a/y", "/r/ab/z", "/r/b/x", "/s/x"]
WATCHED = ["", "/r/a/"]
PREFIXES = ["", "/r/", "/r/a/", "/r/ab", "/r/a", "/s/", "/t/"]
keys = st.sampled_from(KEYS)
pads = st.sampled_from([0, 40, 400])          # objects of ~50, ~90 and ~450 bytes
# How update/delete pass expected_revision: not at all, the current one, or a stale one.
expectations = st.sampled_from(["none", "current", "stale"])


@dataclass
class WatchModel:
    """A watcher under test and what it must yield next."""

    watcher: Watcher
    cursor: int                         # revision of the last event it delivered (or start)
    pending: list[tuple[str, str, int, int]] = field(default_factory=list)  # type, key, rev, v


class StorageMachine(RuleBasedStateMachine):
    backend = "memory"
    capacity, min_bytes = 10_000, DEFAULT_HISTORY_BYTES     # the history bounds

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = tempfile.mkdtemp(prefix="kubeplane-storage-")
        self.store: Storage = self._open()
        self.model: dict[str, tuple[int, int, int]] = {}    # key -> (create_rev, mod_rev, v)
        self.rev = 0
        self.watchers = self._watch(0)
        # The history: every event as (type, key, rev, v, (prev rev, prev v) or None); the window
        # as (rev, bytes) of the events after `floor`; the bytes of each current object.
        self.history: list[tuple[str, str, int, int, tuple[int, int] | None]] = []
        self.window: list[tuple[int, int]] = []
        self.floor = 0
        self.sizes: dict[str, int] = {}

    def _watch(self, after: int) -> dict[str, WatchModel]:
        """One watcher of everything and one of a prefix."""
        return {p: WatchModel(self.store.watch(p, after), after) for p in WATCHED}

    def _expect(self, typ: str, key: str, v: int, size: int, prev: tuple[int, int] | None) -> None:
        for prefix, wm in self.watchers.items():
            if key.startswith(prefix):
                wm.pending.append((typ, key, self.rev, v))
        self.history.append((typ, key, self.rev, v, prev))
        if typ == "DELETED":
            del self.sizes[key]
        else:
            self.sizes[key] = size
        # The window: evict the oldest beyond the count, or beyond the bytes (keeping the newest).
        self.window.append((self.rev, size))
        budget = max(self.min_bytes, 8 * sum(self.sizes.values()))
        while len(self.window) > self.capacity or (
                len(self.window) > 1 and sum(n for _, n in self.window) > budget):
            self.floor = self.window.pop(0)[0]

    def _open(self) -> Storage:
        return new_storage(self.backend, pathlib.Path(self.dir), history=self.capacity,
                           history_bytes=self.min_bytes)

    def _obj(self, key: str, v: int, pad: int) -> dict[str, Any]:
        return {"metadata": {"name": key}, "v": v, "pad": "x" * pad}

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def _expected(self, key: str, mode: str) -> int | None:
        mod = self.model[key][1] if key in self.model else 1
        return {"none": None, "current": mod, "stale": mod - 1}[mode]

    @rule(key=keys, v=st.integers(0, 9), pad=pads)
    def create(self, key: str, v: int, pad: int) -> None:
        if key in self.model:
            with pytest.raises(KeyExists):
                self.run(self.store.create(key, self._obj(key, v, pad)))
            return
        kv = self.run(self.store.create(key, self._obj(key, v, pad)))
        self.rev += 1
        assert (kv.create_revision, kv.mod_revision) == (self.rev, self.rev)
        self.model[key] = (self.rev, self.rev, v)
        self._expect("ADDED", key, v, len(kv.value), None)

    @rule(key=keys, v=st.integers(0, 9), mode=expectations, pad=pads)
    def update(self, key: str, v: int, mode: str, pad: int) -> None:
        call = self.store.update(key, self._obj(key, v, pad), self._expected(key, mode))
        if key not in self.model:
            with pytest.raises(KeyNotFound):
                self.run(call)
        elif mode == "stale":
            with pytest.raises(RevisionMismatch):
                self.run(call)
        else:
            kv = self.run(call)
            self.rev += 1
            assert kv.mod_revision == self.rev
            prev = self.model[key][1:]
            self.model[key] = (self.model[key][0], self.rev, v)
            self._expect("MODIFIED", key, v, len(kv.value), prev)

    @rule(key=keys, mode=expectations)
    def delete(self, key: str, mode: str) -> None:
        call = self.store.delete(key, self._expected(key, mode))
        if key not in self.model:
            with pytest.raises(KeyNotFound):
                self.run(call)
        elif mode == "stale":
            with pytest.raises(RevisionMismatch):
                self.run(call)
        else:
            kv = self.run(call)
            self.rev += 1
            assert kv.mod_revision == self.rev and kv.obj["metadata"]["resourceVersion"] == str(self.rev)
            _, mod, v = self.model.pop(key)
            self._expect("DELETED", key, v, len(kv.value), (mod, v))

    @rule(back=st.integers(0, 5))
    def compact(self, back: int) -> None:
        target = max(0, self.rev - back)
        self.run(self.store.compact(target))
        self.floor = max(self.floor, target)
        self.window = [(r, n) for r, n in self.window if r > self.floor]

    @precondition(lambda self: self.backend == "sqlite")
    @rule()
    def reopen(self) -> None:
        oldest = self.store.oldest_revision
        for wm in self.watchers.values():
            wm.watcher.stop()
        self.run(self.store.close())
        self.store = self._open()
        assert self.store.oldest_revision == oldest
        self.watchers = self._watch(self.rev)       # the invariant checked every event so far

    @invariant()
    def state_matches_model(self) -> None:
        s = self.store
        assert s.revision == self.rev
        for key in KEYS:
            kv = self.run(s.get(key))
            want = self.model.get(key)
            got = kv and (kv.create_revision, kv.mod_revision, kv.obj["v"])
            assert got == want, key
        for prefix in PREFIXES:
            kvs, at = self.run(s.list(prefix))
            assert at == self.rev
            assert [kv.key for kv in kvs] == sorted(k for k in self.model if k.startswith(prefix))
            assert self.run(s.count(prefix)) == len(kvs)
        assert isinstance(s, MemoryStorage)
        s._check_invariants()

    @invariant()
    def window_matches_model(self) -> None:
        """The window is what the bounds and compactions leave, with every prev object."""
        s = self.store
        assert s.oldest_revision == self.floor
        assert isinstance(s, MemoryStorage)
        evs = s.watch("", self.floor).ready()
        got = [(e.type, e.kv.key, e.revision, e.kv.obj["v"], e.prev and (e.prev.mod_revision, e.prev.obj["v"]))
               for e in evs]
        assert got == self.history[len(self.history) - len(got):] and len(got) == self.rev - self.floor
        for e in evs:
            assert e.prev is None or e.prev.obj["metadata"]["resourceVersion"] == str(e.prev.mod_revision)

    @invariant()
    def watch_stream_matches_model(self) -> None:
        for prefix, wm in self.watchers.items():
            # A watcher is behind if it has not passed the evicted or compacted revisions yet,
            # even when none of them is under its prefix: it can no longer prove it missed nothing.
            if wm.cursor < self.store.oldest_revision:
                with pytest.raises(Compacted):
                    self.run(asyncio.wait_for(anext(wm.watcher), 5))
                self.watchers[prefix] = WatchModel(self.store.watch(prefix, self.rev), self.rev)
                continue
            while wm.pending:
                typ, key, rev, v = wm.pending.pop(0)
                ev = self.run(asyncio.wait_for(anext(wm.watcher), 5))
                assert (ev.type, ev.kv.key, ev.revision, ev.kv.obj["v"]) == (typ, key, rev, v)
                assert ev.kv.obj["metadata"]["resourceVersion"] == str(rev)
                wm.cursor = rev

    def teardown(self) -> None:
        for wm in self.watchers.values():
            wm.watcher.stop()
        self.run(self.store.close())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class SqliteMachine(StorageMachine):
    backend = "sqlite"


class BoundedMemoryMachine(StorageMachine):
    """A window of 12 events and at least 1,000 bytes: both bounds evict all the time."""
    capacity, min_bytes = 12, 1000


class BoundedSqliteMachine(BoundedMemoryMachine):
    backend = "sqlite"


class LeanMemoryMachine(StorageMachine):
    """Replaced versions made lean 3 revisions later (watch_log.LEAN_LAG): the window and the
    watchers read them back decoded from their bytes."""
    lean_lag = 3

    def __init__(self) -> None:
        self.saved_lag, watch_log.LEAN_LAG = watch_log.LEAN_LAG, self.lean_lag
        super().__init__()

    def teardown(self) -> None:
        super().teardown()
        watch_log.LEAN_LAG = self.saved_lag


class LeanSqliteMachine(LeanMemoryMachine):
    backend = "sqlite"


TestMemoryStateful = StorageMachine.TestCase
TestSqliteStateful = SqliteMachine.TestCase
TestBoundedMemoryStateful = BoundedMemoryMachine.TestCase
TestBoundedSqliteStateful = BoundedSqliteMachine.TestCase
TestMemoryStateful.settings = TestSqliteStateful.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None)
TestBoundedMemoryStateful.settings = TestBoundedSqliteStateful.settings = TestMemoryStateful.settings
TestLeanMemoryStateful = LeanMemoryMachine.TestCase
TestLeanSqliteStateful = LeanSqliteMachine.TestCase
TestLeanMemoryStateful.settings = TestLeanSqliteStateful.settings = TestMemoryStateful.settings

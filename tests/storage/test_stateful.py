"""Hypothesis stateful test: each backend against a dict model, including its watch stream."""
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
    Compacted, KeyExists, KeyNotFound, MemoryStorage, RevisionMismatch, Storage, Watcher,
    new_storage,
)

T = TypeVar("T")
KEYS = ["/r/a/x", "/r/a/y", "/r/ab/z", "/r/b/x", "/s/x"]
WATCHED = ["", "/r/a/"]
PREFIXES = ["", "/r/", "/r/a/", "/r/ab", "/r/a", "/s/", "/t/"]
keys = st.sampled_from(KEYS)
# How update/delete pass expected_revision: not at all, the current one, or a stale one.
expectations = st.sampled_from(["none", "current", "stale"])


@dataclass
class WatchModel:
    """A watcher under test and what it must yield next."""

    watcher: Watcher
    cursor: int                         # revision of the last event it delivered (or start)
    pending: list[tuple[str, str, int, int]] = field(default_factory=list)  # type, key, rev, v
    compacted: bool = False             # its next iteration must raise Compacted


class StorageMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = tempfile.mkdtemp(prefix="kubeplane-storage-")
        self.store: Storage = self._open()
        self.model: dict[str, tuple[int, int, int]] = {}    # key -> (create_rev, mod_rev, v)
        self.rev = 0
        self.watchers = self._watch(0)

    def _watch(self, after: int) -> dict[str, WatchModel]:
        """One watcher of everything and one of a prefix."""
        return {p: WatchModel(self.store.watch(p, after), after) for p in WATCHED}

    def _expect(self, typ: str, key: str, v: int) -> None:
        for prefix, wm in self.watchers.items():
            if key.startswith(prefix):
                wm.pending.append((typ, key, self.rev, v))

    def _open(self) -> Storage:
        return new_storage(self.backend, pathlib.Path(self.dir), history=10_000)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def _expected(self, key: str, mode: str) -> int | None:
        mod = self.model[key][1] if key in self.model else 1
        return {"none": None, "current": mod, "stale": mod - 1}[mode]

    @rule(key=keys, v=st.integers(0, 9))
    def create(self, key: str, v: int) -> None:
        if key in self.model:
            with pytest.raises(KeyExists):
                self.run(self.store.create(key, {"metadata": {"name": key}, "v": v}))
            return
        kv = self.run(self.store.create(key, {"metadata": {"name": key}, "v": v}))
        self.rev += 1
        assert (kv.create_revision, kv.mod_revision) == (self.rev, self.rev)
        self.model[key] = (self.rev, self.rev, v)
        self._expect("ADDED", key, v)

    @rule(key=keys, v=st.integers(0, 9), mode=expectations)
    def update(self, key: str, v: int, mode: str) -> None:
        call = self.store.update(key, {"metadata": {"name": key}, "v": v}, self._expected(key, mode))
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
            self.model[key] = (self.model[key][0], self.rev, v)
            self._expect("MODIFIED", key, v)

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
            v = self.model.pop(key)[2]
            self._expect("DELETED", key, v)

    @rule(back=st.integers(0, 5))
    def compact(self, back: int) -> None:
        target = max(0, self.rev - back)
        self.run(self.store.compact(target))
        assert self.store.oldest_revision >= min(target, self.rev)
        for wm in self.watchers.values():
            # A watcher is behind if it has not passed the compacted revisions yet, even
            # when none of them is under its prefix: it can no longer prove it missed nothing.
            wm.compacted |= wm.cursor < self.store.oldest_revision

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
    def watch_stream_matches_model(self) -> None:
        for prefix, wm in self.watchers.items():
            if wm.compacted:
                with pytest.raises(Compacted):
                    self.run(anext(wm.watcher))
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


TestMemoryStateful = StorageMachine.TestCase
TestSqliteStateful = SqliteMachine.TestCase
TestMemoryStateful.settings = TestSqliteStateful.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None)

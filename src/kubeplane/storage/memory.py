"""MemoryStorage: the revision log held in process memory (tests, and the base of sqlite).

Current state is a dict key -> KeyValue plus a SortedKeys index for prefix listing; history
is the shared WatchLog, bounded by `history` events and by their bytes (`history_bytes`, or 8 x
the live data if more: watch_log.py says why). No method awaits anything, so each call runs to completion on the
event loop and every write is atomic with respect to other tasks.

A write builds its WatchEvent first, hands it to `_persist` (a no-op here; SqliteStorage
queues it for its next batch commit there), and only then applies it in memory. So a persist
that refuses (a failed store) leaves memory and the revision counter untouched.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from .interface import KeyExists, KeyNotFound, KeyValue, RevisionMismatch, WatchEvent
from .sorted_keys import SortedKeys
from .watch_log import DEFAULT_HISTORY_BYTES, LogWatcher, WatchLog

if TYPE_CHECKING:
    from .interface import Storage

DEFAULT_HISTORY = 50_000

# Kinds whose stored versions keep only their bytes (KeyValue.lean): written by the thousand,
# read rarely and never on a hot path. Events: ~9 per pod in benchmarks/density.py (Scheduled,
# Pulled, Created, Started, Killing...), ~0.7 KB of JSON that decode into ~2.7 KB of dicts
# (benchmarks/memory_costs.py objects); a list or watch with a selector decodes each one it
# looks at (~3 us), and a patch (the recorder's count updates) the one it changes.
COLD_PREFIXES = ("/registry/events/",)


def is_cold(key: str) -> bool:
    """Whether the store keeps key's versions lean (COLD_PREFIXES)."""
    return key.startswith(COLD_PREFIXES)


def stamp(key: str, obj: dict[str, Any], create_revision: int, mod_revision: int,
          spec_json: bytes | None = None, prev: KeyValue | None = None) -> KeyValue:
    """Set resourceVersion to mod_revision on a shallow copy of obj and encode it once.

    Only the top level and metadata are copied (0.3 us, not a deep copy): the stored dict
    and the caller's dict then never share the field we write, so stamping cannot change a
    KeyValue someone else holds (e.g. when update() is handed a stored kv.obj). Nested
    values are shared: the caller hands them over and must not mutate them afterwards.
    The spec's bytes, when known, are placed as they are (encode_around), and the stored
    version remembers where they sit (KeyValue.spec_at). They are: `spec_json`, obj["spec"]'s
    orjson encoding, when the caller has it (see encode); else, when obj's spec is the very same
    dict as that of `prev`, the version this one replaces (a status write: the strategy keeps
    the stored spec; a graceful delete's mark; a delete), prev's, copied from prev's bytes if it
    knows where they sit, else encoded once more (the first of such writes). The kubelet's 4
    status patches of a pod in a rolling update each re-encoded its ~1.3 KB of unchanged spec
    (~16k of the ~36k instructions of a pod's encoding; ~24k with the spec's bytes placed). The
    dict cannot have changed since prev was stored: nobody mutates a stored object. Identity,
    not equality, is the test: comparing two specs costs about what encoding one does.
    """
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(mod_revision)
    stored = dict(obj)
    stored["metadata"] = meta
    if spec_json is None and prev is not None and type(prev) is KeyValue and type(spec := stored.get("spec")) is dict:
        if spec is prev.obj.get("spec"):
            at = prev.spec_at
            spec_json = prev.value[at >> 32:at & _LOW] if at else orjson.dumps(spec)
        else:
            # An update that changed the spec (a pod's binding, a scale): its bytes placed
            # too, so that the status writes that follow copy them (the same work as encoding
            # the object whole, but for the mark; else the first of them encodes the spec once
            # more: ~13k instructions, a quarter of the status writes of a rolling update).
            spec_json = orjson.dumps(spec)
    if spec_json is None:
        return KeyValue(key, encode(stored), stored, create_revision, mod_revision)
    value, at = encode_around(stored, spec_json)
    return KeyValue(key, value, stored, create_revision, mod_revision, at)


_LOW = (1 << 32) - 1
# Where the spec goes while the rest is encoded. 0xff is no byte of UTF-8, and orjson writes
# nothing but UTF-8 (it refuses a str that is not: lone surrogates), so the mark is the only such
# byte in its output, and an index() of it finds the spec's place.
_MARK = orjson.Fragment(b"\xff")


def encode_around(obj: dict[str, Any], spec_json: bytes) -> tuple[bytes, int]:
    """orjson.dumps(obj) (in a bytes object of its own size, as encode's) with obj["spec"] given
    as its bytes, and where they sit in it: start << 32 | end (KeyValue.spec_at). The place is
    that of a mark encoded instead of the spec (_MARK), never the result of a search of the JSON
    for the spec (an annotation may hold the bytes `"spec":`)."""
    marked = orjson.dumps({**obj, "spec": _MARK})
    start = marked.index(0xff)
    # One copy into a bytes object of its size (slices and a join: three; 26.3k instructions
    # against 23.7k for a pod, where orjson.dumps(obj) and encode's copy take 35.9k).
    return marked.replace(b"\xff", spec_json, 1), start << 32 | start + len(spec_json)


def encode(obj: dict[str, Any], spec_json: bytes | None = None) -> bytes:
    """obj's JSON, in a bytes object of its own size.

    orjson returns its whole output buffer (4 KiB at least, then doubling) with the length set
    below it: a 0.7 KB Event held 4.1 KB of heap, a 2.9 KB pod 8.2 KB (tracemalloc; 3.13). A
    stored version lives for minutes in the watch history, so it is copied once to its exact
    size (0.35 us for a pod, against 2.9 us for the encoding): at 10,000 pods on 1,000 nodes the
    stored versions took 331 MB of heap before, 2.4 times their bytes.

    `spec_json`: orjson.dumps(obj["spec"]), handed over by the caller that has it (a pod create:
    the registry store encodes the spec once, for validation's memo key and for this), placed
    as it is (encode_around) instead of encoding the spec again: the same bytes, as both are
    orjson's defaults (~15k instructions of ~1.3 KB of a pod's spec). The caller vouches that
    the spec has not changed since. Upstream caches an object's serializations with the object
    instead (runtime.CacheableObject; the watch cache's cachingObject, apiserver/pkg/storage/
    cacher/caching_object.go, so each watcher's serializer encodes an event once).
    """
    if spec_json is not None:
        return encode_around(obj, spec_json)[0]
    return memoryview(orjson.dumps(obj)).tobytes()


class MemoryStorage:
    """The Storage contract in memory.

    _kvs: key -> current KeyValue.  _keys: the same keys, sorted.  _log: the watch history.
    Invariant: set(_kvs) == set(_keys); every kv.mod_revision <= _log.revision; the latest
    event in _log for a key that exists is the ADDED/MODIFIED event carrying _kvs[key].
    """

    def __init__(self, *, history: int = DEFAULT_HISTORY,
                 history_bytes: int = DEFAULT_HISTORY_BYTES) -> None:
        self._kvs: dict[str, KeyValue] = {}
        self._keys = SortedKeys()
        self._log = WatchLog(history, history_bytes)
        self._closed = False

    async def start(self) -> None:
        """Ready the store for use: memory (and sqlite, loaded when made) already is."""

    @property
    def revision(self) -> int:
        """The revision of the latest write (0 before the first write)."""
        return self._log.revision

    @property
    def oldest_revision(self) -> int:
        """The oldest revision a watch may start after."""
        return self._log.oldest_revision

    @property
    def committed_revision(self) -> int:
        """The revision up to which writes are durable: all of them, here."""
        return self._log.revision

    async def wait_committed(self, revision: int) -> None:
        """Return once every write up to revision is durable (at once: memory keeps nothing)."""

    async def get(self, key: str) -> KeyValue | None:
        """The current version of key, or None."""
        return self._kvs.get(key)

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every current object under prefix, sorted by key, and the revision read at."""
        kvs = self._kvs
        return [kvs[k] for k in self._keys.range(prefix)], self._log.revision

    async def count(self, prefix: str) -> int:
        """How many current keys start with prefix."""
        return self._keys.count(prefix)

    async def create(self, key: str, obj: dict[str, Any], spec_json: bytes | None = None) -> KeyValue:
        """Store a new key at the next revision; KeyExists if present."""
        if key in self._kvs:
            raise KeyExists(key)
        rev = self._log.revision + 1
        kv = stamp(key, obj, rev, rev, spec_json)
        self._apply(WatchEvent("ADDED", kv.lean() if is_cold(key) else kv, None, rev))
        return kv

    async def update(
        self, key: str, obj: dict[str, Any], expected_revision: int | None = None
    ) -> KeyValue:
        """Replace key's object at the next revision; KeyNotFound or RevisionMismatch."""
        prev = self._current(key, expected_revision)
        rev = self._log.revision + 1
        kv = stamp(key, obj, prev.create_revision, rev, None, prev)
        self._apply(WatchEvent("MODIFIED", kv.lean() if is_cold(key) else kv, prev, rev))
        return kv

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        """Remove key at the next revision; return its last object stamped with that revision."""
        prev = self._current(key, expected_revision)
        rev = self._log.revision + 1
        # prev's spec bytes, where it has them (no write follows a delete to use them otherwise)
        kv = stamp(key, prev.obj, prev.create_revision, rev, None, prev if prev.spec_at else None)
        self._apply(WatchEvent("DELETED", kv.lean() if is_cold(key) else kv, prev, rev))
        return kv

    def watch(self, prefix: str, after_revision: int) -> LogWatcher:
        """Events under prefix with revision > after_revision; Compacted if too old."""
        return self._log.watch(prefix, after_revision)

    async def compact(self, revision: int) -> None:
        """Forget history at and before revision (clamped to the current revision)."""
        self._log.compact(revision)

    def stop_watches(self) -> None:
        """End every watch stream while writes go on (shutdown lets in-flight requests finish)."""
        self._log.close()

    async def close(self) -> None:
        """End every watch stream; there is nothing to flush."""
        self._closed = True
        self._log.close()

    def _current(self, key: str, expected_revision: int | None) -> KeyValue:
        """The current kv of key, checked against the caller's expected mod revision."""
        prev = self._kvs.get(key)
        if prev is None:
            raise KeyNotFound(key)
        if expected_revision is not None and expected_revision != prev.mod_revision:
            raise RevisionMismatch(
                f"{key}: expected revision {expected_revision}, current {prev.mod_revision}")
        return prev

    def _apply(self, ev: WatchEvent) -> None:
        """Persist ev (may raise: then nothing changed), then apply it and publish it."""
        self._persist(ev)
        key = ev.kv.key
        if ev.type == "DELETED":
            del self._kvs[key]
            self._keys.remove(key)
        else:
            if ev.type == "ADDED":
                self._keys.add(key)
            self._kvs[key] = ev.kv
        self._log.append(ev)

    def _persist(self, ev: WatchEvent) -> None:
        """Hand ev to the durable copy before it is applied; memory has nothing to do."""

    def _restore(self, revision: int, kvs: Sequence[KeyValue], events: Sequence[WatchEvent],
                 oldest: int | None = None) -> None:
        """Load a saved state: current objects, the counter, and the recent history (which
        starts after oldest: WatchLog.restore)."""
        for kv in kvs:
            self._kvs[kv.key] = kv
            self._keys.add(kv.key)
        self._log.restore(revision, events, sum(len(kv.value) for kv in kvs), oldest)

    def _check_invariants(self) -> None:
        self._keys._check_invariants()
        assert sorted(self._kvs) == self._keys.range("")
        assert all(kv.mod_revision <= self.revision for kv in self._kvs.values())
        assert self._log.live_bytes == sum(len(kv.value) for kv in self._kvs.values())
        self._log._check_invariants()


__all__ = ["COLD_PREFIXES", "DEFAULT_HISTORY", "DEFAULT_HISTORY_BYTES", "MemoryStorage", "encode", "encode_around", "is_cold",
           "stamp"]

if TYPE_CHECKING:
    def _conforms(s: MemoryStorage) -> Storage:
        return s

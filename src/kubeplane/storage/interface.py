"""The storage contract: an MVCC revision log modelled on etcd.

One global revision counter; every write (create, update, delete) takes the next revision.
Each key remembers the revision that created it and the one that last modified it. The
revision is the object's `metadata.resourceVersion`: the store writes it into the object
before encoding, so the stored bytes are exactly what clients receive (encoded once per
write, never once per watcher).

Watchers read the same shared log of events from any revision still inside the history
window; older revisions raise `Compacted` (the API server turns it into 410 Gone, reason
Expired, "too old resource version"). The window is bounded by a count of events and by their
bytes (watch_log.py), and compaction (compactor.py) forgets what is older than a few minutes.

All methods run on the event loop. Backends whose work is synchronous (memory, sqlite)
complete each call without yielding, so a write is atomic with respect to other tasks.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Literal, Protocol

import orjson

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


_KV_FIELDS = ("key", "value", "obj", "create_revision", "mod_revision", "spec_at")


# Making a KeyValue or a WatchEvent: an instance of a class with the same slots but no
# __setattr__ of its own (_NewKeyValue, _NewWatchEvent) is filled in, then made an instance of
# the immutable class (whose __setattr__ raises) by assigning its __class__.
# Every write makes a KeyValue and a WatchEvent, and the watch log two or three more when it
# makes replaced versions lean (watch_log.LEAN_LAG). Through object.__setattr__, as before, a
# field cost ~1.4k instructions (a call, and the attribute's lookup in the type); assigned in
# an __init__ of a class without __setattr__, ~0.2k (STORE_ATTR, specialized for slots), and
# the __class__ assignment ~1.3k: a 6-field KeyValue ~4.6k instead of ~8.7k, a WatchEvent
# ~3.6k instead of ~7k (callgrind, 3.11); a pod's status write in MemoryStorage, the lean
# step's copies included, 85k instead of 99k (benchmarks/storage_write_instructions.py). The
# layouts are the same (the same slots of the same base), which is what CPython checks before
# it lets __class__ change.


class _NewKeyValue:
    """A KeyValue while it is filled in: its slots, without its __setattr__ (see the comment above)."""

    __slots__ = _KV_FIELDS

    def __init__(self, key: str, value: bytes, obj: dict[str, Any] | None, create_revision: int,
                 mod_revision: int, spec_at: int) -> None:
        self.key = key
        self.value = value
        self.obj = obj
        self.create_revision = create_revision
        self.mod_revision = mod_revision
        self.spec_at = spec_at


class KeyValue:
    """One stored version of an object. `obj` and `value` are shared: never mutate them.

    key, value (JSON of obj; obj["metadata"]["resourceVersion"] == str(mod_revision)), obj (the
    decoded value, read-only), create_revision, mod_revision. Immutable, like the frozen
    dataclass it replaces. `obj` is a plain slot: every request reads it, several times.
    `spec_at`: where obj["spec"]'s JSON sits in value, start << 32 | end (0: not known), when
    the store encoded it (memory.stamp): the next write that keeps the very same spec dict (a
    status write, a delete) copies those bytes instead of encoding the spec again.

    Stores keep kinds written far more often than read (memory.COLD_PREFIXES: Events) as a
    LeanKeyValue, which holds only the bytes: a decoded Event costs 3.7 times its JSON.
    """

    __slots__ = _KV_FIELDS

    key: str
    value: bytes
    obj: dict[str, Any]
    create_revision: int
    mod_revision: int
    spec_at: int

    def __new__(cls, key: str, value: bytes, obj: dict[str, Any], create_revision: int,
                mod_revision: int, spec_at: int = 0) -> KeyValue:
        new: Any = _NewKeyValue(key, value, obj, create_revision, mod_revision, spec_at)
        new.__class__ = cls                 # see _NewKeyValue's comment
        return new

    def lean(self) -> KeyValue:
        """The same version without its decoded object (what a store keeps of a cold kind)."""
        new: Any = _NewKeyValue(self.key, self.value, None, self.create_revision, self.mod_revision, 0)
        new.__class__ = LeanKeyValue
        return new

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a KeyValue is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a KeyValue is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyValue):
            return NotImplemented
        return (self.key, self.value, self.create_revision, self.mod_revision) == (
            other.key, other.value, other.create_revision, other.mod_revision)

    __hash__ = None  # type: ignore[assignment]   # as the dataclass's (its obj is a dict)

    def __repr__(self) -> str:
        return (f"KeyValue(key={self.key!r}, value={self.value!r}, create_revision={self.create_revision}, "
                f"mod_revision={self.mod_revision})")


class LeanKeyValue(KeyValue):
    """A stored version kept as its bytes only: `obj` decodes them on every access, a fresh
    dict each time (the slot it overrides stays empty: no more memory than a KeyValue). Its
    spec_at is 0: a store reuses only a decoded version's spec bytes."""

    __slots__ = ()

    def __new__(cls, key: str, value: bytes, create_revision: int, mod_revision: int) -> LeanKeyValue:
        new: Any = _NewKeyValue(key, value, None, create_revision, mod_revision, 0)
        new.__class__ = cls
        return new

    @property
    def obj(self) -> dict[str, Any]:  # type: ignore[override]   # a slot in KeyValue
        """The decoded value (read-only), decoded from `value` on each access."""
        return orjson.loads(self.value)

    def lean(self) -> KeyValue:
        return self


_EVENT_FIELDS = ("type", "kv", "prev", "revision")


class _NewWatchEvent:
    """A WatchEvent while it is filled in (see _NewKeyValue's comment)."""

    __slots__ = _EVENT_FIELDS

    def __init__(self, type: EventType, kv: KeyValue, prev: KeyValue | None, revision: int) -> None:
        self.type = type
        self.kv = kv
        self.prev = prev
        self.revision = revision


class WatchEvent:
    """A change to one key at `revision`.

    For DELETED, `kv` is the last stored object re-stamped with the deletion revision as its
    resourceVersion (as upstream's etcd3 watcher does). `prev` is the version before the
    change (None for ADDED); the API server needs it to turn selector transitions into
    ADDED/DELETED for filtered watchers. Immutable, like the frozen dataclass it replaces
    (the comment above _NewKeyValue says why it is not one).
    """

    __slots__ = _EVENT_FIELDS

    type: EventType
    kv: KeyValue
    prev: KeyValue | None
    revision: int

    def __new__(cls, type: EventType, kv: KeyValue, prev: KeyValue | None, revision: int) -> WatchEvent:
        new: Any = _NewWatchEvent(type, kv, prev, revision)
        new.__class__ = cls                 # see _NewKeyValue's comment
        return new

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a WatchEvent is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a WatchEvent is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, WatchEvent)
        return (self.type, self.kv, self.prev, self.revision) == (other.type, other.kv, other.prev, other.revision)

    __hash__ = None  # type: ignore[assignment]   # as the dataclass's (a KeyValue has none)

    def __repr__(self) -> str:
        return f"WatchEvent(type={self.type!r}, kv={self.kv!r}, prev={self.prev!r}, revision={self.revision!r})"


class StorageError(Exception):
    """Base of storage failures; the API server maps each to an api.errors StatusError."""


class KeyExists(StorageError):
    """create() found the key already present."""


class KeyNotFound(StorageError):
    """update()/delete() found no such key."""


class RevisionMismatch(StorageError):
    """update()/delete() was given an expected mod revision that is not the current one."""


class Compacted(StorageError):
    """watch() asked for a revision older than the history window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"requested revision {requested} has been compacted (oldest {oldest})")
        self.requested = requested
        self.oldest = oldest


class Transformer(Protocol):
    """Turns a value into the bytes written to disk and back (encryption at rest).
    Called on the committer thread and at open; must be thread-safe.
    Upstream: value.Transformer (apiserver/pkg/storage/value/transformer.go)."""

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        """The bytes to write for data stored under key."""
        ...

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        """(plaintext, stale): stale when written with a key that is no longer the first."""
        ...


class Watcher(Protocol):
    """A stream of WatchEvents for one key prefix, in revision order, without gaps."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        """Yield events as they happen; raises Compacted if this watcher fell out of the window."""
        ...

    def stop(self) -> None:
        """End the stream: a pending or later iteration finishes (StopAsyncIteration)."""


class Storage(Protocol):
    """The revisioned key-value store behind the API server."""

    async def start(self) -> None:
        """Ready the store (connect, load its cache); call once before anything else."""
        ...

    @property
    def revision(self) -> int:
        """The revision of the latest write (0 before the first write)."""

    @property
    def oldest_revision(self) -> int:
        """The oldest revision a watch may start after (watch(prefix, r) needs r >= this)."""

    @property
    def committed_revision(self) -> int:
        """The revision up to which writes are durable; revision - committed_revision writes are
        applied (visible in process) but not yet committed."""

    def wait_committed(self, revision: int) -> Awaitable[None]:
        """Return once every write up to revision is durable (StorageError if the store failed).
        Whatever leaves the process (an HTTP response, a watch chunk) waits for this first."""

    async def get(self, key: str) -> KeyValue | None:
        """The current version of key, or None."""

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every current object whose key starts with prefix, sorted by key, and the revision read at."""

    async def count(self, prefix: str) -> int:
        """How many current keys start with prefix."""

    async def create(self, key: str, obj: dict[str, Any], spec_json: bytes | None = None) -> KeyValue:
        """Store a new key at the next revision (stamping obj's resourceVersion); KeyExists if present.
        `spec_json`: orjson.dumps(obj["spec"]), if the caller has it: stored as it is, not encoded again."""

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None) -> KeyValue:
        """Replace key's object at the next revision; KeyNotFound, or RevisionMismatch if expected_revision is stale."""

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        """Remove key at the next revision and return its last object stamped with that revision."""

    def watch(self, prefix: str, after_revision: int) -> Watcher:
        """Events for keys under prefix with revision > after_revision; Compacted if too old."""

    async def compact(self, revision: int) -> None:
        """Forget history at and before revision (watches from there will get Compacted)."""

    def stop_watches(self) -> None:
        """End every open watch stream, and any started later (the server is shutting down)."""

    async def close(self) -> None:
        """Flush and release resources; the store must not be used afterwards."""

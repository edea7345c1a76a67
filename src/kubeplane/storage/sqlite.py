"""SqliteStorage: MemoryStorage whose every write is committed to a SQLite file first.

The whole current state and the recent history live in memory (reads never touch SQLite);
SQLite is the durable copy, read once at open:

  kv(key, create_rev, mod_rev, value)          the current objects
  log(rev, type, key, create_rev, value,       the last `history` (+ up to one trim batch)
      prev_create_rev, prev_mod_rev, prev_value) events, so watches from recent revisions
                                                 resume across a restart
  meta(name, value)                            'compacted': the last compact() revision

The revision counter is not stored separately: it is max(log.rev, meta.compacted), because
log trimming always leaves the newest `history` events and compact(r) records r. So it
never goes backwards, even when the newest write was a delete.

Durability: writes are committed in batches. A write applies to memory (and to the watch
log) at once and queues its rows; one flush per loop iteration commits everything queued in one
transaction (`loop.call_soon`). Nothing outside the process can observe a write before its
commit: the HTTP front end waits for `wait_committed(revision)` before it sends a response or a
watch chunk (apiserver/app.py), as etcd acknowledges a write only once it is committed. Only
the components running inside this process (controllers, scheduler, kubelets over the
in-process transport) see a write before its commit, and they die with the process, so a crash
cannot show anyone a state that the restarted store lacks. Why batches: one commit per write
cost ~70 us and was ~13 % of the whole loop in the density benchmark; a batch costs one commit
for the lot. If a commit fails (disk full), the store is broken: every later write and every
wait_committed raises StorageError, as etcd stops serving when its backend fails.

The database runs in WAL mode with synchronous=NORMAL. At COMMIT, SQLite write()s the
transaction's frames into the -wal file; it skips fsync, which it only does at checkpoints. A
write() that has returned is in the kernel's page cache, which belongs to the OS, not to the
process, so `kill -9` (or any crash of Python) cannot lose it; the next open replays the WAL.
Only an OS crash or power loss can drop the last few commits (SQLite documents this for WAL +
NORMAL: "a transaction committed in WAL mode with synchronous=NORMAL might roll back following
a power loss or system crash"). etcd fsyncs every commit; we accept the OS-crash window.

The log stores each event's prev object as well, so a restarted store can rebuild `prev` for
every event in the window; the file is therefore up to about history x 2 x object size (50k x
3 KB = 150 MB with the default history).
"""
from __future__ import annotations

import asyncio
import logging
import pathlib
import sqlite3
from typing import TYPE_CHECKING

import orjson

from .interface import EventType, KeyValue, StorageError, WatchEvent
from .memory import DEFAULT_HISTORY, MemoryStorage

if TYPE_CHECKING:
    from .interface import Storage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY, create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL,
    value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS log (
    rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, key TEXT NOT NULL,
    create_rev INTEGER NOT NULL, value BLOB NOT NULL,
    prev_create_rev INTEGER, prev_mod_rev INTEGER, prev_value BLOB);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_TYPE_CODE: dict[EventType, int] = {"ADDED": 0, "MODIFIED": 1, "DELETED": 2}
_CODE_TYPE: list[EventType] = ["ADDED", "MODIFIED", "DELETED"]

log = logging.getLogger(__name__)


class SqliteStorage(MemoryStorage):
    """The Storage contract, durable in a SQLite file (WAL), served from memory."""

    def __init__(self, path: str | pathlib.Path, *, history: int = DEFAULT_HISTORY) -> None:
        super().__init__(history=history)
        self._history = history
        # Trim the persisted log in batches: one DELETE per trim_every writes, not per write.
        self._trim_every = max(1, min(1000, history // 10))
        self._until_trim = self._trim_every
        self._db = sqlite3.connect(str(path), isolation_level=None)   # explicit BEGIN/COMMIT
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"{path}: cannot enable WAL (journal_mode={mode})")
        self._db.execute("PRAGMA synchronous=NORMAL")   # durable against process crashes
        self._db.executescript(_SCHEMA)
        self._pending: list[WatchEvent] = []          # applied in memory, not yet committed
        self._failure: Exception | None = None
        self._load()
        self._committed = self.revision
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def committed_revision(self) -> int:
        return self._committed

    async def wait_committed(self, revision: int) -> None:
        """Return once every write up to revision is committed; StorageError if commits failed."""
        if self._committed >= revision:
            return
        self._check_failure()
        fut = asyncio.get_running_loop().create_future()
        self._commit_waiters.append((revision, fut))
        await fut

    async def compact(self, revision: int) -> None:
        """Forget history at and before revision, in memory and on disk."""
        revision = min(revision, self.revision)
        self._flush()
        self._check_failure()
        with self._transaction() as db:
            db.execute("DELETE FROM log WHERE rev <= ?", (revision,))
            db.execute("INSERT INTO meta VALUES ('compacted', ?) ON CONFLICT(name) DO UPDATE"
                       " SET value = max(value, excluded.value)", (revision,))
        await super().compact(revision)

    async def close(self) -> None:
        """Close the database (SQLite checkpoints the WAL when its last connection closes)."""
        if not self._closed:
            self._flush()
            self._db.close()
        await super().close()

    def _persist(self, ev: WatchEvent) -> None:
        """Queue ev for the next batch commit (the first write of a batch schedules it)."""
        self._check_failure()
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(ev)

    def _flush(self) -> None:
        """Commit every queued event in one transaction, then release whoever waits for it."""
        batch, self._pending = self._pending, []
        if not batch or self._failure is not None:
            return
        try:
            self._commit(batch)
        except Exception as e:          # the disk failed under us: memory is now ahead of it
            log.critical("storage commit failed; the store stops accepting writes: %r", e)
            self._failure = e
        else:
            self._committed = batch[-1].revision
        self._release_waiters()

    def _commit(self, batch: list[WatchEvent]) -> None:
        last: dict[str, WatchEvent] = {ev.kv.key: ev for ev in batch}    # a key's final state
        with self._transaction() as db:
            db.executemany("DELETE FROM kv WHERE key = ?",
                           [(k,) for k, ev in last.items() if ev.type == "DELETED"])
            db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?, ?, ?)",
                           [(k, ev.kv.create_revision, ev.kv.mod_revision, ev.kv.value)
                            for k, ev in last.items() if ev.type != "DELETED"])
            db.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [_log_row(ev) for ev in batch])
            until_trim = self._until_trim - len(batch)
            if until_trim <= 0:
                db.execute("DELETE FROM log WHERE rev <= ?", (batch[-1].revision - self._history,))
        self._until_trim = until_trim if until_trim > 0 else self._trim_every

    def _release_waiters(self) -> None:
        waiters, self._commit_waiters = self._commit_waiters, []
        for revision, fut in waiters:
            if fut.done():
                continue
            if self._failure is not None:
                fut.set_exception(self._failure_error())
            elif revision <= self._committed:
                fut.set_result(None)
            else:
                self._commit_waiters.append((revision, fut))

    def _check_failure(self) -> None:
        if self._failure is not None:
            raise self._failure_error()

    def _failure_error(self) -> StorageError:
        return StorageError(f"storage failed: {self._failure!r}")

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def _load(self) -> None:
        """Read the current objects, the counter and the recent history into memory."""
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE name = 'compacted'").fetchone()
        compacted = row[0] if row else 0
        last_logged = db.execute("SELECT max(rev) FROM log").fetchone()[0] or 0
        kvs = [_kv(*row) for row in db.execute("SELECT key, create_rev, mod_rev, value FROM kv")]
        revision = max(last_logged, compacted, max((kv.mod_revision for kv in kvs), default=0))
        # Decode each stored version once: events and current state share KeyValues.
        versions = {kv.mod_revision: kv for kv in kvs}
        rows = db.execute("SELECT * FROM log WHERE rev > ? ORDER BY rev",
                          (max(revision - self._history, compacted),))
        events = [_event(row, versions) for row in rows]
        self._restore(revision, kvs, _contiguous_tail(events, revision))


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK if the body raised (the caller then sees the error)."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN")
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")


def _log_row(ev: WatchEvent) -> tuple:
    kv, prev = ev.kv, ev.prev
    return (ev.revision, _TYPE_CODE[ev.type], kv.key, kv.create_revision, kv.value,
            prev and prev.create_revision, prev and prev.mod_revision, prev and prev.value)


def _kv(key: str, create_rev: int, mod_rev: int, value: bytes) -> KeyValue:
    return KeyValue(key, value, orjson.loads(value), create_rev, mod_rev)


def _event(row: tuple, versions: dict[int, KeyValue]) -> WatchEvent:
    """Rebuild a logged event, reusing already-decoded versions (keyed by mod revision)."""
    rev, code, key, create_rev, value, prev_create, prev_mod, prev_value = row
    kv = versions.get(rev) or _kv(key, create_rev, rev, value)
    prev = None
    if prev_mod is not None:
        prev = versions.get(prev_mod) or _kv(key, prev_create, prev_mod, prev_value)
    versions.setdefault(rev, kv)
    return WatchEvent(_CODE_TYPE[code], kv, prev, rev)


def _contiguous_tail(events: list[WatchEvent], revision: int) -> list[WatchEvent]:
    """The longest run of consecutive revisions ending at revision (a watch needs no gaps)."""
    if not events or events[-1].revision != revision:
        return []
    i = len(events) - 1
    while i > 0 and events[i - 1].revision == events[i].revision - 1:
        i -= 1
    return events[i:]


__all__ = ["SqliteStorage"]

if TYPE_CHECKING:
    def _conforms(s: SqliteStorage) -> Storage:
        return s

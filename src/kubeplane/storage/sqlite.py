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

Durability: writes are committed in batches, on a thread of their own (storage/committer.py).
A write applies to memory (and to the watch log) at once and queues its rows; the committer
thread commits everything queued in one transaction while the loop goes on (SQLite releases
the GIL while it works). Nothing outside the process can observe a write before its commit:
the HTTP front end waits for `wait_committed(revision)` before it sends a response or a watch
chunk (apiserver/app.py), as etcd acknowledges a write only once it is committed. Only the
components running inside this process (controllers, scheduler, kubelets over the in-process
transport) see a write before its commit, and they die with the process, so a crash cannot
show anyone a state that the restarted store lacks. Why: one commit per write on the loop
cost ~70 us (more with the WAL checkpoints it triggers) and was ~13 % of the whole loop in
the density benchmark. If a commit fails (disk full), the store is broken: every later write
and every wait_committed raises StorageError.

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

import pathlib
import sqlite3
import threading
from typing import TYPE_CHECKING

import orjson

from .committer import Committer
from .interface import EventType, KeyValue, WatchEvent
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
# Rows per multi-row statement: one statement is one GIL release and re-acquire for the
# committer thread (executemany would take one per row); 8 x 1,000 stays far below SQLite's
# limit of 32,766 parameters.
_CHUNK = 1000


class SqliteStorage(MemoryStorage):
    """The Storage contract, durable in a SQLite file (WAL), served from memory."""

    def __init__(self, path: str | pathlib.Path, *, history: int = DEFAULT_HISTORY) -> None:
        super().__init__(history=history)
        self._history = history
        # Trim the persisted log in batches: one DELETE per trim_every writes, not per write.
        self._trim_every = max(1, min(1000, history // 10))
        self._until_trim = self._trim_every
        # check_same_thread=False: the committer thread writes; the loop thread only opens,
        # compacts and closes, each under _db_lock.
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db_lock = threading.Lock()
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"{path}: cannot enable WAL (journal_mode={mode})")
        self._db.execute("PRAGMA synchronous=NORMAL")   # durable against process crashes
        self._db.executescript(_SCHEMA)
        self._load()
        self._committer = Committer(self._commit, self.revision)

    @property
    def committed_revision(self) -> int:
        return self._committer.committed

    async def wait_committed(self, revision: int) -> None:
        """Return once every write up to revision is committed; StorageError if commits failed."""
        await self._committer.wait_committed(revision)

    async def compact(self, revision: int) -> None:
        """Forget history at and before revision, in memory and on disk."""
        revision = min(revision, self.revision)
        self._committer.check()
        with self._db_lock, self._transaction() as db:
            db.execute("DELETE FROM log WHERE rev <= ?", (revision,))
            db.execute("INSERT INTO meta VALUES ('compacted', ?) ON CONFLICT(name) DO UPDATE"
                       " SET value = max(value, excluded.value)", (revision,))
        await super().compact(revision)

    async def close(self) -> None:
        """Commit what is queued and close the database (SQLite checkpoints the WAL then)."""
        if not self._closed:
            self._committer.stop()
            self._db.close()
        await super().close()

    def _persist(self, ev: WatchEvent) -> None:
        """Queue ev for the committer thread (StorageError, and no change, if the store failed)."""
        self._committer.put(ev)

    def _commit(self, batch: list[WatchEvent]) -> None:
        """On the committer thread: batch in one transaction, each key at its final state."""
        last: dict[str, WatchEvent] = {ev.kv.key: ev for ev in batch}
        gone = [(k,) for k, ev in last.items() if ev.type == "DELETED"]
        kv_rows = [(k, ev.kv.create_revision, ev.kv.mod_revision, ev.kv.value)
                   for k, ev in last.items() if ev.type != "DELETED"]
        log_rows = [_log_row(ev) for ev in batch]
        until_trim = self._until_trim - len(batch)
        with self._db_lock, self._transaction() as db:
            _many(db, "DELETE FROM kv WHERE key IN ({})", gone)
            _many(db, "INSERT OR REPLACE INTO kv VALUES {}", kv_rows)
            _many(db, "INSERT INTO log VALUES {}", log_rows)
            if until_trim <= 0:
                db.execute("DELETE FROM log WHERE rev <= ?", (batch[-1].revision - self._history,))
        self._until_trim = until_trim if until_trim > 0 else self._trim_every

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


def _many(db: sqlite3.Connection, sql: str, rows: list[tuple]) -> None:
    """Run sql once per _CHUNK rows, its {} filled with one "(?, ...)" per row."""
    if not rows:
        return
    one = "(" + ", ".join("?" * len(rows[0])) + ")"
    for i in range(0, len(rows), _CHUNK):
        chunk = rows[i:i + _CHUNK]
        db.execute(sql.format(", ".join([one] * len(chunk))), [p for row in chunk for p in row])


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

"""SqliteStorage: MemoryStorage whose every write is committed to a SQLite file first.

The whole current state and the recent history live in memory (reads never touch SQLite);
SQLite is the durable copy, read once at open:

  kv(key, create_rev, mod_rev)                      the current objects, keyed by mod_rev (a
                                                    write deletes its prev's row, by revision);
                                                    no value: it is the log row's at mod_rev
  log(rev, type, key, create_rev, prev_rev, value)  every stored version: the events of the
                                                    history window, plus, at or below the
                                                    floor, the current versions (kv's mod_revs)
                                                    and the prev versions that some event in
                                                    the window still needs
  meta(name, value)                                 'compacted': the floor (every revision at
                                                    or below it is out of the window)

Each version's bytes are written once, into its log row; kv only points at it
(`kv JOIN log ON log.rev = kv.mod_rev` is the current state). Why: a create wrote its value into
both tables (schema 2), twice the WAL frames and page copies; one copy took the committer
thread's instructions per HTTPS pod create down 23 % and its CPU ~28 % (BENCHMARKS.md), and the
file of 30,000 pods from 154 MB to 94 MB. Upstream: etcd's mvcc stores each revision's KeyValue
once, in its key bucket keyed by revision (kvstore_txn.go, put), and finds a key's current
revision through its treeIndex, as kv points at log here.

The revision counter is not stored separately: it is max(log.rev, meta.compacted, kv.mod_rev),
because trimming always records the floor it trimmed to. So it never goes backwards, even when
the newest write was a delete.

kv has no index on its keys: the keys of new objects are random (generateName), so such an
index had a page to write to the WAL for most creates, ~1 of the ~3 frames a create cost under
load; keyed by mod_rev, rows append at the B-tree's right edge, and the row a write replaces is
its prev's (memory's current version, which the earlier batches committed). A file of schema 1
(kv keyed by key, with a value) or 2 (kv with a value) is converted at its first open, in one
transaction (a crash leaves the old file): a current version without a log row (below the floor)
gets one, then kv is rebuilt without its values.

Previous objects are stored once too. An event's prev is the previous version of its key, which
is the event at prev_rev, still in the log, except for the first event of each key in the
window. As etcd's compaction keeps the newest revision of each key at or before the compaction
point, a trim to floor f deletes the rows at or below f except those that an event above f
names as its prev_rev and those of current versions (a kv row's mod_rev, looked up by primary
key per candidate row). An event's prev is always its key's current version when it is written,
whose row no trim has deleted, so an event never needs to bring its prev along. Example: writes
of key a at 1, 2, 3 and of key b at 4; trim to 2: row 1 goes, row 2 stays (event 3 needs it),
meta.compacted = 2; trim to 4: row 2 goes (event 3 is out of the window), rows 3 and 4 stay
(current versions); a write of a at 5 names 3 as its prev, and the trim that moves the floor
past 5 deletes row 3. So the file holds the live data, the window and at most one prev per key:
with the defaults, a client that rewrites one 1 MiB ConfigMap 1,000 times leaves ~11 MB, not
2 GB.

The window follows the memory one (watch_log.py: bounded by count and by bytes, compaction).
The committer thread trims its copy in batches, at least every `history // 10` (<= 1,000)
events or `history_bytes / 8` bytes that memory evicted, so the file keeps slightly more than
memory, never less: after a restart, watches resume from any revision that memory held
(the reloaded window is the newest stored events within the same bounds).

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

Reclaim: the file uses auto_vacuum=INCREMENTAL (a file of this schema without it is converted
once, by a VACUUM at open; a file from before this schema is replaced at open by a copy of its
current objects and its window, see _upgrade_from_v0). Trims put pages on the free list, where
new rows reuse them; when more than a quarter of the file is free (or the store has been idle
for a second), the committer thread gives pages back with `PRAGMA incremental_vacuum` in steps
of 1 MiB between commits, so a write waits for one step at most. The -wal file is capped by
journal_size_limit after each checkpoint and truncated to nothing once the store is idle.

Privacy: state.db, -wal and -shm are 0600 (the file is created so before SQLite opens it, and
SQLite gives its -wal and -shm the database's mode; older files are tightened at open). An
optional `Transformer` (encryption at rest) turns every stored value into the bytes written,
on the committer thread (once per version: its one log row), and back at open; a value it cannot read back fails the open with a
StorageError naming the key. The write is already applied in memory when the committer
transforms it, so a transformer that fails there stops the store like a failed commit (local
keys, as aescbc, aesgcm and secretbox use, do not fail).
"""
from __future__ import annotations

import logging
import os
import pathlib
import sqlite3
from typing import TYPE_CHECKING, Callable, cast

import orjson

from .committer import Committer
from .interface import EventType, KeyValue, LeanKeyValue, StorageError, Transformer, WatchEvent
from .memory import DEFAULT_HISTORY, MemoryStorage, is_cold
from .watch_log import DEFAULT_HISTORY_BYTES, history_budget

if TYPE_CHECKING:
    from .interface import Storage

log = logging.getLogger(__name__)

# {s}: the schema name and a dot, for the copy an upgrade writes into an attached database.
_SCHEMA = [
    # Keyed by mod_rev, not by key: a write appends at the B-tree's right edge and replaces
    # the row at its prev's mod_rev, so no index on the (random) keys has a page to write per
    # create (~1 WAL frame of ~3 per create under load).
    # No value: the current version's value is its log row's (log.rev = kv.mod_rev).
    """CREATE TABLE IF NOT EXISTS {s}kv (
        key TEXT NOT NULL, create_rev INTEGER NOT NULL, mod_rev INTEGER PRIMARY KEY)""",
    # The small columns first: a row's value may span many overflow pages, and SQLite reads a
    # row's columns in order, so a trim that reads prev_rev never walks through the value.
    """CREATE TABLE IF NOT EXISTS {s}log (
        rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, key TEXT NOT NULL,
        create_rev INTEGER NOT NULL, prev_rev INTEGER, value BLOB NOT NULL)""",
    # Which rows an event still needs as its prev: a trim finds them in the index, not by a
    # scan of the window.
    "CREATE INDEX IF NOT EXISTS {s}log_prev ON log (prev_rev) WHERE prev_rev IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS {s}meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "PRAGMA {s}user_version = 3",
]
_SET_FLOOR = ("INSERT INTO meta VALUES ('compacted', ?) ON CONFLICT(name) DO UPDATE"
              " SET value = max(value, excluded.value)")
# Trim from floor `old` to `new`, in this order (the second reads rows the first deletes):
# the prevs kept below `old` whose next version is no longer an event, then the rows of
# (old, new] that no event above `new` names as its prev. Neither deletes a current version's
# row (kv's value): NOT EXISTS is one primary-key lookup in kv per candidate row.
_CURRENT = "EXISTS (SELECT 1 FROM kv WHERE kv.mod_rev = log.rev)"
_DROP_KEPT_PREVS = ("DELETE FROM log WHERE rev IN (SELECT prev_rev FROM log"
                    f" WHERE rev > :old AND rev <= :new AND prev_rev <= :old) AND NOT {_CURRENT}")
_DROP_TRIMMED = ("DELETE FROM log WHERE rev > :old AND rev <= :new AND rev NOT IN"
                 " (SELECT prev_rev FROM log WHERE prev_rev > :old AND prev_rev <= :new AND rev > :new)"
                 f" AND NOT {_CURRENT}")

_TYPE_CODE: dict[EventType, int] = {"ADDED": 0, "MODIFIED": 1, "DELETED": 2}
_CODE_TYPE: list[EventType] = ["ADDED", "MODIFIED", "DELETED"]
# Rows per multi-row statement: one statement is one GIL release and re-acquire for the
# committer thread (executemany would take one per row); 6 x 1,000 stays far below SQLite's
# limit of 32,766 parameters.
_CHUNK = 1000
# sqlite3 binds an int, float, str or bytearray as it is; any other value (bytes, None) goes
# through its adapter protocol, which looks in its adapters' table, then fails to find
# `__adapt__` on the protocol and `__conform__` on the value, each failure formatting an
# AttributeError message it then drops (~3k instructions per parameter; a stored create binds
# two: the log's value and null prev). An adapter in the table ends the
# search at once: for bytes `bytes` (bytes(b) is b itself), for None `{}.get` (None, as a C
# call). Same values bound, so nothing else that uses sqlite3 in the process sees a difference.
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))
_INCREMENTAL = 2                # PRAGMA auto_vacuum's value for INCREMENTAL
WAL_LIMIT = 4 << 20             # bytes the -wal file keeps after a checkpoint (~ one autocheckpoint)
VACUUM_STEP = 256               # pages (1 MiB) given back per housekeeping step
VACUUM_MIN = 256                # free pages not worth a step


class SqliteStorage(MemoryStorage):
    """The Storage contract, durable in a SQLite file (WAL), served from memory.

    Committer-thread state (after open): _disk_floor (meta.compacted: rows at or below it are
    only kept prevs and current versions), _disk_last (the last committed revision),
    _trimmed_at (the memory log's evicted_bytes at the last trim), _reclaim (free pages may be
    worth giving back), _dirty (the -wal holds frames since the last truncation). The thread reads the memory log's
    oldest_revision and evicted_bytes without a lock: single int attributes, and both only
    grow, so a read is at worst a little old.
    """

    def __init__(self, path: str | pathlib.Path, *, history: int = DEFAULT_HISTORY,
                 history_bytes: int = DEFAULT_HISTORY_BYTES, transformer: Transformer | None = None) -> None:
        super().__init__(history=history, history_bytes=history_bytes)
        self._path = pathlib.Path(path)
        self._transformer = transformer
        self._trim_every = max(1, min(1000, history // 10))
        self._trim_bytes = max(1, history_bytes // 8)
        self._disk_floor = self._disk_last = self._trimmed_at = 0
        self._reclaim = True
        self._dirty = False
        self._stale: list[tuple[int, str, bytes]] = []   # (log.rev, key, plaintext)
        _private(self._path, create=True)
        # check_same_thread=False: the loop thread opens and closes, the committer thread
        # does everything in between.
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise
        for suffix in ("-wal", "-shm"):
            _private(self._path.with_name(self._path.name + suffix), create=False)
        self._committer = Committer(self._commit, self.revision, self._housekeep)

    @property
    def committed_revision(self) -> int:
        return self._committer.committed

    async def wait_committed(self, revision: int) -> None:
        """Return once every write up to revision is committed; StorageError if commits failed."""
        await self._committer.wait_committed(revision)

    async def compact(self, revision: int) -> None:
        """Forget history at and before revision: in memory now, on disk at the committer's next
        step (a crash before then only brings back history that was about to go)."""
        self._committer.check()
        await super().compact(revision)
        self._committer.kick()

    async def close(self) -> None:
        """Commit what is queued, trim the file to the window, and close the database (SQLite
        checkpoints the WAL then)."""
        if not self._closed:
            self._committer.stop()
            self._db.close()
        await super().close()

    def _persist(self, ev: WatchEvent) -> None:
        """Queue ev for the committer thread (StorageError, and no change, if the store failed)."""
        self._committer.put(ev)

    # --- the committer thread ------------------------------------------------------------------

    def _commit(self, batch: list[WatchEvent]) -> None:
        """Batch in one transaction: every event's log row (its value), each key's kv row at its
        final state.

        An event's prev needs no row of its own: it is its key's current version (memory's,
        which the earlier batches committed, or an earlier event of this batch), so its log row
        is there, however far below the floor, because no trim deletes a current version's row.
        """
        t = self._transformer
        last: dict[str, WatchEvent] = {}
        log_rows, gone = [], []
        for ev in batch:
            kv, prev = ev.kv, ev.prev
            if prev is not None and kv.key not in last:
                # The key's row before the batch: its first event's prev.
                gone.append((prev.mod_revision,))
            last[kv.key] = ev
            log_rows.append((ev.revision, _TYPE_CODE[ev.type], kv.key, kv.create_revision, prev and prev.mod_revision,
                             kv.value if t is None else t.transform_to_storage(kv.key, kv.value)))
        kv_rows = [(k, ev.kv.create_revision, ev.kv.mod_revision) for k, ev in last.items() if ev.type != "DELETED"]
        with self._transaction() as db:
            _many(db, "DELETE FROM kv WHERE mod_rev IN ({})", gone)
            _many(db, "INSERT INTO kv VALUES {}", kv_rows)
            _many(db, "INSERT INTO log VALUES {}", log_rows)
        self._disk_last = batch[-1].revision
        self._dirty = True

    def _housekeep(self, idle: bool) -> bool:
        """One bounded step: trim the log to the memory window, else give free pages back, else
        (idle) truncate the -wal. True if another step may be due."""
        target = min(self._log.oldest_revision, self._disk_last)
        evicted = self._log.evicted_bytes
        if target > self._disk_floor and (
                idle or target - self._disk_floor >= self._trim_every
                or evicted - self._trimmed_at >= self._trim_bytes):
            with self._transaction() as db:
                _trim(db, self._disk_floor, target)
            self._disk_floor, self._trimmed_at, self._reclaim = target, evicted, True
            return True
        db = self._db
        if self._reclaim or idle:
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            if free > VACUUM_MIN and (idle or 4 * free > db.execute("PRAGMA page_count").fetchone()[0]):
                db.execute(f"PRAGMA incremental_vacuum({VACUUM_STEP})").fetchall()
                self._dirty = True
                return True
            self._reclaim = False
        if idle and self._dirty:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self._dirty = False
        return False

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    # --- open ----------------------------------------------------------------------------------

    def _open(self) -> None:
        """Configure the connection, create or upgrade the schema, load, convert to incremental
        auto-vacuum (once)."""
        db = self._db
        if db.execute("PRAGMA page_count").fetchone()[0] == 0:
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # a new file: before its first table
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StorageError(f"{self._path}: cannot enable WAL (journal_mode={mode})")
        db.execute("PRAGMA synchronous=NORMAL")   # durable against process crashes
        db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
        if "prev_value" in _columns(db, "log"):
            self._upgrade_from_v0()
            return self._open()
        if "value" in _columns(db, "kv"):
            self._upgrade_from_v2()
        for statement in _SCHEMA:
            db.execute(statement.format(s=""))
        self._load()
        if db.execute("PRAGMA auto_vacuum").fetchone()[0] != _INCREMENTAL:
            log.info("%s: converting to incremental auto-vacuum (VACUUM, once)", self._path)
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _upgrade_from_v2(self) -> None:
        """Convert a file of schema 2 (kv held each current value, a copy of its log row's) or
        1 (the same, kv keyed by key) in place, in one transaction (a crash leaves the old
        file): a current version below the floor, whose log row a trim deleted, gets one (a
        kept row, as a trim keeps it now: no prev, ADDED if it is its key's first version),
        then kv is rebuilt without its values."""
        db = self._db
        with _Transaction(db):
            db.execute("ALTER TABLE kv RENAME TO kv_v2")
            for statement in _SCHEMA:
                db.execute(statement.format(s=""))
            db.execute("INSERT INTO log SELECT mod_rev, CASE WHEN create_rev = mod_rev THEN 0 ELSE 1 END, key,"
                       " create_rev, NULL, value FROM kv_v2"
                       " WHERE NOT EXISTS (SELECT 1 FROM log WHERE log.rev = kv_v2.mod_rev)")
            db.execute("INSERT INTO kv SELECT key, create_rev, mod_rev FROM kv_v2")
            db.execute("DROP TABLE kv_v2")
        log.info("%s: upgraded to schema 3 (each current value stored once)", self._path)

    def _upgrade_from_v0(self) -> None:
        """Replace a file from before this schema, whose log stored each event's prev beside
        it (prev_create_rev, prev_mod_rev, prev_value), by a new one holding its current
        objects, the events of its window (the bounds' window) and the prevs they need.

        The new file is written beside it and renamed over it (a crash before that leaves the
        old file as it was); nothing of the old log outside the window is read, so a 2 GB file
        of 1 MiB rewrites becomes ~10 MB in well under a second (deleting its rows in place
        had to read all 2 GB, ~20 s). The new file has incremental auto-vacuum from the start.
        """
        db, path = self._db, self._path
        floor = self._window_start(*_stored_bounds_v0(db))
        new = path.with_name(path.name + ".upgrade")
        new.unlink(missing_ok=True)                 # a leftover of a crash during an upgrade
        _private(new, create=True)
        db.execute("ATTACH DATABASE ? AS upgrade", (str(new),))
        db.execute("PRAGMA upgrade.auto_vacuum=INCREMENTAL")
        with _Transaction(db):
            for statement in _SCHEMA:
                db.execute(statement.format(s="upgrade."))
            db.execute("INSERT INTO upgrade.kv SELECT key, create_rev, mod_rev FROM main.kv")
            db.execute("INSERT INTO upgrade.log SELECT rev, type, key, create_rev, prev_mod_rev, value"
                       " FROM main.log WHERE rev > ?", (floor,))
            db.execute("INSERT OR IGNORE INTO upgrade.log SELECT prev_mod_rev, 1, key, prev_create_rev, NULL,"
                       " prev_value FROM main.log WHERE rev > ? AND prev_mod_rev <= ?", (floor, floor))
            # The current versions below the window: kept rows, as in a file of this schema.
            db.execute("INSERT OR IGNORE INTO upgrade.log SELECT mod_rev, CASE WHEN create_rev = mod_rev"
                       " THEN 0 ELSE 1 END, key, create_rev, NULL, value FROM main.kv")
            db.execute("INSERT INTO upgrade.meta VALUES ('compacted', ?)", (floor,))
        db.execute("DETACH DATABASE upgrade")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        db.close()
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size:     # another connection keeps it: not ours to replace
            new.unlink()
            raise StorageError(f"{path}: cannot upgrade the file: it is open in another process")
        for leftover in (wal, path.with_name(path.name + "-shm")):
            leftover.unlink(missing_ok=True)
        os.replace(new, path)
        log.info("%s: upgraded (each version stored once), history from revision %d", path, floor)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)

    def _load(self) -> None:
        """Read the current objects, the counter and the history window into memory (trimming
        the file to the window first)."""
        db = self._db
        floor = _floor(db)
        kvs = [self._decode(key, create_rev, mod_rev, value)
               for key, create_rev, mod_rev, value in db.execute(
                   "SELECT kv.key, kv.create_rev, kv.mod_rev, log.value FROM kv LEFT JOIN log ON log.rev = kv.mod_rev")]
        last_logged = db.execute("SELECT max(rev) FROM log").fetchone()[0] or 0
        revision = max(last_logged, floor, max((kv.mod_revision for kv in kvs), default=0))
        start = self._window_start(floor, revision, sum(len(kv.value) for kv in kvs))
        if start > floor:
            with self._transaction():
                _trim(db, floor, start)
        self._disk_floor, self._disk_last = start, revision
        # Decode each stored version once: events and current state share KeyValues.
        versions = {kv.mod_revision: kv for kv in kvs}
        events: list[WatchEvent] = []
        rows = db.execute("SELECT rev, type, key, create_rev, prev_rev, value FROM log WHERE rev > ?"
                          " ORDER BY rev", (start,))
        for rev, code, key, create_rev, prev_rev, value in rows:
            kv = versions.get(rev)
            if kv is None:                         # else a current version, read with kv
                kv = versions[rev] = self._decode(key, create_rev, rev, value)
            prev = None
            if prev_rev is not None:
                prev = versions.get(prev_rev)
                if prev is None and prev_rev <= start:
                    # A kept prev, looked up by revision: the rows below the window are mostly
                    # current versions (read above), not worth a scan.
                    row = db.execute("SELECT value FROM log WHERE rev = ?", (prev_rev,)).fetchone()
                    if row is not None:
                        prev = versions[prev_rev] = self._decode(key, create_rev, prev_rev, row[0])
                if prev is None:    # not in a file written by this code: the window starts after it
                    log.warning("%s: revision %d of %s is missing; watch history starts at %d",
                                self._path, prev_rev, key, rev)
                    events.clear()
                    continue
            events.append(WatchEvent(_CODE_TYPE[code], kv, prev, rev))
        if self._stale:
            self._rewrite_stale()
        self._restore(revision, kvs, events)

    def _rewrite_stale(self) -> None:
        """Store again, under the first key, every value read with another one.

        Upstream rewrites a stale value at its object's next update (GuaranteedUpdate), so its
        key rotation ends by replacing every Secret; the whole file is read here at open anyway,
        so every stale value, history included, is rewritten at once: after a restart with the
        new key first, nothing needs the old key any more. Same revision, same plaintext: only
        the bytes on disk change.
        """
        t = self._transformer
        assert t is not None
        with self._transaction() as db:         # each version once: its log row
            for rev, key, plain in self._stale:
                db.execute("UPDATE log SET value = ? WHERE rev = ?", (t.transform_to_storage(key, plain), rev))
        log.info("%s: %d stored values re-encrypted with the first key", self._path, len(self._stale))
        self._stale.clear()

    def _window_start(self, floor: int, revision: int, live_bytes: int) -> int:
        """The revision after which the stored events form the window: the newest, contiguous up
        to revision, within the count and byte bounds (at least one), above the floor."""
        budget = history_budget(self._log.min_bytes, live_bytes)
        start, count, size = revision, 0, 0
        rows = self._db.execute("SELECT rev, length(value) FROM log WHERE rev > ? ORDER BY rev DESC", (floor,))
        for rev, n in rows:
            if rev != start or (count and (count == self._log.capacity or size + n > budget)):
                break       # a gap (or the log does not end at revision), or the bounds
            start, count, size = rev - 1, count + 1, size + n
        return start

    def _decode(self, key: str, create_rev: int, mod_rev: int, data: bytes | None) -> KeyValue:
        """A stored value back as a KeyValue: StorageError naming the key if it cannot be read
        (or, None, is missing: a kv row without its log row)."""
        if data is None:
            raise StorageError(f"{self._path}: cannot read {key} (revision {mod_rev}): its value is missing")
        data = self._plaintext(key, mod_rev, data)
        try:
            obj = orjson.loads(data)            # a cold kind's too: an unreadable value fails here
            return LeanKeyValue(key, data, create_rev, mod_rev) if is_cold(key) else \
                KeyValue(key, data, obj, create_rev, mod_rev)
        except Exception as e:
            raise StorageError(f"{self._path}: cannot read {key} (revision {mod_rev}): {e}") from e

    def _plaintext(self, key: str, mod_rev: int, data: bytes) -> bytes:
        """A stored value through the transformer; a stale one is noted for _rewrite_stale."""
        if self._transformer is None:
            return data
        try:
            plain, stale = self._transformer.transform_from_storage(key, data)
        except Exception as e:
            raise StorageError(f"{self._path}: cannot read {key} (revision {mod_rev}): {e}") from e
        if stale:
            self._stale.append((mod_rev, key, plain))
        return plain


def _trim(db: sqlite3.Connection, old: int, new: int) -> None:
    """Move the floor from old to new: drop the rows no event above new needs (module docstring)."""
    params = {"old": old, "new": new}
    db.execute(_DROP_KEPT_PREVS, params)
    db.execute(_DROP_TRIMMED, params)
    db.execute(_SET_FLOOR, (new,))


def _floor(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM meta WHERE name = 'compacted'").fetchone()
    return row[0] if row else 0


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def _stored_bounds_v0(db: sqlite3.Connection) -> tuple[int, int, int]:
    """(floor, revision, live bytes) as stored in a file from before schema 2 (kv held the
    current values), before anything is decoded."""
    floor = _floor(db)
    revision = max(floor, db.execute("SELECT max(rev) FROM log").fetchone()[0] or 0,
                   db.execute("SELECT max(mod_rev) FROM kv").fetchone()[0] or 0)
    return floor, revision, db.execute("SELECT sum(length(value)) FROM kv").fetchone()[0] or 0


def _private(path: pathlib.Path, *, create: bool) -> None:
    """Make path 0600, creating it so if asked: the database holds every object, Secrets too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        return
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


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


__all__ = ["SqliteStorage"]

if TYPE_CHECKING:
    def _conforms(s: SqliteStorage) -> Storage:
        return s

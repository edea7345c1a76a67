"""SqliteStorage: durability across reopen and kill -9, persisted history and counter."""
from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from kubeplane.storage import Compacted, SqliteStorage, new_storage
from kubeplane.storage.interface import StorageError

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"


def obj(name: str, v: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "v": v}


async def test_new_storage_opens_state_db_in_wal_mode(tmp_path: pathlib.Path) -> None:
    s = new_storage("sqlite", tmp_path / "data")
    await s.create("/k/a", obj("a"))
    await s.close()
    db = sqlite3.connect(tmp_path / "data" / "state.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT key, mod_rev FROM kv").fetchall() == [("/k/a", 1)]
    db.close()


async def test_values_are_blobs_and_a_created_keys_prev_is_null(tmp_path: pathlib.Path) -> None:
    """What the bytes and None adapters bind (sqlite.py): the same BLOB and NULL as sqlite3's own protocol."""
    s = SqliteStorage(tmp_path / "state.db")
    kv = await s.create("/k/a", obj("a"))
    await s.update("/k/a", obj("a", 1))
    await s.close()
    db = sqlite3.connect(tmp_path / "state.db")
    assert db.execute("SELECT rev, typeof(value), prev_rev FROM log ORDER BY rev").fetchall() == \
        [(1, "blob", None), (2, "blob", 1)]
    assert "value" not in [c for _, c, *_ in db.execute("PRAGMA table_info(kv)")]   # the log row's
    assert db.execute("SELECT value FROM log WHERE rev = 1").fetchone()[0] == kv.value
    db.close()


def test_new_storage_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown storage backend"):
        new_storage("etcd2")
    with pytest.raises(ValueError, match="data directory"):
        new_storage("sqlite")


async def test_reopen_keeps_objects_and_continues_revisions(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    a = await s.create("/k/a", obj("a"))
    await s.create("/k/b", obj("b"))
    a2 = await s.update("/k/a", obj("a", 1))
    await s.delete("/k/b")                       # the newest write leaves no kv row
    await s.close()

    s = SqliteStorage(path)
    assert s.revision == 4
    assert await s.get("/k/a") == a2 and await s.get("/k/b") is None
    assert (await s.get("/k/a")).create_revision == a.create_revision
    assert (await s.create("/k/c", obj("c"))).mod_revision == 5    # no reuse of 4
    s._check_invariants()
    await s.close()


async def test_watch_resumes_after_reopen(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.update("/k/a", obj("a", 1))
    await s.delete("/k/a")
    await s.close()

    s = SqliteStorage(path)
    w = s.watch("/k/", 1)
    evs = [await asyncio.wait_for(anext(w), 5) for _ in range(2)]
    assert [(e.type, e.revision) for e in evs] == [("MODIFIED", 2), ("DELETED", 3)]
    assert evs[0].prev is not None and evs[0].prev.obj["v"] == 0 and evs[0].prev.mod_revision == 1
    assert evs[1].kv.obj["metadata"]["resourceVersion"] == "3"
    assert evs[1].prev is evs[0].kv                 # each version decoded once on load
    await s.close()


async def test_prev_older_than_reloaded_history_is_restored(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=2)
    await s.create("/k/a", obj("a", 0))                  # 1
    for v in (1, 2, 3):
        await s.update("/k/a", obj("a", v))              # 2, 3, 4
    await s.close()

    s = SqliteStorage(path, history=2)                   # reloads events 3 and 4 only
    ev = await anext(s.watch("/k/", 2))
    assert ev.revision == 3 and ev.prev is not None
    assert (ev.prev.mod_revision, ev.prev.obj["v"]) == (2, 1)   # decoded from the log row
    await s.close()


async def test_compaction_and_counter_survive_reopen(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    for i in range(5):
        await s.create(f"/k/{i}", obj(str(i)))
    await s.delete("/k/4")
    await s.compact(6)                           # the whole log is gone, only meta keeps 6
    await s.close()

    s = SqliteStorage(path)
    assert (s.revision, s.oldest_revision) == (6, 6)
    with pytest.raises(Compacted):
        s.watch("/k/", 5)
    assert (await s.create("/k/new", obj("new"))).mod_revision == 7
    await s.close()


async def test_persisted_history_is_bounded(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    for i in range(50):
        await s.create(f"/k/{i:02d}", obj(str(i)))
    await s.close()
    db = sqlite3.connect(path)
    (rows,) = db.execute("SELECT count(*) FROM log").fetchone()
    (below,) = db.execute("SELECT count(*) FROM log WHERE rev <= (SELECT value FROM meta)").fetchone()
    db.close()
    assert rows == 50                            # every object's one version: each is current
    assert 50 - 11 <= below <= 50 - 10           # the window's 10 (trim batch history // 10 == 1)

    s = SqliteStorage(path, history=10)
    assert (s.revision, s.oldest_revision, await s.count("/k/")) == (50, 40, 50)
    assert [e.revision for e in [await anext(s.watch("/k/", 49))]] == [50]
    await s.close()


CHILD = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[2])
    from kubeplane.storage import SqliteStorage

    async def main():
        s = SqliteStorage(sys.argv[1])
        for i in range(1_000_000):
            kv = await s.create(f"/registry/pods/default/p{i}", {"metadata": {"name": f"p{i}"}})
            await s.wait_committed(kv.mod_revision)
            print(kv.key, kv.mod_revision, flush=True)   # reported only once committed

    asyncio.run(main())
""")


async def test_writes_survive_kill_9(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(SRC)],
                             stdout=subprocess.PIPE, text=True)
    reported: dict[str, int] = {}
    try:
        assert child.stdout is not None
        for line in child.stdout:
            key, rev = line.split()
            reported[key] = int(rev)
            if len(reported) == 300:
                os.kill(child.pid, signal.SIGKILL)      # mid-stream: the child is writing
                break
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL and len(reported) == 300

    s = SqliteStorage(path)
    for key, rev in reported.items():
        kv = await s.get(key)
        assert kv is not None and kv.mod_revision == rev
    assert s.revision >= 300
    s._check_invariants()
    await s.close()


def rows(path: pathlib.Path) -> list[tuple[str, int]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT key, mod_rev FROM kv ORDER BY key").fetchall()
    finally:
        db.close()


async def test_wait_committed_returns_once_the_rows_are_on_disk(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.create("/k/b", obj("b"))
    # Applied (readable, watchable) at once; committed by the committer thread a moment later.
    assert (await s.get("/k/b")) is not None and s.revision == 2
    await s.wait_committed(2)
    assert s.committed_revision == 2 and rows(path) == [("/k/a", 1), ("/k/b", 2)]
    await s.close()


async def test_a_batch_keeps_each_keys_final_state(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.delete("/k/a")
    await s.create("/k/a", obj("a", 2))       # delete, then re-create, in one batch
    await s.create("/k/b", obj("b"))
    await s.delete("/k/b")
    await s.close()
    assert rows(path) == [("/k/a", 3)]
    s = SqliteStorage(path)
    kv = await s.get("/k/a")
    assert kv is not None and kv.obj["v"] == 2 and s.revision == 5
    w = s.watch("/k/", 0)
    assert [ev.type for ev in w.ready()] == ["ADDED", "DELETED", "ADDED", "ADDED", "DELETED"]
    await s.close()


async def test_a_failed_commit_stops_the_store(tmp_path: pathlib.Path) -> None:
    s = SqliteStorage(tmp_path / "state.db")
    await s.create("/k/a", obj("a"))
    await s.wait_committed(1)

    def broken(batch: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")
    s._committer._commit = broken  # type: ignore[method-assign]
    await s.create("/k/b", obj("b"))             # applied in memory, its commit will fail
    with pytest.raises(StorageError, match="disk I/O error"):
        await s.wait_committed(2)
    with pytest.raises(StorageError):
        await s.create("/k/c", obj("c"))       # refused: nothing changes
    assert s.revision == 2 and s.committed_revision == 1 and await s.get("/k/c") is None
    await s.close()


async def test_kv_holds_one_row_per_live_key_keyed_by_revision(tmp_path: pathlib.Path) -> None:
    """kv is keyed by mod_rev (no index on the keys): a write replaces the row of its prev, in
    the same batch or a later one; a delete removes it; a reopen reads back the same objects."""
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.create("/k/b", obj("b"))
    await s.wait_committed(2)
    await s.update("/k/a", obj("a", 1))            # one batch: a twice, b deleted, c created and updated
    await s.update("/k/a", obj("a", 2))
    await s.delete("/k/b")
    await s.create("/k/c", obj("c"))
    await s.update("/k/c", obj("c", 1))
    await s.wait_committed(7)
    await s.create("/k/b", obj("b", 1))            # a deleted key again
    await s.close()
    assert rows(path) == [("/k/a", 4), ("/k/b", 8), ("/k/c", 7)]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA index_list(kv)").fetchall() == []
    db.close()
    s = SqliteStorage(path)
    assert [(await s.get(k)).obj["v"] for k in ("/k/a", "/k/b", "/k/c")] == [2, 1, 1]  # type: ignore[union-attr]
    await s.close()


async def test_a_file_with_kv_keyed_by_key_is_rekeyed_at_open(tmp_path: pathlib.Path) -> None:
    """A file of schema 1 (kv's primary key was the key): its rows move to a kv keyed by
    mod_rev at the first open; objects, revisions and later writes as before."""
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.create("/k/b", obj("b"))
    await s.update("/k/a", obj("a", 1))
    await s.close()
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE kv RENAME TO kv2")
        db.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL,"
                   " value BLOB NOT NULL)")
        db.execute("INSERT INTO kv SELECT kv2.key, kv2.create_rev, kv2.mod_rev, log.value"
                   " FROM kv2 JOIN log ON log.rev = kv2.mod_rev")      # schema 1 held a copy of each value
        db.execute("DROP TABLE kv2")
        db.execute("PRAGMA user_version = 1")
    db.close()
    s = SqliteStorage(path)
    assert (await s.get("/k/a")).obj["v"] == 1 and s.revision == 3  # type: ignore[union-attr]
    await s.update("/k/b", obj("b", 1))
    await s.close()
    assert rows(path) == [("/k/a", 3), ("/k/b", 4)]
    db = sqlite3.connect(path)
    assert [r[5] for r in db.execute("PRAGMA table_info(kv)")] == [0, 0, 1]   # and no value (schema 3)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 3
    db.close()

"""SqliteStorage's persisted window: each version stored once, prevs rebuilt after trims and
restarts (also after kill -9), compaction on disk, and the upgrade of a file from before."""
from __future__ import annotations

import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import textwrap

import orjson
import pytest
from storage_testutil import obj, query, summary, until, window

from kubeplane.storage import SqliteStorage, StorageError
from kubeplane.storage import sqlite as sqlite_module
from kubeplane.storage.memory import stamp

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"


async def test_each_version_is_stored_once(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    await s.create("/k/b", obj("b"))                          # 1
    await s.create("/k/a", obj("a"))                          # 2
    for v in range(1, 21):
        await s.update("/k/a", obj("a", v))                   # 3..22
    await s.close()                                           # trims the file to the window
    # The window is 13..22; below it only row 12, the prev of event 13, and b's row 1, its
    # current version (kv has no value: the log row is its only copy), are kept.
    assert query(path, "SELECT rev FROM log WHERE rev <= 12") == [(1,), (12,)]
    assert [r for (r,) in query(path, "SELECT rev FROM log WHERE rev > 12")] == list(range(13, 23))
    assert query(path, "SELECT value FROM meta WHERE name = 'compacted'") == [(12,)]
    assert [c for (_, c, *_) in query(path, "PRAGMA table_info(log)")] == [
        "rev", "type", "key", "create_rev", "prev_rev", "value"]

    s = SqliteStorage(path, history=10)
    before = summary(window(s))
    await s.update("/k/b", obj("b", 1))                       # 23: its prev (1) is below the floor
    await s.close()
    assert (1, "/k/b") in query(path, "SELECT rev, key FROM log WHERE rev <= 13")   # kept, now as 23's prev

    s = SqliteStorage(path, history=10)
    after = summary(window(s))
    assert after[-1] == ("MODIFIED", "/k/b", 23, 1, (1, 0))
    assert after[:-1] == before[1:]                           # the same events, the same prevs
    assert after[0][4] == (13, 11)                            # 14's prev, from the window
    await s.close()


async def test_a_prev_exactly_at_the_floor_is_kept(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=2)
    await s.create("/k/a", obj("a"))                          # 1
    await s.create("/k/b", obj("b"))                          # 2
    await s.update("/k/b", obj("b", 1))                       # 3: the window is 2..3, the floor 1
    await s.close()
    assert query(path, "SELECT rev FROM log") == [(1,), (2,), (3,)]   # row 1 stays: a's current version
    s = SqliteStorage(path, history=2)
    await s.update("/k/a", obj("a", 1))                       # 4: its prev is revision 1, the floor
    await s.close()
    s = SqliteStorage(path, history=2)
    assert summary(window(s)) == [("MODIFIED", "/k/b", 3, 1, (2, 0)), ("MODIFIED", "/k/a", 4, 1, (1, 0))]
    await s.close()


async def test_trims_and_compactions_then_a_restart_keep_every_prev(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=1000, history_bytes=4000)
    for i in range(60):                                       # ~300-byte versions of 4 keys
        key = f"/k/{i % 4}"
        if i < 4:
            await s.create(key, obj(key, i, 250))
        elif i % 9 == 0:
            await s.delete(key)
        elif await s.get(key) is None:
            await s.create(key, obj(key, i, 250))
        else:
            await s.update(key, obj(key, i, 250))
        if i == 30:
            await s.compact(s.revision - 3)
    before = summary(window(s))
    oldest = s.oldest_revision
    assert 30 < oldest < 50 and before[0][2] == oldest + 1    # past the compaction, too
    await s.close()

    s = SqliteStorage(path, history=1000, history_bytes=4000)
    assert s.oldest_revision == oldest and summary(window(s)) == before
    s._check_invariants()
    await s.close()


async def test_compaction_reaches_the_file_without_a_restart(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    for i in range(5):
        await s.create(f"/k/{i}", obj(str(i)))                # 1..5
    for i in range(3):
        await s.update(f"/k/{i}", obj(str(i), 1))            # 6..8, whose prevs are 1..3
    await s.wait_committed(8)
    await s.compact(7)
    await until(lambda: query(path, "SELECT value FROM meta WHERE name = 'compacted'") == [(7,)],
                "the committer to trim the file")
    # 1 and 2 go (their events 6 and 7 are out of the window), 3 stays (event 8's prev), and
    # 4..8 are current versions.
    assert query(path, "SELECT rev FROM log") == [(3,), (4,), (5,), (6,), (7,), (8,)]
    await s.close()


# --- a file written before this schema -----------------------------------------------------------

V0_SCHEMA = """
CREATE TABLE kv (key TEXT PRIMARY KEY, create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL,
    value BLOB NOT NULL);
CREATE TABLE log (rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, key TEXT NOT NULL,
    create_rev INTEGER NOT NULL, value BLOB NOT NULL,
    prev_create_rev INTEGER, prev_mod_rev INTEGER, prev_value BLOB);
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def write_v0(path: pathlib.Path) -> None:
    """What the previous code left: a 1, 2, 3 (modified), b 4 (added), a 5 (deleted); its log
    trimmed to 3..5, each row with its prev beside it; auto_vacuum NONE."""
    a = [stamp("/k/a", obj("a", v), 1, rev) for v, rev in enumerate((1, 2, 3))]
    b = stamp("/k/b", obj("b", 9), 4, 4)
    gone = stamp("/k/a", a[2].obj, 1, 5)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(V0_SCHEMA)
    db.execute("INSERT INTO kv VALUES ('/k/b', 4, 4, ?)", (b.value,))
    db.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        (3, 1, "/k/a", 1, a[2].value, 1, 2, a[1].value),
        (4, 0, "/k/b", 4, b.value, None, None, None),
        (5, 2, "/k/a", 1, gone.value, 1, 3, a[2].value)])
    db.commit()
    db.close()


async def test_a_file_from_before_is_upgraded_into_a_new_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    write_v0(path)
    (tmp_path / "state.db.upgrade").write_bytes(b"left by a crash during an upgrade")
    assert query(path, "PRAGMA auto_vacuum") == [(0,)]
    s = SqliteStorage(path)
    assert (s.revision, s.oldest_revision) == (5, 2)
    assert summary(window(s)) == [("MODIFIED", "/k/a", 3, 2, (2, 1)), ("ADDED", "/k/b", 4, 9, None),
                                  ("DELETED", "/k/a", 5, 2, (3, 2))]
    assert (await s.update("/k/b", obj("b", 10))).mod_revision == 6
    await s.close()
    assert query(path, "PRAGMA auto_vacuum") == [(2,)] and query(path, "PRAGMA user_version") == [(3,)]
    assert sorted(os.listdir(tmp_path)) == ["state.db"]                  # replaced by the copy
    assert query(path, "SELECT rev, key FROM log ORDER BY rev") == [
        (2, "/k/a"), (3, "/k/a"), (4, "/k/b"), (5, "/k/a"), (6, "/k/b")]   # 2: 3's prev, kept below

    s = SqliteStorage(path)
    assert [e[2:] for e in summary(window(s))][-1] == (6, 10, (4, 9))
    await s.close()


# --- kill -9 while the log is being trimmed --------------------------------------------------------

CHILD = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[2])
    from kubeplane.storage import SqliteStorage

    async def main():
        s = SqliteStorage(sys.argv[1], history=20, history_bytes=3000)
        for i in range(1_000_000):
            key = f"/registry/configmaps/default/c{i % 7}"
            obj = {"metadata": {"name": key}, "v": i, "pad": "x" * (i % 5 * 100)}
            kv = await (s.update(key, obj) if await s.get(key) else s.create(key, obj))
            await s.wait_committed(kv.mod_revision)
            print(kv.key, kv.mod_revision, i, flush=True)   # reported only once committed

    asyncio.run(main())
""")


async def test_kill_9_during_trims_loses_no_write_and_no_prev(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(SRC)],
                             stdout=subprocess.PIPE, text=True)
    reported: dict[str, tuple[int, int]] = {}
    try:
        assert child.stdout is not None
        for n, line in enumerate(child.stdout):
            key, rev, v = line.split()
            reported[key] = (int(rev), int(v))
            if n == 400:
                os.kill(child.pid, signal.SIGKILL)          # many trims have happened by now
                break
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL

    s = SqliteStorage(path, history=20, history_bytes=3000)
    for key, (rev, v) in reported.items():
        kv = await s.get(key)
        assert kv is not None and kv.mod_revision >= rev and (kv.mod_revision > rev or kv.obj["v"] == v)
    evs = window(s)
    assert evs and evs[-1].revision == s.revision and len(evs) <= 20
    for ev in evs:
        assert ev.type == "MODIFIED" and ev.prev is not None and ev.prev.key == ev.kv.key
        assert ev.prev.obj["v"] < ev.kv.obj["v"]
        assert orjson.loads(ev.prev.value)["metadata"]["resourceVersion"] == str(ev.prev.mod_revision)
    s._check_invariants()
    await s.close()


# --- schema 3: a current version's value only in its log row ---------------------------------------

def log_revs(path: pathlib.Path, key: str) -> list[int]:
    return [r for (r,) in query(path, "SELECT rev FROM log WHERE key = ? ORDER BY rev", key)]


def floor_of(path: pathlib.Path) -> int:
    return query(path, "SELECT coalesce(max(value), 0) FROM meta WHERE name = 'compacted'")[0][0]


async def test_an_object_never_updated_survives_trims_far_past_it_and_a_restart(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    await s.create("/k/old", obj("old", 7))                   # 1
    for v in range(300):                                      # 2..301: ~30 trims, the floor near 291
        await s.create("/k/x", obj("x", v)) if v == 0 else await s.update("/k/x", obj("x", v))
    await s.wait_committed(301)
    await until(lambda: floor_of(path) >= 280, "the trims to pass revision 1 by far")
    assert log_revs(path, "/k/old") == [1]                    # its only copy: kept, never trimmed
    before = summary(window(s))
    await s.close()

    s = SqliteStorage(path, history=10)
    kv = await s.get("/k/old")
    assert kv is not None and (kv.mod_revision, kv.create_revision, kv.obj["v"]) == (1, 1, 7)
    assert kv.obj["metadata"]["resourceVersion"] == "1"
    assert summary(window(s)) == before and s.oldest_revision == 291
    s._check_invariants()
    await s.update("/k/old", obj("old", 8))                   # 302: its prev is the kept row 1
    await s.close()
    s = SqliteStorage(path, history=10)
    assert summary(window(s))[-1] == ("MODIFIED", "/k/old", 302, 8, (1, 7))
    await s.close()


async def rewrite_x(s: SqliteStorage, path: pathlib.Path, versions: range, floor: int, why: str) -> None:
    """Rewrite /k/x once per version, then wait until the committed file's floor reaches floor."""
    for v in versions:
        await s.update("/k/x", obj("x", v))
    await s.wait_committed(s.revision)
    await until(lambda: floor_of(path) >= floor, why)


async def test_an_old_version_is_kept_as_a_prev_until_its_event_leaves_the_window(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    await s.create("/k/a", obj("a", 0))                       # 1
    await s.create("/k/x", obj("x", 0))                       # 2
    await rewrite_x(s, path, range(1, 40), 30, "the floor to pass a's revision")   # 3..41
    await s.update("/k/a", obj("a", 1))                       # 42: prev 1, below the floor
    await s.wait_committed(42)
    await until(lambda: floor_of(path) >= 32, "a trim after the update")
    assert log_revs(path, "/k/a") == [1, 42]                  # 1 kept as 42's prev
    await s.close()
    s = SqliteStorage(path, history=10)
    assert summary(window(s))[-1] == ("MODIFIED", "/k/a", 42, 1, (1, 0))
    await rewrite_x(s, path, range(40, 60), 45, "the window to pass event 42")     # 43..62
    assert log_revs(path, "/k/a") == [42]                     # the prev went, the current stays
    await s.close()
    s = SqliteStorage(path, history=10)
    kv = await s.get("/k/a")
    assert kv is not None and (kv.mod_revision, kv.obj["v"]) == (42, 1)
    assert all(e.kv.key == "/k/x" for e in window(s))
    s._check_invariants()
    await s.close()


async def test_a_deleted_objects_rows_go_when_the_window_passes_them(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    await s.create("/k/d", obj("d", 0))                       # 1
    await s.update("/k/d", obj("d", 1))                       # 2
    await s.create("/k/x", obj("x", 0))                       # 3
    await s.delete("/k/d")                                    # 4
    await s.wait_committed(4)
    await s.compact(2)
    await until(lambda: floor_of(path) == 2, "a trim inside d's history")
    assert log_revs(path, "/k/d") == [2, 4]                   # 2: the delete's prev
    for v in range(1, 30):
        await s.update("/k/x", obj("x", v))                   # 5..33
    await s.close()
    assert log_revs(path, "/k/d") == []
    assert query(path, "SELECT count(*) FROM kv") == [(1,)]
    s = SqliteStorage(path, history=10)
    assert await s.get("/k/d") is None and s.revision == 33
    await s.close()


async def test_each_current_value_is_stored_once(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=10)
    values = [(await s.create(f"/k/{i:03d}", obj(str(i), pad=1500))).value for i in range(200)]
    await s.close()
    assert "value" not in [c for _, c, *_ in query(path, "PRAGMA table_info(kv)")]
    assert query(path, "SELECT count(*), sum(length(value)) FROM log") == [(200, sum(map(len, values)))]
    assert path.stat().st_size < 1.75 * sum(map(len, values))  # pages and B-trees, not a second copy (2x)


async def test_a_kv_row_without_its_log_row_fails_the_open(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path)
    await s.create("/k/a", obj("a"))
    await s.close()
    db = sqlite3.connect(path)
    with db:
        db.execute("DELETE FROM log")
    db.close()
    with pytest.raises(StorageError, match="/k/a .revision 1.: its value is missing"):
        SqliteStorage(path)


# --- a file of schema 2: kv held a copy of each current value -------------------------------------

V2_SCHEMA = """
PRAGMA auto_vacuum = INCREMENTAL;
CREATE TABLE kv (key TEXT NOT NULL, create_rev INTEGER NOT NULL, mod_rev INTEGER PRIMARY KEY,
    value BLOB NOT NULL);
CREATE TABLE log (rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, key TEXT NOT NULL,
    create_rev INTEGER NOT NULL, prev_rev INTEGER, value BLOB NOT NULL);
CREATE INDEX log_prev ON log (prev_rev) WHERE prev_rev IS NOT NULL;
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
PRAGMA user_version = 2;
"""


def write_v2(path: pathlib.Path) -> None:
    """What schema 2 left: a created at 1 (below the floor 2, its log row trimmed: only kv has
    it); b 2, 3, 4 (2 kept as 3's prev); c created at 5, deleted at 6."""
    a = stamp("/k/a", obj("a", 1), 1, 1)
    b = [stamp("/k/b", obj("b", v), 2, rev) for v, rev in enumerate((2, 3, 4))]
    c = stamp("/k/c", obj("c", 5), 5, 5)
    gone = stamp("/k/c", c.obj, 5, 6)
    db = sqlite3.connect(path)
    db.executescript(V2_SCHEMA)
    db.execute("PRAGMA journal_mode=WAL")
    with db:
        db.executemany("INSERT INTO kv VALUES (?, ?, ?, ?)", [("/k/a", 1, 1, a.value), ("/k/b", 2, 4, b[2].value)])
        db.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?)", [
            (2, 0, "/k/b", 2, None, b[0].value), (3, 1, "/k/b", 2, 2, b[1].value), (4, 1, "/k/b", 2, 3, b[2].value),
            (5, 0, "/k/c", 5, None, c.value), (6, 2, "/k/c", 5, 5, gone.value)])
        db.execute("INSERT INTO meta VALUES ('compacted', 2)")
    db.close()


V2_WINDOW = [("MODIFIED", "/k/b", 3, 1, (2, 0)), ("MODIFIED", "/k/b", 4, 2, (3, 1)),
             ("ADDED", "/k/c", 5, 5, None), ("DELETED", "/k/c", 6, 5, (5, 5))]


async def test_a_schema_2_file_is_converted_at_its_first_open(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    write_v2(path)
    s = SqliteStorage(path)
    assert (s.revision, s.oldest_revision) == (6, 2)
    assert [(kv.key, kv.mod_revision, kv.obj["v"]) for kv in [await s.get("/k/a"), await s.get("/k/b")]
            if kv is not None] == [("/k/a", 1, 1), ("/k/b", 4, 2)]
    assert summary(window(s)) == V2_WINDOW
    s._check_invariants()
    await s.close()
    assert query(path, "PRAGMA user_version") == [(3,)]
    assert [c for _, c, *_ in query(path, "PRAGMA table_info(kv)")] == ["key", "create_rev", "mod_rev"]
    assert query(path, "SELECT rev, type, key, create_rev, prev_rev FROM log WHERE rev <= 2") == [
        (1, 0, "/k/a", 1, None), (2, 0, "/k/b", 2, None)]    # a's value moved into a kept row

    s = SqliteStorage(path)                                  # reopens as schema 3
    assert summary(window(s)) == V2_WINDOW
    await s.update("/k/a", obj("a", 2))                      # 7: its prev is the moved row
    await s.close()
    s = SqliteStorage(path)
    assert summary(window(s))[-1] == ("MODIFIED", "/k/a", 7, 2, (1, 1))
    await s.close()


async def test_a_schema_2_upgrade_that_fails_leaves_the_file_as_it_was(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.db"
    write_v2(path)
    # The failure comes after kv was renamed and the new one created: the transaction undoes both.
    monkeypatch.setattr(sqlite_module, "_SCHEMA", [*sqlite_module._SCHEMA, "SELECT no_such_function()"])
    with pytest.raises(sqlite3.OperationalError, match="no_such_function"):
        SqliteStorage(path)
    assert query(path, "PRAGMA user_version") == [(2,)]
    assert [c for _, c, *_ in query(path, "PRAGMA table_info(kv)")] == ["key", "create_rev", "mod_rev", "value"]
    assert query(path, "SELECT name FROM sqlite_master WHERE name LIKE 'kv%'") == [("kv",)]
    monkeypatch.undo()
    s = SqliteStorage(path)
    assert summary(window(s)) == V2_WINDOW and (await s.get("/k/a")) is not None
    await s.close()

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
from storage_testutil import obj, query, summary, until, window

from kubeplane.storage import SqliteStorage
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

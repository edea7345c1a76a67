"""SqliteStorage's files: reclaimed when history shrinks, 0600, and values through a Transformer."""
from __future__ import annotations

import logging
import os
import pathlib
import sqlite3
import stat

import pytest
from storage_testutil import obj, query, summary, until, window

from kubeplane.storage import SqliteStorage, StorageError, committer, new_storage


def size(path: pathlib.Path) -> int:
    return path.stat().st_size if path.exists() else 0


def mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_free_pages_are_given_back_and_the_wal_truncated_when_idle(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(committer, "IDLE", 0.05)
    path, wal = tmp_path / "state.db", tmp_path / "state.db-wal"
    s = SqliteStorage(path, history_bytes=100_000)
    for i in range(40):                                  # 40 x 100 KB live: a 4 MB window
        await s.create(f"/k/{i}", obj(str(i), pad=100_000))
    await s.wait_committed(s.revision)
    await until(lambda: size(path) > 4_000_000, "the rows to reach the file")
    peak = size(path)
    assert peak < 6_000_000                              # each value once (twice was 8 MB)
    for i in range(40):                                  # nothing live: the window shrinks to 100 KB
        await s.delete(f"/k/{i}")
    await s.wait_committed(s.revision)
    # Left: the window's last event and its prev (2 x 100 KB) and VACUUM_MIN (1 MiB) free pages.
    await until(lambda: size(path) < min(peak / 2, 1_600_000) and size(wal) == 0, "reclaim and an idle checkpoint")
    assert query(path, "PRAGMA freelist_count")[0][0] <= 256          # VACUUM_MIN pages at most
    await s.close()


async def test_state_db_wal_and_shm_are_0600(tmp_path: pathlib.Path) -> None:
    os.umask(0o022)                                      # what would make them 0644
    s = new_storage("sqlite", tmp_path / "data")
    await s.create("/k/a", obj("a"))
    await s.wait_committed(1)
    files = [tmp_path / "data" / name for name in ("state.db", "state.db-wal", "state.db-shm")]
    assert [mode(p) for p in files] == [0o600] * 3
    await s.close()


async def test_existing_files_are_tightened_at_open(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)                           # an old file, left 0644 with its -wal
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    files = [path, tmp_path / "state.db-wal", tmp_path / "state.db-shm"]
    for p in files:
        os.chmod(p, 0o644)
    s = SqliteStorage(path)
    db.close()
    assert [mode(p) for p in files] == [0o600] * 3
    await s.close()


# --- a Transformer (encryption at rest) ------------------------------------------------------

XOR = bytes.maketrans(bytes(range(256)), bytes(b ^ 0x5A for b in range(256)))


class Xor:
    """A toy cipher: a key-name prefix and every byte XOR 0x5A. Reads `read` (k0: and k1:),
    writes `write`."""

    def __init__(self, write: bytes = b"k1:", broken: str = "", read: tuple[bytes, ...] = (b"k0:", b"k1:")) -> None:
        self.write, self.broken, self.read = write, broken, read
        self.calls = 0

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        self.calls += 1
        return self.write + data.translate(XOR)

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if key == self.broken or data[:3] not in self.read:
            raise ValueError("no matching prefix found")
        return data[3:].translate(XOR), data[:3] != self.write


SECRET = "s3cr3t-password"


def raw(tmp_path: pathlib.Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("state.db*"))


async def test_values_reach_the_file_only_transformed(tmp_path: pathlib.Path) -> None:
    path, t = tmp_path / "state.db", Xor()
    s = SqliteStorage(path, history=3, transformer=t)
    await s.create("/registry/secrets/default/db", {"metadata": {"name": "db"}, "v": 0, "data": SECRET})
    for v in range(1, 6):                                # trims: prevs below the floor get rows too
        await s.update("/registry/secrets/default/db", {"metadata": {"name": "db"}, "v": v, "data": SECRET})
    await s.create("/registry/secrets/default/other", {"metadata": {"name": "other"}, "v": 0})
    await s.wait_committed(s.revision)
    before = summary(window(s))
    assert SECRET.encode() not in raw(tmp_path) and t.calls > 0
    await s.close()
    assert SECRET.encode() not in raw(tmp_path)
    assert query(path, "SELECT count(*) FROM log WHERE rev <= 4") == [(1,)]   # a prev row, transformed

    s = SqliteStorage(path, history=3, transformer=Xor())
    assert summary(window(s)) == before and (await s.get("/registry/secrets/default/db")).obj["data"] == SECRET
    await s.close()


async def test_a_value_that_cannot_be_read_back_fails_the_open_naming_its_key(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state.db"
    s = SqliteStorage(path, transformer=Xor())
    await s.create("/registry/secrets/default/db", {"metadata": {"name": "db"}, "v": 0})
    await s.close()
    with pytest.raises(StorageError, match=r"/registry/secrets/default/db.*no matching prefix"):
        SqliteStorage(path, transformer=Xor(broken="/registry/secrets/default/db"))
    with pytest.raises(StorageError, match="/registry/secrets/default/db"):
        SqliteStorage(path)                              # no transformer: the bytes are not JSON


async def test_values_under_an_old_key_are_rewritten_under_the_first_at_open(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """Key rotation: the next open reads every value written with the old key (history and
    kept prevs included) and stores it again with the new one, at the same revision, so the
    old key can then be dropped."""
    path = tmp_path / "state.db"
    s = SqliteStorage(path, history=3, transformer=Xor(write=b"k0:"))
    await s.create("/k/a", obj("a"))
    for v in range(1, 5):
        await s.update("/k/a", {**obj("a"), "v": v})
    await s.close()
    stored = {row[0] for row in query(path, "SELECT value FROM log")}
    assert stored and all(v.startswith(b"k0:") for v in stored)
    with caplog.at_level(logging.INFO, logger="kubeplane.storage.sqlite"):
        s = SqliteStorage(path, history=3, transformer=Xor(write=b"k1:"))
    assert "stored values re-encrypted with the first key" in caplog.text
    before = summary(window(s))
    assert (await s.get("/k/a")).obj["v"] == 4
    await s.close()
    stored = {row[0] for row in query(path, "SELECT value FROM log")}
    assert all(v.startswith(b"k1:") for v in stored)
    s = SqliteStorage(path, history=3, transformer=Xor(write=b"k1:", read=(b"k1:",)))   # the old key is gone
    assert summary(window(s)) == before
    await s.close()


async def test_each_version_is_transformed_once(tmp_path: pathlib.Path) -> None:
    """One transform per write: a prev below the floor is its key's current version, whose one
    stored copy (its log row) is kept, so nothing writes it again."""
    path, t = tmp_path / "state.db", Xor()
    s = SqliteStorage(path, history=3, transformer=t)
    await s.create("/k/a", obj("a"))                         # 1
    await s.create("/k/b", obj("b"))                         # 2
    for v in range(1, 11):
        await s.update("/k/b", obj("b", v))                  # 3..12: the floor passes 1
    await s.wait_committed(12)
    await until(lambda: query(path, "SELECT value FROM meta WHERE name = 'compacted'") >= [(8,)], "trims")
    await s.update("/k/a", obj("a", 1))                      # 13: its prev, 1, is below the floor
    await s.close()
    assert t.calls == 13
    s = SqliteStorage(path, history=3, transformer=t)
    assert summary(window(s))[-1] == ("MODIFIED", "/k/a", 13, 1, (1, 0))
    await s.close()

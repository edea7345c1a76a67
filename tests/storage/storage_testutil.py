"""Helpers shared by the SqliteStorage tests."""
from __future__ import annotations

import asyncio
import pathlib
import sqlite3
import time
from typing import Any, Callable

from kubeplane.storage import SqliteStorage, WatchEvent


def obj(name: str, v: int = 0, pad: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "v": v, "pad": "x" * pad}


def query(path: pathlib.Path, sql: str, *args: Any) -> list[tuple]:
    """sql on a connection of its own (WAL lets it read beside the store)."""
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


async def until(check: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    """Poll check() (the committer is a real thread) until it holds; fail naming what."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def window(s: SqliteStorage) -> list[WatchEvent]:
    """Every event a watch can still resume from."""
    return s.watch("", s.oldest_revision).ready()


def summary(evs: list[WatchEvent]) -> list[tuple]:
    """Each event with its object's v and its prev's (revision, v): what a restart must keep."""
    return [(e.type, e.kv.key, e.revision, e.kv.obj["v"], e.prev and (e.prev.mod_revision, e.prev.obj["v"]))
            for e in evs]

"""Storage backends behind one interface: `memory` (tests) and `sqlite` (durable default).

    storage = new_storage("sqlite", data_dir)        # data_dir/"state.db"
    kv = await storage.create("/registry/pods/default/web-0", pod)
    async for ev in storage.watch("/registry/pods/", kv.mod_revision - 1): ...
"""
from __future__ import annotations

import pathlib

from .interface import (
    Compacted, EventType, KeyExists, KeyNotFound, KeyValue, RevisionMismatch, Storage,
    StorageError, WatchEvent, Watcher,
)
from .memory import DEFAULT_HISTORY, MemoryStorage
from .sqlite import SqliteStorage

BACKENDS = ("memory", "sqlite")


def new_storage(
    backend: str, data_dir: pathlib.Path | None = None, *, history: int = DEFAULT_HISTORY
) -> Storage:
    """Open the named backend; history is how many events watches can resume from.

    "sqlite" needs data_dir (created if missing) and stores data_dir/"state.db".
    """
    if backend == "memory":
        return MemoryStorage(history=history)
    if backend == "sqlite":
        if data_dir is None:
            raise ValueError("the sqlite storage backend needs a data directory")
        data_dir = pathlib.Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteStorage(data_dir / "state.db", history=history)
    raise ValueError(f"unknown storage backend {backend!r} (expected one of {', '.join(BACKENDS)})")


__all__ = [
    "BACKENDS", "Compacted", "DEFAULT_HISTORY", "EventType", "KeyExists", "KeyNotFound",
    "KeyValue", "MemoryStorage", "RevisionMismatch", "SqliteStorage", "Storage",
    "StorageError", "WatchEvent", "Watcher", "new_storage",
]

"""Storage backends behind one interface: `memory` (tests), `sqlite` (durable default) and
`etcd` (a real etcd cluster: several API servers, components anywhere; etcd.py).

    storage = new_storage("sqlite", data_dir)        # data_dir/"state.db"
    kv = await storage.create("/registry/pods/default/web-0", pod)
    async for ev in storage.watch("/registry/pods/", kv.mod_revision - 1): ...
    await run_compactor(storage, 300.0)               # compactor.py: upstream's 5-minute cadence
"""
from __future__ import annotations

import pathlib

from .compactor import DEFAULT_COMPACTION_INTERVAL, run_compactor
from .etcd import EtcdConfig
from .interface import (
    Compacted, EventType, KeyExists, KeyNotFound, KeyValue, RevisionMismatch, Storage,
    StorageError, Transformer, WatchEvent, Watcher,
)
from .memory import DEFAULT_HISTORY, MemoryStorage
from .sqlite import SqliteStorage
from .watch_log import DEFAULT_HISTORY_BYTES

BACKENDS = ("memory", "sqlite")         # and "etcd", which needs a cluster (EtcdConfig)


def new_storage(
    backend: str, data_dir: pathlib.Path | None = None, *, history: int = DEFAULT_HISTORY,
    history_bytes: int = DEFAULT_HISTORY_BYTES, transformer: Transformer | None = None,
    etcd: EtcdConfig | None = None,
) -> Storage:
    """Make the named backend (`await storage.start()` before use); watches can resume from the
    last `history` events, as long as they take at most max(history_bytes, 8 x the live data)
    bytes (watch_log.py).

    "sqlite" needs data_dir (created if missing) and stores data_dir/"state.db", every value
    through transformer if one is given (encryption at rest; memory keeps nothing at rest).
    "etcd" needs etcd (servers, prefix, TLS files) and keeps no data dir of its own.
    """
    if backend == "etcd":
        if etcd is None:
            raise ValueError("the etcd storage backend needs --etcd-servers")
        from .etcd import EtcdStorage       # grpc is imported only for etcd
        return EtcdStorage(etcd, history=history, history_bytes=history_bytes, transformer=transformer)
    if backend == "memory":
        return MemoryStorage(history=history, history_bytes=history_bytes)
    if backend == "sqlite":
        if data_dir is None:
            raise ValueError("the sqlite storage backend needs a data directory")
        data_dir = pathlib.Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        return SqliteStorage(data_dir / "state.db", history=history, history_bytes=history_bytes,
                             transformer=transformer)
    raise ValueError(f"unknown storage backend {backend!r} (expected one of {', '.join(BACKENDS)})")


__all__ = [
    "BACKENDS", "Compacted", "EtcdConfig", "DEFAULT_COMPACTION_INTERVAL", "DEFAULT_HISTORY", "DEFAULT_HISTORY_BYTES",
    "EventType", "KeyExists", "KeyNotFound", "KeyValue", "MemoryStorage", "RevisionMismatch",
    "SqliteStorage", "Storage", "StorageError", "Transformer", "WatchEvent", "Watcher",
    "new_storage", "run_compactor",
]

"""The compactor: every interval, compact the store to the revision it had one interval before.

Upstream: compactor.runCompactLoop (apiserver/pkg/storage/etcd3/compact.go), started by
kube-apiserver for etcd with --etcd-compaction-interval (default 5m, 0 disables). Each tick
compacts to the revision seen at the previous tick and remembers the current one; the first
tick only remembers ("we don't compact on bootstrap"). So the history always covers the last
interval, and at most two: with the default, watches resume from anything 5 minutes old, and
anything older than 10 minutes is gone.

Example, interval 5 min: at 0:05 the revision is 100 (remembered); at 0:10 it is 180: compact(100),
remember 180; at 0:15 compact(180). A watch from revision 150 at 0:14 resumes; at 0:16 it gets
410 Expired ("too old resource version: 150 (180)") and its informer re-lists.

Our store serves watches from the same window it keeps on disk, so compaction shrinks both;
the count and byte bounds of the window (watch_log.py) may have dropped more already.
Upstream's etcd compaction is the only thing that drops history there; its watch cache
keeps its own, smaller window (~75 s).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..utils.clock import REAL_CLOCK, Clock
from .interface import StorageError

if TYPE_CHECKING:
    from .interface import Storage

log = logging.getLogger(__name__)

DEFAULT_COMPACTION_INTERVAL = 300.0     # Upstream: storagebackend.DefaultCompactInterval


async def run_compactor(storage: Storage, interval: float, *, clock: Clock = REAL_CLOCK) -> None:
    """Compact storage every interval seconds to the previous tick's revision, until cancelled;
    returns at once if interval <= 0 (compaction disabled).

    Upstream: compactor.runCompactLoop and Compact (compact.go). A failed compaction is logged
    and the next tick tries the same revision again, as upstream's loop does.
    """
    if interval <= 0:
        return
    rev = 0
    while True:
        await clock.sleep(interval)
        if rev:
            try:
                await storage.compact(rev)
            except StorageError as e:
                log.error("storage: compaction to revision %d failed: %s", rev, e)
                continue
            log.debug("storage: compacted revision %d", rev)
        rev = storage.revision

"""The audit log backend: events written as lines to a file (rotated) or stdout, by a thread.

The event loop never writes: it encodes the event (a few µs) and appends the line to a queue;
one writer thread takes everything queued, writes it in one go and flushes. The modes are
upstream's --audit-log-mode:

- batch (kubeplane's default): the request does not wait. The queue holds at most
  --audit-log-batch-buffer-size events (10,000, upstream's default); an event that finds it
  full is dropped and the error logged ("audit buffer queue blocked"), as upstream's buffered
  backend does. The thread writes what gathered at most every BATCH_WAIT.
- blocking (kube-apiserver's default): the request waits until its event is written (the
  loop serves others meanwhile); a failed write is logged and the request goes on. Each
  audited request then waits for two hand-overs to the thread and back: ~110 µs of CPU per
  in-process write against ~35 µs in batch mode (BENCHMARKS.md), hence the other default.
- blocking-strict: as blocking, but a RequestReceived event that cannot be written fails
  the request (500, "failed to store audit event").

Upstream: plugin/pkg/audit/log/backend.go, plugin/pkg/audit/buffered/buffered.go, and
AuditBatchOptions.wrapBackend (apiserver/pkg/server/options/audit.go).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Protocol

from . import metrics

if TYPE_CHECKING:
    from .buffered import TokenBucket
    from .event import AuditContext

log = logging.getLogger(__name__)

FORMAT_LEGACY, FORMAT_JSON = "legacy", "json"
FORMATS = (FORMAT_LEGACY, FORMAT_JSON)
MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT = "batch", "blocking", "blocking-strict"
MODES = (MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT)
DEFAULT_MODE = MODE_BATCH       # kube-apiserver: blocking (see the module docstring)
DEFAULT_BUFFER_SIZE = 10_000    # upstream: defaultBatchBufferSize
# Batch mode: how long events gather after a write before the next one (upstream's log backend
# writes each batch of 1 at once; here a write of everything queued, at most this often).
BATCH_WAIT = 0.02


class Backend(Protocol):
    def process(self, ac: AuditContext, stage: str, stage_timestamp: str, line: bytes | None = None) -> Any:
        """Take the event at this stage (line: its JSON line when a wrapper made it already):
        True/False (handled or not), or an awaitable of that for a mode whose requests wait
        for the write."""
        ...

    def shutdown(self) -> None:
        """Write what is queued, then stop."""
        ...


class Writer(Protocol):
    def write(self, data: bytes) -> Any: ...
    def flush(self) -> Any: ...


class LogBackend:
    """Upstream: the log backend wrapped by its mode (see the module docstring)."""

    def __init__(self, out: Writer | IO[bytes], *, fmt: str = FORMAT_JSON, mode: str = DEFAULT_MODE,
                 buffer_size: int = DEFAULT_BUFFER_SIZE, close: bool = True,
                 throttle: TokenBucket | None = None, max_batch_size: int = 1) -> None:
        self.out = out
        # --audit-log-batch-throttle-*: batch mode writes at most max_batch_size events at a
        # time, no faster than the bucket allows (upstream's buffered backend); without a
        # throttle, everything queued at once (the same lines, fewer writes).
        self.throttle = throttle
        self.max_batch_size = max(1, max_batch_size)
        self.legacy = fmt == FORMAT_LEGACY
        self.mode = mode
        self.buffer_size = buffer_size
        self.close_out = close
        # (line, future or None); deque append/popleft are atomic, so the loop thread and the
        # writer thread share it without a lock.
        self.queue: collections.deque[tuple[bytes, asyncio.Future[bool] | None]] = collections.deque()
        self.wake = threading.Event()
        self.idle = False                  # the thread waits for `wake` (see _run)
        self.stopping = False
        self.dropped = 0
        self.failed = 0
        self.thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self.thread.start()

    def process(self, ac: AuditContext, stage: str, stage_timestamp: str, line: bytes | None = None) -> Any:
        line = ac.legacy(stage) if self.legacy else line or ac.encode(stage, stage_timestamp)
        if self.mode == MODE_BATCH:
            if len(self.queue) >= self.buffer_size:
                self.dropped += 1
                metrics.plugin_error("buffered")
                log.error("Error in audit plugin 'buffered' affecting 1 audit events: audit buffer queue blocked",
                          extra={"auditID": ac.audit_id, "stage": stage})
                return True
            self.queue.append((line, None))
            if self.idle:
                self.wake.set()
            return True
        fut = asyncio.get_running_loop().create_future()
        self.queue.append((line, fut))
        if self.idle:
            self.wake.set()
        return fut

    def _run(self) -> None:
        """The writer thread: write what is queued, flush, tell the waiting requests; in batch
        mode, then let events gather for BATCH_WAIT before the next write.

        The loop wakes the thread only when it is idle (waiting for an event): waking a thread
        costs the loop a GIL hand-over, so one per batch, not one per event. `idle` is set
        before the queue is checked and the loop appends before it reads `idle`, so an event
        is never left behind with the thread asleep."""
        while True:
            self.wake.clear()
            self.idle = True
            if not self.queue:
                if self.stopping:
                    return
                self.wake.wait()
            self.idle = False
            batch: list[tuple[bytes, asyncio.Future[bool] | None]] = []
            limit = self.max_batch_size if self.throttle is not None else len(self.queue)
            while self.queue and len(batch) < limit:
                batch.append(self.queue.popleft())
            if batch and self.throttle is not None and self.mode == MODE_BATCH:
                self.throttle.accept()
            if batch:
                self._write(batch)
            if self.mode == MODE_BATCH and not self.stopping and self.throttle is None:
                time.sleep(BATCH_WAIT)        # (a throttle paces the writes itself)

    def _write(self, batch: list[tuple[bytes, asyncio.Future[bool] | None]]) -> None:
        ok = True
        try:
            for line, _ in batch:
                self.out.write(line)
            self.out.flush()
        except (OSError, ValueError) as err:
            ok = False
            self.failed += len(batch)
            metrics.plugin_error("log", len(batch))
            log.error("Error in audit plugin 'log' affecting %d audit events: %s", len(batch), err)
        waiting = [f for _, f in batch if f is not None]
        if waiting:
            ok = ok or self.mode != MODE_BLOCKING_STRICT        # blocking: errors ignored
            try:
                waiting[0].get_loop().call_soon_threadsafe(_resolve, waiting, ok)
            except RuntimeError:             # the loop is closed: nobody waits any more
                pass

    def shutdown(self) -> None:
        self.stopping = True
        self.wake.set()
        self.thread.join(timeout=10)
        if self.close_out:
            close = getattr(self.out, "close", None)
            if close is not None:
                close()


def _resolve(futures: list[asyncio.Future[bool]], ok: bool) -> None:
    for f in futures:
        if not f.done():
            f.set_result(ok)

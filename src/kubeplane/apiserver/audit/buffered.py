"""--audit-<backend>-mode and --audit-<backend>-batch-*: how events reach a backend.

Upstream: AuditBatchOptions (apiserver/pkg/server/options/audit.go) and the buffered backend
(plugin/pkg/audit/buffered/buffered.go): in batch mode events wait in a buffer of buffer_size
(an event finding it full is dropped: "audit buffer queue blocked"); a batch goes out when it has
max_batch_size events or when the max_batch_wait ticker fires, no faster than throttle_qps
batches a second (bursts of throttle_burst) when throttling is on. blocking: the request waits
for its event to be handled, errors ignored; blocking-strict: a RequestReceived event that could
not be handled fails the request.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT = "batch", "blocking", "blocking-strict"
MODES = (MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT)
DEFAULT_BUFFER_SIZE = 10_000      # upstream: defaultBatchBufferSize


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """Upstream: AuditBatchOptions (Mode + buffered.BatchConfig). Durations in seconds."""
    mode: str = MODE_BATCH
    buffer_size: int = DEFAULT_BUFFER_SIZE
    max_batch_size: int = 1
    max_batch_wait: float = 0.0
    throttle_enable: bool = False
    throttle_qps: float = 0.0
    throttle_burst: int = 0

    def validate(self, plugin: str) -> list[str]:
        """Upstream: validateBackendBatchOptions — its messages (batch options only in batch mode)."""
        if self.mode not in MODES:
            return [f"invalid audit {plugin} mode {self.mode}, allowed modes are {_go_q(','.join(MODES))}"]
        if self.mode != MODE_BATCH:
            return []
        if self.buffer_size <= 0:
            return [f"invalid audit batch {plugin} buffer size {self.buffer_size}, must be a positive number"]
        if self.max_batch_size <= 0:
            return [f"invalid audit batch {plugin} max batch size {self.max_batch_size}, must be a positive number"]
        if self.throttle_enable:
            if self.throttle_qps <= 0:
                return [f"invalid audit batch {plugin} throttle QPS {_go_float(self.throttle_qps)}, "
                        "must be a positive number"]
            if self.throttle_burst <= 0:
                return [f"invalid audit batch {plugin} throttle burst {self.throttle_burst}, must be a positive number"]
        return []

    def throttle(self, sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.monotonic) -> TokenBucket | None:
        """The batches' rate limiter, or None when throttling is off."""
        if not self.throttle_enable or self.throttle_qps <= 0:
            return None
        return TokenBucket(self.throttle_qps, self.throttle_burst, sleep=sleep, now=now)


class TokenBucket:
    """A token bucket for a thread: accept() takes a token, sleeping until one is due.
    Upstream: flowcontrol.NewTokenBucketRateLimiter(qps, burst).Accept().

    Example: qps 10, burst 15 — fifteen batches go at once, then one every 100 ms."""

    def __init__(self, qps: float, burst: int, *, sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.burst = qps, max(burst, 1)
        self.sleep, self.now = sleep, now
        self.tokens = float(self.burst)
        self.last = now()

    def accept(self) -> None:
        t = self.now()
        self.tokens = min(float(self.burst), self.tokens + (t - self.last) * self.qps)
        self.last = t
        if self.tokens >= 1:
            self.tokens -= 1
            return
        wait = (1 - self.tokens) / self.qps
        self.tokens = 0.0
        self.last = t + wait            # the token that comes due then is the one taken
        self.sleep(wait)


def _go_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_float(v: float) -> str:
    """Go's %v of a float32 (0 -> "0", -1.5 -> "-1.5")."""
    return str(int(v)) if v == int(v) else repr(v)

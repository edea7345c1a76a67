"""Per-key exponential back-off on an injected clock.

Upstream: flowcontrol.Backoff (client-go/util/flowcontrol/backoff.go), without jitter: the
kubelet's container back-off (10 s doubling to 5 min) and image pull back-off use it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..utils.clock import REAL_CLOCK, Clock
from ..utils.duration import go_duration


@dataclass(slots=True)
class _Entry:
    backoff: float        # seconds
    last_update: float    # clock.now() when next() last ran


class Backoff:
    """entries: key -> current back-off and when it was last raised. An entry whose last
    raise is more than 2 * max_duration before the event being judged has expired: the
    item has been stable that long, so it starts again from initial.
    """

    def __init__(self, initial: float, max_duration: float, *, clock: Clock = REAL_CLOCK) -> None:
        self.initial, self.max_duration, self.clock = initial, max_duration, clock
        self.entries: dict[str, _Entry] = {}

    def get(self, key: str) -> float:
        """The current back-off of key (0 if none). Upstream: Backoff.Get"""
        e = self.entries.get(key)
        return e.backoff if e else 0.0

    def next(self, key: str, event_time: float) -> None:
        """Raise key's back-off: initial for a new or expired entry, else doubled (capped).

        Upstream: Backoff.Next. Example (10 s, max 300 s): 10, 20, 40, 80, 160, 300, 300.
        """
        e = self.entries.get(key)
        if e is None or self._has_expired(event_time, e.last_update):
            e = self.entries[key] = _Entry(self.initial, 0.0)
        else:
            e.backoff = min(e.backoff * 2, self.max_duration)
        e.last_update = self.clock.now()

    def is_in_back_off_since(self, key: str, event_time: float) -> bool:
        """Whether less than the back-off has passed since event_time. Upstream: IsInBackOffSince"""
        e = self.entries.get(key)
        if e is None or self._has_expired(event_time, e.last_update):
            return False
        return self.clock.now() - event_time < e.backoff

    def is_in_back_off_since_update(self, key: str) -> bool:
        """Whether less than the back-off has passed since the last next(). Upstream: IsInBackOffSinceUpdate"""
        e = self.entries.get(key)
        if e is None or self._has_expired(self.clock.now(), e.last_update):
            return False
        return self.clock.now() - e.last_update < e.backoff

    def remaining_since(self, key: str, event_time: float) -> float:
        """Seconds until event_time + back-off (0 if already past)."""
        return max(0.0, event_time + self.get(key) - self.clock.now())

    def forget(self, match: Callable[[str], bool]) -> None:
        """Drop every entry whose key matches (a pod went away). Upstream: Backoff.GC's purpose"""
        for k in [k for k in self.entries if match(k)]:
            del self.entries[k]

    def _has_expired(self, event_time: float, last_update: float) -> bool:
        return event_time - last_update > self.max_duration * 2


def go_duration_seconds(seconds: float) -> str:
    """time.Duration.String() of whole seconds: 10 -> "10s", 80 -> "1m20s", 300 -> "5m0s"."""
    return go_duration(int(round(seconds)) * 1_000_000_000)

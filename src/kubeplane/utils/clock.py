"""Injected time: components take a Clock so tests can drive a fake one instead of sleeping."""
from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock, for timestamps)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (for durations and deadlines)."""

    async def sleep(self, seconds: float) -> None:
        """Wait for seconds of this clock's time."""


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


REAL_CLOCK = RealClock()


def rfc3339(ts: float) -> str:
    """metav1.Time's JSON form: second precision, UTC, trailing Z."""
    return dt.datetime.fromtimestamp(int(ts), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts: float) -> str:
    """metav1.MicroTime's JSON form: microsecond precision."""
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(s: str) -> float:
    """Parse a metav1.Time / MicroTime string to epoch seconds."""
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

"""NodePort allocation out of --service-node-port-range, and the operation that makes a
Service's port changes one all-or-nothing step.

Upstream: pkg/registry/core/service/portallocator/{allocator.go,operation.go} and
apimachinery's util/net.PortRange.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .ipallocator import AllocationError, random_scan_with_offset


class ErrAllocated(AllocationError):
    def __init__(self) -> None:
        super().__init__("provided port is already allocated")


class ErrNotInRange(AllocationError):
    def __init__(self, valid_ports: str) -> None:
        super().__init__(f"provided port is not in the valid range. The range of valid ports is {valid_ports}")


@dataclass(frozen=True, slots=True)
class PortRange:
    """Upstream: net.PortRange — base and size; printed "base-last" ("30000-32767")."""

    base: int
    size: int

    def __str__(self) -> str:
        return "" if self.size == 0 else f"{self.base}-{self.base + self.size - 1}"

    def contains(self, port: int) -> bool:
        return self.base <= port < self.base + self.size


def parse_port_range(value: str) -> PortRange:
    """Upstream: net.ParsePortRange — "30000-32767", "30000+2767" or a single port; ValueError
    with upstream's words otherwise."""
    value = value.strip()
    if not value:
        return PortRange(0, 0)
    hyphen, plus = value.find("-"), value.find("+")
    try:
        if hyphen == -1 and plus == -1:
            low = high = _port(value)
        elif hyphen != -1:
            low, high = _port(value[:hyphen]), _port(value[hyphen + 1:])
        else:
            low = _port(value[:plus])
            high = low + _port(value[plus + 1:])
    except ValueError as err:
        raise ValueError(f"unable to parse port range: {value}: {err}") from None
    if high < low:
        raise ValueError(f"end port cannot be less than start port: {value}")
    if not (0 <= low <= 65535 and 0 <= high <= 65535):
        raise ValueError(f"unable to parse port range: {value}: port out of range")
    return PortRange(low, high - low + 1)


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def calculate_range_offset(pr: PortRange) -> int:
    """Upstream: calculateRangeOffset (portallocator) — min(max(16, size/32), 128), 0 for 16
    ports or fewer. 30000-32767 (2768 ports) keeps 86: AllocateNext hands out 30086 and up
    before 30000-30085, which are left for ports asked for by number."""
    if pr.size <= 16:
        return 0
    return min(max(16, pr.size // 32), 128)


class PortAllocator:
    """Upstream: portallocator.PortAllocator."""

    def __init__(self, port_range: PortRange, *, rand: random.Random | None = None) -> None:
        self.port_range = port_range
        self.offset = calculate_range_offset(port_range)
        self.rand = rand or random.Random()
        self._allocated: set[int] = set()
        self.changes = 0            # bumped by every change: a repair retries if it moved meanwhile
        self.journal: list[tuple[str, int, Any]] | None = None     # as Range.journal, ("port", +1/-1, port)

    def __repr__(self) -> str:
        return f"PortAllocator({self.port_range}, used={self.used()})"

    def free(self) -> int:
        return self.port_range.size - len(self._allocated)

    def used(self) -> int:
        return len(self._allocated)

    def has(self, port: int) -> bool:
        return self.port_range.contains(port) and port - self.port_range.base in self._allocated

    def __iter__(self) -> Iterator[int]:
        base = self.port_range.base
        return iter([base + o for o in sorted(self._allocated)])

    def allocate(self, port: int) -> None:
        """Reserve port; ErrNotInRange or ErrAllocated if it cannot be had."""
        if not self.port_range.contains(port):
            raise ErrNotInRange(str(self.port_range))
        offset = port - self.port_range.base
        if offset in self._allocated:
            raise ErrAllocated()
        self._allocated.add(offset)
        self.changes += 1
        if self.journal is not None:
            self.journal.append(("port", 1, port))

    def allocate_next(self) -> int:
        """Reserve a free port, the upper block first (see calculate_range_offset); ErrFull."""
        at = random_scan_with_offset(self._allocated, self.offset, self.port_range.size, self.rand)
        self._allocated.add(at)
        self.changes += 1
        if self.journal is not None:
            self.journal.append(("port", 1, self.port_range.base + at))
        return self.port_range.base + at

    def replace_with(self, other: PortAllocator) -> None:
        """Take other's allocations (a repair's rebuilt state)."""
        self._allocated = set(other._allocated)
        self.changes += 1

    def release(self, port: int) -> None:
        """Give port back; a port not allocated or out of the range is a no-op."""
        if self.port_range.contains(port):
            if self.journal is not None:     # cleared in storage too, whoever set it
                self.journal.append(("port", -1, port))
            self._allocated.discard(port - self.port_range.base)
            self.changes += 1

    def offsets(self) -> set[int]:
        """The allocated offsets (a copy): the RangeAllocation bitmap's set bits."""
        return set(self._allocated)

    def load(self, offsets: set[int]) -> None:
        """Take storage's allocations (shared.py), journaling nothing."""
        self._allocated = set(offsets)
        self.changes += 1


class PortAllocationOperation:
    """Upstream: PortAllocationOperation — a port 'transaction' for one Service write.

    It is better to leak ports than to double-allocate them, so ports are taken at once and
    releases wait for commit(); finish() without commit() gives back what was taken. A dry
    run takes nothing: it checks the ports it is asked for against the allocator and itself.
    """

    def __init__(self, pa: PortAllocator, dry_run: bool) -> None:
        self.pa = pa
        self.dry_run = dry_run
        self.allocated: list[int] = []
        self.release_deferred: list[int] = []
        self.should_rollback = True

    def allocate(self, port: int) -> None:
        if self.dry_run:
            if self.pa.has(port) or port in self.allocated:
                raise ErrAllocated()
            self.allocated.append(port)
            return
        self.pa.allocate(port)
        self.allocated.append(port)

    def allocate_next(self) -> int:
        if self.dry_run:
            # Upstream's dummy: past the highest port this operation holds (32768 if none);
            # its search loop never runs (port < 100), so it is always that port + 1.
            last = max(self.allocated) if self.allocated else 32768
            self.allocated.append(last + 1)
            return last + 1
        port = self.pa.allocate_next()
        self.allocated.append(port)
        return port

    def release_deferred_port(self, port: int) -> None:
        """Release port when (and only if) the operation commits. Upstream: ReleaseDeferred"""
        self.release_deferred.append(port)

    def commit(self) -> None:
        """Perform the deferred releases; never rolls back (over-allocation is the safe side)."""
        if not self.dry_run:
            for port in self.release_deferred:
                self.pa.release(port)
        self.should_rollback = False

    def finish(self) -> None:
        """Roll back unless committed."""
        if self.should_rollback:
            self.rollback()

    def rollback(self) -> None:
        if not self.dry_run:
            for port in self.allocated:
                self.pa.release(port)

"""ClusterIP allocation out of a service CIDR: upstream's bitmap Range.

Upstream: pkg/registry/core/service/ipallocator/{bitmap.go,interfaces.go} and the
AllocationBitmap with its random-scan-with-offset strategy (service/allocator/bitmap.go).

For the CIDR 10.0.0.0/24, 254 of the 256 addresses are usable: offset 0 is 10.0.0.1 (base),
the last offset is 10.0.0.254; the network (.0) and, for IPv4, the broadcast (.255) address
are never handed out, and cannot be released either. An IPv6 range is capped at 65536
addresses, as upstream's bitmap is.

The allocated offsets are a Python set rather than a bitmap: the same answers (Has, Free,
ForEach in ascending order), O(1) to set and clear where a bitmap of a /12 in a Python int
would copy 128 KiB per change.
"""
from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Iterator
from typing import Any

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

IPV4 = "IPv4"
IPV6 = "IPv6"
MAX_IPV6_RANGE = 65536      # the bitmap's size limit for an IPv6 CIDR


class AllocationError(Exception):
    """An allocator's refusal; str() is upstream's error text."""


class ErrFull(AllocationError):
    def __init__(self) -> None:
        super().__init__("range is full")


class ErrAllocated(AllocationError):
    def __init__(self) -> None:
        super().__init__("provided IP is already allocated")


class ErrMismatchedNetwork(AllocationError):
    def __init__(self) -> None:
        super().__init__("the provided network does not match the current range")


class ErrNotInRange(AllocationError):
    def __init__(self, ip: object, valid_range: str) -> None:
        super().__init__(f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {valid_range}")
        self.ip, self.valid_range = ip, valid_range


def parse_ip(text: str) -> IPAddress | None:
    """The address, or None if text is not one (netutils.ParseIPSloppy also takes leading zeros;
    validation refuses those before an allocator sees them)."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def family_of(ip: str) -> str:
    """Upstream: familyOf (storage/alloc.go) — "IPv4", "IPv6" or "unknown"."""
    addr = parse_ip(ip)
    if addr is None:
        return "unknown"
    return IPV6 if addr.version == 6 else IPV4


def calculate_range_offset(cidr: IPNetwork) -> int:
    """Upstream: calculateRangeOffset — the lower block kept for static allocations:
    min(max(16, size/16), 256), 0 for a CIDR of 16 addresses or fewer. A /12 (1,048,576
    addresses) keeps 256, so AllocateNext hands out 10.96.1.1 and up before 10.96.0.x."""
    size = cidr.num_addresses
    if size <= 16:
        return 0
    return min(max(16, size // 16), 256)


class Range:
    """Upstream: ipallocator.Range — a contiguous block of IPs allocated one at a time."""

    def __init__(self, cidr: IPNetwork, *, rand: random.Random | None = None) -> None:
        self.cidr = cidr
        self.family = IPV6 if cidr.version == 6 else IPV4
        size = cidr.num_addresses
        if self.family == IPV6:
            size = min(size, MAX_IPV6_RANGE)
        else:
            size -= 1           # the broadcast address
        self.base = int(cidr.network_address) + 1
        self.max = max(0, size - 1)     # the network address
        self.offset = calculate_range_offset(cidr) if self.max > 0 else 0
        self.rand = rand or random.Random()
        self._allocated: set[int] = set()
        self.changes = 0            # bumped by every change: a repair retries if it moved meanwhile
        # While a list: each allocation (+1) and release (-1) as (family, +1/-1, IP), for the
        # storage-shared allocator (shared.py) to write.
        self.journal: list[tuple[str, int, Any]] | None = None

    @classmethod
    def from_string(cls, cidr: str, **kw: random.Random) -> Range:
        return cls(ipaddress.ip_network(cidr, strict=True), **kw)

    def __repr__(self) -> str:
        return f"Range({self.cidr}, used={self.used()})"

    # --- queries --------------------------------------------------------------------------

    def free(self) -> int:
        return self.max - len(self._allocated)

    def used(self) -> int:
        return len(self._allocated)

    def has(self, ip: IPAddress | str) -> bool:
        """Whether ip is allocated (a call to allocate(ip) would fail with ErrAllocated)."""
        offset = self._contains(ip)
        return offset is not None and offset in self._allocated

    def for_each(self, fn: Callable[[IPAddress], None]) -> None:
        for ip in self:
            fn(ip)

    def __iter__(self) -> Iterator[IPAddress]:
        """The allocated IPs in ascending order (the bitmap's order)."""
        addr = ipaddress.ip_address
        return iter([addr(self.base + o) for o in sorted(self._allocated)])

    def cidr_contains(self, ip: IPAddress | str) -> bool:
        """Whether ip is inside the CIDR at all (network and broadcast included)."""
        addr = parse_ip(ip) if isinstance(ip, str) else ip
        return addr is not None and addr.version == self.cidr.version and addr in self.cidr

    # --- changes --------------------------------------------------------------------------

    def allocate(self, ip: IPAddress | str) -> None:
        """Reserve ip; ErrNotInRange or ErrAllocated if it cannot be had."""
        offset = self._contains(ip)
        if offset is None:
            raise ErrNotInRange(ip, str(self.cidr))
        if offset in self._allocated:
            raise ErrAllocated()
        self._allocated.add(offset)
        self.changes += 1
        if self.journal is not None:
            self.journal.append((self.family, 1, str(ipaddress.ip_address(self.base + offset))))

    def allocate_next(self) -> IPAddress:
        """Reserve a free IP, preferring the upper block; ErrFull if there is none.

        Upstream: randomScanStrategyWithOffset — a random start in [offset, max), scanning
        forward with wrap-around; only when that block is full, the same in [0, offset).
        """
        at = random_scan_with_offset(self._allocated, self.offset, self.max, self.rand)
        self._allocated.add(at)
        self.changes += 1
        ip = ipaddress.ip_address(self.base + at)
        if self.journal is not None:
            self.journal.append((self.family, 1, str(ip)))
        return ip

    def replace_with(self, other: Range) -> None:
        """Take other's allocations (a repair's rebuilt state)."""
        self._allocated = set(other._allocated)
        self.changes += 1

    def release(self, ip: IPAddress | str) -> None:
        """Give ip back; releasing an unallocated or out-of-range IP is a no-op."""
        offset = self._contains(ip)
        if offset is not None:
            if self.journal is not None:     # given back in storage too, whoever took it
                self.journal.append((self.family, -1, str(ipaddress.ip_address(self.base + offset))))
            self._allocated.discard(offset)
            self.changes += 1

    def mark(self, ip: IPAddress | str, allocated: bool) -> None:
        """Set ip's state as storage says it is (shared.py), journaling nothing."""
        offset = self._contains(ip)
        if offset is not None:
            if allocated:
                self._allocated.add(offset)
            else:
                self._allocated.discard(offset)
            self.changes += 1

    def dry_run(self) -> DryRunRange:
        return DryRunRange(self)

    def _contains(self, ip: IPAddress | str) -> int | None:
        """The offset of ip if it is a usable address of the range (not the network or broadcast)."""
        addr = parse_ip(ip) if isinstance(ip, str) else ip
        if addr is None or addr.version != self.cidr.version or addr not in self.cidr:
            return None
        offset = int(addr) - self.base
        return offset if 0 <= offset < self.max else None


def random_scan_with_offset(allocated: set[int], offset: int, size: int, rand: random.Random) -> int:
    """A free offset in [0, size), the block [offset, size) first; ErrFull if there is none.
    Upstream: randomScanStrategyWithOffset (the IP and the port allocators alike)."""
    if len(allocated) >= size:
        raise ErrFull()
    at = _random_scan(allocated, offset, size, rand)
    if at is None:
        at = _random_scan(allocated, 0, offset, rand)
    if at is None:
        raise ErrFull()
    return at


def _random_scan(allocated: set[int], lo: int, hi: int, rand: random.Random) -> int | None:
    """The first free offset in [lo, hi) from a random start, wrapping around; None if full."""
    size = hi - lo
    if size <= 0:
        return None
    start = rand.randrange(size)
    for i in range(size):
        at = lo + (start + i) % size
        if at not in allocated:
            return at
    return None


class DryRunRange:
    """Upstream: dryRunRange — checks the range but neither reserves nor looks for a free IP
    ("it's racy and not worth the effort"): allocate_next answers the network address."""

    def __init__(self, real: Range) -> None:
        self.real = real
        self.family = real.family

    def allocate(self, ip: IPAddress | str) -> None:
        if self.real._contains(ip) is None:
            raise ErrNotInRange(ip, str(self.real.cidr))

    def allocate_next(self) -> IPAddress:
        return self.real.cidr.network_address

    def release(self, ip: IPAddress | str) -> None:
        pass

    def has(self, ip: IPAddress | str) -> bool:
        return self.real.has(ip)

    def cidr_contains(self, ip: IPAddress | str) -> bool:
        return self.real.cidr_contains(ip)

"""Upstream's bitmap allocator tables (pkg/registry/core/service/ipallocator/bitmap_test.go)
as facts about ipallocator.Range."""
from __future__ import annotations

import ipaddress
import random

import pytest

from kubeplane.apiserver.registry.core.service.ipallocator import (
    ErrAllocated, ErrFull, ErrNotInRange, Range, calculate_range_offset,
)


@pytest.mark.parametrize("cidr, family, free, released, out_of_range, already", [
    pytest.param("192.168.1.0/24", "IPv4", 254, "192.168.1.5",
                 ["192.168.0.1", "192.168.1.0", "192.168.1.255", "192.168.2.2"], "192.168.1.1", id="IPv4"),
    pytest.param("10.0.0.0/15", "IPv4", 131070, "10.0.0.5",
                 ["10.0.0.0", "10.15.255.255", "10.255.255.2"], "10.0.0.1", id="IPv4 large"),
    pytest.param("2001:db8:1::/48", "IPv6", 65535, "2001:db8:1::5",
                 ["2001:db8::1", "2001:db8:1::", "2001:db8:1::1:0", "2001:db8:2::2"], "2001:db8:1::1", id="IPv6"),
])
def test_allocate(cidr: str, family: str, free: int, released: str, out_of_range: list[str], already: str) -> None:
    """TestAllocate: fill the range, release one, get it back; out-of-range and taken IPs refused."""
    r = Range.from_string(cidr, rand=random.Random(1))
    assert (r.free(), r.used(), r.family, str(r.cidr)) == (free, 0, family, cidr)
    found = set()
    net = ipaddress.ip_network(cidr)
    while r.free() > 0:
        ip = r.allocate_next()
        assert ip in net and ip not in found
        found.add(ip)
    with pytest.raises(ErrFull):
        r.allocate_next()
    r.release(released)
    assert (r.free(), r.used()) == (1, free - 1)
    assert str(r.allocate_next()) == str(ipaddress.ip_address(released))
    r.release(released)
    for ip in out_of_range:
        with pytest.raises(ErrNotInRange):
            r.allocate(ip)
    with pytest.raises(ErrAllocated):
        r.allocate(already)
    assert (r.free(), r.used()) == (1, free - 1)
    r.allocate(released)
    assert (r.free(), r.used()) == (0, free)


def test_allocate_tiny() -> None:
    r = Range.from_string("192.168.1.0/32")
    assert r.free() == 0
    with pytest.raises(ErrFull):
        r.allocate_next()


def test_allocate_reserved() -> None:
    """TestAllocateReserved: AllocateNext fills the dynamic (upper) block first; the lower
    block is left for IPs asked for by number, and used only once the upper one is full."""
    r = Range.from_string("192.168.1.0/25", rand=random.Random(7))
    offset = calculate_range_offset(r.cidr)
    assert offset == 16
    for _ in range(r.max - offset):
        r.allocate_next()
    assert all(r.has(f"192.168.1.{i + 1}") for i in range(offset, r.max))
    assert r.free() == offset
    for i in range(offset):
        r.allocate(f"192.168.1.{i + 1}")
    assert r.free() == 0
    r.release("192.168.1.10")
    assert str(r.allocate_next()) == "192.168.1.10"
    assert r.free() == 0


def test_allocate_small() -> None:
    r = Range.from_string("192.168.1.240/30")
    assert r.free() == 2 and r.max == 2
    found = {str(r.allocate_next()) for _ in range(2)}
    assert found == {"192.168.1.241", "192.168.1.242"}
    for ip in found:
        assert r.has(ip)
        with pytest.raises(ErrAllocated):
            r.allocate(ip)
    for _ in range(100):
        with pytest.raises(ErrFull):
            r.allocate_next()


@pytest.mark.parametrize("ips", [[], ["192.168.1.1"], ["192.168.1.1", "192.168.1.254"],
                                 ["192.168.1.1", "192.168.1.128", "192.168.1.254"]])
def test_for_each(ips: list[str]) -> None:
    r = Range.from_string("192.168.1.0/24")
    for ip in ips:
        r.allocate(ip)
        assert r.has(ip)
    calls: list[str] = []
    r.for_each(lambda ip: calls.append(str(ip)))
    assert calls == sorted(ips, key=lambda s: ipaddress.ip_address(s))


@pytest.mark.parametrize("cidr, offset", [
    ("192.168.1.0/28", 0), ("192.168.1.0/27", 16), ("192.168.1.0/25", 16), ("192.168.1.0/24", 16),
    ("192.168.0.0/22", 64), ("192.168.0.0/20", 256), ("10.96.0.0/12", 256), ("fd00::/64", 256),
])
def test_calculate_range_offset(cidr: str, offset: int) -> None:
    """min(max(16, size/16), 256), and 0 for 16 addresses or fewer."""
    assert calculate_range_offset(ipaddress.ip_network(cidr)) == offset


def test_the_service_range_hands_out_the_upper_block_first() -> None:
    """10.96.0.0/12: the first 256 addresses (10.96.0.1-10.96.1.0) stay free for static IPs
    such as the kubernetes Service's 10.96.0.1 and kube-dns' 10.96.0.10."""
    r = Range.from_string("10.96.0.0/12", rand=random.Random(3))
    ips = [r.allocate_next() for _ in range(200)]
    assert min(int(ip) for ip in ips) >= int(ipaddress.ip_address("10.96.1.1"))
    r.allocate("10.96.0.1")
    r.allocate("10.96.0.10")


def test_release_is_a_no_op_outside_the_range() -> None:
    r = Range.from_string("10.0.0.0/24")
    r.release("10.1.0.1")
    r.release("10.0.0.0")
    r.release("not-an-ip")
    assert r.used() == 0


def test_dry_run_checks_the_range_only() -> None:
    """dryRunRange: no free check (racy), nothing reserved, allocate_next is the network address."""
    r = Range.from_string("10.0.0.0/24")
    r.allocate("10.0.0.7")
    dry = r.dry_run()
    dry.allocate("10.0.0.7")
    with pytest.raises(ErrNotInRange, match=r"the provided IP \(10.1.0.1\) is not in the valid range. "
                                            r"The range of valid IPs is 10.0.0.0/24"):
        dry.allocate("10.1.0.1")
    assert str(dry.allocate_next()) == "10.0.0.0"
    assert r.used() == 1


def test_error_texts() -> None:
    assert str(ErrFull()) == "range is full"
    assert str(ErrAllocated()) == "provided IP is already allocated"

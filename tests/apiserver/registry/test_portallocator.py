"""Upstream's port allocator tables (portallocator/allocator_test.go, operation_test.go)."""
from __future__ import annotations

import random

import pytest

from kubeplane.apiserver.registry.core.service.ipallocator import ErrFull
from kubeplane.apiserver.registry.core.service.portallocator import (
    ErrAllocated, ErrNotInRange, PortAllocationOperation, PortAllocator, PortRange, calculate_range_offset,
    parse_port_range,
)


def test_allocate() -> None:
    """TestAllocate on 10000-10200."""
    pr = parse_port_range("10000-10200")
    r = PortAllocator(pr, rand=random.Random(5))
    assert (r.free(), r.used()) == (201, 0)
    found = set()
    while r.free() > 0:
        p = r.allocate_next()
        assert pr.contains(p) and p not in found
        found.add(p)
    with pytest.raises(ErrFull):
        r.allocate_next()
    r.release(10005)
    assert (r.free(), r.used()) == (1, 200)
    assert r.allocate_next() == 10005
    r.release(10005)
    for port in (1, 20000, 10201):
        with pytest.raises(ErrNotInRange, match="provided port is not in the valid range. "
                                                "The range of valid ports is 10000-10200"):
            r.allocate(port)
    with pytest.raises(ErrAllocated, match="provided port is already allocated"):
        r.allocate(10001)
    assert (r.free(), r.used()) == (1, 200)
    r.allocate(10005)
    assert (r.free(), r.used()) == (0, 201)


def test_allocate_reserved() -> None:
    """TestAllocateReserved: the dynamic block first, then the static one."""
    pr = parse_port_range("30000-30128")
    r = PortAllocator(pr, rand=random.Random(2))
    offset = calculate_range_offset(pr)
    assert offset == 16
    for _ in range(pr.size - offset):
        r.allocate_next()
    assert all(r.has(30000 + i) for i in range(offset, pr.size))
    assert r.free() == offset
    for i in range(offset):
        r.allocate(30000 + i)
    assert r.free() == 0
    r.release(30010)
    assert r.allocate_next() == 30010


@pytest.mark.parametrize("ports", [[], [10000], [10000, 10200], [10000, 10099, 10200]])
def test_for_each(ports: list[int]) -> None:
    r = PortAllocator(parse_port_range("10000-10200"))
    for p in ports:
        r.allocate(p)
        assert r.has(p)
    assert list(r) == sorted(ports)


@pytest.mark.parametrize("text, want", [
    ("30000-32767", PortRange(30000, 2768)), ("30000+2767", PortRange(30000, 2768)), ("80", PortRange(80, 1)),
    ("", PortRange(0, 0)),
])
def test_parse_port_range(text: str, want: PortRange) -> None:
    assert parse_port_range(text) == want


@pytest.mark.parametrize("text", ["x-1", "100-10", "1-70000", "-5"])
def test_parse_port_range_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_port_range(text)


@pytest.mark.parametrize("size, offset", [(10, 0), (16, 0), (17, 16), (512, 16), (2768, 86), (65536, 128)])
def test_calculate_range_offset(size: int, offset: int) -> None:
    """min(max(16, size/32), 128): 30000-32767 keeps 30000-30085 for ports asked by number."""
    assert calculate_range_offset(PortRange(30000, size)) == offset


def test_operation_rolls_back_unless_committed() -> None:
    """operation_test.go: allocations are immediate, releases wait for commit; finish() without
    commit gives back what the operation took and keeps what it would have released."""
    pa = PortAllocator(parse_port_range("30000-30100"))
    pa.allocate(30050)
    op = PortAllocationOperation(pa, dry_run=False)
    op.allocate(30001)
    p = op.allocate_next()
    op.release_deferred_port(30050)
    assert pa.has(30001) and pa.has(p) and pa.has(30050)
    op.finish()
    assert not pa.has(30001) and not pa.has(p) and pa.has(30050)

    op = PortAllocationOperation(pa, dry_run=False)
    op.allocate(30001)
    op.release_deferred_port(30050)
    op.commit()
    op.finish()
    assert pa.has(30001) and not pa.has(30050)


def test_dry_run_operation_takes_nothing() -> None:
    pa = PortAllocator(parse_port_range("30000-30100"))
    pa.allocate(30005)
    op = PortAllocationOperation(pa, dry_run=True)
    with pytest.raises(ErrAllocated):
        op.allocate(30005)
    op.allocate(30006)
    with pytest.raises(ErrAllocated):
        op.allocate(30006)
    assert op.allocate_next() == 30007          # upstream's dummy: the highest it holds + 1
    assert PortAllocationOperation(pa, dry_run=True).allocate_next() == 32769    # 32768 + 1 when none
    op.commit()
    assert list(pa) == [30005]

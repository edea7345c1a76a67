"""The sim runtime's pod IP pool hands out what the list of all hosts did, without making it."""
from __future__ import annotations

import ipaddress

import pytest

from kubeplane.kubelet.runtime.sim.runtime import IPPool


class ListPool:
    """The former pool: every host but the gateway, lowest first; returned IPs reused first."""

    def __init__(self, cidr: str) -> None:
        self.free = [str(h) for h in ipaddress.ip_network(cidr).hosts()][1:]

    def take(self) -> str | None:
        return self.free.pop(0) if self.free else None

    def give_back(self, ip: str) -> None:
        self.free.insert(0, ip)


@pytest.mark.parametrize("cidr", ["10.244.3.0/24", "10.0.0.0/30", "10.0.0.0/31", "10.0.0.4/32", "fd00::/120",
                                  "fd00::/127"])
def test_the_pool_hands_out_what_the_list_did(cidr: str) -> None:
    pool, ref = IPPool(cidr), ListPool(cidr)
    taken = []
    for i in range(300):
        if i % 7 == 3 and taken:
            ip = taken.pop(len(taken) // 2)
            pool.give_back(ip)
            ref.give_back(ip)
        got = pool.take()
        assert got == ref.take(), (cidr, i)
        if got is not None:
            taken.append(got)


def test_a_claimed_ip_is_not_handed_out_again() -> None:
    pool = IPPool("10.244.0.0/24")
    assert pool.take() == "10.244.0.2"
    assert pool.claim("10.244.0.5")
    assert not pool.claim("10.244.0.5")             # taken already
    assert not pool.claim("10.244.0.2")             # handed out already
    assert not pool.claim("10.245.0.9") and not pool.claim("nonsense")
    assert [pool.take() for _ in range(3)] == ["10.244.0.3", "10.244.0.4", "10.244.0.6"]
    pool.give_back("10.244.0.5")
    assert pool.claim("10.244.0.5")
    assert pool.take() == "10.244.0.7"

"""Helpers for tests that create real network namespaces: skip where this process cannot, and
pick names and a podCIDR no one else on the machine uses (several test runs share it)."""
from __future__ import annotations

import ipaddress
import json
import os
import random
import subprocess
import uuid

import pytest

from kubeplane.kubelet.network import unavailable_reason

_REASON: str | None = None


def require_netns() -> None:
    """Skip the test (with the reason) unless network namespaces can be made here."""
    global _REASON
    if _REASON is None:
        _REASON = unavailable_reason()
    if _REASON:
        pytest.skip(f"network namespaces are unavailable: {_REASON}")


def unique_uid(tag: str = "") -> str:
    """A pod uid no other test run uses (netns kp-<uid>)."""
    return f"t{os.getpid()}-{tag}{uuid.uuid4().hex[:8]}"


def free_cidr() -> str:
    """A /24 in 10.128.0.0/9 that no interface of the machine has an address or route in."""
    routes = json.loads(subprocess.run(["ip", "-j", "route", "show"], capture_output=True, text=True).stdout or "[]")
    used = [ipaddress.ip_network(r["dst"], strict=False) for r in routes if r.get("dst", "default") != "default"]
    for _ in range(100):
        net = ipaddress.ip_network(f"10.{random.randint(128, 255)}.{random.randint(0, 255)}.0/24")
        if not any(net.overlaps(u) for u in used if u.version == 4):
            return str(net)
    raise AssertionError("no free /24 found")


def netns_list() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def link_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")

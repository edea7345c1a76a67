"""Host-local IP address management: one file per address in use, so allocations survive a
restart of the kubelet (and a kill -9) and are reconciled against the pods that still exist.

    store = IPAM(root / "network" / "kubeplane-node-0", "10.244.0.0/24")
    ip = store.allocate(uid, netns="kp-<uid>", veth="veth1a2b3c4d")    # "10.244.0.2"
    store.release(uid)

Layout (upstream's host-local plugin, github.com/containernetworking/plugins
plugins/ipam/host-local/backend/disk):

    <dir>/<ip>                   the allocation: {"uid", "netns", "veth"} (JSON)
    <dir>/last_reserved_ip.0     where the next search starts (round-robin, as host-local)

The range is the subnet's hosts but the first, which is the bridge's gateway (.1). A file is
created with O_EXCL, so two allocations never get the same address; writes are atomic.
"""
from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import pathlib
from dataclasses import dataclass

LAST_RESERVED = "last_reserved_ip.0"


class RangeFull(Exception):
    """No free address left in the node's podCIDR."""


@dataclass(frozen=True)
class Allocation:
    ip: str
    uid: str
    netns: str
    veth: str


class IPAM:
    def __init__(self, directory: pathlib.Path, cidr: str) -> None:
        self.dir = directory
        self.net = ipaddress.ip_network(cidr, strict=False)
        self.gateway = str(next(self.net.hosts()))

    def allocations(self) -> list[Allocation]:
        """Every allocation recorded (unreadable files are skipped)."""
        out = []
        for path in sorted(self.dir.glob("*")) if self.dir.is_dir() else ():
            if path.name == LAST_RESERVED or path.name.startswith("."):
                continue
            try:
                rec = json.loads(path.read_bytes())
                out.append(Allocation(path.name, str(rec["uid"]), str(rec.get("netns") or ""),
                                      str(rec.get("veth") or "")))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return out

    def get(self, uid: str) -> Allocation | None:
        return next((a for a in self.allocations() if a.uid == uid), None)

    def allocate(self, uid: str, *, netns: str, veth: str) -> str:
        """The pod's address: the one it already holds, else the next free one after the last
        reserved (wrapping). Upstream: host-local's RangeIter."""
        held = self.get(uid)
        if held is not None:
            return held.ip
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        first, size = int(self.net.network_address) + 2, self.net.num_addresses - 3   # .2 .. broadcast-1
        if size <= 0:
            raise RangeFull(f"no IP addresses available in range set: {self.net}")
        try:
            start = (int(ipaddress.ip_address(self._last_reserved())) - first + 1) % size
        except ValueError:
            start = 0
        body = json.dumps({"uid": uid, "netns": netns, "veth": veth}).encode()
        for i in range(size):
            ip = str(ipaddress.ip_address(first + (start + i) % size))
            try:
                fd = os.open(self.dir / ip, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            self._write(LAST_RESERVED, ip.encode())
            return ip
        raise RangeFull(f"no IP addresses available in range set: "
                        f"{ipaddress.ip_address(first)}-{ipaddress.ip_address(first + size - 1)}")

    def release(self, uid: str) -> None:
        for a in self.allocations():
            if a.uid == uid:
                with contextlib.suppress(OSError):
                    (self.dir / a.ip).unlink()

    def _last_reserved(self) -> str:
        try:
            return (self.dir / LAST_RESERVED).read_text().strip()
        except OSError:
            return ""

    def _write(self, name: str, data: bytes) -> None:
        tmp = self.dir / f".{name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, self.dir / name)

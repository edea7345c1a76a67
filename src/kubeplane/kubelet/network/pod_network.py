"""A network namespace and an IP per pod of the process runtime, on a bridge per node.

    net = PodNetwork(mode="auto", root=lambda: runtime_root)
    net.add_node("kubeplane-node-0", "10.244.0.0/24")    # the bridge, gateway 10.244.0.1
    ip = await net.setup(pod_uid, "kubeplane-node-0")     # "10.244.0.2": the pod's netns is up
    net.netns_path(pod_uid)                               # "/run/netns/kp-<uid>": for setns/nsenter
    await net.teardown(pod_uid)

What a pod gets (upstream's kubenet, i.e. the bridge CNI plugin with host-local IPAM):
- a network namespace `kp-<pod uid>` (`ip netns`: /run/netns/kp-<uid>), with lo up;
- a veth pair: `eth0` inside, `veth<8 hex>` on the host, enslaved to the node's bridge;
- an address from the node's podCIDR (ipam.py; .1 is the bridge's, the gateway) and a
  default route via the gateway, so the host reaches every pod's IP and pods reach each other.
The bridge is `kp<8 hex>` (a hash of the runtime's root and the node name: several kubeplanes
on one machine never share one; upstream calls its single one cbr0), up, with the gateway
address; the host forwards between bridges (net.ipv4.ip_forward is turned on, as the bridge
plugin does), so pods of different nodes reach each other. A podCIDR that another interface of the machine already uses (another kubeplane) is
not taken over: that node's pods stay on the host's network, and the log says so.

Modes (`kubeplane up --pod-network`): "netns" (required: fails if namespaces cannot be made),
"host" (every pod shares the host's network, as before: podIP 127.0.0.1), "auto" (netns when
this process may create network namespaces, i.e. root with iproute2; else host, said once in
the log). hostNetwork pods always stay on the host.

Clean-up: a pod's namespace, veth and address go when its sandbox stops or it is removed.
What the runtime records survives the kubelet: after a restart (or kill -9), `reconcile` keeps
the namespaces of pods the runtime re-adopted and removes every other one recorded under its
root; `teardown_recorded(root)` removes everything recorded (`kubeplane reset`, tests), and
idle bridges go when the kubelet stops.

Upstream: pkg/kubelet/dockershim/network/kubenet (kubenet_linux.go: cbr0, host-local, the
bridge plugin), containernetworking/plugins bridge + host-local.
"""
from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import itertools
import json
import logging
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import ip as iproute
from .ipam import IPAM, Allocation

log = logging.getLogger(__name__)

MODES = ("auto", "netns", "host")
NETNS_DIR = "/run/netns"
POD_IFNAME = "eth0"
IP_FORWARD = pathlib.Path("/proc/sys/net/ipv4/ip_forward")
_probes = itertools.count()          # unavailable_reason's probe names (next() is atomic)


def netns_name(uid: str) -> str:
    return f"kp-{uid}"


def veth_name(uid: str) -> str:
    """The host end of a pod's veth pair (IFNAMSIZ: at most 15 characters), as the bridge
    plugin's veth<8 hex>."""
    return "veth" + hashlib.sha256(uid.encode()).hexdigest()[:8]


def bridge_name(root: pathlib.Path, node: str) -> str:
    return "kp" + hashlib.sha256(f"{root}\0{node}".encode()).hexdigest()[:8]


def unavailable_reason() -> str:
    """Why this process cannot give pods network namespaces, or "" if it can (creates and
    deletes one)."""
    if os.geteuid() != 0:
        return "not running as root"
    if not os.path.exists(iproute.IP):
        return "iproute2's ip command is not installed"
    # A name of this call's own: `up`'s kubelet and its cluster DNS (in a thread) probe at the
    # same time at start-up, and two probes of one name fail each other ("File exists").
    probe = f"kp-probe-{os.getpid()}-{next(_probes)}"
    try:
        iproute.run(["netns", "add", probe])
    except iproute.IPError as err:
        return f"ip netns add failed: {err}"
    with contextlib.suppress(iproute.IPError):
        iproute.run(["netns", "delete", probe])
    return ""


class NetworkError(Exception):
    """A pod's network could not be set up (FailedCreatePodSandBox)."""


@dataclass
class _Node:
    name: str
    cidr: str
    bridge: str
    ipam: IPAM
    enabled: bool               # False: the podCIDR is taken on this machine; pods use the host's


class PodNetwork:
    """Per-pod network namespaces for the nodes of one runtime (see the module docstring)."""

    def __init__(self, mode: str, root: Callable[[], pathlib.Path]) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown pod network mode {mode!r} (have: {', '.join(MODES)})")
        self.mode = mode
        self._root = root
        self._enabled: bool | None = None if mode != "host" else False
        self._nodes: dict[str, _Node] = {}

    @property
    def enabled(self) -> bool:
        """Whether pods get namespaces (decided once, on first use; "auto" logs its choice)."""
        if self._enabled is None:
            reason = unavailable_reason()
            if reason and self.mode == "netns":
                raise NetworkError(f"--pod-network=netns: cannot create network namespaces: {reason}")
            if reason:
                log.warning("Pod network: network namespaces are unavailable (%s): every pod shares the "
                            "host's network and its podIP is the host's (--pod-network=host)", reason)
            self._enabled = not reason
        return self._enabled

    @property
    def active(self) -> bool:
        """Whether pods get namespaces, without deciding it (False until decided)."""
        return self._enabled is True

    def state_dir(self, node: str = "") -> pathlib.Path:
        return self._root() / "network" / node if node else self._root() / "network"

    def add_node(self, node: str, cidr: str) -> None:
        """Make (or keep) the node's bridge with the gateway address of cidr."""
        if not self.enabled or node in self._nodes:
            return
        net = ipaddress.ip_network(cidr, strict=False)
        n = _Node(node, str(net), bridge_name(self._root(), node), IPAM(self.state_dir(node) / "ips", str(net)), True)
        self._nodes[node] = n
        taken = _cidr_user(net, n.bridge)
        if taken:
            n.enabled = False
            log.error("Pod network: podCIDR %s of node %s is already used by %s on this machine (another "
                      "kubeplane?): its pods share the host's network", n.cidr, node, taken)
            return
        gw = f"{n.ipam.gateway}/{net.prefixlen}"
        try:
            if not _link_exists(n.bridge):
                iproute.run_batch([f"link add {n.bridge} type bridge", f"addr add {gw} dev {n.bridge}",
                                   f"link set {n.bridge} up"])
            else:
                iproute.run_batch([f"addr replace {gw} dev {n.bridge}", f"link set {n.bridge} up"])
        except iproute.IPError as err:
            n.enabled = False
            log.error("Pod network: cannot make bridge %s for node %s: %s: its pods share the host's network",
                      n.bridge, node, err)
            return
        _write_json(self.state_dir(node) / "bridge.json", {"bridge": n.bridge, "cidr": n.cidr})
        _enable_ip_forward()
        log.info("Pod network: a network namespace per pod", extra={"node": node, "bridge": n.bridge,
                                                                    "podCIDR": n.cidr})

    def node_cidrs(self) -> dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """Node name -> its podCIDR, for every node of this runtime (the kube-proxy's local
        nodes and its --detect-local-mode=NodeCIDR)."""
        return {n.name: ipaddress.ip_network(n.cidr) for n in self._nodes.values()}

    def cidr_in_use(self) -> Callable[[str, str], bool]:
        """A check (node, cidr) -> whether an interface of this machine other than the node's
        own bridge has an address inside cidr (another kubeplane's bridge): the kubelet gives a
        new Node another podCIDR then. One listing of the machine's addresses; with pods on the
        host's network, never."""
        try:
            if not self.enabled:
                return lambda node, cidr: False
        except NetworkError:                 # --pod-network=netns without the means: said at add_node
            return lambda node, cidr: False
        links = _addresses()

        def check(node: str, cidr: str) -> bool:
            return bool(_cidr_user(ipaddress.ip_network(cidr, strict=False), bridge_name(self._root(), node), links))
        return check

    def covers(self, node: str) -> bool:
        """Whether pods of node get a namespace of their own."""
        n = self._nodes.get(node)
        return n is not None and n.enabled

    async def setup(self, uid: str, node: str) -> str:
        """Create the pod's namespace, veth pair, address and route; the pod's IP. Idempotent:
        a pod that has its namespace keeps it and its address."""
        n = self._nodes.get(node)
        if n is None or not n.enabled:
            raise NetworkError(f"node {node!r} has no pod network")
        ns, veth = netns_name(uid), veth_name(uid)
        try:
            ip = n.ipam.allocate(uid, netns=ns, veth=veth)
        except Exception as err:
            raise NetworkError(f"failed to allocate for range 0: {err}") from None
        if _netns_exists(ns) and _link_exists(veth):
            return ip
        prefix = n.ipam.net.prefixlen
        if _netns_exists(ns) or _link_exists(veth):       # half made by an earlier attempt
            with contextlib.suppress(iproute.IPError):
                await iproute.arun_batch([f"link del {veth}", f"netns delete {ns}"], force=True)
        try:
            await iproute.arun_batch([f"netns add {ns}",
                                      f"link add {veth} type veth peer name {POD_IFNAME} netns {ns}",
                                      f"link set {veth} master {n.bridge} up"])
            await iproute.arun_batch(["link set lo up", f"addr add {ip}/{prefix} dev {POD_IFNAME}",
                                      f"link set {POD_IFNAME} up", f"route add default via {n.ipam.gateway}"],
                                     netns=ns)
        except iproute.IPError as err:
            await self.teardown(uid)
            raise NetworkError(f"failed to set up pod network: {err}") from None
        return ip

    def allocation(self, uid: str) -> Allocation | None:
        """The pod's recorded address and names, on any node."""
        for n in self._all_ipams():
            a = n.get(uid)
            if a is not None:
                return a
        return None

    @staticmethod
    def netns_path_of(ns: str) -> str:
        return os.path.join(NETNS_DIR, ns)

    def netns_path(self, uid: str) -> str | None:
        """The pod's network namespace (a file to open for setns(2), or `nsenter --net=`), or
        None when the pod shares the host's network."""
        path = self.netns_path_of(netns_name(uid))
        return path if self._enabled and os.path.exists(path) else None

    async def teardown(self, uid: str) -> None:
        """Remove the pod's veth, namespace and address (whatever of them exists)."""
        ns, veth = netns_name(uid), veth_name(uid)
        if _netns_exists(ns) or _link_exists(veth):
            with contextlib.suppress(iproute.IPError):
                await iproute.arun_batch([f"link del {veth}", f"netns delete {ns}"], force=True)
        for ipam in self._all_ipams():
            ipam.release(uid)

    def reconcile(self, live: set[str]) -> None:
        """After a restart: remove the namespace, veth and address of every pod recorded under
        the root that is not in live (the pods the runtime re-adopted)."""
        if self.mode == "host" and not self.state_dir().is_dir():
            return
        for ipam in self._all_ipams():
            for a in ipam.allocations():
                if a.uid not in live:
                    _remove_pod_links(a)
                    ipam.release(a.uid)
                    log.info("Pod network: removed the namespace of a pod that is gone",
                             extra={"podUID": a.uid, "podIP": a.ip})

    def close(self) -> None:
        """The kubelet stops: remove every bridge that no pod uses any more (pods still running
        keep theirs, for the next kubelet)."""
        for n in self._nodes.values():
            if n.enabled and not n.ipam.allocations():
                _remove_bridge(self.state_dir(n.name), n.bridge)

    def teardown_all(self) -> None:
        """Every pod's namespace and every bridge recorded under the root."""
        teardown_recorded(self._root())

    def _all_ipams(self) -> list[IPAM]:
        seen = {n.name: n.ipam for n in self._nodes.values()}
        base = self.state_dir()
        for d in sorted(base.glob("*")) if base.is_dir() else ():
            if d.name not in seen and (d / "bridge.json").exists():
                rec = _read_json(d / "bridge.json")
                with contextlib.suppress(Exception):
                    seen[d.name] = IPAM(d / "ips", str(rec["cidr"]))     # type: ignore[index]
        return list(seen.values())


def teardown_recorded(root: str | os.PathLike[str]) -> int:
    """Remove every pod namespace, veth, address and bridge recorded under root (what a
    kubelet that is gone left behind); how many pod namespaces there were."""
    base = pathlib.Path(root) / "network"
    count = 0
    proxy = _read_json(base / "proxy.json")          # the kube-proxy's ClusterIP interface (proxy.py)
    if isinstance(proxy, dict) and str(proxy.get("interface", "")).startswith("kps"):
        _remove_bridge(base, str(proxy["interface"]), "proxy.json")
    for d in sorted(base.glob("*")) if base.is_dir() else ():
        rec = _read_json(d / "bridge.json")
        if not isinstance(rec, dict) or "cidr" not in rec:
            continue
        assert isinstance(rec, dict)
        ipam = IPAM(d / "ips", str(rec["cidr"]))
        for a in ipam.allocations():
            _remove_pod_links(a)
            ipam.release(a.uid)
            count += 1
        _remove_bridge(d, str(rec.get("bridge") or ""))
    return count


def _remove_pod_links(a: Allocation) -> None:
    veth, ns = a.veth or veth_name(a.uid), a.netns or netns_name(a.uid)
    if _netns_exists(ns) or _link_exists(veth):
        with contextlib.suppress(iproute.IPError):
            iproute.run_batch([f"link del {veth}", f"netns delete {ns}"], force=True)


def _remove_bridge(state: pathlib.Path, bridge: str, record: str = "bridge.json") -> None:
    if bridge.startswith("kp") and _link_exists(bridge):
        with contextlib.suppress(iproute.IPError):
            iproute.run(["link", "del", bridge])
    with contextlib.suppress(OSError):
        (state / record).unlink()


def _enable_ip_forward() -> None:
    """Pods of different nodes reach each other through the host, which must forward between
    the bridges: turned on as the bridge plugin does (ip.EnableIPForward), never off."""
    try:
        if IP_FORWARD.read_text().strip() != "1":
            IP_FORWARD.write_text("1")
            log.info("Pod network: turned on net.ipv4.ip_forward so that pods of different nodes reach each other")
    except OSError as err:
        log.warning("Pod network: cannot turn on net.ipv4.ip_forward (%s): pods reach only pods of their node", err)


def _netns_exists(ns: str) -> bool:
    return os.path.exists(PodNetwork.netns_path_of(ns))


def _link_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")


def _addresses() -> list[Any]:
    """The machine's interfaces with their addresses (`ip -j addr show`), [] if unknown."""
    try:
        links = json.loads(iproute.run(["-j", "addr", "show"]) or "[]")
    except (iproute.IPError, ValueError):
        return []
    return links if isinstance(links, list) else []


def _cidr_user(net: ipaddress.IPv4Network | ipaddress.IPv6Network, bridge: str,
               links: list[Any] | None = None) -> str:
    """The interface other than bridge with an address inside net, or ""."""
    for link in _addresses() if links is None else links:
        if link.get("ifname") == bridge:
            continue
        for a in link.get("addr_info") or ():
            with contextlib.suppress(ValueError):
                if ipaddress.ip_address(a.get("local", "")) in net:
                    return str(link.get("ifname"))
    return ""


def _read_json(path: pathlib.Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _write_json(path: pathlib.Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)

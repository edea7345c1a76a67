"""Where pods/proxy, services/proxy and nodes/proxy send a request: the backend's URL and how to
reach it (plain, or as the API server's kubelet client).

    loc = await pod_location(api, "default", "web:8080")      # http://10.244.0.7:8080, PROXY
    loc = await service_location(api, "default", "https:web:443")
    loc = await node_location(api, "kubeplane-node-0")        # https://<node>:<kubelet port>, KUBELET

The name may carry a scheme and a port, as upstream's: `name`, `name:port`, `scheme:name:port`
(scheme http or https; SplitSchemeNamePort), else 400 `invalid pod request "a:b:c:d"`.

What may be reached (upstream refuses loopback and link-local addresses: a pod IP or node
address must be global unicast, else 400 "address not allowed"). kubeplane's own runtimes add
two cases, each decided from what the node's kubelet reports, never from the request:
- the process runtime runs pods on their node's network, which today is the host's loopback
  (status.podIP 127.0.0.1 = the node's InternalIP, containerRuntimeVersion kubeplane-process):
  such a pod is proxied to, as upstream proxies to a hostNetwork pod at its node's address. A
  loopback podIP on any other node (say, written by someone allowed to update pods/status) is
  still refused. Pods with addresses of their own (the pod network) are global unicast anyway.
- the sim runtime's pod IPs are data only (nothing listens on them, and they may be someone
  else's addresses on a real network): they are never dialled; the answer is the 503 of a dial
  that found no route, at once.
A node's loopback address is reached only at its kubelet port (the kubelet's own server, with
the API server's credentials); `nodes/x:<other port>/proxy` on such a node is refused, since it
would reach any service of the API server's host.

Upstream: ResourceLocation in pkg/registry/core/pod/strategy.go, service/storage/storage.go
(REST.ResourceLocation, isValidAddress), node/strategy.go (ResourceLocation,
isProxyableHostname); SplitSchemeNamePort (apimachinery/pkg/util/net/http.go).
"""
from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.resources import lookup
from .podlog import kubelet_port, preferred_node_address

if TYPE_CHECKING:
    from ..server import APIServer

Obj = dict[str, Any]

PROXY, KUBELET = "proxy", "kubelet"         # the transports: plain, or the kubelet client's
SIM_RUNTIME, PROCESS_RUNTIME = "kubeplane-sim://", "kubeplane-process://"
NO_ROUTE = "connect: no route to host"


@dataclass(frozen=True, slots=True)
class Location:
    scheme: str                 # http or https
    host: str                   # an IP (IPv6 in brackets) or a name
    port: int | None            # None: the scheme's default
    transport: str = PROXY
    token: str = ""             # KUBELET: the bearer token the kubelet accepts
    unreachable: str = ""       # set: do not dial, answer this dial error (a simulated address)
    node: str = ""              # KUBELET: the node asked for (one kubelet server may serve several)

    @property
    def netloc(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def split_scheme_name_port(id_: str) -> tuple[str, str, str, bool]:
    """Upstream: SplitSchemeNamePort — "name", "name:port" or "scheme:name:port"."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return "", "", "", False
    if name and scheme in ("http", "https", ""):
        return scheme, name, port, True
    return "", "", "", False


def is_global_unicast(ip: str) -> bool:
    """Go's net.IP.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or broadcast."""
    try:
        a = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local:
        return False
    return not (isinstance(a, ipaddress.IPv4Address) and a == ipaddress.IPv4Address("255.255.255.255"))


def _is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def resolve_port(port: str, scheme: str) -> int | None:
    """A port number, a service name (/etc/services, as Go's dialer looks it up) or "" (the
    scheme's default, None); an unknown name is the dial error Go reports."""
    if not port:
        return None
    if port.isdigit():
        if 0 < int(port) < 65536:
            return int(port)
        raise dial_error(f"dial tcp: address {port}: invalid port")
    try:
        return socket.getservbyname(port, "tcp")
    except OSError:
        raise dial_error(f"dial tcp: lookup tcp/{port}: unknown port") from None


def dial_error(detail: str) -> errors.StatusError:
    """Upstream: proxy.Transport.RoundTrip's NewServiceUnavailable."""
    return errors.StatusError(503, "ServiceUnavailable", f"error trying to reach service: {detail}")


async def _get(api: APIServer, resource: str, ns: str, name: str) -> Obj:
    ri = lookup("", "v1", resource)
    assert ri is not None
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound("", resource, name)
    return kv.obj


def _runtime(node: Obj | None) -> str:
    return str((((node or {}).get("status") or {}).get("nodeInfo") or {}).get("containerRuntimeVersion") or "")


def _node_addresses(node: Obj | None) -> set[str]:
    return {str(a.get("address")) for a in ((node or {}).get("status") or {}).get("addresses") or []}


async def _pod_node(api: APIServer, pod: Obj) -> Obj | None:
    name = (pod.get("spec") or {}).get("nodeName")
    if not name:
        return None
    ri = lookup("", "v1", "nodes")
    assert ri is not None
    kv = await api.storage.get(ri.key("", name))
    return kv.obj if kv is not None else None


def pod_ip(pod: Obj) -> str:
    """Upstream: getPodIP — the first of status.podIPs."""
    ips = (pod.get("status") or {}).get("podIPs") or []
    return str(ips[0].get("ip") or "") if ips else ""


async def check_pod_address(api: APIServer, pod: Obj, ip: str, port: int | None, scheme: str) -> str:
    """"" when ip may be dialled; the dial error to answer when it is a simulated address;
    400 "address not allowed" when it may not be reached at all (see the module docstring)."""
    if is_global_unicast(ip):
        node = await _pod_node(api, pod)
        if _runtime(node).startswith(SIM_RUNTIME):
            return f"dial tcp {_host(ip)}:{port or (443 if scheme == 'https' else 80)}: {NO_ROUTE}"
        return ""
    if _is_loopback(ip):
        node = await _pod_node(api, pod)
        if _runtime(node).startswith(PROCESS_RUNTIME) and ip in _node_addresses(node):
            return ""
    raise errors.BadRequest("address not allowed")


async def pod_location(api: APIServer, ns: str, id_: str) -> Location:
    """Upstream: pod.ResourceLocation — the pod's first IP, at the requested port or its first
    container's first declared port."""
    scheme, name, port, valid = split_scheme_name_port(id_)
    if not valid:
        raise errors.BadRequest(f"invalid pod request {id_!r}".replace("'", '"'))
    pod = await _get(api, "pods", ns, name)
    if not port:
        for c in (pod.get("spec") or {}).get("containers") or []:
            if c.get("ports"):
                port = str(c["ports"][0].get("containerPort", ""))
                break
    ip = pod_ip(pod)
    scheme = scheme or "http"
    number = resolve_port(port, scheme)
    unreachable = await check_pod_address(api, pod, ip, number, scheme)
    return Location(scheme, _host(ip), number, unreachable=unreachable)


async def service_location(api: APIServer, ns: str, id_: str) -> Location:
    """Upstream: service REST.ResourceLocation — a random ready address of the service's
    Endpoints that serves the requested port (by number: the service port's name), and is the
    IP of the pod its targetRef names (isValidAddress)."""
    scheme, name, port_str, valid = split_scheme_name_port(id_)
    if not valid:
        raise errors.BadRequest(f'invalid service request "{id_}"')
    svc: Obj | None = None
    if port_str.lstrip("-").isdigit():
        svc = await _get(api, "services", ns, name)
        for sp in (svc.get("spec") or {}).get("ports") or []:
            if sp.get("port") == int(port_str):
                port_str = str(sp.get("name") or "")
                break
        else:
            raise errors.StatusError(503, "ServiceUnavailable",
                                     f'no service port {int(port_str)} found for service "{name}"')
    scheme = scheme or "http"
    try:
        eps = await _get(api, "endpoints", ns, name)
    except errors.StatusError:
        eps = None
    subsets = (eps or {}).get("subsets") or []
    found = await _pick_endpoint(api, ns, subsets, port_str)
    if found is None:
        found = await _loopback_endpoint(api, ns, name, svc, port_str)
    if found is not None:
        ip, port, pod = found
        unreachable = await check_pod_address(api, pod, ip, port, scheme)
        return Location(scheme, _host(ip), port, unreachable=unreachable)
    if eps is None:
        raise errors.NotFound("", "endpoints", name)
    if not subsets:
        raise errors.StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
    raise errors.StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{id_}"')


async def _pick_endpoint(api: APIServer, ns: str, subsets: list[Obj], port_name: str) -> tuple[str, int, Obj] | None:
    """A random subset first, a random address in it first, as upstream."""
    if not subsets:
        return None
    seed = random.randrange(len(subsets))
    for i in range(len(subsets)):
        ss = subsets[(seed + i) % len(subsets)]
        addrs = ss.get("addresses") or []
        if not addrs:
            continue
        for p in ss.get("ports") or []:
            if (p.get("name") or "") != port_name:
                continue
            start = random.randrange(len(addrs))
            for t in range(len(addrs)):
                addr = addrs[(start + t) % len(addrs)]
                pod = await _valid_address(api, ns, addr)
                if pod is not None:
                    return str(addr.get("ip")), int(p.get("port") or 0), pod
    return None


async def _valid_address(api: APIServer, ns: str, addr: Obj) -> Obj | None:
    """The pod the address belongs to, if its targetRef names a pod of the namespace whose
    podIPs hold the address. Upstream: isValidAddress"""
    ref = addr.get("targetRef") or {}
    if not ref or ref.get("namespace") != ns or not ref.get("name"):
        return None
    try:
        pod = await _get(api, "pods", ns, str(ref["name"]))
    except errors.StatusError:
        return None
    if any(p.get("ip") == addr.get("ip") for p in (pod.get("status") or {}).get("podIPs") or []):
        return pod
    return None


async def _loopback_endpoint(api: APIServer, ns: str, name: str, svc: Obj | None,
                             port_name: str) -> tuple[str, int, Obj] | None:
    """Not upstream: the ready pods of the service that run on their node's loopback network
    (the process runtime before each pod has an address of its own). Endpoints cannot hold
    a loopback address (ValidateEndpointIP), so the endpoints controller records none for them;
    this finds what it would have recorded: the service's selected, Ready pods, at the target
    port of the requested service port."""
    if svc is None:
        try:
            svc = await _get(api, "services", ns, name)
        except errors.StatusError:
            return None
    spec = svc.get("spec") or {}
    selector = spec.get("selector") or {}
    sp = next((p for p in spec.get("ports") or [] if (p.get("name") or "") == port_name), None)
    if not selector or sp is None:
        return None
    ri = lookup("", "v1", "pods")
    assert ri is not None
    kvs, _ = await api.storage.list(ri.key(ns, ""))
    candidates = []
    for kv in kvs:
        pod = kv.obj
        ip = pod_ip(pod)
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        if not _is_loopback(ip) or any(pod_labels.get(k) != v for k, v in selector.items()):
            continue
        if (pod.get("metadata") or {}).get("deletionTimestamp") or not _ready(pod):
            continue
        port = _target_port(pod, sp.get("targetPort", sp.get("port")))
        if port:
            candidates.append((ip, port, pod))
    random.shuffle(candidates)
    for ip, port, pod in candidates:          # only what its runtime put on loopback (check_pod_address)
        try:
            await check_pod_address(api, pod, ip, port, "http")
        except errors.StatusError:
            continue
        return ip, port, pod
    return None


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _target_port(pod: Obj, target: Any) -> int:
    """A numeric targetPort, or the named container port. Upstream: podutil.FindPort"""
    if isinstance(target, int):
        return target
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and (p.get("protocol") or "TCP") == "TCP":
                return int(p.get("containerPort") or 0)
    return 0


# --- nodes --------------------------------------------------------------------------------

async def node_location(api: APIServer, id_: str) -> Location:
    """Upstream: node.ResourceLocation — the kubelet's server (its port, or none asked) with
    the kubelet client's credentials, or another port of the node's address as plain proxying."""
    scheme, name, port_req, valid = split_scheme_name_port(id_)
    if not valid:
        raise errors.BadRequest(f'invalid node request "{id_}"')
    node = await _get(api, "nodes", "", name)
    port = kubelet_port(node)
    to_kubelet = port_req in ("", str(port))
    conn = api.nodes.get(name)
    if to_kubelet and conn is not None:
        # An in-process kubelet: its server, started on loopback when first asked for, with a
        # token only this process knows (kubelet/loopback_server.py).
        server_port, token = await conn.kubelet_server()
        return Location("https", "127.0.0.1", server_port, KUBELET, token, node=name)
    host = preferred_node_address(node)
    if to_kubelet:
        if not is_global_unicast(host) and not _is_loopback(host):
            await _check_proxyable_hostname(host)
        if await _is_this_api_server(api, host, port):
            raise errors.BadRequest("address not allowed")
        return Location("https", _host(host), port, KUBELET, next(iter(api.tokens), ""), node=name)
    await _check_proxyable_hostname(host)
    scheme = scheme or "http"
    number = resolve_port(port_req, scheme)
    unreachable = ""
    if _runtime(node).startswith(SIM_RUNTIME) and conn is not None:
        unreachable = f"dial tcp {_host(host)}:{number}: {NO_ROUTE}"     # a simulated node's address
    return Location(scheme, _host(host), number, unreachable=unreachable)


async def _is_this_api_server(api: APIServer, host: str, port: int) -> bool:
    """Whether host:port is this API server's own port on one of this machine's addresses.

    Not upstream, whose kubelet client credential is a narrow one: kubeplane's is the token of
    its token file (an administrator's), so a Node that names the API server itself as its
    kubelet (a node can write its own address and port) must not get requests of the caller's
    choosing sent there with it."""
    own_port = api.server_address.rpartition(":")[2]
    if not own_port.isdigit() or int(own_port) != port:
        return False
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return any(_is_local(str(i[4][0]), i[0]) for i in infos)


def _is_local(ip: str, family: int) -> bool:
    """An address of this machine: loopback, or one a socket can bind to."""
    if _is_loopback(ip) or ipaddress.ip_address(ip).is_unspecified:
        return True
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


async def _check_proxyable_hostname(hostname: str) -> None:
    """Upstream: isProxyableHostname — every address the name resolves to is global unicast."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(hostname, None, type=socket.SOCK_STREAM)
    except OSError as e:
        raise errors.BadRequest(f"lookup {hostname}: {e.strerror or e}") from None
    if not infos:
        raise errors.BadRequest("no addresses for hostname")
    if not all(is_global_unicast(str(i[4][0])) for i in infos):
        raise errors.BadRequest("address not allowed")

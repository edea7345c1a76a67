"""Flag values checked before anything starts: argparse types and the checks that need more
than one flag. A bad value is one line (`Error: ...`), never a traceback."""
from __future__ import annotations

import argparse
import pathlib
import socket

from .errors import Fatal


def port(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535. Upstream: SecureServingOptions.Validate"""
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} must be between 0 and 65535, inclusive")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be greater than or equal to 0, got {value}")
    return value


def positive_int(text: str) -> int:
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return value


def seconds(text: str) -> float:
    """A positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def go_duration(text: str) -> float:
    """A non-negative Go duration ("1m0s", "30s") in seconds."""
    from ..utils.goduration import parse_go_duration
    try:
        value = parse_go_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be greater than or equal to 0, got {text!r}")
    return value


def comma_list(text: str) -> list[str]:
    """A comma-separated flag value (pflag's StringSlice), empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def go_bool(text: str) -> bool:
    """A boolean as Go's strconv.ParseBool reads it (1, t, T, TRUE, true, True, 0, f, ...)."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def service_cluster_ip_range(text: str) -> str:
    """--service-cluster-ip-range: one CIDR, or an IPv4 and an IPv6 one comma-separated.
    Upstream: validateClusterIPFlags (kube-apiserver options/validation.go), with the ServiceCIDR
    allocator's size limit (an IPv6 range of at least a /64)."""
    import ipaddress
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 2:
        raise argparse.ArgumentTypeError("--service-cluster-ip-range must not contain more than two entries")
    nets = []
    for p in parts:
        try:
            nets.append(ipaddress.ip_network(p, strict=False))
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid CIDR address: {p}") from None
    for n in nets:
        if n.version == 6 and n.prefixlen < 64:
            raise argparse.ArgumentTypeError("specified --service-cluster-ip-range is too large; "
                                             "for 128-bit addresses, the mask must be >= 64")
    if len(nets) == 2 and nets[0].version == nets[1].version:
        raise argparse.ArgumentTypeError("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] "
                                         "must be of different IP family")
    return ",".join(str(n) for n in nets)


def ip_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses (--cluster-dns; "" is none)."""
    import ipaddress
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(str(ipaddress.ip_address(part)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid IP address: {part!r}") from None
    return tuple(out)


def ip_port(text: str) -> tuple[str, int]:
    """IP:PORT, an IPv6 address in brackets ([fd00::10]:53)."""
    import ipaddress
    host, sep, port_text = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        if not sep:
            raise ValueError(text)
        return str(ipaddress.ip_address(host)), port(port_text)
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"want IP:PORT, got {text!r}") from None


def port_range(text: str) -> str:
    """--service-node-port-range ("30000-32767"). Upstream: net.PortRange.Set"""
    from ..apiserver.registry.core.service.portallocator import parse_port_range
    try:
        pr = parse_port_range(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if pr.size == 0:
        raise argparse.ArgumentTypeError("--service-node-port-range must not be empty")
    return str(pr)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None


def check_profile(runtime: str, profile: str, nodes: int = 1) -> None:
    """Refuse an unknown or malformed sim stage profile before anything starts. The process
    runtime has no profile, and without nodes none is used.

    A shipped profile is known by its name (its stages are the package's own, tested with it):
    nothing is loaded, so the simulator's code and YAML wait until the kubelet starts. Any other
    profile (a directory) is loaded here, so a malformed stage is refused with its error."""
    if runtime != "sim" or nodes == 0:
        return
    if not pathlib.Path(profile).is_dir() and profile in shipped_profiles():
        return
    from ..kubelet.runtime.sim.lifecycle import load_profile
    try:
        load_profile(profile)
    except (ValueError, OSError) as err:
        raise Fatal(f'invalid argument "{profile}" for "--profile" flag: {err}') from None


def shipped_profiles() -> set[str]:
    """The stage profiles shipped in kubeplane/kubelet/stages/: lifecycle.profiles() without
    importing the simulator or importlib.resources (~13 ms before the ready line). Empty if
    the package is not a directory (then check_profile loads the profile instead)."""
    root = pathlib.Path(__file__).resolve().parent.parent / "kubelet" / "stages"
    if not root.is_dir():
        return set()
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")}


def host_port(address: str, port: int) -> str:
    """Go's net.JoinHostPort: IPv6 addresses in brackets."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def listen_error(address: str, port: int, err: OSError) -> str:
    """Upstream's words for a failed listen (kube-apiserver: CreateListener in
    apiserver/pkg/server/options/serving.go, with Go's net.OpError text):
    failed to listen on 127.0.0.1:6443: listen tcp 127.0.0.1:6443: bind: address already in use"""
    addr = host_port(address, port)
    reason = (err.strerror or str(err)).lower()
    if isinstance(err, socket.gaierror):
        return f"failed to listen on {addr}: listen tcp: lookup {address}: {reason}"
    return f"failed to listen on {addr}: listen tcp {addr}: bind: {reason}"


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line on stderr (the usage is in --help), exit status 2."""

    def error(self, message: str) -> None:    # type: ignore[override]
        self.exit(2, f"Error: {self.prog}: {message}\n")


DEFAULT_BIND_ADDRESS = "127.0.0.1"


def add_secure_serving(p: argparse.ArgumentParser, default_port: int) -> None:
    """--secure-port and --bind-address of a standalone component (cmd/serving.py serves them;
    the flags live here so building the parser imports no HTTP server). Upstream:
    SecureServingOptions.AddFlags"""
    p.add_argument("--secure-port", type=port, default=default_port,
                   help="the port on which to serve HTTPS (/healthz, /livez, /readyz, /metrics); 0 picks a free "
                        f"one, logged at start (default {default_port})")
    p.add_argument("--bind-address", default=DEFAULT_BIND_ADDRESS,
                   help="the IP address on which to serve --secure-port (default 127.0.0.1; 0.0.0.0 serves on "
                        "every interface)")



def admission_plugins(text: str) -> frozenset[str]:
    """A comma-separated list of admission plugin names, each one kubeplane ships.
    Upstream: AdmissionOptions.Validate (`<flag> plugin "X" is unknown`)."""
    from ..apiserver.admission.chain import ORDER
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    for n in sorted(names):
        if n not in ORDER:
            raise argparse.ArgumentTypeError(f'disable-admission-plugins plugin "{n}" is unknown')
    return names


def node_port_addresses(text: str) -> tuple[str, ...]:
    """kube-proxy's --nodeport-addresses: CIDRs or "primary" (kubelet/network/proxy.py)."""
    from ..kubelet.network.proxy import parse_node_port_addresses
    try:
        return parse_node_port_addresses(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_node_heartbeat_flag(p: argparse.ArgumentParser) -> None:
    """--node-heartbeat-period, the same on `up` and `kubelet` (which `up --kubelet-processes` starts)."""
    p.add_argument("--node-heartbeat-period", type=seconds, default=10.0, metavar="SECONDS",
                   help="how often each node renews its Lease and checks its status (default 10, "
                        "upstream's lease renew interval)")


def add_pod_network_flags(p: argparse.ArgumentParser) -> None:
    """--pod-network and --nodeport-addresses, the same on `up` and `kubelet`."""
    p.add_argument("--pod-network", choices=("auto", "netns", "host"), default="auto",
                   help="process runtime: a network namespace and an address from the node's podCIDR per pod, "
                        "with a kube-proxy for Services (netns), the host's network for every pod (host), or netns "
                        "where this process may create namespaces, i.e. as root (default auto)")
    p.add_argument("--nodeport-addresses", type=node_port_addresses, default=(), metavar="CIDR,...|primary",
                   help="kube-proxy (with pod network namespaces): where NodePorts listen: the host's addresses "
                        "inside these CIDRs, or the nodes' address (primary) (default: every local address)")

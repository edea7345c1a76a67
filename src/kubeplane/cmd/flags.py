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
    from ..apiserver.filters.timeout import parse_go_duration
    try:
        value = parse_go_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be greater than or equal to 0, got {text!r}")
    return value


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


def admission_plugins(text: str) -> frozenset[str]:
    """A comma-separated list of admission plugin names, each one kubeplane ships.
    Upstream: AdmissionOptions.Validate (`<flag> plugin "X" is unknown`)."""
    from ..apiserver.admission.chain import ORDER
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    for n in sorted(names):
        if n not in ORDER:
            raise argparse.ArgumentTypeError(f'disable-admission-plugins plugin "{n}" is unknown')
    return names

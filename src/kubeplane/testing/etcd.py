"""A real etcd cluster on loopback: 1 or 3 members, TLS by default, for tests and for trying
kubeplane on etcd (or HA) on one machine.

    with EtcdCluster(tmp_path, members=3) as etcd:
        storage = new_storage("etcd", etcd=etcd.config())
        ...
        etcd.kill(1)              # kill -9 one member; etcd.start_member(1) brings it back

The etcd binary comes from the system (Debian's `etcd-server`, which `.ci/run` installs);
`etcd_binary()` says whether there is one. Certificates (a CA, a serving + peer certificate per
member, a client certificate for the API server) are made under the data dir with
kubeplane.utils.pki; members require client certificates, as a production etcd should.
"""
from __future__ import annotations

import contextlib
import json
import pathlib
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from types import TracebackType

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..storage.etcd import EtcdConfig
from ..utils import pki

HOST = "127.0.0.1"


def etcd_binary() -> str | None:
    """The etcd executable on PATH (or Debian's), or None."""
    return shutil.which("etcd") or (str(p) if (p := pathlib.Path("/usr/bin/etcd")).exists() else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: pathlib.Path
    process: subprocess.Popen[bytes] | None = None


class EtcdCluster:
    """Members m0..m{n-1} on loopback ports; start() waits until every member is healthy."""

    def __init__(self, root: str | pathlib.Path, *, members: int = 1, tls: bool = True) -> None:
        self.root = pathlib.Path(root)
        self.tls = tls
        # A cluster made before keeps its ports: its members' data holds their peer URLs.
        saved = self.root / "ports.json"
        ports = json.loads(saved.read_text()) if saved.exists() else []
        if len(ports) != members:
            ports = [[_free_port(), _free_port()] for _ in range(members)]
        self.members = [Member(f"m{i}", c, p, self.root / f"m{i}") for i, (c, p) in enumerate(ports)]
        self.pki = self.root / "pki"
        self._scheme = "https" if tls else "http"

    # --- addresses and credentials -----------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        return [f"{self._scheme}://{HOST}:{m.client_port}" for m in self.members]

    def config(self, prefix: str = "/registry") -> EtcdConfig:
        """How the API server reaches this cluster (--etcd-servers, --etcd-cafile, ...)."""
        if not self.tls:
            return EtcdConfig(self.endpoints, prefix)
        return EtcdConfig(self.endpoints, prefix, cafile=str(self.pki / "ca.crt"),
                          certfile=str(self.pki / "client.crt"), keyfile=str(self.pki / "client.key"))

    def _make_pki(self) -> None:
        if (self.pki / "ca.crt").exists():
            return
        self.pki.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = pki.ca_certificate("etcd-ca", ca_key)
        (self.pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        for m in self.members:       # one certificate per member, for both its client and peer ports
            cert, key = pki.serving_cert(m.name, [HOST, "localhost"], ca, ca_key, client_auth=True)
            (self.pki / f"{m.name}.crt").write_bytes(cert)
            (self.pki / f"{m.name}.key").write_bytes(key)
        cert, key = pki.client_cert("kube-apiserver-etcd-client", [], ca, ca_key)
        (self.pki / "client.crt").write_bytes(cert)
        (self.pki / "client.key").write_bytes(key)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError("no etcd binary (apt-get install etcd-server)")
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "ports.json").write_text(json.dumps([[m.client_port, m.peer_port] for m in self.members]))
        if self.tls:
            self._make_pki()
        try:
            for i in range(len(self.members)):
                self.start_member(i, wait=False)
            for i in range(len(self.members)):
                self.wait_healthy(i, timeout)
        except BaseException:
            self.stop()                      # no member left behind
            raise
        return self

    def start_member(self, i: int, *, wait: bool = True, timeout: float = 30.0) -> None:
        """Start member i (again: its data dir is kept, so it rejoins)."""
        m = self.members[i]
        peers = ",".join(f"{p.name}={self._scheme}://{HOST}:{p.peer_port}" for p in self.members)
        args = [etcd_binary() or "etcd", "--name", m.name, "--data-dir", str(m.data_dir),
                "--listen-client-urls", f"{self._scheme}://{HOST}:{m.client_port}",
                "--advertise-client-urls", f"{self._scheme}://{HOST}:{m.client_port}",
                "--listen-peer-urls", f"{self._scheme}://{HOST}:{m.peer_port}",
                "--initial-advertise-peer-urls", f"{self._scheme}://{HOST}:{m.peer_port}",
                "--initial-cluster", peers, "--initial-cluster-token", f"kubeplane-{self.root.name}",
                "--initial-cluster-state", "new", "--log-level", "error", "--logger", "zap",
                # Heartbeats and elections as fast as loopback allows: failover tests wait less.
                "--heartbeat-interval", "50", "--election-timeout", "500"]
        if self.tls:
            crt, key, ca = (str(self.pki / f"{m.name}.crt"), str(self.pki / f"{m.name}.key"),
                            str(self.pki / "ca.crt"))
            args += ["--cert-file", crt, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth",
                     "--peer-cert-file", crt, "--peer-key-file", key, "--peer-trusted-ca-file", ca,
                     "--peer-client-cert-auth"]
        log = open(self.root / f"{m.name}.log", "ab")
        m.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        if wait:
            self.wait_healthy(i, timeout)

    def wait_healthy(self, i: int, timeout: float = 30.0) -> None:
        m = self.members[i]
        deadline = time.monotonic() + timeout
        url = f"{self._scheme}://{HOST}:{m.client_port}/health"
        ctx = None
        if self.tls:
            ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            ctx.load_cert_chain(str(self.pki / "client.crt"), str(self.pki / "client.key"))
        while True:
            if m.process is not None and m.process.poll() is not None:
                raise RuntimeError(f"etcd member {m.name} exited: {(self.root / f'{m.name}.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(url, timeout=1, context=ctx) as r:
                    if b'"true"' in r.read():
                        return
            if time.monotonic() > deadline:
                raise TimeoutError(f"etcd member {m.name} not healthy after {timeout:g}s")
            time.sleep(0.05)

    def kill(self, i: int) -> None:
        """kill -9 member i (a failover test's crash)."""
        p = self.members[i].process
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()

    def stop(self) -> None:
        for m in self.members:
            if m.process is not None and m.process.poll() is None:
                m.process.terminate()
        for m in self.members:
            if m.process is not None:
                try:
                    m.process.wait(10)
                except subprocess.TimeoutExpired:
                    m.process.kill()
                    m.process.wait()

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


__all__ = ["EtcdCluster", "etcd_binary"]

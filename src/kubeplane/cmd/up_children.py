"""`kubeplane up --kubelet-processes N`: the simulated nodes in N processes of their own
(and `--scheduler-process`: the scheduler in one of its own).

    kubeplane up --nodes 1000 --kubelet-processes 1     # the API server and controllers here,
                                                        # the 1,000 nodes in a second process
    kubeplane up --nodes 1000 --scheduler-process       # the scheduler in a second process

Each child is `kubeplane kubelet` (cmd/kubelet.py), the standalone kubelet, given a contiguous
share of the node names (--first-node), so the nodes are the ones an in-process `up` runs
(kubeplane-node-0 .. N-1). It talks to the API server as an upstream kubelet does: over HTTPS,
the pod informer with DIR/kubeconfig's credential, and each node's own requests (its Lease,
status, pod statuses, events) with its own client certificate (CN system:node:<name>, O
system:nodes), decided by the Node authorizer and NodeRestriction. `up` issues those
certificates itself, signed by the cluster CA, into DIR/kubelet/pki/<node>/ (what kubeadm does
for the kubelet of a node it sets up: kubelet.conf's embedded client certificate), and reuses
them on the next start while they are valid; so no node waits for a CSR to be approved. The
API server reaches the nodes' /containerLogs, exec, attach and port-forward at the address and
port each child's kubelet server reports (handlers/podlog.py, connect.py), as for any kubelet.

`--scheduler-process` runs `kubeplane scheduler` (cmd/scheduler.py) with DIR/scheduler.conf, the
client certificate of system:kube-scheduler that `up` writes for it (kubeadm's scheduler.conf),
without leader election, as the in-process scheduler.

Lifecycle (every child), as a user of `up` expects of one program:
- a child is supervised like the in-process components (supervisor.py): it runs in its own
  session (Ctrl-C at a terminal reaches `up`, which stops it), and if it exits by itself (a
  crash, or someone else's signal) it is logged and started again with the same back-off; a
  crash loop (5 quick exits in a row) stops `up` with exit status 1.
- `up` stopping (SIGINT, SIGTERM, a crash loop) sends each child SIGTERM before the API server
  drains, waits STOP_TIMEOUT for it, then SIGKILLs it.
- `up` killed outright (kill -9): each child asked the kernel for SIGTERM when its parent dies
  (Linux prctl PR_SET_PDEATHSIG, set by this module's own entry point before the kubelet
  starts), so none is left behind.

Upstream: kubeadm's kubelet.conf for the nodes it sets up (a client certificate from the CA,
kubeadm/app/phases/kubeconfig); systemd's Restart=always for the kubelet unit.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import pathlib
import signal
import sys
from typing import Any

log = logging.getLogger(__name__)

STOP_TIMEOUT = 5.0         # seconds a child has to stop after SIGTERM before it is killed
PR_SET_PDEATHSIG = 1       # <linux/prctl.h>
PARENT_ENV = "KUBEPLANE_PARENT_PID"   # the child's entry point: die with this parent


class ChildExited(Exception):
    """A child process ended without being asked to (the supervisor starts it again)."""

    def __init__(self, name: str, returncode: int) -> None:
        how = f"killed by {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
        super().__init__(f"{name} process ended ({how})")
        self.returncode = returncode


class ChildProcess:
    """One child process, started by run() and kept until run() is cancelled.

    run() returns nothing: it raises ChildExited when the process ends by itself, and on
    cancellation stops it (SIGTERM, then SIGKILL after stop_timeout) before re-raising.
    `pid` is the running process's (None between runs).
    """

    def __init__(self, name: str, argv: list[str], *, stop_timeout: float = STOP_TIMEOUT) -> None:
        self.name, self.argv, self.stop_timeout = name, argv, stop_timeout
        self.pid: int | None = None

    async def run(self) -> None:
        env = {**os.environ, PARENT_ENV: str(os.getpid())}
        proc = await asyncio.create_subprocess_exec(*self.argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    start_new_session=True)
        self.pid = proc.pid
        log.info("Started process", extra={"component": self.name, "pid": proc.pid})
        try:
            returncode = await proc.wait()
        except asyncio.CancelledError:
            await self.stop(proc)
            raise
        finally:
            self.pid = None
        raise ChildExited(self.name, returncode)

    async def stop(self, proc: Any) -> None:
        """SIGTERM, then SIGKILL if it has not exited within stop_timeout; reaped either way."""
        if proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), self.stop_timeout)
        except TimeoutError:
            log.warning("Process did not stop in time: killed", extra={"component": self.name, "pid": proc.pid})
            proc.kill()
            await proc.wait()


def shares(nodes: int, processes: int) -> list[tuple[int, int]]:
    """(first node, count) for each of `processes` children, contiguous, sizes within one of
    each other; children with no node are left out."""
    base, extra = divmod(nodes, processes)
    out, first = [], 0
    for i in range(processes):
        count = base + (1 if i < extra else 0)
        if count:
            out.append((first, count))
        first += count
    return out


def kubelet_argv(args: argparse.Namespace, first: int, count: int, *, cert_dir: pathlib.Path | None,
                 root_dir: pathlib.Path | None) -> list[str]:
    """The command line of the child running nodes first .. first+count-1: `kubeplane
    kubelet` with `up`'s node flags, through this module's entry point (main)."""
    from .cluster_dns import dns_ip
    data_dir = args.data_dir.resolve()
    argv = [sys.executable, "-m", __name__, "kubelet", "--kubeconfig", str(data_dir / "kubeconfig"),
            "--nodes", str(count), "--first-node", str(first), "--runtime", args.runtime, "--profile", args.profile,
            "--port", "0", "--node-heartbeat-period", repr(args.node_heartbeat_period),
            "--streaming-connection-idle-timeout", f"{args.streaming_connection_idle_timeout:g}s",
            "--cluster-dns", dns_ip(args.service_cluster_ip_range), "--cluster-domain", args.cluster_domain,
            "--pod-network", args.pod_network,
            # `up` issued the certificates (10 years) and checks them at every start
            "--rotate-certificates=false"]
    if args.nodeport_addresses:
        argv += ["--nodeport-addresses", ",".join(args.nodeport_addresses)]
    if cert_dir is not None:
        argv += ["--cert-dir", str(cert_dir)]
    if root_dir is not None:
        argv += ["--root-dir", str(root_dir)]
    if args.log_level:
        argv += ["--log-level", args.log_level]
    return argv


def ensure_node_certificates(pki: pathlib.Path, cert_dir: pathlib.Path, names: list[str]) -> None:
    """<cert_dir>/<node>/kubelet-client-current.pem for each node: kept if still valid and
    issued by pki/ca.crt, else a new one signed by pki/ca.key (kubeadm's kubelet.conf)."""
    from cryptography.hazmat.primitives import serialization

    from ..kubelet.certificate.bootstrap import NODES_GROUP, keep, load_client_cert
    from ..utils.files import make_private_dir
    from ..utils.pki import client_cert, load_ca

    ca, ca_key = load_ca(pki)
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    make_private_dir(cert_dir)
    for node in names:
        path = cert_dir / node
        if load_client_cert(path / "kubelet-client-current.pem", node, ca_pem) is None:
            keep(path, *client_cert(f"system:node:{node}", [NODES_GROUP], ca, ca_key))


def add_kubelet_processes(supervisor: Any, args: argparse.Namespace) -> list[ChildProcess]:
    """Supervise --kubelet-processes children sharing out --nodes; their certificates are
    issued first, by the first start of each (in a thread: 1,000 took 0.5 CPU s)."""
    from ..kubelet import node_names
    data_dir = args.data_dir.resolve()
    own_ca = args.client_ca_file is None and (data_dir / "pki" / "ca.key").exists()
    cert_dir = data_dir / "kubelet" / "pki" if own_ca else None     # else: TLS bootstrapping by each child
    parts = shares(args.nodes, args.kubelet_processes)
    children = []
    for i, (first, count) in enumerate(parts):
        root_dir = data_dir / "kubelet" if args.runtime == "process" else None    # one process (check_kubelet_processes)
        name = "kubelet" if len(parts) == 1 else f"kubelet-{i}"
        child = ChildProcess(name, kubelet_argv(args, first, count, cert_dir=cert_dir, root_dir=root_dir))
        children.append(child)
        names = node_names(count, first=first)

        def start(child: ChildProcess = child, names: list[str] = names) -> Any:
            async def run() -> None:
                if cert_dir is not None:
                    await asyncio.to_thread(ensure_node_certificates, data_dir / "pki", cert_dir, names)
                await child.run()
            return run()
        supervisor.add(name, start)
    return children


def scheduler_argv(args: argparse.Namespace) -> list[str]:
    """`kubeplane scheduler` with DIR/scheduler.conf (system:kube-scheduler's client
    certificate), no leader election (the in-process one takes none either) and its health and
    metrics on a free port."""
    argv = [sys.executable, "-m", __name__, "scheduler", "--kubeconfig", str(args.data_dir.resolve() / "scheduler.conf"),
            "--no-leader-elect", "--secure-port", "0"]
    return argv + (["--log-level", args.log_level] if args.log_level else [])


def add_scheduler_process(supervisor: Any, args: argparse.Namespace) -> ChildProcess:
    """Supervise the scheduler's process (--scheduler-process)."""
    child = ChildProcess("scheduler", scheduler_argv(args))
    supervisor.add("scheduler", child.run)
    return child


def set_parent_death_signal(parent: int) -> None:
    """Ask the kernel for SIGTERM when the process that started us dies (Linux only; elsewhere
    a child of a kill -9'd `up` is left running); exit at once if it already has."""
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:              # it died before the prctl: nobody will tell us
        os._exit(1)


def use_uvloop() -> None:
    """uvloop, as `up` itself: besides being faster, its TLS transport does not fill a 256 KiB
    read buffer per connection as asyncio's does (sslproto's bytearray), which with a
    connection per node cost ~240 MB at 1,000 nodes (measured: the kubelet process of 1,000
    idle nodes 417 MB on asyncio, 181 MB on uvloop)."""
    try:
        import uvloop
        uvloop.install()
    except ImportError:       # pragma: no cover - uvloop is a dependency, but keep working without it
        pass


def main(argv: list[str] | None = None) -> int:
    """A child's entry point: tie its life to `up`'s, then run the kubeplane command."""
    parent = os.environ.pop(PARENT_ENV, "")
    if parent.isdigit():
        set_parent_death_signal(int(parent))
    use_uvloop()
    from .main import main as kubeplane
    return kubeplane(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

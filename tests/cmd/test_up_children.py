"""`up --kubelet-processes`: the child processes' lifecycle, command line and certificates."""
from __future__ import annotations

import asyncio
import pathlib
import subprocess
import sys
import time

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from kubeplane.cmd import kubelet as kubelet_cmd
from kubeplane.cmd import scheduler as scheduler_cmd
from kubeplane.cmd import up
from kubeplane.cmd.flags import ArgumentParser
from kubeplane.cmd.up_children import (
    ChildExited, ChildProcess, add_kubelet_processes, add_scheduler_process, ensure_node_certificates, kubelet_argv,
    shares,
)
from kubeplane.cmd.supervisor import Supervisor
from kubeplane.kubelet.certificate.bootstrap import load_client_cert
from kubeplane.utils.pki import ensure_pki

PY = sys.executable


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < end, f"process {pid} still running"
        time.sleep(0.02)


@pytest.mark.parametrize("nodes,processes,expected", [
    (10, 1, [(0, 10)]),
    (10, 3, [(0, 4), (4, 3), (7, 3)]),
    (1000, 2, [(0, 500), (500, 500)]),
    (2, 4, [(0, 1), (1, 1)]),           # a child with no node is not started
])
def test_shares_are_contiguous_and_even(nodes: int, processes: int, expected: list[tuple[int, int]]) -> None:
    assert shares(nodes, processes) == expected


async def test_cancel_stops_the_child_with_sigterm() -> None:
    child = ChildProcess("sleeper", [PY, "-c", "import time; time.sleep(60)"])
    task = asyncio.ensure_future(child.run())
    while child.pid is None:
        await asyncio.sleep(0.01)
    pid = child.pid
    assert alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(pid) and child.pid is None


async def test_a_child_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path: pathlib.Path) -> None:
    ready = tmp_path / "ready"
    script = (f"import pathlib, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)")
    child = ChildProcess("stubborn", [PY, "-c", script], stop_timeout=0.3)
    task = asyncio.ensure_future(child.run())
    while not ready.exists():                   # SIGTERM is ignored from now on
        await asyncio.sleep(0.01)
    pid = child.pid
    assert pid is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(pid)


async def test_a_child_ending_by_itself_is_a_crash() -> None:
    with pytest.raises(ChildExited, match=r"kubelet process ended \(exit status 3\)") as err:
        await ChildProcess("kubelet", [PY, "-c", "raise SystemExit(3)"]).run()
    assert err.value.returncode == 3
    with pytest.raises(ChildExited, match="killed by SIGKILL"):
        await ChildProcess("kubelet", [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]).run()


def test_the_child_dies_with_a_killed_parent(tmp_path: pathlib.Path) -> None:
    """kill -9 of the parent leaves no child behind: the entry point's PR_SET_PDEATHSIG."""
    grandchild = ("import os, time; from kubeplane.cmd.up_children import set_parent_death_signal as s; "
                  "s(os.getppid()); print(os.getpid(), flush=True); time.sleep(60)")
    parent = (f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
              "time.sleep(60)")
    proc = subprocess.Popen([PY, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        assert alive(pid)
        proc.kill()
        proc.wait()
        wait_gone(pid)
    finally:
        proc.kill()
        proc.wait()


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="kubeplane")
    sub = p.add_subparsers(dest="command")
    up.add_parser(sub)
    kubelet_cmd.add_parser(sub)
    scheduler_cmd.add_parser(sub)
    return p


def test_the_kubelet_command_line_carries_ups_node_flags(tmp_path: pathlib.Path) -> None:
    p = parser()
    args = p.parse_args(["up", "--data-dir", str(tmp_path), "--nodes", "5", "--kubelet-processes", "2",
                         "--node-heartbeat-period", "2.5", "--streaming-connection-idle-timeout", "90s",
                         "--cluster-domain", "example.org", "--profile", "readiness-delay", "--log-level", "info"])
    argv = kubelet_argv(args, 3, 2, cert_dir=tmp_path / "kubelet" / "pki", root_dir=None)
    assert argv[:4] == [PY, "-m", "kubeplane.cmd.up_children", "kubelet"]
    child = p.parse_args(argv[3:])
    assert (child.nodes, child.first_node, child.node_heartbeat_period) == (2, 3, 2.5)
    assert child.streaming_connection_idle_timeout == 90.0
    assert child.kubeconfig == tmp_path.resolve() / "kubeconfig"
    assert (child.cluster_domain, child.cluster_dns, child.profile) == ("example.org", ("10.96.0.10",),
                                                                         "readiness-delay")
    assert (child.port, child.rotate_certificates, child.log_level) == (0, False, "info")
    assert child.cert_dir == tmp_path / "kubelet" / "pki" and child.root_dir is None


def test_kubelet_processes_are_supervised_components(tmp_path: pathlib.Path) -> None:
    args = parser().parse_args(["up", "--data-dir", str(tmp_path), "--nodes", "3", "--kubelet-processes", "2"])
    supervisor = Supervisor()
    children = add_kubelet_processes(supervisor, args)
    assert [c.name for c in supervisor.components] == ["kubelet-0", "kubelet-1"]
    assert [c.argv[c.argv.index("--first-node") + 1] for c in children] == ["0", "2"]
    assert "--cert-dir" not in children[0].argv        # no pki/ca.key here: each node bootstraps its own


def test_more_than_one_kubelet_process_needs_the_sim_runtime(tmp_path: pathlib.Path) -> None:
    from kubeplane.cmd.errors import Fatal
    args = parser().parse_args(["up", "--data-dir", str(tmp_path), "--runtime", "process", "--kubelet-processes", "2"])
    with pytest.raises(Fatal, match="--kubelet-processes above 1 needs --runtime sim"):
        up.check_kubelet_processes(args)
    up.check_kubelet_processes(parser().parse_args(["up", "--runtime", "process", "--kubelet-processes", "1"]))


def test_node_certificates_are_issued_once_by_the_cluster_ca(tmp_path: pathlib.Path) -> None:
    ensure_pki(tmp_path, ["127.0.0.1"])
    pki, certs = tmp_path / "pki", tmp_path / "kubelet" / "pki"
    ensure_node_certificates(pki, certs, ["node-0", "node-1"])
    ca = (pki / "ca.crt").read_bytes()
    kept = load_client_cert(certs / "node-0" / "kubelet-client-current.pem", "node-0", ca)
    assert kept is not None
    cert = x509.load_pem_x509_certificate(kept[0])
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:node-0"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    before = (certs / "node-1" / "kubelet-client-current.pem").read_bytes()
    (certs / "node-0" / "kubelet-client-current.pem").write_bytes(before)       # node-1's: not node-0's
    ensure_node_certificates(pki, certs, ["node-0", "node-1"])
    assert (certs / "node-1" / "kubelet-client-current.pem").read_bytes() == before       # still valid: kept
    assert load_client_cert(certs / "node-0" / "kubelet-client-current.pem", "node-0", ca) is not None  # replaced
    assert oct((certs / "node-0" / "kubelet-client-current.pem").stat().st_mode & 0o777) == "0o600"


def test_the_scheduler_process_is_kubeplane_scheduler_as_system_kube_scheduler(tmp_path: pathlib.Path) -> None:
    p = parser()
    args = p.parse_args(["up", "--data-dir", str(tmp_path), "--scheduler-process"])
    supervisor = Supervisor()
    child = add_scheduler_process(supervisor, args)
    assert [c.name for c in supervisor.components] == ["scheduler"]
    parsed = p.parse_args(child.argv[3:])
    assert parsed.kubeconfig == tmp_path.resolve() / "scheduler.conf"
    assert (parsed.leader_elect, parsed.secure_port) == (False, 0)


def test_kube_api_qps_paces_each_in_process_controller_client(tmp_path: pathlib.Path) -> None:
    """up --kube-api-qps / --kube-api-burst: kube-controller-manager's flags, for the in-process
    controllers (each clientset a bucket of its own); unset, no limit."""
    from kubeplane.client.transport import RateLimitedTransport
    args = parser().parse_args(["up", "--data-dir", str(tmp_path), "--kube-api-qps", "100"])
    assert (args.kube_api_qps, args.kube_api_burst) == (100.0, 0)
    assert parser().parse_args(["up"]).kube_api_qps == 0.0
    api = object()
    a = up.in_process_clientset(api, "kube-controller-manager", "u", qps=100.0)
    b = up.in_process_clientset(api, "kube-controller-manager", "u", qps=100.0, burst=7)
    assert isinstance(a.transport, RateLimitedTransport) and a.transport.limiter._burst == 150
    assert b.transport.limiter._burst == 7 and b.transport.limiter is not a.transport.limiter
    assert not isinstance(up.in_process_clientset(api, "kube-controller-manager", "u").transport, RateLimitedTransport)

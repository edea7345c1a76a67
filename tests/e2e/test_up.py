"""`kubeplane up` as an operator meets it: one instance per data dir, private files, one-line
errors, health endpoints, version, and a logged shutdown. Real processes throughout."""
from __future__ import annotations

import os
import pathlib
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from .cluster import Cluster, eventually

UP = [sys.executable, "-m", "kubeplane", "up"]


def run_up(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`kubeplane up ARGS` expected to stop on its own (a refusal)."""
    return subprocess.run([*UP, *args], capture_output=True, text=True, timeout=timeout, check=False)


def one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    """The refusal's single line on stderr; nothing on stdout, no traceback."""
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert "ready" not in res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def snapshot(d: pathlib.Path) -> dict[str, tuple[int, bytes]]:
    """Every file under d with its mode and content (directories with their mode)."""
    out: dict[str, tuple[int, bytes]] = {}
    for p in sorted(d.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(d))] = (stat.S_IMODE(st.st_mode), p.read_bytes() if p.is_file() else b"")
    out["."] = (stat.S_IMODE(d.stat().st_mode), b"")
    return out


@pytest.fixture(scope="module")
def running() -> Iterator[Cluster]:
    """One `up` with a node and the controllers, its data dir holding nothing but its own files
    (the log goes to a separate directory)."""
    with tempfile.TemporaryDirectory(prefix="kubeplane-e2e-up-") as d:
        c = Cluster(pathlib.Path(d, "data"), nodes=1)
        c.log_path = pathlib.Path(d, "up.log")
        c.cache_dir = pathlib.Path(d, "kubectl-cache")
        c.start()
        try:
            yield c
        finally:
            c.cleanup()


def test_second_up_on_the_same_data_dir_is_refused_and_changes_nothing(running: Cluster) -> None:
    before = snapshot(running.data_dir)
    lock = dict(line.split("=", 1) for line in (running.data_dir / "up.lock").read_text().splitlines())
    assert lock["pid"] == str(running.proc.pid)      # type: ignore[union-attr]
    line = one_error_line(run_up("--data-dir", str(running.data_dir), "--port", "0"))
    assert line == (f"Error: data dir {running.data_dir} is in use by another kubeplane up "
                    f"(pid {running.proc.pid}, port {lock['port']})")      # type: ignore[union-attr]
    # nothing written, no mode changed (state.db may have grown from the first one's own writes)
    after = snapshot(running.data_dir)
    assert after["kubeconfig"] == before["kubeconfig"]
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    assert after["pki/ca.crt"] == before["pki/ca.crt"] and after["up.lock"] == before["up.lock"]
    # and the first one still serves, with its storage intact
    running.kubectl("create", "configmap", "after-refusal", "--from-literal=k=v")
    assert running.get_json("configmap", "after-refusal")["data"] == {"k": "v"}


def test_everything_in_a_fresh_data_dir_is_private(running: Cluster) -> None:
    eventually(lambda: running.kubectl("get", "nodes", check=False).stdout.count("Ready") >= 1, "the node")
    modes = {name: mode for name, (mode, _) in snapshot(running.data_dir).items()}
    assert {"pki", "pki/ca.key", "pki/server.key", "pki/admin.token", "kubeconfig", "state.db", "up.lock"} <= set(modes)
    for name, mode in modes.items():
        is_dir = (running.data_dir / name).is_dir()
        assert mode == (0o700 if is_dir else 0o600), f"{name}: {oct(mode)}"


def test_health_endpoints_list_every_component(running: Cluster) -> None:
    for endpoint in ("livez", "readyz", "healthz"):
        out = running.kubectl("get", "--raw", f"/{endpoint}?verbose").stdout
        for check in ("ping", "log", "controller-manager", "scheduler", "kubelet"):
            assert f"[+]{check} ok" in out, out
        assert out.endswith(f"{endpoint} check passed\n")
    assert running.kubectl("get", "--raw", "/readyz/scheduler").stdout == "ok"
    assert "[+]scheduler excluded: ok" in running.kubectl("get", "--raw", "/readyz?verbose&exclude=scheduler").stdout


def test_port_in_use_is_one_line_and_writes_nothing() -> None:
    with socket.socket() as taken, tempfile.TemporaryDirectory() as d:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(run_up("--data-dir", d, "--port", str(port), "--nodes", "0"))
        assert line == (f"Error: failed to create listener: failed to listen on 127.0.0.1:{port}: "
                        f"listen tcp 127.0.0.1:{port}: bind: address already in use")
        assert sorted(os.listdir(d)) == ["up.lock"]          # no pki, no state.db, no kubeconfig


def test_unknown_profile_is_refused_before_anything_starts() -> None:
    with tempfile.TemporaryDirectory() as d:
        data = pathlib.Path(d, "data")
        line = one_error_line(run_up("--data-dir", str(data), "--port", "0", "--profile", "no-such-profile"))
        assert line.startswith('Error: invalid argument "no-such-profile" for "--profile" flag: unknown stage profile')
        assert not data.exists()


def test_unusable_data_dir_is_one_line() -> None:
    with tempfile.NamedTemporaryFile() as f:        # a file where a directory should be
        line = one_error_line(run_up("--data-dir", f"{f.name}/data", "--port", "0"))
        assert line == f"Error: data dir {f.name}/data is not usable: mkdir {f.name}/data: not a directory"


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--port", "70000", "argument --port: 70000 must be between 0 and 65535, inclusive"),
    ("--nodes", "-1", "argument --nodes: must be greater than or equal to 0, got -1"),
    ("--node-heartbeat-period", "soon", "argument --node-heartbeat-period: invalid number of seconds 'soon'"),
])
def test_bad_flag_values_are_one_line(flag: str, value: str, message: str) -> None:
    res = run_up(flag, value)
    assert res.returncode == 2
    assert res.stderr == f"Error: kubeplane up: {message}\n"


def test_version() -> None:
    res = subprocess.run([sys.executable, "-m", "kubeplane", "--version"], capture_output=True, text=True, timeout=30, check=False)
    assert (res.returncode, res.stdout) == (0, "Kubernetes v1.37.0-kubeplane\n")


def test_shutdown_is_logged_and_exits_zero() -> None:
    c = Cluster().start()
    try:
        assert c.proc is not None
        proc = c.proc
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 0
        log = c.log_path.read_text()
        assert "Serving securely on 127.0.0.1:" in log
        assert 'Starting control plane dataDir="' in log and 'storage="sqlite" nodes=0' in log
        assert 'Shutting down reason="SIGTERM"' in log
        assert log.rstrip().endswith("Stopped")
        assert "Traceback" not in log
    finally:
        c.cleanup()


def test_older_data_dir_is_tightened_at_start() -> None:
    with tempfile.TemporaryDirectory() as d:
        data = pathlib.Path(d, "data")
        c = Cluster(data)
        c.log_path = pathlib.Path(d, "up.log")
        c.start().stop()
        os.chmod(data, 0o755)
        os.chmod(data / "pki", 0o755)
        os.chmod(data / "pki" / "ca.crt", 0o644)
        os.chmod(data / "state.db", 0o644)
        c.start()
        try:
            assert stat.S_IMODE(data.stat().st_mode) == 0o700
            assert stat.S_IMODE((data / "pki").stat().st_mode) == 0o700
            assert stat.S_IMODE((data / "pki" / "ca.crt").stat().st_mode) == 0o600
            assert stat.S_IMODE((data / "state.db").stat().st_mode) == 0o600
        finally:
            c.cleanup()

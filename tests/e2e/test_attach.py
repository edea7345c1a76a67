"""Attach with stdin, `kubectl run -it --rm` and `kubectl debug -it` with real kubectl against
`kubeplane up --runtime process` (pods in network namespaces of their own: the ephemeral
container's share of its pod's is visible).

A container with `stdin: true` keeps its stdin in its shim until an attach sends it something
(runtime/process/shim.py Attach); with `stdinOnce` it is closed when that attach's input
ends; with `tty` the container's stdin, stdout and stderr are a terminal of the client's size.
"""
from __future__ import annotations

import os
import pty
import select
import signal
import struct
import subprocess
import sys
import time
import fcntl
import termios
from collections.abc import Iterator

import pytest

from .cluster import KUBECTL, Cluster, eventually

PY = sys.executable
UPPER = "import sys; print(sys.stdin.read().upper(), end='')"


@pytest.fixture(scope="module")
def c() -> Iterator[Cluster]:
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--pod-network", "netns")).start()
    try:
        yield c
    finally:
        c.stop(signal.SIGTERM)
        c.cleanup()


def kubectl_argv(c: Cluster, *args: str) -> list[str]:
    return [KUBECTL, "--kubeconfig", str(c.kubeconfig), "--cache-dir", str(c.cache_dir), *args]


def gone(c: Cluster, name: str) -> bool:
    return c.kubectl("get", "pod", name, "--ignore-not-found", "-o", "name").stdout == ""


def in_terminal(c: Cluster, args: list[str], keys: list[bytes], until: bytes, size: tuple[int, int] = (33, 91),
                timeout: float = 60) -> tuple[int, str]:
    """Run kubectl in a pseudo-terminal of `size` (rows, columns); type each of keys once the
    output so far ends a line or a prompt; (its exit code, everything it wrote) once `until` was
    seen and it exited."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    proc = subprocess.Popen(kubectl_argv(c, *args), stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            env={**os.environ, "KUBECTL_KUBERC": "false"})
    os.close(slave)
    out, pending = b"", list(keys)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:                  # EIO: kubectl exited, the terminal is closed
                    break
                if not chunk:
                    break
                out += chunk
            if pending and b"If you don't see a command prompt" in out or pending and b"$ " in out[-64:]:
                os.write(master, pending.pop(0))
            if until in out and proc.poll() is not None:
                break
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, out.decode(errors="replace")


def test_kubectl_run_i_rm_sends_stdin_shows_the_output_and_deletes_the_pod(c: Cluster) -> None:
    r = c.kubectl("run", "-i", "--rm", "--restart=Never", "--image=python", "upper", "--", PY, "-c", UPPER,
                  input="from kubectl\n", timeout=90)
    assert r.stdout.startswith("FROM KUBECTL\n"), (r.stdout, r.stderr)
    assert 'pod "upper" deleted' in r.stdout + r.stderr
    eventually(lambda: gone(c, "upper"), "the pod to be deleted")


def test_kubectl_run_i_without_rm_reports_the_containers_exit_code(c: Cluster) -> None:
    r = c.kubectl("run", "-i", "--restart=Never", "--image=python", "fails", "--", PY, "-c",
                  "import sys; sys.stdout.write(sys.stdin.read()); sys.exit(3)", input="echoed", check=False,
                  timeout=90)
    assert r.stdout.startswith("echoed"), (r.stdout, r.stderr)
    assert r.returncode == 3, r.stderr
    pod = c.get_json("pod", "fails")
    assert pod["spec"]["containers"][0]["stdin"] is True and pod["spec"]["containers"][0]["stdinOnce"] is True
    assert pod["status"]["phase"] == "Failed"
    c.kubectl("delete", "pod", "fails", "--wait=false")


def test_kubectl_run_it_gives_a_terminal_of_the_clients_size(c: Cluster) -> None:
    code, out = in_terminal(c, ["run", "-it", "--rm", "--restart=Never", "--image=python", "term", "--",
                                "sh", "-c", "PS1='$ ' exec sh -i"],
                            [b"\n", b"stty size; tty; exit 7\n"], until=b"deleted")
    assert "33 91" in out and "/dev/pts/" in out, out
    assert code == 7, out
    eventually(lambda: gone(c, "term"), "the pod to be deleted")


def test_kubectl_attach_i_to_a_container_that_keeps_its_stdin(c: Cluster) -> None:
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reader"}, "spec": {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "r", "image": "python", "stdin": True,
                        "command": [PY, "-u", "-c", "import sys\nfor l in sys.stdin: print('got', l.strip())"]}]}})
    c.kubectl("wait", "--for=condition=Ready", "pod/reader", "--timeout=60s")
    for word in ("one", "two"):              # no stdinOnce: the stdin stays open across attaches
        r = c.kubectl("attach", "-i", "reader", input=f"{word}\n", check=False, timeout=30)
        assert r.returncode == 0, r.stderr
    eventually(lambda: "got one\ngot two\n" in c.kubectl("logs", "reader").stdout, "both lines in the log")
    assert c.get_json("pod", "reader")["status"]["phase"] == "Running"
    c.kubectl("delete", "pod", "reader", "--wait=false")

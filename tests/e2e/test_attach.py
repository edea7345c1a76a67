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
from typing import Any

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
    """Run kubectl in a pseudo-terminal of `size` (rows, columns); once it is attached (its
    "If you don't see a command prompt" hint), type keys, one per output read (the shell
    reads what is typed ahead); (its exit code, everything it wrote) once `until` was seen and
    it exited."""
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
            if pending and b"If you don't see a command prompt" in out:
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


@pytest.fixture(scope="module")
def target(c: Cluster) -> tuple[str, int]:
    """A pod whose server listens on its own loopback (only its network namespace reaches it)."""
    port = 8080
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"}, "spec": {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "app", "image": "python",
                        "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"]}]}})
    c.kubectl("wait", "--for=condition=Ready", "pod/target", "--timeout=60s")
    return "target", port


FETCH = "import sys, urllib.request; print(sys.stdin.readline().strip(), urllib.request.urlopen('{url}').status)"


def test_kubectl_debug_i_runs_an_ephemeral_container_in_the_pods_network(c: Cluster, target: Any) -> None:
    """kubectl's stdin stays open until the output is there: without stdinOnce (kubectl debug
    sets none) the end of an attach's stdin detaches it, as containerd's attach does."""
    name, port = target
    proc = subprocess.Popen(kubectl_argv(c, "debug", "-i", name, "--image=python", "--target=app", "--", PY, "-c",
                                         FETCH.format(url=f"http://127.0.0.1:{port}/")),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "KUBECTL_KUBERC": "false"})
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"reached\n")                 # read once kubectl has attached
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(3)]   # Targeting ..., Defaulting ... name, the output
        assert lines[2] == b"reached 200\n", lines
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    statuses = eventually(lambda: finished(c, name, 1), "the ephemeral container's terminated status")
    assert len(statuses) == 1 and statuses[0]["name"].startswith("debugger-")
    assert statuses[0]["state"]["terminated"]["exitCode"] == 0 and statuses[0]["ready"] is False
    assert c.get_json("pod", name)["status"]["phase"] == "Running"
    # Its output stays readable (upstream: podHasContainerWithName counts ephemeral containers)
    assert c.kubectl("logs", name, "-c", statuses[0]["name"]).stdout == "reached 200\n"


def test_kubectl_debug_it_attaches_a_terminal(c: Cluster, target: Any) -> None:
    name, port = target
    code, out = in_terminal(c, ["debug", "-it", name, "--image=python", "--target=app", "--",
                                "sh", "-c", "PS1='$ ' exec sh -i"],
                            [b"\n", b"stty size; " + f"{PY} -c \"{FETCH.format(url=f'http://127.0.0.1:{port}/')}\""
                             .encode() + b" <<EOF\nin-terminal\nEOF\n", b"exit\n"],
                            until=b"in-terminal 200")
    assert "33 91" in out and "in-terminal 200" in out, out
    assert code == 0, out
    eventually(lambda: finished(c, name, 2), "both ephemeral containers' terminated statuses")


def finished(c: Cluster, name: str, n: int) -> list[dict[str, Any]] | None:
    """The pod's ephemeral container statuses once n of them are terminated."""
    statuses = c.get_json("pod", name)["status"].get("ephemeralContainerStatuses") or []
    return statuses if sum("terminated" in s["state"] for s in statuses) == n else None

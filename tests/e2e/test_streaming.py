"""Into the pods with real kubectl and the official client: exec (with and without a
terminal), cp both ways, attach, port-forward (kubectl 1.37's SPDY-in-WebSocket, its SPDY
fallback, the client's WebSocket channels), authorization before anything reaches the kubelet,
and the same (and attach with stdin) through a standalone kubelet's HTTPS server. Attach with
stdin, `run -it` and `debug -it` on `up`'s own kubelet: test_attach.py.

`kubeplane up --runtime process`: a pod runs `python -m http.server` on a free port in a working
directory of the test's, with an env var, so exec sees the container's environment and
port-forward reaches a real listener. As root (--pod-network auto) each pod has a network
namespace of its own, as test_pod_network.py's: the server listens on all the pod's addresses,
and port-forward dials localhost inside the pod's namespace, as containerd does (a port bound to
the pod's 127.0.0.1 only is reached too).
"""
from __future__ import annotations

import fcntl
import os
import pathlib
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.kubelet.runtime.process.records import kill_recorded

from .cluster import KUBECTL, Cluster, eventually
from .test_kubelet_logs import node_ready, standalone  # noqa: F401  (the standalone kubelet's fixture)

PY = sys.executable


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_pod(name: str, port: int, workdir: pathlib.Path, node: str = "", bind: str = "0.0.0.0") -> dict[str, Any]:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 2, "containers": [{
        "name": "app", "image": "python:3", "workingDir": str(workdir), "env": [{"name": "GREETING", "value": "hi"}],
        "command": [PY, "-m", "http.server", str(port), "--bind", bind]}]}
    if bind != "127.0.0.1":                          # the kubelet probes the pod's IP
        spec["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": port}, "periodSeconds": 1}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": spec}


def ready(c: Cluster, name: str) -> bool:
    p = c.get_json("pod", name)
    return any(x["type"] == "Ready" and x["status"] == "True" for x in p["status"].get("conditions") or ())


def serving(files: dict[str, bytes], extra_args: tuple[str, ...]) -> Iterator[tuple[Cluster, pathlib.Path, int]]:
    """A one-node process-runtime `up` whose pod srv serves a directory holding files over
    HTTP: (cluster, the directory, the port); everything stopped and removed afterwards."""
    tmp = tempfile.TemporaryDirectory(prefix="kubeplane-e2e-streaming-")
    work = pathlib.Path(tmp.name)
    for name, data in files.items():
        (work / name).write_bytes(data)
    c = Cluster(nodes=1, extra_args=extra_args).start()
    try:
        port = free_port()
        c.apply_yaml(server_pod("srv", port, work))
        eventually(lambda: ready(c, "srv"), "the server pod to be Ready")
        yield c, work, port
    finally:
        c.stop(signal.SIGTERM)
        kill_recorded(c.data_dir / "kubelet")
        c.cleanup()
        tmp.cleanup()


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Cluster, pathlib.Path, int]]:
    yield from serving({"big.bin": os.urandom(3 << 20)}, ("--runtime", "process"))


def kubectl(c: Cluster, *args: str, **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([KUBECTL, "--kubeconfig", str(c.kubeconfig), "--cache-dir", str(c.cache_dir), *args],
                            env={**os.environ, "KUBECTL_KUBERC": "false", **kw.pop("env", {})}, **kw)


def test_exec_runs_in_the_containers_environment_with_its_exit_code(env: Any) -> None:
    c, work, _ = env
    r = c.kubectl("exec", "srv", "--", "sh", "-c", "echo $GREETING; pwd; echo oops >&2; exit 3", check=False)
    assert r.returncode == 3
    assert r.stdout == f"hi\n{work}\n"
    assert r.stderr == "oops\ncommand terminated with exit code 3\n"
    assert c.kubectl("exec", "-i", "srv", "--", "cat", input="from stdin").stdout == "from stdin"
    r = c.kubectl("exec", "srv", "-c", "nope", "--", "true", check=False)
    assert r.returncode == 1 and 'container nope is not valid for pod srv' in r.stderr
    r = c.kubectl("exec", "srv", "--", "no-such-program-xyz", check=False)
    assert r.returncode != 0 and 'exec: "no-such-program-xyz": executable file not found in $PATH' in r.stderr


def test_exec_over_kubectls_spdy_fallback(env: Any) -> None:
    c, _, _ = env
    spdy = {**os.environ, "KUBECTL_KUBERC": "false", "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    base = [KUBECTL, "--kubeconfig", str(c.kubeconfig), "--cache-dir", str(c.cache_dir)]
    r = subprocess.run([*base, "exec", "-i", "srv", "--", "sh", "-c", "cat; echo $GREETING >&2; exit 4"],
                       input="piped", capture_output=True, text=True, env=spdy, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (4, "piped", "hi\ncommand terminated with exit code 4\n")


def test_exec_it_gets_a_terminal_of_the_clients_size(env: Any) -> None:
    c, _, _ = env
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 91, 0, 0))
    proc = kubectl(c, "exec", "-it", "srv", "--", "sh", stdin=slave, stdout=slave, stderr=slave,
                   start_new_session=True)
    os.close(slave)
    try:
        os.write(master, b"stty size; tty; exit 5\n")
        out = b""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 1)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:                      # EIO: kubectl exited, the pty is closed
                    break
                if not chunk:
                    break
                out += chunk
        assert proc.wait(30) == 5
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = out.decode(errors="replace")
    assert "33 91" in text and re.search(r"/dev/pts/\d+", text), text


def test_cp_both_ways(env: Any, tmp_path: pathlib.Path) -> None:
    c, work, _ = env
    local = tmp_path / "up.txt"
    local.write_text("to the pod\n")
    c.kubectl("cp", str(local), f"srv:{work}/copied.txt")
    assert (work / "copied.txt").read_text() == "to the pod\n"
    c.kubectl("cp", f"srv:{work}/big.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == (work / "big.bin").read_bytes()


def forwarding(c: Cluster, target: str, spdy: bool = False, pod: str = "srv") -> tuple[subprocess.Popen[bytes], int]:
    """kubectl port-forward to target with a local port of its choosing."""
    env = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"} if spdy else {}
    proc = kubectl(c, "port-forward", pod, target, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    m = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) ->", line)
    assert m, line + (proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else "")
    return proc, int(m.group(1))


@pytest.mark.parametrize("spdy", [False, True], ids=["websocket-tunnel", "spdy-fallback"])
def test_port_forward_reaches_the_pods_port(env: Any, spdy: bool) -> None:
    c, work, port = env
    proc, local = forwarding(c, f":{port}", spdy)
    try:
        for _ in range(2):                            # two connections over one forwarding
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/big.bin", timeout=30) as resp:
                assert resp.read() == (work / "big.bin").read_bytes()
    finally:
        proc.terminate()
        proc.wait(10)


def test_port_forward_to_a_service_reaches_a_pod_behind_it(env: Any) -> None:
    """`kubectl port-forward svc/x`: kubectl picks a pod of the Service's selector and forwards
    to the targetPort of the Service port asked for (kubectl's side: the server sees a pod's
    portforward)."""
    c, work, port = env
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "srv-svc", "namespace": "default"},
                  "spec": {"selector": {"app": "srv"}, "ports": [{"port": 8080, "targetPort": port}]}})
    proc, local = forwarding(c, ":8080", pod="svc/srv-svc")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/big.bin", timeout=30) as resp:
            assert resp.read() == (work / "big.bin").read_bytes()
    finally:
        proc.terminate()
        proc.wait(10)


def test_port_forward_reaches_a_port_bound_to_the_pods_localhost(env: Any) -> None:
    """Upstream's port-forward enters the pod's network namespace and dials localhost there, so
    a server bound to the pod's 127.0.0.1 only is reached (its pod IP is not)."""
    from kubeplane.kubelet.network import netns_name, unavailable_reason
    if reason := unavailable_reason():
        pytest.skip(f"pods share the host's network: {reason}")
    c, work, _ = env
    port = free_port()
    c.apply_yaml(server_pod("local-only", port, work, bind="127.0.0.1"))
    pod = eventually(lambda: (p := c.get_json("pod", "local-only"))["status"].get("phase") == "Running" and p,
                     "the pod Running (kubectl port-forwards to Running pods only)")
    assert os.path.exists(f"/run/netns/{netns_name(pod['metadata']['uid'])}")
    listening = [PY, "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"]
    eventually(lambda: c.kubectl("exec", "local-only", "--", *listening, check=False).returncode == 0,
               "the server to listen (kubectl port-forward ends at a refused connection)", timeout=60)
    proc, local = forwarding(c, f":{port}", pod="local-only")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/big.bin", timeout=30) as resp:
            assert resp.read() == (work / "big.bin").read_bytes()
        with pytest.raises(OSError):                 # not at the pod's IP: only inside its namespace
            urllib.request.urlopen(f"http://{pod['status']['podIP']}:{port}/", timeout=5)
    finally:
        proc.terminate()
        proc.wait(10)
        c.kubectl("delete", "pod", "local-only", "--wait=false")


def test_port_forward_to_a_port_nobody_listens_on_reports_upstreams_error(env: Any) -> None:
    c, _, _ = env
    proc, local = forwarding(c, ":1")
    try:
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=30).read()
        assert proc.wait(30) != 0                    # kubectl gives up: "lost connection to pod"
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert "error forwarding port 1 to pod srv_default" in err and "connection refused" in err
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_python_clients_stream_exec_and_portforward(env: Any) -> None:
    from kubernetes import client
    from kubernetes.stream import portforward, stream
    c, _, port = env
    v1 = client.CoreV1Api(c.python_client())
    ws = stream(v1.connect_get_namespaced_pod_exec, "srv", "default",
                command=["sh", "-c", "echo out; echo err >&2; exit 4"], stderr=True, stdin=False, stdout=True,
                tty=False, _preload_content=False)
    ws.run_forever(timeout=30)
    assert (ws.read_stdout(), ws.read_stderr(), ws.returncode) == ("out\n", "err\n", 4)
    assert stream(v1.connect_get_namespaced_pod_exec, "srv", "default", command=["echo", "hi"],
                  stderr=True, stdin=False, stdout=True, tty=False) == "hi\n"
    pf = portforward(v1.connect_get_namespaced_pod_portforward, "srv", "default", ports=str(port))
    sock = pf.socket(port)
    sock.setblocking(True)
    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    sock.close()
    assert reply.startswith(b"HTTP/1.0 200 OK")


def test_exec_needs_create_on_pods_exec_before_anything_reaches_the_kubelet(env: Any) -> None:
    c, work, _ = env
    marker = work / "should-not-exist"
    c.apply_yaml({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "exec-get-only", "namespace": "default"},
                  "rules": [{"apiGroups": [""], "resources": ["pods", "pods/exec", "pods/portforward"],
                             "verbs": ["get"]}]})
    c.kubectl("create", "rolebinding", "exec-get-only", "--role", "exec-get-only", "--user", "mallory")
    r = c.kubectl("--as", "mallory", "exec", "srv", "--", "touch", str(marker), check=False)
    assert r.returncode != 0
    assert ('User "mallory" cannot create resource "pods/exec" in API group "" in the namespace "default"'
            in r.stderr), r.stderr
    r = c.kubectl("--as", "nobody", "exec", "srv", "--", "touch", str(marker), check=False)
    assert r.returncode != 0 and 'cannot get resource "pods"' in r.stderr
    assert not marker.exists()
    c.kubectl("create", "role", "exec-all", "--verb", "get,create", "--resource", "pods,pods/exec")
    c.kubectl("create", "rolebinding", "exec-all", "--role", "exec-all", "--user", "trent")
    assert c.kubectl("--as", "trent", "exec", "srv", "--", "echo", "ok").stdout == "ok\n"


def test_attach_shows_the_containers_output(env: Any) -> None:
    c, _, port = env
    ip = c.get_json("pod", "srv")["status"]["podIP"]        # its own address, or the host's 127.0.0.1
    proc = kubectl(c, "attach", "srv", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""

    def request_seen() -> bool:
        """Make a request the server logs; true once attach has passed one of them on."""
        nonlocal seen
        try:
            urllib.request.urlopen(f"http://{ip}:{port}/attached-marker", timeout=10)
        except OSError:
            pass                                     # a 404: logged all the same
        assert proc.stdout is not None and proc.poll() is None
        seen += _readable(proc.stdout)
        return b"attached-marker" in seen
    try:
        eventually(request_seen, "a request in kubectl attach's output", timeout=20, interval=0.2)
    finally:
        proc.terminate()
        proc.wait(10)


def _readable(f: Any) -> bytes:
    r, _, _ = select.select([f], [], [], 0.2)
    return os.read(f.fileno(), 65536) if r else b""


def test_exec_and_port_forward_through_a_standalone_kubelet(standalone: Any) -> None:  # noqa: F811 (the fixture)
    c, kl, root = standalone
    eventually(lambda: node_ready(c, kl), "the standalone node to be Ready")
    port = free_port()
    c.apply_yaml(server_pod("srv", port, root, node="standalone-0"))
    eventually(lambda: ready(c, "srv"), "the pod on the standalone kubelet to be Ready")
    r = c.kubectl("exec", "srv", "--", "sh", "-c", "echo $GREETING; exit 7", check=False)
    assert (r.returncode, r.stdout) == (7, "hi\n")
    proc, local = forwarding(c, f":{port}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=30) as resp:
            assert resp.status == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_attach_with_stdin_through_a_standalone_kubelet(standalone: Any) -> None:  # noqa: F811 (the fixture)
    """The container's stdin through the kubelet's HTTPS server (the API server splices)."""
    c, kl, _ = standalone
    eventually(lambda: node_ready(c, kl), "the standalone node to be Ready")
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "upper", "namespace": "default"}, "spec": {
        "nodeName": "standalone-0", "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
        "containers": [{"name": "u", "image": "python", "stdin": True, "stdinOnce": True,
                        "command": [PY, "-c", "import sys; print(sys.stdin.read().upper(), end='')"]}]}})
    eventually(lambda: ready(c, "upper"), "the pod on the standalone kubelet to be Ready")
    r = c.kubectl("attach", "-i", "upper", input="through the kubelet\n", timeout=60)
    assert r.stdout == "THROUGH THE KUBELET\n", (r.stdout, r.stderr)
    eventually(lambda: c.get_json("pod", "upper")["status"]["phase"] == "Succeeded", "the container to finish")

"""`kubectl logs` for pods on a standalone `kubeplane kubelet`: the API server reads the Node's
InternalIP and kubelet port and proxies pods/log to the kubelet's HTTPS /containerLogs.

`kubeplane up --nodes 0` plus `kubeplane kubelet --runtime process --port 0` as a second
process; a Pod whose container prints lines, then waits for a file before printing its last
line and exiting, so `kubectl logs -f` is seen streaming and ending with the container.
"""
from __future__ import annotations

import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Iterator

import pytest

from kubeplane.kubelet.runtime.process.records import kill_recorded

from .cluster import KUBECTL, Cluster, eventually

PY = sys.executable
NODE = "standalone-0"


class Kubelet:
    """`kubeplane kubelet` in its own process group (stop() takes it and its pods down)."""

    def __init__(self, kubeconfig: pathlib.Path, root: pathlib.Path, extra: tuple[str, ...] = ()) -> None:
        self.log_path = root / "kubelet.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [PY, "-m", "kubeplane", "kubelet", "--kubeconfig", str(kubeconfig), "--runtime", "process",
                 "--port", "0", "--node-prefix", "standalone-", "--root-dir", str(root / "pods"), *extra],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)      # the kubelet stops its pods' processes
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture(scope="module")
def standalone() -> Iterator[tuple[Cluster, Kubelet, pathlib.Path]]:
    tmp = tempfile.TemporaryDirectory(prefix="kubeplane-e2e-kubelet-")
    root = pathlib.Path(tmp.name)
    c = Cluster(nodes=0)
    kl: Kubelet | None = None
    try:
        c.start()
        kl = Kubelet(c.kubeconfig, root)
        yield c, kl, root
    finally:
        if kl is not None:
            kl.stop()
        kill_recorded(root / "pods")        # its containers outlive the kubelet on purpose
        c.cleanup()
        tmp.cleanup()


def node_ready(c: Cluster, kl: Kubelet) -> dict[str, Any] | None:
    if kl.proc.poll() is not None:
        raise AssertionError(f"kubeplane kubelet exited: {kl.log_path.read_text()[-3000:]}")
    res = c.kubectl("get", "node", NODE, "-o", "json", check=False)
    if res.returncode != 0:
        return None
    n = json.loads(res.stdout)
    ready = any(cond["type"] == "Ready" and cond["status"] == "True" for cond in n["status"].get("conditions") or ())
    return n if ready else None


def test_kubectl_logs_and_follow_reach_a_standalone_kubelet(standalone: Any) -> None:
    c, kl, root = standalone
    n = eventually(lambda: node_ready(c, kl), "the standalone node to be Ready")
    assert {"type": "InternalIP", "address": "127.0.0.1"} in n["status"]["addresses"]
    assert n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] not in (0, 10250)   # --port 0: a free one

    go = root / "go"
    script = (f"import os, time\nfor i in range(3): print(f'line {{i}}', flush=True)\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\nprint('done', flush=True)\n")
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "talker", "namespace": "default"},
                  "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
                           "containers": [{"name": "talk", "image": "python:3", "command": [PY, "-c", script]}]}})

    out = eventually(lambda: (r := c.kubectl("logs", "talker", check=False)).returncode == 0
                     and "line 2" in r.stdout and r.stdout, "the first lines in kubectl logs")
    assert out == "line 0\nline 1\nline 2\n"
    assert c.kubectl("logs", "talker", "--tail", "1").stdout == "line 2\n"

    follow = subprocess.Popen([KUBECTL, "--kubeconfig", str(c.kubeconfig), "--cache-dir", str(c.cache_dir),
                               "logs", "-f", "talker"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "KUBECTL_KUBERC": "false"})
    try:
        lines: queue.Queue[str] = queue.Queue()
        stdout = follow.stdout
        assert stdout is not None
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
        seen = [lines.get(timeout=30) for _ in range(3)]
        assert seen == ["line 0\n", "line 1\n", "line 2\n"]
        assert follow.poll() is None                          # still following the running container
        go.touch()
        assert lines.get(timeout=30) == "done\n"              # streamed as the container wrote it
        assert follow.wait(30) == 0                           # and over when the container exits
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait(10)

    prev = c.kubectl("logs", "talker", "--previous", check=False)
    assert prev.returncode != 0 and 'previous terminated container "talk" in pod "talker" not found' in prev.stderr

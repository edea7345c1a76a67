"""Start `kubeplane up` as a real process and drive it with the real kubectl.

Each Cluster gets a fresh temp data dir and a kernel-chosen port (--port 0); stop() kills the
whole process group, so no test leaves a server behind.
"""
from __future__ import annotations

import json
import os
import re
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Iterator

import yaml

from kubeplane.storage.etcd import EtcdConfig

BIN = pathlib.Path(sys.executable).parent
KUBECTL = str(BIN / "kubectl")
READY_TIMEOUT = 30.0
DEADLINE = 30.0


def eventually(check: Callable[[], Any], what: str, timeout: float = DEADLINE, interval: float = 0.05) -> Any:
    """Poll check() until it returns something truthy (and return that); fail naming `what`."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


# Where a Cluster that names no storage keeps its data: None for SQLite (`up`'s default); a
# function giving each Cluster its own etcd prefix to run whole e2e modules on etcd unchanged
# (tests/e2e/etcd/conftest.py sets it while that package's tests run).
default_etcd: Callable[[], EtcdConfig] | None = None


class Cluster:
    def __init__(self, data_dir: pathlib.Path | None = None, *, nodes: int = 0, storage: str = "",
                 extra_args: tuple[str, ...] = (), etcd: EtcdConfig | None = None) -> None:
        if not storage and etcd is None and default_etcd is not None:
            etcd = default_etcd()
        storage = storage or "sqlite"
        self._tmp = None if data_dir else tempfile.TemporaryDirectory(prefix="kubeplane-e2e-")
        self.data_dir = pathlib.Path(data_dir or self._tmp.name)  # type: ignore[union-attr]
        self.kubeconfig = self.data_dir / "kubeconfig"
        self.cache_dir = self.data_dir / "kubectl-cache"
        self.args = ["--nodes", str(nodes), "--storage", "etcd" if etcd else storage, *extra_args]
        if etcd is not None:           # kube-apiserver's flags for a real etcd (kubeplane.testing.etcd)
            self.args += ["--etcd-servers", ",".join(etcd.servers), "--etcd-prefix", etcd.prefix]
            self.args += [f"--etcd-{name}={path}" for name, path in
                          (("cafile", etcd.cafile), ("certfile", etcd.certfile), ("keyfile", etcd.keyfile)) if path]
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / "up.log"

    def start(self) -> Cluster:
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubeplane", "up", "--data-dir", str(self.data_dir), "--port", "0", *self.args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kubeplane up exited: {self.log_path.read_text()[-3000:]}")
            if self.kubeconfig.exists() and self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0:
                return self
            time.sleep(0.05)
        raise RuntimeError(f"kubeplane up not ready in {READY_TIMEOUT}s: {self.log_path.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def cleanup(self) -> None:
        self.stop(signal.SIGKILL)
        if "process" in self.args:           # process containers outlive `up` on purpose
            from kubeplane.kubelet.runtime.process.records import kill_recorded
            kill_recorded(self.data_dir / "kubelet")
        # The cache mutation detector (on in tests: tests/conftest.py) makes `up` exit naming the object.
        log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        if self._tmp:
            self._tmp.cleanup()
        altered = [line for line in log.splitlines() if "ALTERED" in line]
        assert not altered, "kubeplane up: an informer's cached object was modified:\n" + "\n".join(altered)

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECTL_KUBERC": "false"}
        res = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir),
                              *args], capture_output=True, text=True, input=input, timeout=timeout, env=env)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply_yaml(self, doc: dict[str, Any] | str, *args: str) -> subprocess.CompletedProcess[str]:
        text = doc if isinstance(doc, str) else yaml.safe_dump(doc)
        return self.kubectl("apply", "-f", "-", *args, input=text)

    def python_client(self) -> Any:
        """An official `kubernetes` ApiClient configured from this cluster's kubeconfig."""
        from kubernetes import client, config
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=cfg)
        return client.ApiClient(cfg)


PROCESS_ON_HOST = ("--runtime", "process", "--pod-network", "host")


def running_process_on_host() -> Iterator[Cluster]:
    """A one-node `up --runtime process` whose pods share the host's network, stopped with
    SIGTERM, then cleaned up (cleanup kills the containers, which outlive `up` on purpose)."""
    c = Cluster(nodes=1, extra_args=PROCESS_ON_HOST).start()
    try:
        yield c
    finally:
        c.stop(signal.SIGTERM)
        c.cleanup()


def running(**kwargs: Any) -> Iterator[Cluster]:
    """A started Cluster(**kwargs), cleaned up afterwards: the body of a module's cluster
    fixture (`yield from running(nodes=2)`)."""
    c = Cluster(**kwargs).start()
    try:
        yield c
    finally:
        c.cleanup()


def namespace_for_test(cluster: Cluster, node_name: str) -> str:
    """A namespace named after the test (node_name: request.node.name), created."""
    name = re.sub(r"[^a-z0-9]+", "-", node_name.lower())[:50].strip("-")
    cluster.kubectl("create", "namespace", name)
    return name

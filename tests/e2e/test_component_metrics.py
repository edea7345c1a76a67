"""/metrics and health where each component serves them, as real processes.

- `kubeplane up` (every component in one process): the API server's /metrics carries the
  kubelet's series too (kubelet_node_name, kubelet_running_pods, kubelet_started_pods_total...).
- a standalone `kubeplane kubelet --port 0`: /metrics, /metrics/probes and /healthz over HTTPS,
  with the kubeconfig's token; 401 without.
- standalone `kubeplane scheduler` and `kubeplane controller-manager --secure-port 0`: the port
  from their "Serving securely on" log line; /healthz, /livez and /readyz for anyone, /metrics
  for the token's holder (403 anonymous, 401 with another token); a port in use is one line.

Metrics are parsed with prometheus_client's own parser (text format 0.0.4).
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from .cluster import Cluster, eventually

PY = sys.executable
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, metric: str, **labels: str) -> float | None:
    return samples.get((metric, tuple(sorted(labels.items()))))


def get(port: int, path: str, token: str | None = None) -> tuple[int, str, Any]:
    """GET https://127.0.0.1:port/path (self-signed certificate: not verified)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def token_of(kubeconfig: pathlib.Path) -> str:
    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


class Component:
    """`kubeplane <args>` in its own process group, its output in a log file."""

    def __init__(self, log_dir: pathlib.Path, *args: str) -> None:
        self.log_path = log_dir / f"{args[0]}-{os.getpid()}-{id(self)}.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([PY, "-m", "kubeplane", *args], stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def port(self, pattern: str) -> int:
        """The port its log line names (pattern: a regex with one group)."""
        def found() -> int | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.proc.args} exited {self.proc.returncode}: {self.log()[-3000:]}")
            m = re.search(pattern, self.log())
            return int(m.group(1)) if m else None
        return int(eventually(found, f"the serving address in {self.log_path.name}"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, pathlib.Path]]:
    """`up` with one node and no controllers or scheduler (the standalone ones run beside it)."""
    with tempfile.TemporaryDirectory(prefix="kubeplane-e2e-metrics-") as d:
        c = Cluster(nodes=1, extra_args=("--no-controllers",))
        try:
            c.start()
            yield c, pathlib.Path(d)
        finally:
            c.cleanup()


def bound_pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx"}]}}


def test_up_serves_the_kubelets_metrics_beside_the_api_servers(cluster: tuple[Cluster, pathlib.Path]) -> None:
    c, _ = cluster
    # no controller-manager runs yet to create the default service account the pod needs
    c.kubectl("create", "serviceaccount", "default", check=False)
    c.apply_yaml(bound_pod("counted", "kubeplane-node-0"))

    def scraped() -> Samples | None:
        s = parse(c.kubectl("get", "--raw", "/metrics").stdout)
        return s if (value(s, "kubelet_running_containers", container_state="running") or 0) >= 1 else None
    s = eventually(scraped, "kubelet_running_containers to count the pod's container")
    assert value(s, "kubelet_node_name", node="kubeplane-node-0") == 1
    assert (value(s, "kubelet_running_pods") or 0) >= 1
    assert (value(s, "kubelet_started_pods_total") or 0) >= 1
    assert (value(s, "kubelet_started_containers_total", container_type="container") or 0) >= 1
    assert (value(s, "kubelet_pod_start_duration_seconds_count") or 0) >= 1
    assert (value(s, "kubelet_pod_worker_duration_seconds_count", operation_type="create") or 0) >= 1
    assert value(s, "kubelet_started_pods_errors_total") == 0
    assert any(name == "apiserver_request_total" for name, _ in s)           # one scrape, every component


def test_a_standalone_kubelet_serves_metrics_and_healthz_with_its_token(cluster: tuple[Cluster, pathlib.Path]) -> None:
    c, logs = cluster
    # the controller-manager approves and signs each node's client certificate (TLS bootstrapping)
    cm = Component(logs, "controller-manager", "--kubeconfig", str(c.kubeconfig), "--secure-port", "0",
                   "--no-leader-elect")
    kl = Component(logs, "kubelet", "--kubeconfig", str(c.kubeconfig), "--port", "0", "--node-prefix", "metered-")
    try:
        port = kl.port(r'Starting to listen address="127\.0\.0\.1" port=(\d+)')
        token = token_of(c.kubeconfig)

        def metered() -> Samples | None:
            code, body, _ = get(port, "/metrics", token)
            s = parse(body) if code == 200 else {}
            return s if value(s, "kubelet_node_name", node="metered-0") == 1 else None
        s = eventually(metered, "the standalone kubelet's node in its /metrics")
        assert value(s, "kubelet_running_pods") == 0
        assert value(s, "kubelet_node_name", node="kubeplane-node-0") is None     # `up`'s node, not this process's

        code, body, headers = get(port, "/metrics/probes", token)
        assert code == 200 and headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert all(name.startswith("prober_probe") for name, _ in parse(body))
        assert get(port, "/healthz", token)[:2] == (200, "ok")
        assert get(port, "/healthz?verbose", token)[1] == "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"
        for path in ("/metrics", "/metrics/probes", "/healthz"):
            for bad in (None, "wrong"):
                code, body, _ = get(port, path, bad)
                assert (code, json.loads(body)["reason"]) == (401, "Unauthorized"), (path, bad)
    finally:
        kl.stop()
        cm.stop()
    assert kl.proc.returncode == 0, kl.log()[-3000:]


def check_secure_serving(port: int, token: str, component: str) -> Samples:
    """What both standalone components answer alike; returns their /metrics."""
    der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port)))
    cert = x509.load_der_x509_certificate(der)
    assert cert.subject == cert.issuer and cert.subject.rfc4514_string().startswith(f"CN={component}@")
    for path in ("/healthz", "/livez", "/readyz"):
        assert get(port, path)[:2] == (200, "ok"), path                       # anyone: always-allowed paths
    code, body, _ = get(port, "/metrics")
    assert code == 403
    assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
                                "reason": "Forbidden", "details": {}, "code": 403}
    assert get(port, "/healthz/leaderElection")[0] == 403                     # always-allowed paths are exact
    assert get(port, "/healthz", "wrong")[0] == 401                           # a bad token is refused anywhere
    assert get(port, "/metrics", "wrong")[0] == 401
    assert get(port, "/healthz/leaderElection", token)[:2] == (200, "ok")
    assert get(port, "/nope", token)[:2] == (404, "404 page not found\n")
    code, body, headers = get(port, "/metrics", token)
    assert code == 200 and headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return parse(body)


def test_a_standalone_scheduler_serves_health_and_metrics(cluster: tuple[Cluster, pathlib.Path]) -> None:
    c, logs = cluster
    sched = Component(logs, "scheduler", "--kubeconfig", str(c.kubeconfig), "--secure-port", "0")
    try:
        port = sched.port(r"Serving securely on 127\.0\.0\.1:(\d+)")
        token = token_of(c.kubeconfig)
        eventually(lambda: get(port, "/readyz?verbose")[1] == (
            "[+]leaderElection ok\n[+]sched-handler-sync ok\nreadyz check passed\n"), "the scheduler's /readyz")
        assert get(port, "/healthz?verbose")[1] == "[+]leaderElection ok\nhealthz check passed\n"
        assert get(port, "/livez?verbose")[1] == "[+]ping ok\nlivez check passed\n"
        eventually(lambda: value(parse(get(port, "/metrics", token)[1]), "leader_election_master_status",
                                 name="kube-scheduler") == 1, "the scheduler to lead")
        s = check_secure_serving(port, token, "kube-scheduler")
        assert value(s, "scheduler_pending_pods", queue="active") is not None
        assert not any(name.startswith("kubelet_") for name, _ in s)          # no kubelet in this process
    finally:
        sched.stop()
    assert sched.proc.returncode == 0, sched.log()[-3000:]


def test_a_standalone_controller_manager_serves_health_and_metrics(cluster: tuple[Cluster, pathlib.Path]) -> None:
    c, logs = cluster
    tokens_controller = (c.data_dir / "pki" / "sa.key").exists()     # made by the first TokenRequest
    cm = Component(logs, "controller-manager", "--kubeconfig", str(c.kubeconfig), "--secure-port", "0")
    try:
        port = cm.port(r"Serving securely on 127\.0\.0\.1:(\d+)")
        token = token_of(c.kubeconfig)
        controllers = ("deployment-controller", "replicaset-controller", "garbage-collector-controller",
                       "namespace-controller", "node-lifecycle-controller", "serviceaccount-controller",
                       "root-ca-certificate-publisher-controller", "resourcequota-controller",
                       "disruption-controller", "certificatesigningrequest-approving-controller",
                       "certificatesigningrequest-signing-controller",   # the CA beside the kubeconfig
                       "certificatesigningrequest-cleaner-controller", "legacy-serviceaccount-token-cleaner-controller",
                       *(("serviceaccount-token-controller",) if tokens_controller else ()),
                       "bootstrap-signer-controller", "token-cleaner-controller", "cronjob-controller",
                       "statefulset-controller", "persistentvolume-binder-controller",
                       "endpointslice-controller", "endpoints-controller", "endpointslice-mirroring-controller",
                       "replicationcontroller-controller", "daemonset-controller",
                       "job-controller", "ttl-after-finished-controller", "pod-garbage-collector-controller",
                       "horizontal-pod-autoscaler-controller")
        want = "[+]leaderElection ok\n" + "".join(f"[+]{n} ok\n" for n in controllers) + "healthz check passed\n"
        eventually(lambda: get(port, "/healthz?verbose")[1] == want, "the controllers' checks once leading")
        s = check_secure_serving(port, token, "kube-controller-manager")
        assert value(s, "leader_election_master_status", name="kube-controller-manager") == 1
        assert value(s, "workqueue_depth", name="deployment") is not None
    finally:
        cm.stop()
    assert cm.proc.returncode == 0, cm.log()[-3000:]


def test_the_controller_managers_metrics_follow_real_work(cluster: tuple[Cluster, pathlib.Path]) -> None:
    """Upstream's controller metric names after real work: a Job (its pod bound to `up`'s node,
    as no scheduler runs here) completes, a Service gets its EndpointSlice, a claim waits for
    its first consumer."""
    c, logs = cluster
    cm = Component(logs, "controller-manager", "--kubeconfig", str(c.kubeconfig), "--secure-port", "0",
                   "--no-leader-elect")
    try:
        port = cm.port(r"Serving securely on 127\.0\.0\.1:(\d+)")
        token = token_of(c.kubeconfig)
        eventually(lambda: c.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
                   "the default service account")
        c.apply_yaml({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "metered", "namespace": "default"},
                      "spec": {"template": {"spec": {"restartPolicy": "Never", "nodeName": "kubeplane-node-0",
                                                     "containers": [{"name": "main", "image": "busybox"}]}}}})
        c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metered", "namespace": "default"},
                      "spec": {"selector": {"app": "metered"}, "ports": [{"port": 80}]}})
        pod = bound_pod("metered-web", "kubeplane-node-0")
        pod["metadata"]["labels"] = {"app": "metered"}
        c.apply_yaml(pod)
        c.apply_yaml({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                      "metadata": {"name": "metered", "namespace": "default"},
                      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        r = c.kubectl("wait", "--for=condition=complete", "job/metered", "--timeout=90s", timeout=120)
        assert "job.batch/metered condition met" in r.stdout

        def scraped() -> Samples | None:
            code, body, _ = get(port, "/metrics", token)
            s = parse(body) if code == 200 else {}
            done = value(s, "job_controller_jobs_finished_total", completion_mode="NonIndexed", result="succeeded",
                         reason="")
            ready = value(s, "endpoint_slice_controller_endpoints_desired")
            return s if done and ready else None
        s = eventually(scraped, "the finished Job and the Service's ready endpoint in /metrics", timeout=60)
        assert (value(s, "job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                      action="pods_created") or 0) >= 1
        assert value(s, "job_controller_job_pods_finished_total", completion_mode="NonIndexed", result="succeeded") == 1
        assert value(s, "job_controller_job_pods_creation_total", reason="new", status="succeeded") == 1
        assert value(s, "job_controller_terminated_pods_tracking_finalizer_total", event="add") == 1
        assert (value(s, "job_controller_job_sync_duration_seconds_count", completion_mode="NonIndexed",
                      result="success", action="pods_created") or 0) >= 1
        # the parser reads upstream's `endpoint_slice_controller_syncs` counter back as *_total
        assert (value(s, "endpoint_slice_controller_syncs_total", result="success") or 0) >= 1
        assert (value(s, "endpoint_slice_controller_changes_total", operation="create") or 0) >= 1
        assert (value(s, "endpoint_slice_controller_num_endpoint_slices") or 0) >= 1
        assert (value(s, "endpoint_slice_controller_endpoints_added_per_sync_count") or 0) >= 1
        assert value(s, "pv_collector_unbound_pvc_count", namespace="default", storage_class="standard",
                     volume_attributes_class="") == 1
        code, body, _ = get(port, "/metrics", token)
        assert "# TYPE endpoint_slice_controller_syncs counter\n" in body           # upstream's name, no _total
        assert "# TYPE volume_operation_total_seconds histogram\n" in body
    finally:
        cm.stop()
        for kind in ("job/metered", "service/metered", "pod/metered-web", "pvc/metered"):
            c.kubectl("delete", kind, "--wait=false", "--ignore-not-found", check=False)
    assert cm.proc.returncode == 0, cm.log()[-3000:]


def test_a_secure_port_in_use_is_one_line(cluster: tuple[Cluster, pathlib.Path]) -> None:
    c, _ = cluster
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        res = subprocess.run([PY, "-m", "kubeplane", "scheduler", "--kubeconfig", str(c.kubeconfig),
                              "--secure-port", str(port)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == (f"Error: failed to create listener: failed to listen on 127.0.0.1:{port}: "
                                           f"listen tcp 127.0.0.1:{port}: bind: address already in use")

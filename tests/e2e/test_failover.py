"""Failover of issue 16: every component a process of its own, each a replica that may die.

3 etcd members (TLS), 2 `kubeplane apiserver`s (127.0.0.2 and 127.0.0.3, one port) behind a TCP
load balancer (tcp_proxy.py, 127.0.0.1), 2 controller-managers and 2 schedulers (leader-elected
on kube-system Leases), sim kubelets in their own process, all through the balancer with the
kubeconfigs `kubeplane certs` wrote. During a Deployment's rolling update, one at a time:
kill -9 the leading controller-manager, one API server, the leading scheduler, one etcd member.
The rollout (and a scale-up made meanwhile) completes with exact counts, the standby
controller-manager and scheduler take over,
and `default/kubernetes` drops the dead API server once its lease expires; restarted it comes
back, and stopped cleanly it is gone before its process exits.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kubeplane.testing.etcd import EtcdCluster, etcd_binary

from .cluster import KUBECTL, eventually
from .tcp_proxy import TCPProxy

PY = sys.executable
API_IPS = ("127.0.0.2", "127.0.0.3")
# The size: a 300-replica rollout (about 90 s on a quiet 2-core machine);
# KUBEPLANE_FAILOVER_REPLICAS=24 for a quick run.
REPLICAS = int(os.environ.get("KUBEPLANE_FAILOVER_REPLICAS", "300"))
SCALED = REPLICAS * 5 // 4
SLOWER = max(1.0, REPLICAS / 24 / 4)          # the waits grow with the size (300: 3x the 24-replica ones)
NODES = max(3, SCALED // 80 + 1)   # a sim node takes 110 pods
LEASE_DURATION = 15.0          # the components' leader election lease (upstream's default)
TTL = 15.0                     # the API servers' endpoint lease (reconcilers.LEASE_TTL)


class Proc:
    """`kubeplane <args>` in its own process group, its output in a file."""

    def __init__(self, log: pathlib.Path, *args: str) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([PY, "-m", "kubeplane", *args, "--log-level", "info"], stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def leads(self) -> bool:
        return "successfully acquired lease" in self.log.read_text(errors="replace")


def free_port_on(hosts: tuple[str, ...]) -> int:
    """A port free on every one of hosts (loopback addresses)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((hosts[0], 0))
            port = s.getsockname()[1]
        try:
            for host in hosts:
                with socket.socket() as s:
                    s.bind((host, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on every address")


# What a failover shows a client for a moment (upstream's API server answers etcd's "leader
# changed" with a 500 too; a killed API server drops its connections).
TRANSIENT = ("etcdserver: leader changed", "connection refused", "EOF", "connection reset", "timeout")
TRANSIENT_ATTEMPTS = 10


class HA:
    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.dir = root / "ha"
        self.admin = self.dir / "admin.conf"
        self.procs: list[Proc] = []

    def kubectl(self, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """kubectl through the balancer; a command that met a component's failover (etcd's
        "leader changed", an API server killed mid-request) is run again, as a user would: the
        commands here are idempotent."""
        env = {**os.environ, "KUBECTL_KUBERC": "false"}
        for _ in range(TRANSIENT_ATTEMPTS):
            res = subprocess.run([KUBECTL, "--kubeconfig", str(self.admin), "--cache-dir", str(self.root / "kcache"),
                                  "--request-timeout", "10s", *args], capture_output=True, text=True, input=input,
                                 timeout=60, env=env)
            if res.returncode == 0 or not any(t in res.stderr for t in TRANSIENT):
                break
            time.sleep(1)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def get_json(self, *args: str) -> Any:
        res = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(res.stdout) if res.returncode == 0 else None

    def start(self, *args: str, name: str) -> Proc:
        p = Proc(self.root / f"{name}.log", *args)
        self.procs.append(p)
        return p


@pytest.fixture
def ha(tmp_path: pathlib.Path) -> Iterator[HA]:
    if etcd_binary() is None:
        pytest.skip("no etcd binary (apt-get install etcd-server)")
    h = HA(tmp_path)
    try:
        yield h
    finally:
        for p in h.procs:
            p.kill(signal.SIGTERM)


def test_failover_of_every_replicated_component(ha: HA, tmp_path: pathlib.Path) -> None:
    port = free_port_on(API_IPS)
    with EtcdCluster(tmp_path / "etcd", members=3) as etcd, \
            TCPProxy([(ip, port) for ip in API_IPS]) as lb:
        try:
            run(ha, etcd, lb, port)
        finally:
            for p in ha.procs:          # before etcd stops
                p.kill(signal.SIGTERM)


def run(ha: HA, etcd: EtcdCluster, lb: TCPProxy, port: int) -> None:
    cfg = etcd.config()
    subprocess.run([PY, "-m", "kubeplane", "certs", "--data-dir", str(ha.dir),
                    "--control-plane-endpoint", f"127.0.0.1:{lb.port}",
                    "--apiserver-cert-extra-sans", ",".join(API_IPS)], check=True, capture_output=True)
    pki = ha.dir / "pki"

    def start_apiserver(ip: str) -> Proc:
        return ha.start("apiserver", "--etcd-servers", ",".join(cfg.servers), f"--etcd-cafile={cfg.cafile}",
                        f"--etcd-certfile={cfg.certfile}", f"--etcd-keyfile={cfg.keyfile}",
                        "--bind-address", ip, "--secure-port", str(port),
                        "--tls-cert-file", str(pki / "server.crt"), "--tls-private-key-file", str(pki / "server.key"),
                        "--client-ca-file", str(pki / "ca.crt"), "--token-auth-file", str(pki / "tokens.csv"),
                        "--service-account-key-file", str(pki / "sa.pub"),
                        "--service-account-signing-key-file", str(pki / "sa.key"),
                        "--encryption-provider-config", str(ha.dir / "encryption-config.yaml"),
                        name=f"apiserver-{ip}")

    apis = [start_apiserver(ip) for ip in API_IPS]

    def endpoint_ips() -> list[str]:
        ep = ha.get_json("endpoints", "kubernetes", "-n", "default")
        return [a["ip"] for a in ep["subsets"][0]["addresses"]] if ep else []

    eventually(lambda: endpoint_ips() == list(API_IPS), "both API servers in default/kubernetes", timeout=60)
    cms = [ha.start("controller-manager", "--kubeconfig", str(ha.dir / "controller-manager.conf"),
                    "--secure-port", "0", "--cluster-signing-cert-file", str(pki / "ca.crt"),
                    "--cluster-signing-key-file", str(pki / "ca.key"),
                    "--service-account-private-key-file", str(pki / "sa.key"), name=f"cm{i}") for i in range(2)]
    scheds = [ha.start("scheduler", "--kubeconfig", str(ha.dir / "scheduler.conf"), "--secure-port", "0",
                       name=f"sched{i}") for i in range(2)]
    ha.start("kubelet", "--kubeconfig", str(ha.admin), "--nodes", str(NODES), "--port", "0", name="kubelet")

    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "web"}},
                       "strategy": {"rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}}
    ha.kubectl("apply", "-f", "-", input=yaml.safe_dump(deploy))

    def rolled_out(image: str, replicas: int) -> bool:
        d = ha.get_json("deployment", "web")
        if not d or d["metadata"]["generation"] != d.get("status", {}).get("observedGeneration"):
            return False
        s = d["status"]
        return (d["spec"]["template"]["spec"]["containers"][0]["image"] == image
                and s.get("updatedReplicas") == s.get("readyReplicas") == s.get("availableReplicas")
                == s.get("replicas") == replicas)

    eventually(lambda: rolled_out("web:1", REPLICAS), "the first rollout", timeout=90 * SLOWER)
    leader_cm = eventually(lambda: next((p for p in cms if p.leads()), None), "a leading controller-manager")
    leader_sched = eventually(lambda: next((p for p in scheds if p.leads()), None), "a leading scheduler")

    # the rolling update, and the failures, one at a time
    ha.kubectl("set", "image", "deployment/web", "c=web:2")
    rollout_started = time.monotonic()
    killed_at = time.monotonic()
    leader_cm.kill()
    standby_cm = next(p for p in cms if p is not leader_cm)
    eventually(standby_cm.leads, "the standby controller-manager to lead", timeout=LEASE_DURATION + 30)
    cm_failover = time.monotonic() - killed_at
    apis[0].kill()
    leader_sched.kill()
    killed_at = time.monotonic()
    standby_sched = next(p for p in scheds if p is not leader_sched)
    etcd.kill(0)
    ha.kubectl("scale", "deployment/web", f"--replicas={SCALED}")       # and it scales, meanwhile
    eventually(standby_sched.leads, "the standby scheduler to lead", timeout=LEASE_DURATION + 30)
    sched_failover = time.monotonic() - killed_at

    try:
        eventually(lambda: rolled_out("web:2", SCALED), "the rollout through the failures", timeout=120 * SLOWER)
        rollout = time.monotonic() - rollout_started
    except AssertionError:
        print(ha.kubectl("get", "deploy,rs,pods,nodes", "-o", "wide", check=False).stdout)
        print(json.dumps((ha.get_json("deployment", "web") or {}).get("status"), indent=1))
        raise
    eventually(lambda: len(ha.get_json("pods", "-l", "app=web")["items"]) == SCALED,
               "exactly the Deployment's pods", timeout=60 * SLOWER)
    pods = ha.get_json("pods", "-l", "app=web")["items"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"web:2"}
    assert all(p["status"].get("phase") == "Running" and p["spec"].get("nodeName") for p in pods)
    rss = ha.get_json("replicasets", "-l", "app=web")["items"]
    assert sorted(rs["spec"]["replicas"] for rs in rss) == [0, SCALED]

    eventually(lambda: endpoint_ips() == [API_IPS[1]], "the dead API server out of default/kubernetes",
               timeout=TTL + 30)
    slices = ha.get_json("endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes")
    assert [e["addresses"] for e in slices["items"][0]["endpoints"]] == [[API_IPS[1]]]

    # the API server comes back, and then stops cleanly: it takes itself out before it exits
    again = start_apiserver(API_IPS[0])
    eventually(lambda: endpoint_ips() == list(API_IPS), "the restarted API server back in default/kubernetes",
               timeout=60)
    again.kill(signal.SIGTERM)
    assert again.proc.returncode == 0
    assert endpoint_ips() == [API_IPS[1]]           # already, not a lease expiry later
    print(f"{REPLICAS} -> {SCALED} replicas: controller-manager failover {cm_failover:.1f} s, "
          f"scheduler failover {sched_failover:.1f} s, rollout {rollout:.1f} s")

"""Simulated nodes under real kubectl: failure profiles, and a node whose kubelet dies.

The node-failure test runs `kubeplane up --nodes 1` with a short node monitor grace period and
a second kubelet process hosting node `doomed-0`; killing that process (SIGKILL) stops the
node's heartbeats the way a crashed kubelet or a lost machine does. The node lifecycle
controller then marks it Unknown, taints it, and the taint eviction controller deletes its pods
(their tolerations allow 2 s), which the ReplicaSet replaces on the healthy node.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from typing import Any, Iterator

import pytest

from .cluster import Cluster
from .cluster import eventually
from .test_replicaset import active, pods

HEARTBEAT = 0.5          # seconds between Lease renewals, both kubelets
GRACE = 3.0              # --node-monitor-grace-period
# Marked Unknown within grace + one monitor period (5 s), tainted one period later, evicted
# after tolerationSeconds: 3 + 5 + 5 + 2 = 15 s, plus slack.
FAILOVER_DEADLINE = 40.0

# A kubelet in its own process, renewing its Lease every HEARTBEAT seconds (the `kubeplane
# kubelet` command has no flag for that yet).
KUBELET_SCRIPT = """
import asyncio, sys
from kubeplane.client.clientset import Clientset
from kubeplane.client.transport import HTTPTransport
from kubeplane.kubelet import run_kubelet
from kubeplane.kubelet.kubelet import KubeletOptions

async def main():
    cs = Clientset(HTTPTransport.from_kubeconfig(sys.argv[1], user_agent="kubelet"))
    await run_kubelet(cs, nodes=1, node_prefix=sys.argv[2], options=KubeletOptions(heartbeat_period=float(sys.argv[3])))

asyncio.run(main())
"""


def deployment(name: str, replicas: int, **pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}], **pod_spec}}}}


def pod_rows(c: Cluster, selector: str) -> list[list[str]]:
    out = c.kubectl("get", "pods", "-l", selector, "--no-headers").stdout
    return [line.split() for line in out.splitlines()]


@pytest.mark.parametrize("profile, reason", [("crash-loop", "CrashLoopBackOff"),
                                             ("image-pull-failure", "ImagePullBackOff")])
def test_failure_profile_shows_in_kubectl_get_pods(profile: str, reason: str) -> None:
    c = Cluster(nodes=1, extra_args=("--profile", profile)).start()
    try:
        c.kubectl("create", "deployment", "app", "--image", "nginx:broken", "--replicas", "2")
        rows = eventually(lambda: (lambda r: len(r) == 2 and all(x[2] == reason for x in r) and r)(
            pod_rows(c, "app=app")), f"{reason} in kubectl get pods")
        assert all(x[1] == "0/1" for x in rows)
        status = pods(c, "default", "app=app")[0]["status"]
        cs = status["containerStatuses"][0]
        assert cs["ready"] is False and cs["state"]["waiting"]["reason"] == reason
        if profile == "crash-loop":
            assert cs["restartCount"] >= 1 and cs["lastState"]["terminated"]["exitCode"] == 1
            assert cs["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=nginx pod=")
        else:
            assert cs["restartCount"] == 0
            assert cs["state"]["waiting"]["message"] == 'Back-off pulling image "nginx:broken"'
        dep = c.get_json("deployment", "app")["status"]
        assert dep.get("availableReplicas", 0) == 0 and dep["unavailableReplicas"] == 2
    finally:
        c.cleanup()


@pytest.fixture
def two_kubelets() -> Iterator[tuple[Cluster, subprocess.Popen[bytes]]]:
    c = Cluster(nodes=1, extra_args=("--node-heartbeat-period", str(HEARTBEAT),
                                     "--node-monitor-grace-period", str(GRACE))).start()
    log = open(c.data_dir / "doomed-kubelet.log", "wb")
    doomed = subprocess.Popen([sys.executable, "-c", KUBELET_SCRIPT, str(c.kubeconfig), "doomed-", str(HEARTBEAT)],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield c, doomed
    finally:
        if doomed.poll() is None:
            os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait(10)
        log.close()
        c.cleanup()


def ready_condition(c: Cluster, node: str) -> dict[str, Any]:
    return next(x for x in c.get_json("node", node)["status"]["conditions"] if x["type"] == "Ready")


def test_node_that_stops_heartbeating_is_tainted_and_its_pods_replaced(
        two_kubelets: tuple[Cluster, subprocess.Popen[bytes]]) -> None:
    c, doomed = two_kubelets
    healthy, dead = "kubeplane-node-0", "doomed-0"
    eventually(lambda: c.kubectl("get", "node", dead, check=False).returncode == 0 and
               ready_condition(c, dead)["status"] == "True", "the second kubelet's node to register")
    # Put every replica on the doomed node first: cordon the other one while rolling out.
    c.kubectl("cordon", healthy)
    tolerations = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}
                   for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")]
    c.apply_yaml(deployment("web", 3, tolerations=tolerations))
    c.kubectl("rollout", "status", "deployment/web", "--timeout", "30s", timeout=40)
    victims = {p["metadata"]["name"] for p in pods(c, "default", "app=web")}
    assert {p["spec"]["nodeName"] for p in pods(c, "default", "app=web")} == {dead}
    c.kubectl("uncordon", healthy)

    os.killpg(doomed.pid, signal.SIGKILL)          # the kubelet dies: no more Lease renewals
    doomed.wait(10)

    cond = eventually(lambda: (lambda x: x["status"] == "Unknown" and x)(ready_condition(c, dead)),
                      "Ready=Unknown", timeout=FAILOVER_DEADLINE)
    assert (cond["reason"], cond["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    row = c.kubectl("get", "node", dead, "--no-headers").stdout.split()
    assert row[1] == "NotReady"
    taints = eventually(lambda: (lambda t: len(t) == 2 and t)(c.get_json("node", dead)["spec"].get("taints") or []),
                        "the unreachable taints", timeout=FAILOVER_DEADLINE)
    assert sorted((t["key"], t["effect"]) for t in taints) == [
        ("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")]

    def replaced() -> list[dict[str, Any]]:
        now = active(pods(c, "default", "app=web"))
        ok = (len(now) == 3 and not victims & {p["metadata"]["name"] for p in now}
              and all(p["spec"].get("nodeName") == healthy for p in now))
        return now if ok else []
    eventually(replaced, "3 replacement pods on the healthy node", timeout=FAILOVER_DEADLINE)
    c.kubectl("rollout", "status", "deployment/web", "--timeout", "30s", timeout=40)
    # The evicted pods stay Terminating: nobody is left on their node to confirm they stopped.
    gone = [p for p in pods(c, "default", "app=web") if p["metadata"]["name"] in victims]
    assert len(gone) == 3 and all(p["metadata"].get("deletionTimestamp") for p in gone)
    events = c.kubectl("get", "events", "--field-selector", f"involvedObject.name={dead}").stdout
    assert re.search(rf"NodeNotReady\s+node/{dead}\s+Node {dead} status is now: NodeNotReady", events), events
    pod_events = c.kubectl("get", "events", "--field-selector", "reason=TaintManagerEviction").stdout
    assert all(f"pod/{name}" in pod_events for name in victims), pod_events

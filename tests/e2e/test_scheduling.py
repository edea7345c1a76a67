"""The scheduler and the simulated kubelets under real kubectl (`kubeplane up --nodes 2`).

Each test uses its own namespace; the one test that taints a node removes the taint again, so
the two nodes (kubeplane-node-0 and -1, 4 cpu each) look the same to every other test.
"""
from __future__ import annotations

import collections
import re
from typing import Any, Iterator

import pytest

from .cluster import Cluster, running, namespace_for_test
from .test_replicaset import active, eventually, pods

NODES = ("kubeplane-node-0", "kubeplane-node-1")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


def deployment(name: str, ns: str, replicas: int, **pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}], **pod_spec}}}}


def rollout(c: Cluster, name: str, ns: str) -> None:
    c.kubectl("rollout", "status", f"deployment/{name}", "-n", ns, "--timeout", "30s", timeout=40)


def placement(c: Cluster, ns: str, selector: str = "") -> collections.Counter[str]:
    """How many running pods each node has."""
    return collections.Counter(p["spec"].get("nodeName") for p in active(pods(c, ns, selector)))


def pending_reason(c: Cluster, ns: str, name: str) -> dict[str, Any] | None:
    """The pod's PodScheduled=False condition, once the scheduler has written it."""
    conds = c.get_json("pod", name, "-n", ns)["status"].get("conditions") or []
    return next((x for x in conds if x["type"] == "PodScheduled" and x["status"] == "False"), None)


def test_create_deployment_rolls_out_on_nodes_with_ips(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("create", "deployment", "nginx", "--image", "nginx", "--replicas", "3", "-n", ns)
    rollout(cluster, "nginx", ns)
    out = cluster.kubectl("get", "pods", "-o", "wide", "-n", ns).stdout.splitlines()
    assert out[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    rows = [line.split() for line in out[1:]]
    assert len(rows) == 3
    for row in rows:
        assert row[1:3] == ["1/1", "Running"]
        assert re.fullmatch(r"10\.244\.[01]\.\d+", row[5]), row        # from the node's pod CIDR
        assert row[6] in NODES
    assert len({row[5] for row in rows}) == 3                           # one IP per pod
    name, node = rows[0][0], rows[0][6]
    described = cluster.kubectl("describe", "pod", name, "-n", ns).stdout
    assert re.search(rf"Node:\s+{node}/172\.18\.0\.[23]\b", described)
    assert re.search(rf"Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned {ns}/{name} to {node}",
                     described), described
    assert re.search(r"Normal\s+Started\s+.*kubelet\s+.*Started container nginx", described), described


def test_pod_too_large_for_any_node_stays_pending(cluster: Cluster, ns: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100"}}}]}}
    cluster.apply_yaml(pod)
    cond = eventually(lambda: pending_reason(cluster, ns, "huge"), "PodScheduled=False")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                                      "available: 2 "), cond
    row = cluster.kubectl("get", "pod", "huge", "-n", ns, "--no-headers").stdout.split()
    assert row[1:3] == ["0/1", "Pending"]
    described = cluster.kubectl("describe", "pod", "huge", "-n", ns).stdout
    assert re.search(r"Warning\s+FailedScheduling\s+.*default-scheduler\s+0/2 nodes are available: "
                     r"2 Insufficient cpu\. preemption: ", described), described
    assert re.search(r"Node:\s+<none>\n", described)


def test_node_selector_and_required_node_affinity(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(deployment("picky", ns, 3, nodeSelector={"kubernetes.io/hostname": NODES[1]}))
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": [NODES[1]]}]}]}}}
    cluster.apply_yaml(deployment("affine", ns, 3, affinity=affinity))
    nowhere = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}}
    cluster.apply_yaml(deployment("nowhere", ns, 1, affinity=nowhere))
    rollout(cluster, "picky", ns)
    rollout(cluster, "affine", ns)
    assert placement(cluster, ns, "app=picky") == {NODES[1]: 3}
    assert placement(cluster, ns, "app=affine") == {NODES[0]: 3}
    stuck = pods(cluster, ns, "app=nowhere")[0]["metadata"]["name"]
    cond = eventually(lambda: pending_reason(cluster, ns, stuck), "PodScheduled=False")
    # Upstream's FitError ends each part with "." and nests one FitError in another: hence "..".
    assert cond["message"] == ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
                               "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..")


def test_taints_and_tolerations(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("taint", "nodes", NODES[0], "dedicated=special:NoSchedule")
    try:
        taints = cluster.get_json("node", NODES[0])["spec"]["taints"]
        assert {"key": "dedicated", "value": "special", "effect": "NoSchedule"} in taints
        cluster.apply_yaml(deployment("plain", ns, 4))
        toleration = [{"key": "dedicated", "operator": "Equal", "value": "special", "effect": "NoSchedule"}]
        cluster.apply_yaml(deployment("tolerant", ns, 2, tolerations=toleration,
                                      nodeSelector={"kubernetes.io/hostname": NODES[0]}))
        cluster.apply_yaml(deployment("intolerant", ns, 1, nodeSelector={"kubernetes.io/hostname": NODES[0]}))
        rollout(cluster, "plain", ns)
        rollout(cluster, "tolerant", ns)
        assert placement(cluster, ns, "app=plain") == {NODES[1]: 4}
        assert placement(cluster, ns, "app=tolerant") == {NODES[0]: 2}
        stuck = pods(cluster, ns, "app=intolerant")[0]["metadata"]["name"]
        cond = eventually(lambda: pending_reason(cluster, ns, stuck), "PodScheduled=False")
        assert cond["message"].startswith(
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            "1 node(s) had untolerated taint {dedicated: special}. preemption: "), cond
    finally:
        cluster.kubectl("taint", "nodes", NODES[0], "dedicated-")
    # Untainted, the node takes the pod that waited for it.
    eventually(lambda: placement(cluster, ns, "app=intolerant") == {NODES[0]: 1}, "the pending pod scheduled")


def test_topology_spread_puts_pods_evenly_across_hostnames(cluster: Cluster, ns: str) -> None:
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "spread"}}}]
    cluster.apply_yaml(deployment("spread", ns, 6, topologySpreadConstraints=spread))
    rollout(cluster, "spread", ns)
    assert placement(cluster, ns, "app=spread") == {NODES[0]: 3, NODES[1]: 3}
    cluster.kubectl("scale", "deployment", "spread", "-n", ns, "--replicas", "9")
    rollout(cluster, "spread", ns)
    counts = placement(cluster, ns, "app=spread")
    assert sorted(counts.values()) == [4, 5] and set(counts) == set(NODES)


def test_default_spreading_spreads_a_replicaset_against_resource_scores(cluster: Cluster, ns: str) -> None:
    """A Deployment's pods declare no constraints: the system defaults (hostname maxSkew 3,
    ScheduleAnyway, selecting the ReplicaSet's pods) outweigh the resource scores that alone
    would put every replica on the emptier node (a 3-cpu pod holds kubeplane-node-0)."""
    filler = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler", "namespace": ns},
              "spec": {"nodeName": NODES[0], "containers": [{"name": "c", "image": "nginx",
                                                             "resources": {"requests": {"cpu": "3"}}}]}}
    cluster.apply_yaml(filler)
    try:
        small = [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]
        cluster.apply_yaml(deployment("spread-default", ns, 6, containers=small))
        rollout(cluster, "spread-default", ns)
        counts = placement(cluster, ns, "app=spread-default")
        assert set(counts) == set(NODES) and sum(counts.values()) == 6, counts
    finally:
        cluster.kubectl("delete", "pod", "filler", "-n", ns, "--wait=false")

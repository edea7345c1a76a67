"""Least privilege for nodes, through the whole request path (authorization, then admission):
with the Node authorizer and NodeRestriction, system:node:node0 reads what its pods use and
writes its own objects, and is refused, with upstream's messages, everything of node1's."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.authorization.authorizer import Attributes, Decision, Union
from kubeplane.apiserver.authorization.node import NodeAuthorizer, node_identity
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER


class AllowAllButNodes:
    """A stand-in for RBAC here: any non-node user may do anything (the test's administrator);
    nodes get nothing beyond what the node authorizer grants."""

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        return (Decision.NO_OPINION, "") if node_identity(a.user)[1] else (Decision.ALLOW, "")


class Cluster:
    def __init__(self, api: APIServer) -> None:
        self.api = api
        self.admin = Clientset(InProcessTransport(api, user="system:kube-controller-manager"))

    def node(self, name: str) -> Clientset:
        return Clientset(InProcessTransport(self.api, user=f"system:node:{name}", user_agent="kubelet"))


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    z = NodeAuthorizer.for_server(api)
    await z.start()
    api.authorizer = Union(z, AllowAllButNodes())
    c = Cluster(api)
    for n in ("node0", "node1"):                  # each registers itself (NodeRestriction: its own only)
        await c.node(n).core_v1().nodes().create({"metadata": {"name": n}})
    await c.admin.core_v1().namespaces().create({"metadata": {"name": "ns"}})
    for n in ("node0", "node1"):
        await c.admin.core_v1().secrets("ns").create({"metadata": {"name": f"secret-{n}"}})
        await c.admin.core_v1().pods("ns").create(
            {"metadata": {"name": f"pod-{n}"},
             "spec": {"nodeName": n, "containers": [{"name": "c", "image": "i"}],
                      "volumes": [{"name": "s", "secret": {"secretName": f"secret-{n}"}}]}})
    yield c
    z.stop()
    await api.storage.close()


async def refusal(coro: Any) -> str:
    with pytest.raises(errors.StatusError) as e:
        await coro
    assert e.value.code == 403
    return e.value.message


async def test_a_node_reads_only_its_pods_secrets(cluster: Cluster) -> None:
    node0 = cluster.node("node0").core_v1()
    assert (await node0.secrets("ns").get("secret-node0")).metadata.name == "secret-node0"
    assert await refusal(node0.secrets("ns").get("secret-node1")) == (
        'secrets "secret-node1" is forbidden: User "system:node:node0" cannot get resource "secrets" in API group '
        '"" in the namespace "ns": no relationship found between node \'node0\' and this object')
    assert await refusal(node0.secrets("ns").list()) == (
        'secrets is forbidden: User "system:node:node0" cannot list resource "secrets" in API group "" in the '
        'namespace "ns": No Object name found')
    # once node1's pod is gone and another uses the secret on node0, node0 may read it
    await cluster.admin.core_v1().pods("ns").delete("pod-node1", grace_period_seconds=0)
    await cluster.admin.core_v1().pods("ns").create(
        {"metadata": {"name": "moved"}, "spec": {"nodeName": "node0", "containers": [{"name": "c", "image": "i"}],
                                                 "volumes": [{"name": "s", "secret": {"secretName": "secret-node1"}}]}})
    assert (await node0.secrets("ns").get("secret-node1")).metadata.name == "secret-node1"


async def test_a_node_writes_only_its_pods_status(cluster: Cluster) -> None:
    pods = cluster.node("node0").core_v1().pods("ns")
    await pods.patch("pod-node0", {"status": {"phase": "Running"}}, "merge", subresource="status")
    assert await refusal(pods.patch("pod-node1", {"status": {"phase": "Running"}}, "merge",
                                    subresource="status")) == (
        'pods "pod-node1" is forbidden: node "node0" can only update pod status for pods with spec.nodeName set '
        'to itself')
    assert await refusal(pods.delete("pod-node1")) == (
        'pods "pod-node1" is forbidden: node "node0" can only delete pods with spec.nodeName set to itself')
    assert await refusal(pods.patch("pod-node0", {"metadata": {"labels": {"a": "b"}}}, "merge")) == (
        'pods "pod-node0" is forbidden: User "system:node:node0" cannot patch resource "pods" in API group "" in '
        'the namespace "ns"')
    assert await refusal(pods.list()) == (
        'pods is forbidden: User "system:node:node0" cannot list resource "pods" in API group "" in the namespace '
        '"ns": can only list/watch pods with spec.nodeName field selector')
    mine = await cluster.node("node0").core_v1().pods("").list(field_selector="spec.nodeName=node0")
    assert [p.metadata.name for p in mine.items] == ["pod-node0"]
    got = await cluster.admin.core_v1().pods("ns").get("pod-node1")
    assert got.status is None or got.status.phase != "Running"          # nothing written


async def test_a_node_modifies_only_its_own_node(cluster: Cluster) -> None:
    nodes = cluster.node("node0").core_v1().nodes()
    await nodes.patch("node0", {"metadata": {"labels": {"kubernetes.io/arch": "arm64"}}}, "merge")
    await nodes.patch("node0", {"status": {"phase": "Running"}}, "merge", subresource="status")
    assert await refusal(nodes.patch("node1", {"metadata": {"labels": {"a": "b"}}}, "merge")) == (
        'nodes "node1" is forbidden: node "node0" is not allowed to modify node "node1"')
    assert await refusal(nodes.patch("node1", {"status": {"phase": "Running"}}, "merge", subresource="status")) == (
        'nodes "node1" is forbidden: node "node0" is not allowed to modify node "node1"')
    assert await refusal(nodes.get("node1")) == (
        'nodes "node1" is forbidden: User "system:node:node0" cannot get resource "nodes" in API group "" at the '
        "cluster scope: node 'node0' cannot read 'node1', only its own Node object")
    assert await refusal(nodes.patch("node0", {"metadata": {"labels": {"node-restriction.kubernetes.io/x": "y"}}},
                                     "merge")) == (
        'nodes "node0" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/x')
    assert await refusal(nodes.delete("node0")) == (
        'nodes "node0" is forbidden: User "system:node:node0" cannot delete resource "nodes" in API group "" at '
        'the cluster scope')


async def test_a_node_renews_only_its_own_lease(cluster: Cluster) -> None:
    leases = cluster.node("node0").coordination_v1().leases("kube-node-lease")
    await leases.create({"metadata": {"name": "node0"}, "spec": {"holderIdentity": "node0"}})
    assert await refusal(leases.create({"metadata": {"name": "node1"}, "spec": {}})) == (
        'leases.coordination.k8s.io "node1" is forbidden: can only access node lease with the same name as the '
        'requesting node')
    assert await refusal(leases.get("node1")) == (
        'leases.coordination.k8s.io "node1" is forbidden: User "system:node:node0" cannot get resource "leases" in '
        'API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the '
        'same name as the requesting node')

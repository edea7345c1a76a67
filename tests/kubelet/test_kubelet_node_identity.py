"""Per-node identities: a multi-node kubelet sends each node's requests as system:node:<name>
(`kubeplane up`'s node_clientsets), and runs its pods under the Node authorizer and
NodeRestriction with nothing refused."""
from __future__ import annotations

import asyncio
from collections import Counter

from kubeplane.apiserver.authorization.authorizer import Attributes, Decision, Union
from kubeplane.apiserver.authorization.node import NodeAuthorizer, node_identity
from kubeplane.cmd.up import node_clientsets
from kubeplane.kubelet import run_kubelet
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

from kubelet_testutil import advance


class Recording:
    """Node authorizer first, then allow any non-node (a stand-in for RBAC's administrators);
    records who asked for what and every refusal."""

    def __init__(self, node: NodeAuthorizer) -> None:
        self.union = Union(node)
        self.asked: Counter[tuple[str, str, str, str]] = Counter()
        self.refused: list[tuple[Attributes, str]] = []

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        if not node_identity(a.user)[1]:
            return Decision.ALLOW, ""
        resource = a.resource + ("/" + a.subresource if a.subresource else "")
        self.asked[(a.user.name, a.verb, resource, a.name)] += 1
        decision, reason = self.union.authorize(a)
        if decision is not Decision.ALLOW:
            self.refused.append((a, reason))
        return decision, reason


async def test_each_node_acts_as_itself_under_the_node_authorizer() -> None:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)             # the process-wide pod informer's identity
    api = cs.api
    z = NodeAuthorizer.for_server(api)
    await z.start()
    api.authorizer = rec = Recording(z)
    task = asyncio.ensure_future(run_kubelet(cs, nodes=2, clock=clock, node_prefix="sim-",
                                             clientset_for=node_clientsets(api)))
    try:
        await advance(clock, 1)
        await cs.core_v1().pods("default").create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"nodeName": "sim-1", "containers": [{"name": "nginx", "image": "nginx"}]}})
        await advance(clock, 2, step=0.1)
        assert (await cs.core_v1().pods("default").get("web")).status.phase == "Running"
        await cs.core_v1().pods("default").delete("web")
        await advance(clock, 35, step=0.5)                       # the grace period, then the final delete
        assert [p.metadata.name for p in (await cs.core_v1().pods("default").list()).items] == []
        await advance(clock, 11)                                 # a lease renewal
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    z.stop()
    assert rec.refused == []
    asked = set(rec.asked)
    assert ("system:node:sim-0", "create", "nodes", "") in asked
    assert ("system:node:sim-1", "create", "leases", "") in asked
    assert ("system:node:sim-1", "update", "leases", "sim-1") in asked
    assert ("system:node:sim-1", "patch", "pods/status", "web") in asked
    assert ("system:node:sim-1", "delete", "pods", "web") in asked
    assert ("system:node:sim-1", "create", "events", "") in asked           # events go out as their node
    assert not any(user == "system:node:sim-0" and name in ("web", "sim-1") for user, _, _, name in asked)

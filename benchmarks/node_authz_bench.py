"""The Node authorizer's cost per decision, and of keeping its graph current.

Run:  .venv/bin/python benchmarks/node_authz_bench.py [--pods 10000] [--nodes 100]

A memory store holds --pods pods bound round-robin to --nodes nodes, each with a secret and a
configmap volume of its own, the namespace's default service account, and one secret shared by
all (an image pull secret). The graph is loaded once (start); then each case is timed with
timeit (best of 5, ns per decision):

  non-node            a controller's request: one prefix test, no opinion
  pods/status patch   the kubelets' hottest request: decided without the graph
  lease update        the heartbeat
  event create        the static system:node rules (one set look-up)
  own secret get      a graph question answered by the destination count
  shared secret get   the same, on a vertex with --pods out-edges
  other's secret get  refused (no relationship)
  sa token create     the default service account (an edge to every pod of the namespace)

and `sync after 1,000 status writes`: what a graph question pays after 1,000 pod status writes
(the pull of the storage watch log; each event recognised as changing no edge), per write.
"""
from __future__ import annotations

import argparse
import asyncio
import time
import timeit

from kubeplane.apiserver.authentication.user import component
from kubeplane.apiserver.authorization.authorizer import Attributes
from kubeplane.apiserver.authorization.node import NodeAuthorizer
from kubeplane.storage.memory import MemoryStorage
from kubeplane.utils import gc_tuning


def pod(i: int, nodes: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"},
            "spec": {"nodeName": f"node-{i % nodes}", "serviceAccountName": "default",
                     "imagePullSecrets": [{"name": "shared"}],
                     "containers": [{"name": "c", "image": "i"}],
                     "volumes": [{"name": "s", "secret": {"secretName": f"s{i}"}},
                                 {"name": "c", "configMap": {"name": f"c{i}"}}]}}


async def main(pods: int, nodes: int) -> None:
    storage = MemoryStorage()
    for i in range(pods):
        await storage.create(f"/registry/pods/ns/p{i}", pod(i, nodes))
    z = NodeAuthorizer.for_storage(storage)
    t0 = time.perf_counter()
    await z.start()
    print(f"graph of {pods} pods on {nodes} nodes loaded in {(time.perf_counter() - t0) * 1e3:.0f} ms "
          f"({len(z.graph.vertices)} vertices)")
    node0, ctrl = component("system:node:node-0"), component("system:kube-controller-manager")
    cases = {
        "non-node": Attributes(ctrl, "patch", True, "ns", "", "v1", "pods", "status", "p0"),
        "pods/status patch": Attributes(node0, "patch", True, "ns", "", "v1", "pods", "status", "p0"),
        "lease update": Attributes(node0, "update", True, "kube-node-lease", "coordination.k8s.io", "v1",
                                   "leases", "", "node-0"),
        "event create": Attributes(node0, "create", True, "ns", "", "v1", "events"),
        "own secret get": Attributes(node0, "get", True, "ns", "", "v1", "secrets", "", "s0"),
        "shared secret get": Attributes(node0, "get", True, "ns", "", "v1", "secrets", "", "shared"),
        "other's secret get": Attributes(node0, "get", True, "ns", "", "v1", "secrets", "", "s1"),
        "sa token create": Attributes(node0, "create", True, "ns", "", "v1", "serviceaccounts", "token", "default"),
    }
    authorize = z.authorize
    for name, a in cases.items():
        n = 200_000
        best = min(timeit.repeat(lambda a=a: authorize(a), number=n, repeat=5))
        print(f"  {name:20s} {best / n * 1e9:7.0f} ns   {authorize(a)[0].name}")
    # the pull after status writes
    kvs = [await storage.get(f"/registry/pods/ns/p{i}") for i in range(1000)]
    for kv in kvs:
        assert kv is not None
        await storage.update(kv.key, {**kv.obj, "status": {"phase": "Running"}})
    t0 = time.perf_counter()
    z.populator.sync()
    print(f"  sync after 1,000 status writes: {(time.perf_counter() - t0) * 1e9 / 1000:.0f} ns per write")
    z.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=100)
    args = ap.parse_args()
    gc_tuning.tune()      # as `kubeplane up` runs
    import kubeplane.apiserver.admission.plugins  # noqa: F401  (loaded by any server before a decision)
    asyncio.run(main(args.pods, args.nodes))

"""CPU of one ReplicaSet scale-down's choice of pods (ClaimedPods.first_to_delete) at N pods.

Run:  PYTHONPATH=src python benchmarks/scale_down_rank.py [--pods 10000] [--nodes 1000] [--new 0]
      [--n 500] [--calls 10]

The shape of a 25 %/25 % rolling update's scale-down of the old ReplicaSet: --pods Running,
Ready pods spread evenly over --nodes (as the default spreading places them), Ready over ~45 s
(second-resolution timestamps), --new pods of the new ReplicaSet on the same nodes (they set the
ranks: with 0 every old pod ties on the first five rules, the worst case), and --n pods chosen
per call, as burst_replicas allows. Prints the process CPU of the first call (it reads every
ranked pod's facts) and of each later one, and checks the choice against get_pods_to_delete.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.controller.replicaset.claimed_pods import ClaimedPods
from kubeplane.controller.replicaset.replica_set import get_pods_to_delete
from kubeplane.utils.clock import rfc3339

NOW = 1_700_000_100.0


def pod(i: int, node: str, ready_at: float, created: float) -> core_v1.Pod:
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "x", "imageID": ""}],
        "conditions": [{"type": "PodScheduled", "status": "True"},
                       {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(ready_at)}]}
    meta = {"name": f"p{i}", "namespace": "default", "uid": f"{(i * 2654435761) % 2**32:08x}-{i}",
            "labels": {"app": "web"}, "creationTimestamp": rfc3339(created)}
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                            "spec": {"containers": [{"name": "c", "image": "x"}], "nodeName": node},
                            "status": status}, core_v1.Pod)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--new", type=int, default=0)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    old, new = ClaimedPods((), lambda _: True, 0), ClaimedPods((), lambda _: True, 0)
    for i in range(args.pods):
        t = float(int(NOW - 100 + 45 * i / args.pods))
        old.put_active(f"default/p{i}", pod(i, f"n{i % args.nodes}", t + 1, t))
    for i in range(args.new):
        new.put_active(f"default/q{i}", pod(args.pods + i, f"n{i % args.nodes}", NOW - 2, NOW - 3))
    related = [old.on_node, new.on_node]
    t0 = time.process_time()
    got = old.first_to_delete(args.n, related, NOW)
    t1 = time.process_time()
    for _ in range(args.calls):
        old.first_to_delete(args.n, related, NOW)
    t2 = time.process_time()
    want = get_pods_to_delete(list(old), [*old, *new], args.n, NOW)
    print(f"first call {1000 * (t1 - t0):.1f} ms, then {1000 * (t2 - t1) / args.calls:.1f} ms/call "
          f"(process CPU); same choice as get_pods_to_delete: {got == want}")


if __name__ == "__main__":
    main()

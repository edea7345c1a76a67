"""The kubelet's per-sync computation for a running pod without stdin or ephemeral containers:
compute_pod_actions + generate_api_pod_status, what attach and ephemeral containers touch.

    python benchmarks/kubelet_sync_instructions.py            # µs per sync (timeit, min of 7)
    python benchmarks/kubelet_sync_instructions.py 5000       # 5,000 syncs, no output: for
        valgrind --tool=callgrind ...: (Ir at 5000 - Ir at 0) / 5000 = instructions per sync,
        repeatable under load (compare two source trees with PYTHONPATH=<tree>/src)
"""
from __future__ import annotations

import sys
import timeit

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet.backoff import Backoff
from kubeplane.kubelet.kubelet_pods import generate_api_pod_status
from kubeplane.kubelet.kuberuntime_manager import BackoffState, compute_pod_actions
from kubeplane.kubelet.runtime import RUNNING, SANDBOX_READY, ContainerStatus, PodStatus, SandboxStatus

POD = from_dict({"metadata": {"name": "p", "namespace": "d", "uid": "u"},
                 "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "nginx"}]}}, core_v1.Pod)
RT = PodStatus("u", SandboxStatus("s", SANDBOX_READY, "10.0.0.2"),
               [ContainerStatus("sim://1", "c", 0, False, RUNNING, "nginx", "nginx@sha", 1.0)])
BACKOFF = BackoffState(Backoff(10, 300), Backoff(10, 300))


def one() -> None:
    compute_pod_actions(POD, RT, BACKOFF)
    generate_api_pod_status(POD, RT, node_ip="1.2.3.4", is_ready=lambda c, s: True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for _ in range(int(sys.argv[1])):
            one()
    else:
        n = 20000
        print(f"{min(timeit.repeat(one, number=n, repeat=7)) / n * 1e6:.2f} µs per sync")

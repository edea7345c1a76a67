"""The kubelet: simulated nodes (many per process) running the pods bound to them.

    await run_kubelet(clientset, nodes=100, profile="default")      # until cancelled

Layout (mirrors pkg/kubelet): kubelet.py (the Kubelet hosting N nodes, its syncs),
pod_workers.py, kuberuntime_manager.py (computePodActions, back-off), kubelet_pods.py
(generateAPIPodStatus), status/ (conditions, status manager), prober/ (readiness),
node_status.py + nodelease.py (registration, heartbeats), runtime/ (the Runtime protocol;
runtime/sim: kwok-style stages from stages/<profile>/*.yaml).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..utils.clock import REAL_CLOCK, Clock

if TYPE_CHECKING:
    from ..client.clientset import Clientset
    from .kubelet import KubeletOptions

__all__ = ["run_kubelet", "node_names"]


def node_names(nodes: int, node_prefix: str = "kubeplane-node-") -> list[str]:
    return [f"{node_prefix}{i}" for i in range(nodes)]


async def run_kubelet(clientset: Clientset, *, nodes: int, runtime: str = "sim", profile: str = "default",
                      clock: Clock = REAL_CLOCK, node_prefix: str = "kubeplane-node-",
                      options: KubeletOptions | None = None) -> None:
    """Run `nodes` simulated nodes named <node_prefix><i> until cancelled (what
    `kubeplane up --nodes N` and `kubeplane kubelet` call)."""
    from ..client.tools.record import EventBroadcaster
    from .kubelet import Kubelet, KubeletOptions
    from .runtime import new_runtime

    broadcaster = EventBroadcaster(clientset, clock=clock)
    rt = new_runtime(runtime, profile=profile, clock=clock)
    kl = Kubelet(clientset, node_names=node_names(nodes, node_prefix), runtime=rt, clock=clock,
                 options=options or KubeletOptions(), broadcaster=broadcaster)
    broadcaster.start()
    try:
        await kl.run()
    finally:
        await broadcaster.shutdown()

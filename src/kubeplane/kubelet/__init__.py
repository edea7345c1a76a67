"""The kubelet: nodes (many per process) running the pods bound to them, simulated or as
real local processes.

    await run_kubelet(clientset, nodes=100, profile="default")      # until cancelled

Layout (mirrors pkg/kubelet): kubelet.py (the Kubelet hosting N nodes, its syncs),
pod_workers.py, kuberuntime_manager.py (computePodActions, back-off), kubelet_pods.py
(generateAPIPodStatus), status/ (conditions, status manager), prober/ (readiness),
node_status.py + nodelease.py (registration, heartbeats), runtime/ (the Runtime protocol;
runtime/sim: kwok-style stages from stages/<profile>/*.yaml; runtime/process: local processes),
metrics.py + pod_startup_latency_tracker.py (upstream's kubelet_* and prober_* metrics),
server.py (the HTTPS /containerLogs, /metrics and /healthz a standalone kubelet serves).
"""
from __future__ import annotations

import asyncio

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Coroutine

from ..utils.clock import REAL_CLOCK, Clock

if TYPE_CHECKING:
    from ..client.clientset import Clientset
    from ..client.informers import SharedInformerFactory
    from .kubelet import KubeletOptions
    from .server import KubeletServer

__all__ = ["run_kubelet", "node_names"]


def node_names(nodes: int, node_prefix: str = "kubeplane-node-", first: int = 0) -> list[str]:
    """<node_prefix><i> for i in first .. first + nodes - 1."""
    return [f"{node_prefix}{i}" for i in range(first, first + nodes)]


async def run_kubelet(clientset: Clientset, *, nodes: int, runtime: str = "sim", profile: str = "default",
                      clock: Clock = REAL_CLOCK, node_prefix: str = "kubeplane-node-",
                      options: KubeletOptions | None = None, node_registry: dict[str, Any] | None = None,
                      data_dir: str | os.PathLike[str] | None = None, server: KubeletServer | None = None,
                      factory: SharedInformerFactory | None = None,
                      clientset_for: Callable[[str], Clientset] | None = None,
                      pod_network: str = "host", node_port_addresses: tuple[str, ...] = (),
                      first_node: int = 0) -> None:
    """Run `nodes` nodes named <node_prefix><i> (i from first_node) until cancelled (what `kubeplane up --nodes N`
    and `kubeplane kubelet` call).

    runtime: "sim" (stage profile `profile`) or "process" (real local processes; per-pod
    directories and logs under data_dir, a temporary directory when None).
    node_registry: filled with node name -> this kubelet while it runs (the API server's
    `nodes`, which serves pods/log through it); entries are removed on exit.
    server: started first and stopped on exit (a standalone kubelet's /containerLogs); the
    nodes report its address as InternalIP and its bound port as their kubelet endpoint.
    factory: informers shared with other components of the process (`kubeplane up`), which
    its owner stops; by default the kubelet has its own.
    clientset_for: node name -> the clientset that node's requests go out on, as
    system:node:<name> (`kubeplane up`: one in-process transport per node); by default every
    node uses `clientset`. The pod informer (one for all nodes) uses `clientset`.
    pod_network: the process runtime's "auto", "netns" or "host" (kubelet/network); with
    network namespaces the kubelet runs a kube-proxy (network/proxy.py) whose NodePorts listen
    on node_port_addresses (kube-proxy's --nodeport-addresses; empty: every local address).
    """
    from .kubelet import KubeletOptions

    options = options or KubeletOptions()
    if server is not None:
        from .server import reported_address     # aiohttp: only a standalone kubelet serves
        port = await server.start()
        options = replace(options, node=replace(options.node, address=reported_address(server.address),
                                                kubelet_port=port))
    try:
        await _run(clientset, nodes=nodes, runtime=runtime, profile=profile, clock=clock, node_prefix=node_prefix,
                   options=options, node_registry=node_registry, data_dir=data_dir, server=server, factory=factory,
                   clientset_for=clientset_for, pod_network=pod_network, node_port_addresses=node_port_addresses,
                   first_node=first_node)
    finally:
        if server is not None:
            await server.stop()


async def _run(clientset: Clientset, *, nodes: int, runtime: str, profile: str, clock: Clock, node_prefix: str,
               options: KubeletOptions, node_registry: dict[str, Any] | None,
               data_dir: str | os.PathLike[str] | None, server: KubeletServer | None,
               factory: SharedInformerFactory | None,
               clientset_for: Callable[[str], Clientset] | None = None, pod_network: str = "host",
               node_port_addresses: tuple[str, ...] = (), first_node: int = 0) -> None:
    from ..client.tools.record import EventBroadcaster
    from ..client.tools.record.event import MAX_QUEUED_EVENTS
    from .kubelet import Kubelet
    from .runtime import new_runtime

    # Upstream each kubelet (one per node) queues up to 1,000 events; ours serves `nodes` nodes
    # through one broadcaster, so it gets their combined room rather than dropping at 1,000.
    sink = NodeEventSink(clientset_for, clientset) if clientset_for is not None else None
    broadcaster = EventBroadcaster(clientset, clock=clock, sink=sink,
                                   max_queued_events=MAX_QUEUED_EVENTS * max(1, nodes))
    kwargs: dict[str, Any] = {"profile": profile} if runtime == "sim" else {"root_dir": data_dir,
                                                                           "pod_network": pod_network}
    rt = new_runtime(runtime, clock=clock, **kwargs)
    kl = Kubelet(clientset, node_names=node_names(nodes, node_prefix, first_node), runtime=rt, clock=clock,
                 options=options, broadcaster=broadcaster, node_registry=node_registry, factory=factory,
                 clientset_for=clientset_for)
    if server is not None:
        server.host = kl
    proxy = None
    if getattr(rt, "network", None) is not None and pod_network != "host":
        from .network.proxy import ServiceProxy       # Services for pods in network namespaces
        proxy = ServiceProxy(factory if factory is not None else kl.informer_factory,
                             rt.network,               # type: ignore[attr-defined]
                             cluster_dns=options.cluster_dns,    # made local: the cluster DNS listens there
                             node_address=options.node.address or getattr(rt, "host_ip", "") or "127.0.0.1",
                             node_port_addresses=node_port_addresses)
        rt.services = proxy.services.lister().list     # type: ignore[attr-defined]
    broadcaster.start()
    try:
        if proxy is None:
            await kl.run()
        else:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(proxy.run())
                await kl.run()
    finally:
        await broadcaster.shutdown()


class NodeEventSink:
    """Events go out as the node that records them (their source.host), as each upstream
    kubelet's own broadcaster sends them. Upstream: EventSinkImpl, one per kubelet."""

    def __init__(self, clientset_for: Callable[[str], Clientset], default: Clientset) -> None:
        from ..client.tools.record.event import EventSinkImpl     # once, not per event (an import costs ~1 us)
        self.clientset_for, self.default = clientset_for, default     # default: events of no node
        self._sinks: dict[str, Any] = {}        # node name -> its EventSinkImpl
        self._new_sink = EventSinkImpl

    def _sink(self, event: Any) -> Any:
        source = event.source
        host = (source.host if source is not None else None) or ""
        sink = self._sinks.get(host)
        if sink is None:
            sink = self._sinks[host] = self._new_sink(self.clientset_for(host) if host else self.default)
        return sink

    # The node's sink's coroutine itself, not one awaiting it (one frame less per event).
    def create(self, event: Any) -> Coroutine[Any, Any, Any]:
        return self._sink(event).create(event)

    def update(self, event: Any) -> Coroutine[Any, Any, Any]:
        return self._sink(event).update(event)

    def patch(self, event: Any, data: dict[str, Any]) -> Coroutine[Any, Any, Any]:
        return self._sink(event).patch(event, data)

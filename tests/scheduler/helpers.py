"""Builders for scheduler tests (upstream: pkg/scheduler/testing/wrappers.go, MakePod/MakeNode)."""
from __future__ import annotations

from typing import Any

from kubeplane.api import types
from kubeplane.api.types.core_v1 import Node, Pod
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import NodeInfo


def pod_dict(name: str, *, ns: str = "default", uid: str | None = None, labels: dict[str, str] | None = None,
             requests: dict[str, Any] | list[dict[str, Any]] | None = None,
             init_requests: list[dict[str, Any]] | None = None, node: str = "", priority: int | None = None,
             spec: dict[str, Any] | None = None, host_ports: list[int] | None = None) -> dict[str, Any]:
    reqs = requests if isinstance(requests, list) else [requests or {}]
    containers = []
    for i, r in enumerate(reqs):
        c: dict[str, Any] = {"name": f"c{i}", "image": "nginx"}
        if r:
            c["resources"] = {"requests": r}
        if host_ports and i == 0:
            c["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
        containers.append(c)
    s: dict[str, Any] = {"containers": containers, **(spec or {})}
    if init_requests:
        s["initContainers"] = [{"name": f"i{i}", "image": "busybox", "resources": {"requests": r}}
                               for i, r in enumerate(init_requests)]
    if node:
        s["nodeName"] = node
    if priority is not None:
        s["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def make_pod(name: str = "p", **kw: Any) -> Pod:
    return types.from_dict(pod_dict(name, **kw), Pod)


def node_dict(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: int = 110, labels: dict[str, str] | None = None,
              taints: list[dict[str, str]] | None = None, unschedulable: bool = False,
              extra: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec, "status": {"capacity": dict(alloc), "allocatable": alloc}}


def make_node(name: str = "n", **kw: Any) -> Node:
    return types.from_dict(node_dict(name, **kw), Node)


def node_info(node: Node, *pods: Pod) -> NodeInfo:
    ni = NodeInfo(*pods)
    ni.set_node(node)
    return ni


def run_filter(plugin: Any, pod: Pod, ni: NodeInfo, nodes: list[NodeInfo] | None = None) -> Any:
    """PreFilter (if any) then Filter, as the runtime does; a PreFilter Skip means success."""
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        _, status = plugin.pre_filter(state, pod, nodes or [ni])
        if status is not None and status.code.name == "SKIP":
            return None
        if status is not None:
            return status
    return plugin.filter(state, pod, ni)

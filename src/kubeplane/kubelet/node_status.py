"""Node registration and status: the Node object a simulated node reports, and when to report it.

    node = new_node("kubeplane-node-0", 0, NodeOptions(), runtime_version="kubeplane-sim://0.1.0")
    status_changed(old_status, new_status)      # ignoring heartbeat times

A simulated node's address is data only (nothing listens on it): node i gets InternalIP
172.18.x.y counted from 172.18.0.2 (node 0) and pod CIDR 10.(244 + i // 256).(i % 256).0/24, so
1,000 nodes get 172.18.0.2 ... 172.18.3.233 and 10.244.0.0/24 ... 10.247.231.0/24. A node with a
real address (NodeOptions.address: the kubelet's server, or 127.0.0.1 where the process runtime
runs pods) reports that instead, with its kubelet's port in daemonEndpoints.kubeletEndpoint.

Upstream: pkg/kubelet/kubelet_node_status.go (initialNode, registerWithAPIServer,
tryUpdateNodeStatus) and pkg/kubelet/nodestatus/setters.go (NodeAddress, MachineInfo,
VersionInfo, DaemonEndpoints, ReadyCondition, MemoryPressureCondition, ...).
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from ..api.types import core_v1, meta_v1
from ..utils.clock import rfc3339

Obj = dict[str, Any]

KUBELET_VERSION = "v1.37.0-kubeplane"
NODE_STATUS_UPDATE_FREQUENCY = 10.0        # seconds: how often the kubelet computes its status
NODE_STATUS_REPORT_FREQUENCY = 300.0       # seconds: write at least this often when unchanged


@dataclass(frozen=True)
class NodeOptions:
    cpu: str = "4"
    memory: str = "16Gi"
    pods: str = "110"
    ephemeral_storage: str = "100Gi"
    architecture: str = "amd64"
    operating_system: str = "linux"
    os_image: str = "kubeplane simulated node"
    kernel_version: str = "6.1.0-kubeplane"
    instance_type: str = ""                # node.kubernetes.io/instance-type label when set
    kubelet_port: int = 10250              # status.daemonEndpoints.kubeletEndpoint.Port
    address: str = ""                      # InternalIP of every node; "" = the fake node_ip(i)


def node_ip(index: int) -> str:
    """172.18.0.2 for node 0, 172.18.0.255 for node 253, 172.18.1.0 for node 254 ..."""
    n = index + 2
    return f"172.18.{n // 256}.{n % 256}"


def pod_cidr(index: int) -> str:
    return f"10.{244 + index // 256}.{index % 256}.0/24"


def _machine_id(name: str) -> str:
    return hashlib.md5(name.encode()).hexdigest()          # stable per node name, not secret


def new_node(name: str, index: int, options: NodeOptions, *, runtime_version: str, now: float,
             address: str = "", cidr: str = "") -> core_v1.Node:
    """The Node to register; its InternalIP is address, else options.address, else node_ip(index);
    its podCIDR cidr, else pod_cidr(index).

    Upstream: initialNode + the setters on first status.
    """
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": options.operating_system,
              "kubernetes.io/arch": options.architecture, "beta.kubernetes.io/os": options.operating_system,
              "beta.kubernetes.io/arch": options.architecture}
    if options.instance_type:
        labels["node.kubernetes.io/instance-type"] = options.instance_type
    cidr = cidr or pod_cidr(index)
    return core_v1.Node(
        metadata=meta_v1.ObjectMeta(name=name, labels=labels,
                                    annotations={"node.alpha.kubernetes.io/ttl": "0",
                                                 "kubeplane.io/simulated": "true"}),
        spec=core_v1.NodeSpec(pod_cidr=cidr, pod_cidrs=[cidr]),
        status=core_v1.NodeStatus(**_status_fields(name, address or options.address or node_ip(index), options,
                                                   runtime_version, now)))


def _status_fields(name: str, ip: str, options: NodeOptions, runtime_version: str, now: float) -> dict[str, Any]:
    resources = {"cpu": options.cpu, "memory": options.memory, "pods": options.pods,
                 "ephemeral-storage": options.ephemeral_storage}
    mid = _machine_id(name)
    return dict(
        addresses=[core_v1.NodeAddress(type="InternalIP", address=ip),
                   core_v1.NodeAddress(type="Hostname", address=name)],
        capacity=dict(resources), allocatable=dict(resources),
        conditions=[core_v1.NodeCondition(**c) for c in node_conditions(now)],
        daemon_endpoints=core_v1.NodeDaemonEndpoints(kubelet_endpoint=core_v1.DaemonEndpoint(port=options.kubelet_port)),
        node_info=core_v1.NodeSystemInfo(
            machine_id=mid, system_uuid=str(uuid.UUID(mid)), boot_id=str(uuid.UUID(_machine_id(name + "/boot"))),
            kernel_version=options.kernel_version, os_image=options.os_image,
            container_runtime_version=runtime_version, kubelet_version=KUBELET_VERSION,
            kube_proxy_version="",        # deprecated: kubelets no longer report it, Go still writes ""
            operating_system=options.operating_system, architecture=options.architecture),
        phase=None)


_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_conditions(now: float, transition: float | None = None) -> list[dict[str, Any]]:
    """The four conditions a healthy kubelet reports, in upstream's order, heartbeat = now.

    Upstream: MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition,
    ReadyCondition (nodestatus/setters.go)
    """
    t, lt = rfc3339(now), rfc3339(transition if transition is not None else now)
    return [dict(type=ty, status=st, reason=r, message=m, last_heartbeat_time=t, last_transition_time=lt)
            for ty, st, r, m in _CONDITIONS]


def keep_transition_times(new: core_v1.NodeStatus | None, old: core_v1.NodeStatus | None) -> core_v1.NodeStatus | None:
    """new, with each condition's lastTransitionTime taken from old's condition of that type
    when its status is unchanged (a restarted kubelet re-registering its node: Ready since
    10:00 stays Ready since 10:00). Upstream: the condition setters keep the transition time
    of an unchanged status (nodestatus/setters.go ReadyCondition)."""
    before = {c.type: c for c in (old.conditions if old is not None else None) or ()}
    for c in (new.conditions if new is not None else None) or ():
        prev = before.get(c.type)
        if prev is not None and prev.status == c.status and prev.last_transition_time:
            c.last_transition_time = prev.last_transition_time
    return new


def with_heartbeat(status: Obj, now: float) -> Obj:
    """status (wire dict) with every condition's lastHeartbeatTime set to now.

    Upstream: the setters run on each tryUpdateNodeStatus and stamp the heartbeat.
    """
    t = rfc3339(now)
    return {**status, "conditions": [{**c, "lastHeartbeatTime": t} for c in status.get("conditions") or ()]}


def status_changed(old: Obj, new: Obj) -> bool:
    """Whether anything but heartbeat times differs. Upstream: nodeStatusHasChanged"""
    def strip(s: Obj) -> Obj:
        return {**s, "conditions": [{k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                                    for c in s.get("conditions") or ()]}
    return strip(old) != strip(new)


def needs_report(old: Obj, new: Obj, last_report: float, now: float) -> bool:
    """Report when the status changed, or nodeStatusReportFrequency has passed since the last
    report. Upstream: tryUpdateNodeStatus's shouldPatchNodeStatus check. Example: reported at
    10:00:00, unchanged -> the checks at 10:00:10 ... 10:04:50 skip, 10:05:00 writes."""
    return status_changed(old, new) or now - last_report >= NODE_STATUS_REPORT_FREQUENCY

"""NodeInfo, PodInfo and friends: the scheduler's pre-digested view of nodes and pods.

Upstream: pkg/scheduler/framework/types.go and component-helpers' resource.PodRequests. A
PodInfo parses a pod's affinity terms and resource requests once; a NodeInfo aggregates what
its pods request and which host ports they hold, and bumps a generation on every change so
the snapshot can copy only what changed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ...api import labels, types
from ...api.types.core_v1 import Container, Node, Pod, PodAffinityTerm
from ..quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, milli_value, resource_value
from ..quantity import value as quantity_value
from .interface import Code, NodeToStatus, Status

# Requests assumed for a container that asks for nothing, so that scoring still spreads
# BestEffort pods. Upstream: DefaultMilliCPURequest / DefaultMemoryRequest (pkg/scheduler/util).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

LABEL_HOSTNAME = "kubernetes.io/hostname"

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing counter. Upstream: nextGeneration"""
    return next(_generation)


class Resource:
    """Compute resources in the units the scheduler compares: millicores, bytes, counts.

    Upstream: framework.Resource
    """

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number", "scalar_resources")

    def __init__(self, milli_cpu: int = 0, memory: int = 0, ephemeral_storage: int = 0,
                 allowed_pod_number: int = 0, scalar_resources: dict[str, int] | None = None) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar_resources: dict[str, int] = scalar_resources or {}

    @classmethod
    def from_list(cls, rl: dict[str, Any] | None) -> Resource:
        """Upstream: NewResource(rl)."""
        r = cls()
        r.add(rl)
        return r

    def add(self, rl: dict[str, Any] | None) -> None:
        """Add a ResourceList (quantities). Upstream: Resource.Add"""
        for name, q in (rl or {}).items():
            if name == CPU:
                self.milli_cpu += resource_value(CPU, q)
            elif name == MEMORY:
                self.memory += resource_value(MEMORY, q)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += resource_value(name, q)
            elif name == PODS:
                self.allowed_pod_number += resource_value(name, q)
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = self.scalar_resources.get(name, 0) + resource_value(name, q)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                        dict(self.scalar_resources))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        return (f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
                f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
                f"scalar={self.scalar_resources})")


def is_scalar_resource_name(name: str) -> bool:
    """Extended (domain-prefixed, not kubernetes.io/), hugepages-* or attachable-volumes-*.

    Upstream: schedutil.IsScalarResourceName (v1helper)
    """
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    return "/" in name and not name.startswith(("kubernetes.io/", "requests."))


# --- pod requests -----------------------------------------------------------------------------

def _add_requests(r: Resource, rl: dict[str, Any] | None, non_zero: bool) -> None:
    """Add one container's requests (a ResourceList) into r.

    "pods" in a container's requests is not a pod request and is dropped. With non_zero,
    only a *missing* cpu/memory request gets the default; an explicit "0" stays 0.
    Upstream: PodResourcesOptions.NonMissingContainerRequests
    """
    if rl:
        for name, q in rl.items():
            if name == CPU:
                r.milli_cpu += milli_value(q)
            elif name == MEMORY:
                r.memory += quantity_value(q)
            elif name == EPHEMERAL_STORAGE:
                r.ephemeral_storage += quantity_value(q)
            elif name != PODS and is_scalar_resource_name(name):
                r.scalar_resources[name] = r.scalar_resources.get(name, 0) + quantity_value(q)
    if non_zero:
        if not rl or CPU not in rl:
            r.milli_cpu += DEFAULT_MILLI_CPU_REQUEST
        if not rl or MEMORY not in rl:
            r.memory += DEFAULT_MEMORY_REQUEST


def _container_resource(c: Container, non_zero: bool) -> Resource:
    r = Resource()
    _add_requests(r, c.resources.requests if c.resources else None, non_zero)
    return r


def _add(a: Resource, b: Resource) -> None:
    a.milli_cpu += b.milli_cpu
    a.memory += b.memory
    a.ephemeral_storage += b.ephemeral_storage
    for k, v in b.scalar_resources.items():
        a.scalar_resources[k] = a.scalar_resources.get(k, 0) + v


def _max_into(a: Resource, b: Resource) -> None:
    a.milli_cpu = max(a.milli_cpu, b.milli_cpu)
    a.memory = max(a.memory, b.memory)
    a.ephemeral_storage = max(a.ephemeral_storage, b.ephemeral_storage)
    for k, v in b.scalar_resources.items():
        a.scalar_resources[k] = max(a.scalar_resources.get(k, 0), v)


def pod_requests(pod: Pod, *, non_zero: bool = False, exclude_overhead: bool = False) -> Resource:
    """What a pod asks for: max(sum(containers) + sidecars, any init container) + overhead.

    Regular init containers run one at a time before the app containers, so only the
    largest counts; restartable init containers (sidecars, restartPolicy Always) keep
    running and add up. Example: containers 100m + 200m, init containers 500m and 250m ->
    max(300m, 500m) = 500m; with overhead 50m -> 550m.
    Upstream: resourcehelper.PodRequests (component-helpers/resource/helpers.go)
    """
    spec = pod.spec
    reqs = Resource()
    if spec is None:
        return reqs
    for c in spec.containers or ():
        res = c.resources
        _add_requests(reqs, res.requests if res is not None else None, non_zero)
    restartable = Resource()
    init_reqs = Resource()
    for c in spec.init_containers or ():
        creqs = _container_resource(c, non_zero)
        if c.restart_policy == "Always":
            _add(reqs, creqs)
            _add(restartable, creqs)
            creqs = restartable.clone()
        else:
            _add(creqs, restartable)
        _max_into(init_reqs, creqs)
    _max_into(reqs, init_reqs)
    if not exclude_overhead and spec.overhead:
        _add_requests(reqs, spec.overhead, False)
    return reqs


# --- affinity terms -------------------------------------------------------------------------

def selector_from(ls: Any) -> labels.Selector | None:
    """metav1.LabelSelectorAsSelector for a typed LabelSelector: None selects nothing."""
    if ls is None:
        return None
    return labels.from_label_selector(types.to_dict(ls))


def selector_matches(sel: labels.Selector | None, lbls: dict[str, str] | None) -> bool:
    return sel is not None and labels.matches(sel, lbls)


@dataclass(frozen=True)
class AffinityTerm:
    """A parsed PodAffinityTerm. Upstream: framework.AffinityTerm"""

    namespaces: frozenset[str]
    selector: labels.Selector | None
    topology_key: str
    namespace_selector: labels.Selector | None

    def matches(self, pod: Pod, ns_labels: dict[str, str] | None) -> bool:
        """Whether pod is in the term's namespaces and matches its selector.

        Namespace labels come from a namespace lister upstream; without one (None) only an
        empty namespaceSelector (all namespaces) matches by selector.
        """
        meta = pod.metadata
        if meta.namespace in self.namespaces or (
                self.namespace_selector is not None and labels.matches(self.namespace_selector, ns_labels)):
            return selector_matches(self.selector, meta.labels)
        return False


@dataclass(frozen=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def new_affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """Upstream: newAffinityTerm + getNamespacesFromPodAffinityTerm."""
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset([pod.metadata.namespace or ""])
    else:
        namespaces = frozenset(term.namespaces or ())
    return AffinityTerm(namespaces, selector_from(term.label_selector), term.topology_key or "",
                        selector_from(term.namespace_selector))


class PodInfo:
    """A pod plus its parsed affinity terms and requests. Upstream: framework.PodInfo"""

    __slots__ = ("pod", "uid", "key", "required_affinity_terms", "required_anti_affinity_terms",
                 "preferred_affinity_terms", "preferred_anti_affinity_terms", "_requests", "_non_zero",
                 "_ports")

    def __init__(self, pod: Pod) -> None:
        self.update(pod)

    def update(self, pod: Pod) -> None:
        """Re-parse after the pod changed. Upstream: PodInfo.Update"""
        self.pod = pod
        meta = pod.metadata
        self.key = f"{meta.namespace}/{meta.name}"
        self.uid = meta.uid or self.key
        self._requests: Resource | None = None
        self._non_zero: Resource | None = None
        self._ports: list[tuple[str, str, int]] | None = None
        aff = pod.spec.affinity if pod.spec else None
        pa = aff.pod_affinity if aff else None
        paa = aff.pod_anti_affinity if aff else None
        self.required_affinity_terms = [new_affinity_term(pod, t) for t in
                                        (pa.required_during_scheduling_ignored_during_execution or ())] if pa else []
        self.required_anti_affinity_terms = [new_affinity_term(pod, t) for t in (
            paa.required_during_scheduling_ignored_during_execution or ())] if paa else []
        self.preferred_affinity_terms = _weighted(pod, pa.preferred_during_scheduling_ignored_during_execution
                                                  if pa else None)
        self.preferred_anti_affinity_terms = _weighted(pod, paa.preferred_during_scheduling_ignored_during_execution
                                                       if paa else None)

    def for_assumed(self, pod: Pod) -> PodInfo:
        """A PodInfo of pod, the assumed copy of this one's pod (the same but for
        spec.nodeName): its parsed terms, and its requests and ports if already worked out,
        are this one's (read-only, shared). Upstream: schedulingCycle's podInfo.DeepCopy()
        for the assumed pod; here the cache's PodInfo of it need not parse the pod again."""
        c = PodInfo.__new__(PodInfo)
        c.pod = pod
        c.key, c.uid = self.key, self.uid
        c._requests, c._non_zero, c._ports = self._requests, self._non_zero, self._ports
        c.required_affinity_terms = self.required_affinity_terms
        c.required_anti_affinity_terms = self.required_anti_affinity_terms
        c.preferred_affinity_terms = self.preferred_affinity_terms
        c.preferred_anti_affinity_terms = self.preferred_anti_affinity_terms
        return c

    @property
    def requests(self) -> Resource:
        if self._requests is None:
            self._requests = pod_requests(self.pod)
        return self._requests

    @property
    def non_zero_requests(self) -> Resource:
        if self._non_zero is None:
            self._non_zero = pod_requests(self.pod, non_zero=True)
        return self._non_zero

    @property
    def host_ports(self) -> list[tuple[str, str, int]]:
        """(hostIP, protocol, hostPort) of every container port with a hostPort."""
        if self._ports is None:
            self._ports = get_container_ports(self.pod)
        return self._ports

    def has_affinity(self) -> bool:
        aff = self.pod.spec.affinity if self.pod.spec else None
        return aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


POD_INFO_STATE_KEY = "PodInfo"      # CycleState: the PodInfo of the pod being scheduled


def cycle_pod_info(state: Any, pod: Pod) -> PodInfo:
    """The PodInfo of the pod a cycle schedules: the queue's (written by the scheduling
    cycle), or one made on first use and kept in the state, so the plugins of one cycle parse
    the pod and compute its requests once (upstream hands PodInfo to plugins that want it)."""
    storage = state.storage
    pi = storage.get(POD_INFO_STATE_KEY)
    if pi is None or pi.pod is not pod:
        pi = storage[POD_INFO_STATE_KEY] = PodInfo(pod)
    return pi


def _weighted(pod: Pod, terms: Any) -> list[WeightedAffinityTerm]:
    return [WeightedAffinityTerm(new_affinity_term(pod, t.pod_affinity_term), t.weight or 0)
            for t in terms or () if t.pod_affinity_term is not None]


def get_container_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """Host ports a pod claims, with upstream's defaults (IP 0.0.0.0, protocol TCP).

    Upstream: schedutil.GetHostPorts / NodeInfo.updateUsedPorts
    """
    out = []
    spec = pod.spec
    containers = list(spec.containers or ()) + [c for c in spec.init_containers or () if c.restart_policy == "Always"]
    for c in containers:
        for p in c.ports or ():
            if p.host_port and p.host_port > 0:
                out.append((p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or "TCP", p.host_port))
    return out


DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class HostPortInfo(dict[str, set[tuple[str, int]]]):
    """ip -> {(protocol, port)}. Upstream: framework.HostPortInfo"""

    def add(self, ip: str, protocol: str, port: int) -> None:
        self.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        s = self.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        """0.0.0.0 conflicts with the same protocol/port on any IP; a specific IP conflicts
        with itself and with 0.0.0.0. Upstream: HostPortInfo.CheckConflict"""
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self.values())
        return pp in self.get(ip, ()) or pp in self.get(DEFAULT_BIND_ALL_HOST_IP, ())

    def clone(self) -> HostPortInfo:
        h = HostPortInfo()
        for ip, s in self.items():
            h[ip] = set(s)
        return h


class NodeInfo:
    """A node and the aggregate of the pods on it (including assumed ones).

    Invariant: requested/non_zero_requested equal the sums over `pods`, used_ports holds
    exactly their host ports, and generation grows on every change.

    pods_with_affinity, pods_with_required_anti_affinity, used_ports and allocatable are
    replaced, never changed in place, so a snapshot() shares them (ours: the copy per changed
    node and cycle makes two containers and two Resources, not eight objects).
    Upstream: framework.NodeInfo
    """

    __slots__ = ("node", "name", "pods", "pods_with_affinity", "pods_with_required_anti_affinity", "used_ports",
                 "requested", "non_zero_requested", "allocatable", "generation", "pod_index", "pods_generation",
                 "layout_generation")

    def __init__(self, *pods: Pod) -> None:
        self.node: Node | None = None
        self.name = ""
        self.pods: list[PodInfo] = []
        # uid -> the first PodInfo in `pods` with that uid: O(1) removal (upstream scans).
        self.pod_index: dict[str, PodInfo] = {}
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.generation = next_generation()
        # Ours: the generation of the last change of which pods are here or of what selects
        # them (namespace, labels, deletion timestamp); a status write leaves it. Counts of
        # pods matching a selector stay valid while it stays (PodTopologySpread's).
        self.pods_generation = self.generation
        # Ours: the generation of the last change other than replace_pod's (a pod object
        # swapped inside its shared PodInfo): while a snapshot's copy has the same
        # layout_generation, its lists hold the same PodInfos and its sums are the same, so
        # bringing it up to date is taking the generations (refresh_snapshot).
        self.layout_generation = self.generation
        for p in pods:
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        """Upstream: NodeInfo.SetNode"""
        self.node = node
        self.name = node.metadata.name or ""
        self.allocatable = Resource.from_list(node.status.allocatable if node.status else None)
        self.generation = self.layout_generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.generation = self.layout_generation = next_generation()

    def add_pod(self, pod: Pod) -> None:
        self.add_pod_info(PodInfo(pod))

    def add_pod_info(self, pi: PodInfo) -> None:
        """Upstream: NodeInfo.AddPodInfo"""
        self.pods.append(pi)
        self.pod_index.setdefault(pi.uid, pi)
        if pi.has_affinity():
            self.pods_with_affinity = [*self.pods_with_affinity, pi]     # replaced: see the class
        if pi.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity = [*self.pods_with_required_anti_affinity, pi]
        self._update(pi, 1)
        self.pods_generation = self.generation

    def remove_pod(self, pod: Pod) -> None:
        """Upstream: NodeInfo.RemovePod; KeyError if the pod is not on this node.

        The index finds the pod without a scan; a uid added twice (never by the cache) falls
        back to the scan for the later copies.
        """
        meta = pod.metadata
        uid = meta.uid or f"{meta.namespace}/{meta.name}"
        pi = self.pod_index.pop(uid, None)
        if pi is not None:
            self.pods.remove(pi)          # by identity (PodInfo has no __eq__), at C speed
        else:
            for i, p in enumerate(self.pods):
                if p.uid == uid:
                    pi = p
                    del self.pods[i]
                    break
            else:
                raise KeyError(f"no corresponding pod {meta.name} in pods of node {self.name}")
        if self.pods_with_affinity:
            self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
        if self.pods_with_required_anti_affinity:
            self.pods_with_required_anti_affinity = [p for p in self.pods_with_required_anti_affinity
                                                     if p.uid != uid]
        self._update(pi, -1)
        self.pods_generation = self.generation

    def replace_pod(self, old: Pod, new: Pod) -> bool:
        """Swap in new for old, whose spec is the same (so are requests, ports and affinity
        terms); False if old is not here. A change all the same: the generation moves."""
        meta = old.metadata
        pi = self.pod_index.get(meta.uid or f"{meta.namespace}/{meta.name}")
        if pi is None:
            return False
        pi.pod = new
        self.generation = next_generation()
        new_meta = new.metadata
        if (new_meta.labels != meta.labels or new_meta.namespace != meta.namespace
                or new_meta.deletion_timestamp != meta.deletion_timestamp):
            self.pods_generation = self.generation
        return True

    def _update(self, pi: PodInfo, sign: int) -> None:
        res, non0 = pi.requests, pi.non_zero_requests
        r = self.requested
        r.milli_cpu += sign * res.milli_cpu
        r.memory += sign * res.memory
        r.ephemeral_storage += sign * res.ephemeral_storage
        for k, v in res.scalar_resources.items():
            r.scalar_resources[k] = r.scalar_resources.get(k, 0) + sign * v
        self.non_zero_requested.milli_cpu += sign * non0.milli_cpu
        self.non_zero_requested.memory += sign * non0.memory
        if pi.host_ports:
            ports = self.used_ports.clone()          # replaced: see the class
            for ip, proto, port in pi.host_ports:
                if sign > 0:
                    ports.add(ip, proto, port)
                else:
                    ports.remove(ip, proto, port)
            self.used_ports = ports
        self.generation = self.layout_generation = next_generation()

    def snapshot(self) -> NodeInfo:
        """A copy whose lists and counters are independent (pods are shared, read-only).

        Upstream: NodeInfo.Snapshot
        """
        c = NodeInfo.__new__(NodeInfo)
        self.snapshot_into(c)
        return c

    def snapshot_into(self, c: NodeInfo) -> None:
        """Make c what snapshot() returns (the snapshot's NodeInfo updated in place)."""
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pod_index = dict(self.pod_index)
        c.pods_with_affinity = self.pods_with_affinity            # shared: never changed in place
        c.pods_with_required_anti_affinity = self.pods_with_required_anti_affinity
        c.used_ports = self.used_ports
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable
        c.generation = self.generation
        c.pods_generation = self.pods_generation
        c.layout_generation = self.layout_generation

    def refresh_snapshot(self, c: NodeInfo) -> None:
        """Bring c, a snapshot() of this NodeInfo, up to date: snapshot_into, or only the
        generations when nothing but replace_pod happened since c was taken (c's lists hold
        the PodInfos replace_pod updated in place; its sums and ports are unchanged).

        Ours: in a rolling update most changes are status writes (replace_pod), and at 1,000
        nodes most of a cycle's changed nodes changed only so.
        """
        if c.layout_generation == self.layout_generation and c.node is self.node:
            c.generation = self.generation
            c.pods_generation = self.pods_generation
        else:
            self.snapshot_into(c)

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={[p.key for p in self.pods]}, requested={self.requested})"


# --- queueing and failures -------------------------------------------------------------------

@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with its queueing bookkeeping. Upstream: QueuedPodInfo"""

    pod_info: PodInfo
    timestamp: float = 0.0                 # when it was added or last moved (clock.now())
    attempts: int = 0                      # scheduling attempts so far
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return self.pod_info.key


NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"   # Upstream: NoNodeAvailableMsg
SEPARATOR_FORMAT = " {}."                             # Upstream: SeparatorFormat


@dataclass
class Diagnosis:
    """Why a pod fits nowhere. Upstream: framework.Diagnosis"""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """No node fits the pod. Upstream: framework.FitError"""

    def __init__(self, pod: Pod | None, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        """The message users read in `kubectl describe pod`.

        Reasons are counted over nodes and the "<count> <reason>" strings sorted as strings
        (so "10 Insufficient cpu" sorts before "2 Insufficient memory"), joined by ", ":
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu." A PreFilter
        rejection replaces the histogram; the PostFilter (preemption) message follows,
        each part closed by SEPARATOR_FORMAT's full stop.
        Upstream: FitError.Error
        """
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += SEPARATOR_FORMAT.format(d.pre_filter_msg)
        else:
            histogram: dict[str, int] = {}
            for status in d.node_to_status.statuses.values():
                for reason in status.reasons:
                    histogram[reason] = histogram.get(reason, 0) + 1
            absent = self.num_all_nodes - len(d.node_to_status)
            if absent > 0:      # nodes never filtered carry the map's absent-nodes status
                for reason in d.node_to_status.absent_nodes_status.reasons:
                    histogram[reason] = histogram.get(reason, 0) + absent
            counted = sorted(f"{n} {reason}" for reason, n in histogram.items())
            if counted:
                msg += SEPARATOR_FORMAT.format(", ".join(counted))
        if d.post_filter_msg:
            msg += SEPARATOR_FORMAT.format(d.post_filter_msg)
        return msg


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

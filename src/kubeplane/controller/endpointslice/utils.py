"""Pure helpers of the EndpointSlice reconciler: which pods are endpoints, their ports and
addresses, slice labels, the endpoint set keyed by upstream's endpoint hash.

Upstream: k8s.io/endpointslice utils.go and util/controller_utils.go, and
pkg/api/v1/pod FindPort (pod ports named by a Service's targetPort).
"""
from __future__ import annotations

import ipaddress
from typing import Iterator

from ...api.types import core_v1, discovery_v1
from ...utils.clock import rfc3339, rfc3339_micro
from .. import controller_utils as cu

# Upstream: discovery.LabelServiceName, LabelManagedBy, v1.IsHeadlessService, v1.LabelTopologyZone.
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
IS_HEADLESS_SERVICE = "service.kubernetes.io/headless"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
# Upstream: v1.EndpointsLastChangeTriggerTime.
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
# Upstream: ControllerName (endpointslice_controller.go): the managed-by value of our slices.
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6 = "IPv4", "IPv6"
CLUSTER_IP_NONE = "None"

EndpointKey = tuple[tuple[str, ...], str, str, str]
PortMapKey = tuple[tuple[str, int, str, str], ...]


class PortNotFound(Exception):
    """Upstream: FindPort's "no suitable port for manifest" error."""


def is_ipv6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return False


def is_pod_terminal(pod: core_v1.Pod) -> bool:
    """Upstream: podutil.IsPodTerminal"""
    phase = pod.status.phase if pod.status else None
    return phase in ("Failed", "Succeeded")


def pod_ips(pod: core_v1.Pod) -> list[str]:
    """status.podIPs, else status.podIP (an old kubelet)."""
    st = pod.status
    if st is None:
        return []
    if st.pod_ips:
        return [p.ip for p in st.pod_ips if p.ip]
    return [st.pod_ip] if st.pod_ip else []


def should_pod_be_in_endpoints(pod: core_v1.Pod, include_terminating: bool) -> bool:
    """A pod is an endpoint once it has an IP, until it is terminal (terminating pods stay,
    marked so, when include_terminating). Upstream: ShouldPodBeInEndpoints"""
    if is_pod_terminal(pod):
        return False
    if not pod_ips(pod):
        return False
    if not include_terminating and pod.metadata.deletion_timestamp is not None:
        return False
    return True


def is_service_ip_set(service: core_v1.Service) -> bool:
    """Upstream: helper.IsServiceIPSet"""
    ip = service.spec.cluster_ip if service.spec else None
    return bool(ip) and ip != CLUSTER_IP_NONE


def find_port(pod: core_v1.Pod, svc_port: core_v1.ServicePort) -> int:
    """The container port a Service port's targetPort names (a name is looked up among the
    pod's containers and restartable init containers with the same protocol), or its number.
    Upstream: podutil.FindPort"""
    target = svc_port.target_port if svc_port.target_port is not None else svc_port.port
    if isinstance(target, str):
        if target.isdigit():                   # intstr from a string holding a number
            return int(target)
        proto = svc_port.protocol or "TCP"
        spec = pod.spec
        containers = list(spec.containers or []) if spec else []
        if spec is not None:
            containers += [c for c in spec.init_containers or [] if c.restart_policy == "Always"]
        for c in containers:
            for p in c.ports or []:
                if p.name == target and (p.protocol or "TCP") == proto:
                    return int(p.container_port or 0)
        raise PortNotFound(f"no suitable port for manifest: {pod.metadata.uid}")
    return int(target or 0)


def get_endpoint_ports(service: core_v1.Service, pod: core_v1.Pod) -> list[discovery_v1.EndpointPort]:
    """One EndpointPort per Service port the pod has (a named targetPort the pod lacks is
    skipped). A headless Service may have no ports. Upstream: getEndpointPorts"""
    spec = service.spec
    ports: list[discovery_v1.EndpointPort] = []
    if spec is None or (not spec.ports and spec.cluster_ip == CLUSTER_IP_NONE):
        return ports
    for sp in spec.ports or []:
        try:
            num = find_port(pod, sp)
        except PortNotFound:
            continue
        ports.append(discovery_v1.EndpointPort(port=num, name=sp.name or "", protocol=sp.protocol,
                                               app_protocol=sp.app_protocol))
    return ports


def port_map_key(ports: list[discovery_v1.EndpointPort] | None) -> PortMapKey:
    """Slices with the same ports (in any order) share a key. Upstream: NewPortMapKey"""
    return tuple(sorted((p.name or "", p.port or 0, p.protocol or "", p.app_protocol or "") for p in ports or []))


def get_endpoint_addresses(pod: core_v1.Pod, address_type: str) -> list[str]:
    """The pod's IPs of the slice's family. Upstream: getEndpointAddresses"""
    return [ip for ip in pod_ips(pod) if is_ipv6(ip) == (address_type == ADDRESS_TYPE_IPV6)]


def should_set_hostname(pod: core_v1.Pod, service: core_v1.Service) -> bool:
    """Upstream: ShouldSetHostname"""
    spec = pod.spec
    return bool(spec and spec.hostname and spec.subdomain == service.metadata.name
                and service.metadata.namespace == pod.metadata.namespace)


def pod_to_endpoint(pod: core_v1.Pod, node: core_v1.Node | None, service: core_v1.Service,
                    address_type: str) -> discovery_v1.Endpoint:
    """The endpoint of a pod: `serving` is readiness, `terminating` the deletion, and `ready`
    serving and not terminating (always, with publishNotReadyAddresses). Upstream: podToEndpoint"""
    serving = cu.is_pod_ready(pod)
    terminating = pod.metadata.deletion_timestamp is not None
    ready = bool(service.spec and service.spec.publish_not_ready_addresses) or (serving and not terminating)
    zone = ((node.metadata.labels or {}).get(LABEL_TOPOLOGY_ZONE) or None) if node is not None else None
    return discovery_v1.Endpoint(
        addresses=get_endpoint_addresses(pod, address_type),
        conditions=discovery_v1.EndpointConditions(ready=ready, serving=serving, terminating=terminating),
        target_ref=core_v1.ObjectReference(kind="Pod", namespace=pod.metadata.namespace, name=pod.metadata.name,
                                           uid=pod.metadata.uid),
        node_name=(pod.spec.node_name if pod.spec else None) or None,
        zone=zone,
        hostname=pod.spec.hostname if pod.spec and should_set_hostname(pod, service) else None)


def get_address_types_for_service(service: core_v1.Service) -> list[str]:
    """The slice address types a Service's ipFamilies call for; without families, the family
    of its clusterIP, and for a headless one both. Upstream: getAddressTypesForService"""
    spec = service.spec or core_v1.ServiceSpec()
    types_ = []
    for family in spec.ip_families or []:
        if family == "IPv4" and ADDRESS_TYPE_IPV4 not in types_:
            types_.append(ADDRESS_TYPE_IPV4)
        elif family == "IPv6" and ADDRESS_TYPE_IPV6 not in types_:
            types_.append(ADDRESS_TYPE_IPV6)
    if types_:
        return types_
    if spec.cluster_ip and spec.cluster_ip != CLUSTER_IP_NONE:
        return [ADDRESS_TYPE_IPV6 if is_ipv6(spec.cluster_ip) else ADDRESS_TYPE_IPV4]
    return [ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6]


def is_reserved_label_key(key: str) -> bool:
    """Upstream: isReservedLabelKey"""
    return key in (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, IS_HEADLESS_SERVICE)


def set_endpoint_slice_labels(slice_: discovery_v1.EndpointSlice, service: core_v1.Service,
                              controller_name: str) -> tuple[dict[str, str], bool]:
    """The labels a slice of service should carry: the Service's own (reserved keys skipped),
    the headless marker, and the service-name and managed-by labels; and whether the slice's
    copy of the Service's labels is out of date. Upstream: setEndpointSliceLabels"""
    ep_labels = {k: v for k, v in (slice_.metadata.labels or {}).items() if not is_reserved_label_key(k)}
    svc_labels = {k: v for k, v in (service.metadata.labels or {}).items() if not is_reserved_label_key(k)}
    updated = ep_labels != svc_labels
    if not is_service_ip_set(service):
        svc_labels[IS_HEADLESS_SERVICE] = ""
    svc_labels[LABEL_SERVICE_NAME] = service.metadata.name or ""
    svc_labels[LABEL_MANAGED_BY] = controller_name
    return svc_labels, updated


def owned_by(slice_: discovery_v1.EndpointSlice, service: core_v1.Service) -> bool:
    """Upstream: ownedBy — a controller ref to this very Service (same UID)."""
    return any(ref.uid == service.metadata.uid and ref.kind == "Service" and ref.api_version == "v1"
               for ref in slice_.metadata.owner_references or [])


def endpoint_slice_prefix(service_name: str) -> str:
    """generateName of a Service's slices. Upstream: getEndpointSlicePrefix"""
    prefix = f"{service_name}-"
    return prefix if len(prefix) <= 253 - 5 else "slice-"


def new_endpoint_slice(service: core_v1.Service, ports: list[discovery_v1.EndpointPort], address_type: str,
                       controller_name: str) -> discovery_v1.EndpointSlice:
    """An unnamed slice owned by service. Upstream: newEndpointSlice"""
    from ...api.types import meta_v1
    owner = meta_v1.OwnerReference(api_version="v1", kind="Service", name=service.metadata.name,
                                   uid=service.metadata.uid, controller=True, block_owner_deletion=True)
    slice_ = discovery_v1.EndpointSlice(
        metadata=meta_v1.ObjectMeta(labels={}, generate_name=endpoint_slice_prefix(service.metadata.name or ""),
                                    owner_references=[owner], namespace=service.metadata.namespace),
        ports=list(ports), address_type=address_type, endpoints=[])
    slice_.metadata.labels, _ = set_endpoint_slice_labels(slice_, service, controller_name)
    return slice_


def endpoint_key(ep: discovery_v1.Endpoint) -> EndpointKey:
    """What identifies an endpoint across syncs: its addresses, hostname and target.
    Upstream: hashEndpoint"""
    ref = ep.target_ref
    return (tuple(sorted(ep.addresses or [])), ep.hostname or "", (ref.namespace or "") if ref else "",
            (ref.name or "") if ref else "")


class EndpointSet:
    """Endpoints by endpoint_key, in insertion order. Upstream: EndpointSet"""

    def __init__(self) -> None:
        self._items: dict[EndpointKey, discovery_v1.Endpoint] = {}

    def insert(self, ep: discovery_v1.Endpoint) -> None:
        self._items[endpoint_key(ep)] = ep

    def get(self, ep: discovery_v1.Endpoint) -> discovery_v1.Endpoint | None:
        return self._items.get(endpoint_key(ep))

    def delete(self, ep: discovery_v1.Endpoint) -> None:
        self._items.pop(endpoint_key(ep), None)

    def pop_any(self) -> discovery_v1.Endpoint:
        key = next(iter(self._items))
        return self._items.pop(key)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[discovery_v1.Endpoint]:
        return iter(list(self._items.values()))


def get_slice_to_fill(slices: list[discovery_v1.EndpointSlice], num_endpoints: int,
                      max_endpoints: int) -> discovery_v1.EndpointSlice | None:
    """The slice that num_endpoints fill closest to max_endpoints, if any has room.
    Upstream: getSliceToFill"""
    closest_diff, closest = max_endpoints, None
    for s in slices:
        diff = max_endpoints - (num_endpoints + len(s.endpoints or []))
        if 0 <= diff < closest_diff:
            closest_diff, closest = diff, s
            if diff == 0:
                break
    return closest


def rfc3339_nano(ts: float) -> str:
    """Go's time.RFC3339Nano: the fraction without trailing zeros, none when whole."""
    if ts == int(ts):
        return rfc3339(ts)
    whole, _, frac = rfc3339_micro(ts)[:-1].partition(".")
    return f"{whole}.{frac.rstrip('0')}Z"

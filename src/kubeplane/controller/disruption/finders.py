"""How many pods a budget expects: the scale of the controllers of the pods it selects.

A budget with a percentage (or maxUnavailable) counts against the pods that *should* exist, not
those that do: the sum of the replicas of every controller owning a selected pod. A controller is
found through the pod's ControllerRef: a ReplicationController, a Deployment (through its
ReplicaSet), a ReplicaSet of no Deployment, a StatefulSet, or anything else that serves a scale
subresource. Example: a budget of maxUnavailable "25%" over a Deployment of 8 replicas expects 8
pods and needs 8 - ceil(25 % of 8) = 6 healthy, even while only 5 exist.

Upstream: pkg/controller/disruption/disruption.go (finders, getPodReplicationController,
getPodDeployment, getPodReplicaSet, getPodStatefulSet, getScaleController, implementsScale,
verifyGroupKind, getExpectedPodCount, getExpectedScale).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ...api import errors
from ...api.resources import RESOURCES, ResourceInfo
from ...client.rest import ResourceClient
from ..controller_utils import get_controller_of

if TYPE_CHECKING:
    from .disruption import DisruptionController


@dataclass(frozen=True, slots=True)
class ControllerAndScale:
    """A controller's UID and its desired replicas. Upstream: controllerAndScale."""
    uid: str
    scale: int


Finder = Callable[[Any, str], Awaitable["ControllerAndScale | None"]]


def group_of(api_version: str) -> str:
    """schema.ParseGroupVersion(...).Group: "apps/v1" -> "apps", "v1" -> ""."""
    return api_version.rpartition("/")[0]


def verify_group_kind(ref: Any, kind: str, groups: tuple[str, ...]) -> bool:
    """Upstream: verifyGroupKind."""
    return ref.kind == kind and group_of(ref.api_version or "") in groups


def finders(dc: DisruptionController) -> list[Finder]:
    """The workload kinds read from listers, then any kind with a scale subresource.
    Upstream: finders."""
    return [lambda r, ns: get_pod_replication_controller(dc, r, ns), lambda r, ns: get_pod_deployment(dc, r, ns),
            lambda r, ns: get_pod_replica_set(dc, r, ns), lambda r, ns: get_pod_stateful_set(dc, r, ns),
            lambda r, ns: get_scale_controller(dc, r, ns)]


def _get(lister: Any, ns: str, name: str) -> Any:
    try:
        return lister.namespace(ns).get(name)
    except errors.NotFound:
        return None


def _replica_set(dc: DisruptionController, ref: Any, ns: str) -> Any:
    """The ReplicaSet ref names (the same uid), or None."""
    if not verify_group_kind(ref, "ReplicaSet", ("apps", "extensions")):
        return None
    rs = _get(dc.rs_lister, ns, ref.name)
    return rs if rs is not None and rs.metadata.uid == ref.uid else None


async def get_pod_replica_set(dc: DisruptionController, ref: Any, ns: str) -> ControllerAndScale | None:
    """A ReplicaSet that no Deployment controls. Upstream: getPodReplicaSet."""
    rs = _replica_set(dc, ref, ns)
    if rs is None:
        return None
    owner = get_controller_of(rs)
    if owner is not None and owner.kind == "Deployment":
        return None                       # counted by its Deployment
    return ControllerAndScale(rs.metadata.uid, rs.spec.replicas or 0)


async def get_pod_stateful_set(dc: DisruptionController, ref: Any, ns: str) -> ControllerAndScale | None:
    """Upstream: getPodStatefulSet."""
    if not verify_group_kind(ref, "StatefulSet", ("apps",)):
        return None
    ss = _get(dc.ss_lister, ns, ref.name)
    if ss is None or ss.metadata.uid != ref.uid:
        return None
    return ControllerAndScale(ss.metadata.uid, ss.spec.replicas or 0)


async def get_pod_deployment(dc: DisruptionController, ref: Any, ns: str) -> ControllerAndScale | None:
    """The Deployment of the pod's ReplicaSet. Upstream: getPodDeployment."""
    rs = _replica_set(dc, ref, ns)
    if rs is None:
        return None
    owner = get_controller_of(rs)
    if owner is None or not verify_group_kind(owner, "Deployment", ("apps", "extensions")):
        return None
    d = _get(dc.d_lister, rs.metadata.namespace, owner.name)
    if d is None or d.metadata.uid != owner.uid:
        return None
    return ControllerAndScale(d.metadata.uid, d.spec.replicas or 0)


async def get_pod_replication_controller(dc: DisruptionController, ref: Any, ns: str) -> ControllerAndScale | None:
    """Upstream: getPodReplicationController."""
    if not verify_group_kind(ref, "ReplicationController", ("",)):
        return None
    rc = _get(dc.rc_lister, ns, ref.name)
    if rc is None or rc.metadata.uid != ref.uid:
        return None
    return ControllerAndScale(rc.metadata.uid, rc.spec.replicas or 0)


async def get_scale_controller(dc: DisruptionController, ref: Any, ns: str) -> ControllerAndScale | None:
    """Any other controller, through its scale subresource (a missing one is skipped; a kind
    without /scale is an error). Upstream: getScaleController."""
    group = group_of(ref.api_version or "")
    ri = rest_mapping(group, ref.kind)
    try:
        scale = await ResourceClient(dc.client.transport, ri, ns).get_scale(ref.name)
    except errors.NotFound:
        if ri.subresource("scale") is None:     # upstream: implementsScale, from discovery
            raise ValueError(f"{qualified(ri)} does not implement the scale subresource") from None
        return None
    if scale.metadata is None or scale.metadata.uid != ref.uid:
        return None
    return ControllerAndScale(ref.uid, (scale.spec.replicas if scale.spec else None) or 0)


def rest_mapping(group: str, kind: str) -> ResourceInfo:
    """The served resource of group/kind. Upstream: RESTMapper.RESTMapping (NoKindMatchError)."""
    for ri in RESOURCES:
        if ri.group == group and ri.kind == kind:
            return ri
    raise ValueError(f'no matches for kind "{kind}" in group "{group}"')


def qualified(ri: ResourceInfo) -> str:
    """schema.GroupResource.String()."""
    return f"{ri.plural}.{ri.group}" if ri.group else ri.plural


async def get_expected_scale(dc: DisruptionController, pods: list[Any]) -> tuple[int, list[str]]:
    """(sum of the scales of the selected pods' controllers, names of pods with no controller).
    A pod whose controller cannot be found is an error. Upstream: getExpectedScale."""
    controller_scale: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = get_controller_of(pod)
        if ref is None:
            unmanaged.append(pod.metadata.name)
            continue
        if ref.uid in controller_scale:
            continue
        for finder in dc.finders():
            found = await finder(ref, pod.metadata.namespace)
            if found is not None:
                controller_scale[found.uid] = found.scale
                break
        else:
            raise ValueError(f'found no controllers for pod "{pod.metadata.name}"')
    return sum(controller_scale.values()), unmanaged


async def get_expected_pod_count(dc: DisruptionController, pdb: Any, pods: list[Any]) -> tuple[int, int, list[str]]:
    """(expectedCount, desiredHealthy, unmanaged pods) of a budget.

    maxUnavailable and percentage minAvailable scale with the controllers (rounded up: "25%" of
    10 is 3); an integer minAvailable needs no controller at all and expects the pods that
    exist. Example: maxUnavailable 1 over a Deployment of 3 -> expected 3, desired 2.
    Upstream: getExpectedPodCount."""
    from ..deployment.util.deployment_util import get_scaled_value_from_int_or_percent as scaled
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected, unmanaged = await get_expected_scale(dc, pods)
        return expected, max(0, expected - scaled(spec.max_unavailable, expected, True)), unmanaged
    if spec.min_available is not None:
        if isinstance(spec.min_available, int):
            return len(pods), spec.min_available, []
        expected, unmanaged = await get_expected_scale(dc, pods)
        return expected, scaled(spec.min_available, expected, True), unmanaged
    return 0, 0, []

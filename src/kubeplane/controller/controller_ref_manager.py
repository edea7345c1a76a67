"""Claiming objects through ControllerRef: adopt matching orphans, release non-matching ones.

Ownership is decided by the controller ownerReference (UID), never by selectors alone:
* controlled by someone else -> ignore;
* controlled by me, selector matches -> mine (even while I am being deleted: no action needed);
* controlled by me, selector no longer matches -> release (unless I am being deleted);
* orphan, selector matches, neither of us being deleted, same namespace -> adopt, after one
  live GET of myself (`can_adopt`) shows I still exist with the same UID and am not deleting
  (#42639: the cache may not have seen my deletion yet).

Upstream: pkg/controller/controller_ref_manager.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence

import orjson

from ..api import errors, labels
from ..api.types import apps_v1, core_v1
from .controller_utils import GroupVersionKind, PodControlInterface, get_controller_of, label_matcher, new_aggregate

if TYPE_CHECKING:
    from ..client.clientset import Clientset

log = logging.getLogger(__name__)

CanAdoptFunc = Callable[[], Awaitable[None]]


class BaseControllerRefManager:
    """The claim rules, shared by the pod and ReplicaSet managers. Upstream: BaseControllerRefManager"""

    def __init__(self, controller: Any, selector: labels.Selector | None, can_adopt_func: CanAdoptFunc | None) -> None:
        self.controller = controller
        self.selector = selector
        self.can_adopt_func = can_adopt_func
        self._match_labels = label_matcher(selector)
        self._can_adopt_done = False
        self._can_adopt_err: Exception | None = None

    async def can_adopt(self) -> None:
        """Run can_adopt_func once per manager (one live GET per sync at most); raise its error."""
        if not self._can_adopt_done:
            self._can_adopt_done = True
            if self.can_adopt_func is not None:
                try:
                    await self.can_adopt_func()
                except Exception as err:
                    self._can_adopt_err = err
        if self._can_adopt_err is not None:
            raise self._can_adopt_err

    def matches_selector(self, obj: Any) -> bool:
        return self._match_labels(obj.metadata.labels)

    def claim_without_action(self, obj: Any, match: Callable[[Any], bool]) -> bool | None:
        """claim_object's answer when it needs no API call, else None (adopt or release due).

        The common cases, ours-and-matching and someone else's, are decided here without
        creating a coroutine per object.
        """
        for ref in obj.metadata.owner_references or ():   # get_controller_of, written out for speed
            if ref.controller:
                if ref.uid != self.controller.metadata.uid:
                    return False
                return True if match(obj) else None
        return None if match(obj) else False

    async def claim_object(self, obj: Any, match: Callable[[Any], bool], adopt: Callable[[Any], Awaitable[None]],
                           release: Callable[[Any], Awaitable[None]]) -> bool:
        """Whether obj is (now) ours; adopts or releases as the rules in the module say.

        NotFound while adopting/releasing means the object is gone: not ours, no error.
        Upstream: ClaimObject
        """
        ctrl_meta = self.controller.metadata
        ref = get_controller_of(obj)
        if ref is not None:
            if ref.uid != ctrl_meta.uid:
                return False                    # owned by someone else
            if match(obj):
                return True
            if ctrl_meta.deletion_timestamp is not None:
                return False                    # being deleted: take no action
            await _ignore_not_found(release, obj)
            return False
        if ctrl_meta.deletion_timestamp is not None or not match(obj):
            return False
        if obj.metadata.deletion_timestamp is not None:
            return False
        if ctrl_meta.namespace and ctrl_meta.namespace != obj.metadata.namespace:
            return False
        return await _ignore_not_found(adopt, obj)


def _pod_matcher(match_labels: Callable[[Any], bool],
                 filters: Sequence[Callable[[core_v1.Pod], bool]]) -> Callable[[core_v1.Pod], bool]:
    """Selector first, so filters only run on pods that might be ours (as upstream)."""
    if not filters:
        return lambda pod: match_labels(pod.metadata.labels)
    return lambda pod: match_labels(pod.metadata.labels) and all(f(pod) for f in filters)


async def _ignore_not_found(action: Callable[[Any], Awaitable[None]], obj: Any) -> bool:
    try:
        await action(obj)
    except errors.NotFound:
        return False
    return True


# --- patches ----------------------------------------------------------------------------------

def owner_ref_controller_patch(controller: Any, controller_kind: GroupVersionKind, uid: str,
                               *finalizers: str) -> bytes:
    """The strategic-merge patch that adds controller as the object's controller ref.

    metadata.uid pins the patch to this incarnation of the object: if it was deleted and
    re-created under the same name, the API server rejects the patch (uid is immutable).
    Upstream: ownerRefControllerPatch
    """
    meta: dict[str, Any] = {
        "ownerReferences": [{
            "apiVersion": controller_kind.group_version(), "kind": controller_kind.kind,
            "name": controller.metadata.name, "uid": controller.metadata.uid,
            "controller": True, "blockOwnerDeletion": True,
        }],
        "uid": uid,
    }
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return orjson.dumps({"metadata": meta})


def generate_delete_owner_ref_strategic_merge_bytes(dependent_uid: str, owner_uids: Sequence[str],
                                                    *finalizers: str) -> bytes:
    """The strategic-merge patch removing the given owners' refs (and finalizers) by UID.

    Example: dependent "ss2", owner "ss1" ->
    {"metadata":{"uid":"ss2","ownerReferences":[{"$patch":"delete","uid":"ss1"}]}}
    Upstream: GenerateDeleteOwnerRefStrategicMergeBytes
    """
    meta: dict[str, Any] = {"uid": dependent_uid,
                            "ownerReferences": [{"$patch": "delete", "uid": u} for u in owner_uids]}
    if finalizers:
        meta["$deleteFromPrimitiveList/finalizers"] = list(finalizers)
    return orjson.dumps({"metadata": meta})


def recheck_deletion_timestamp(get_object: Callable[[], Awaitable[Any]]) -> CanAdoptFunc:
    """A can_adopt func: fetch the controller fresh and fail if it is being deleted.

    Upstream: RecheckDeletionTimestamp
    """
    async def can_adopt() -> None:
        try:
            obj = await get_object()
        except Exception as err:
            raise RuntimeError(f"can't recheck DeletionTimestamp: {err}") from err
        meta = obj.metadata
        if meta.deletion_timestamp is not None:
            raise RuntimeError(f"{meta.namespace}/{meta.name} has just been deleted at {meta.deletion_timestamp}")
    return can_adopt


# --- pods ---------------------------------------------------------------------------------------

class PodControllerRefManager(BaseControllerRefManager):
    """Claims pods for a controller (a ReplicaSet). Upstream: PodControllerRefManager"""

    def __init__(self, pod_control: PodControlInterface, controller: Any, selector: labels.Selector | None,
                 controller_kind: GroupVersionKind, can_adopt: CanAdoptFunc | None, *finalizers: str) -> None:
        super().__init__(controller, selector, can_adopt)
        self.controller_kind = controller_kind
        self.pod_control = pod_control
        self.finalizers = list(finalizers)

    async def claim_pods(self, pods: Sequence[core_v1.Pod],
                         *filters: Callable[[core_v1.Pod], bool]) -> list[core_v1.Pod]:
        """The pods that are ours after adopting/releasing; raises the aggregated errors.

        Returned pods are the ones passed in (cache objects: read-only). Upstream: ClaimPods
        """
        match = _pod_matcher(self._match_labels, filters)
        decide = self.claim_without_action
        claimed: list[core_v1.Pod] = []
        errs: list[Exception] = []
        for pod in pods:
            mine = decide(pod, match)
            if mine is None:
                try:
                    mine = await self.claim_object(pod, match, self.adopt_pod, self.release_pod)
                except Exception as err:
                    errs.append(err)
                    continue
            if mine:
                claimed.append(pod)
        if (err := new_aggregate(errs)) is not None:
            raise err
        return claimed

    async def adopt_pod(self, pod: core_v1.Pod) -> None:
        """Upstream: AdoptPod — the API server refuses it if another controller ref exists."""
        try:
            await self.can_adopt()
        except Exception as err:
            meta = pod.metadata
            raise RuntimeError(f"can't adopt Pod {meta.namespace}/{meta.name} ({meta.uid}): {err}") from err
        patch = owner_ref_controller_patch(self.controller, self.controller_kind, pod.metadata.uid, *self.finalizers)
        await self.pod_control.patch_pod(pod.metadata.namespace, pod.metadata.name, patch)

    async def release_pod(self, pod: core_v1.Pod) -> None:
        """Upstream: ReleasePod — NotFound (pod gone) and Invalid (no such owner ref, or the
        pod was re-created with another UID) mean there is nothing left to release."""
        log.debug("Patching pod to remove its controllerRef",
                  extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}", "controller": self.controller.metadata.name})
        patch = generate_delete_owner_ref_strategic_merge_bytes(pod.metadata.uid, [self.controller.metadata.uid],
                                                                *self.finalizers)
        try:
            await self.pod_control.patch_pod(pod.metadata.namespace, pod.metadata.name, patch)
        except (errors.NotFound, errors.Invalid):
            return


# --- ReplicaSets ----------------------------------------------------------------------------------

class RSControlInterface(Protocol):
    """How the Deployment controller patches ReplicaSets (a seam for tests)."""

    async def patch_replica_set(self, namespace: str, name: str, data: bytes) -> None:
        """Apply a strategic-merge patch to the ReplicaSet."""


class RealRSControl:
    """Upstream: RealRSControl"""

    def __init__(self, client: Clientset) -> None:
        self.client = client

    async def patch_replica_set(self, namespace: str, name: str, data: bytes) -> None:
        await self.client.apps_v1().replicasets(namespace).patch(name, data, "strategic")


class ReplicaSetControllerRefManager(BaseControllerRefManager):
    """Claims ReplicaSets for a Deployment. Upstream: ReplicaSetControllerRefManager"""

    def __init__(self, rs_control: RSControlInterface, controller: Any, selector: labels.Selector | None,
                 controller_kind: GroupVersionKind, can_adopt: CanAdoptFunc | None) -> None:
        super().__init__(controller, selector, can_adopt)
        self.controller_kind = controller_kind
        self.rs_control = rs_control

    async def claim_replica_sets(self, sets: Sequence[apps_v1.ReplicaSet]) -> list[apps_v1.ReplicaSet]:
        """The ReplicaSets that are ours after adopting/releasing. Upstream: ClaimReplicaSets"""
        claimed: list[apps_v1.ReplicaSet] = []
        errs: list[Exception] = []
        for rs in sets:
            try:
                if await self.claim_object(rs, self.matches_selector, self.adopt_replica_set,
                                           self.release_replica_set):
                    claimed.append(rs)
            except Exception as err:
                errs.append(err)
        if (err := new_aggregate(errs)) is not None:
            raise err
        return claimed

    async def adopt_replica_set(self, rs: apps_v1.ReplicaSet) -> None:
        """Upstream: AdoptReplicaSet"""
        try:
            await self.can_adopt()
        except Exception as err:
            meta = rs.metadata
            raise RuntimeError(f"can't adopt ReplicaSet {meta.namespace}/{meta.name} ({meta.uid}): {err}") from err
        patch = owner_ref_controller_patch(self.controller, self.controller_kind, rs.metadata.uid)
        await self.rs_control.patch_replica_set(rs.metadata.namespace, rs.metadata.name, patch)

    async def release_replica_set(self, rs: apps_v1.ReplicaSet) -> None:
        """Upstream: ReleaseReplicaSet — NotFound and Invalid are ignored as for pods."""
        patch = generate_delete_owner_ref_strategic_merge_bytes(rs.metadata.uid, [self.controller.metadata.uid])
        try:
            await self.rs_control.patch_replica_set(rs.metadata.namespace, rs.metadata.name, patch)
        except (errors.NotFound, errors.Invalid):
            return

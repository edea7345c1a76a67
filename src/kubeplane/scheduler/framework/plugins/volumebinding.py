"""VolumeBinding: pods with PersistentVolumeClaims go where their volumes can be.

PreFilter sorts the pod's claims: bound ones (their volume's node affinity must hold),
unbound WaitForFirstConsumer ones (bound now, for the chosen node), unbound Immediate ones
(the pod waits for the PV binder). Filter checks a node against both kinds. PreBind, in the
binding cycle, binds each delayed claim: to a matching static volume (its claimRef, which the
PV binder completes) or, for dynamic provisioning, by annotating the claim with
`volume.kubernetes.io/selected-node`; then it waits until every claim is bound.

A pod without claims costs one scan of its volumes (PreFilter Skips it).
Upstream: pkg/scheduler/framework/plugins/volumebinding (volume_binding.go, binder.go)
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ....api import errors
from ....api.types.core_v1 import PersistentVolume, PersistentVolumeClaim, Pod
from ....api.volume import (
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER,
    check_node_affinity, find_matching_volume, get_persistent_volume_claim_class, is_delay_binding_mode,
)
from ..interface import Code, CycleState, PreFilterResult, Status
from ..types import NodeInfo, unresolvable

log = logging.getLogger(__name__)

STATE_KEY = "PreFilterVolumeBinding"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# Upstream: --bind-timeout-seconds' default (VolumeBindingArgs.BindTimeoutSeconds).
BIND_TIMEOUT = 600.0
# How often PreBind looks at the claims again (upstream polls every second).
BIND_POLL = 0.2


@dataclass
class _State:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    # Filter's choice per node: claim name -> static volume (absent: dynamic provisioning).
    chosen: dict[str, dict[str, PersistentVolume]] = field(default_factory=dict)


def pod_claim_names(pod: Pod) -> list[str]:
    return [v.persistent_volume_claim.claim_name for v in (pod.spec.volumes or [])
            if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name]


class VolumeBinding:
    NAME = "VolumeBinding"

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle

    def _factory(self) -> Any:
        return getattr(self.handle, "informer_factory", None)

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Upstream: VolumeBinding.PreFilter (GetPodVolumeClaims)"""
        names = pod_claim_names(pod)
        factory = self._factory()
        if not names or factory is None:
            return None, Status(Code.SKIP)
        claims = factory.core_v1().persistentvolumeclaims().lister().persistentvolumeclaims(pod.metadata.namespace)
        classes = factory.storage_v1().storageclasses().lister()
        s = _State()
        for name in names:
            try:
                claim = claims.get(name)
            except errors.NotFound:
                return None, unresolvable(f'persistentvolumeclaim "{name}" not found')
            if claim.metadata.deletion_timestamp is not None:
                return None, unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
            if claim.spec.volume_name:
                s.bound.append(claim)
                continue
            try:
                cls = classes.get(get_persistent_volume_claim_class(claim)) if \
                    get_persistent_volume_claim_class(claim) else None
            except errors.NotFound:
                cls = None
            if is_delay_binding_mode(claim, cls):
                s.delayed.append(claim)
            else:
                return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, s)
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Upstream: VolumeBinding.Filter (FindPodVolumes)"""
        s: _State = state.read(STATE_KEY)
        node = node_info.node
        if node is None:
            return None
        volumes = self._factory().core_v1().persistentvolumes().lister()
        for claim in s.bound:
            try:
                pv = volumes.get(claim.spec.volume_name)
            except errors.NotFound:
                return unresolvable(f'pvc {claim.metadata.namespace}/{claim.metadata.name}: '
                                    f'persistentvolume "{claim.spec.volume_name}" not found')
            if not check_node_affinity(pv, node):
                return unresolvable(ERR_REASON_NODE_CONFLICT)
        chosen: dict[str, PersistentVolume] = {}
        all_volumes = volumes.list() if s.delayed else []
        for claim in s.delayed:
            pv = find_matching_volume(claim, all_volumes, node, {v.metadata.name for v in chosen.values()}, True)
            if pv is not None:
                chosen[claim.metadata.name] = pv
            elif not self._can_provision(claim):
                return unresolvable(ERR_REASON_BIND_CONFLICT)
        s.chosen[node_info.name] = chosen
        return None

    def _can_provision(self, claim: PersistentVolumeClaim) -> bool:
        try:
            cls = self._factory().storage_v1().storageclasses().lister().get(get_persistent_volume_claim_class(claim))
        except errors.NotFound:
            return False
        return bool(cls.provisioner) and cls.provisioner != NOT_SUPPORTED_PROVISIONER

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the delayed claims for node_name, then wait until all are bound.

        Upstream: VolumeBinding.PreBind (BindPodVolumes: bindAPIUpdate, checkBindings)
        """
        try:
            s: _State = state.read(STATE_KEY)
        except KeyError:
            return None
        if not s.delayed:
            return None
        client = self.handle.client_set()
        chosen = s.chosen.get(node_name, {})
        try:
            for claim in s.delayed:
                pv = chosen.get(claim.metadata.name)
                if pv is not None:
                    await self._bind_static(client, pv, claim)
                elif (claim.metadata.annotations or {}).get(ANN_SELECTED_NODE) != node_name:
                    await client.core_v1().persistentvolumeclaims(claim.metadata.namespace).patch(
                        claim.metadata.name, {"metadata": {"annotations": {ANN_SELECTED_NODE: node_name}}}, "merge")
            await self._wait_bound(pod, [c.metadata.name for c in s.delayed])
        except errors.StatusError as err:
            return Status(Code.ERROR, str(err), err=err)
        except TimeoutError:
            return Status(Code.ERROR, "binding volumes: context deadline exceeded")
        return None

    @staticmethod
    async def _bind_static(client: Any, pv: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        from ....api.types import core_v1
        new = pv.deep_copy()
        new.spec.claim_ref = core_v1.ObjectReference(kind="PersistentVolumeClaim", api_version="v1",
                                                     namespace=claim.metadata.namespace, name=claim.metadata.name,
                                                     uid=claim.metadata.uid,
                                                     resource_version=claim.metadata.resource_version)
        new.metadata.annotations = {**(new.metadata.annotations or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
        await client.core_v1().persistentvolumes().update(new)

    async def _wait_bound(self, pod: Pod, names: list[str]) -> None:
        """Poll the claim lister until every claim is fully bound. Upstream: checkBindings"""
        import asyncio
        claims = self._factory().core_v1().persistentvolumeclaims().lister().persistentvolumeclaims(
            pod.metadata.namespace)
        clock = getattr(self.handle, "clock", None)

        async def poll() -> None:
            while True:
                done = True
                for name in names:
                    try:
                        c = claims.get(name)
                    except errors.NotFound:
                        raise errors.NotFound("", "persistentvolumeclaims", name) from None
                    if not c.spec.volume_name or ANN_BIND_COMPLETED not in (c.metadata.annotations or {}):
                        done = False
                if done:
                    return
                await (clock.sleep(BIND_POLL) if clock is not None else asyncio.sleep(BIND_POLL))
        await asyncio.wait_for(poll(), BIND_TIMEOUT)


def wire_volume_binding(sched: Any, factory: Any) -> None:
    """Give the framework's VolumeBinding its informers, and retry unschedulable pods when
    claims, volumes or classes change (upstream: the plugin's EventsToRegister)."""
    from ....client.tools.cache import ResourceEventHandlerFuncs
    fwk = sched.framework
    fwk.informer_factory = factory
    fwk.clock = sched.clock

    def moved(event: str) -> Any:
        def handler(*_: Any) -> None:
            sched.queue.move_all_to_active_or_backoff_queue(event)
        return handler

    for inf, event in ((factory.core_v1().persistentvolumeclaims(), "PersistentVolumeClaimChange"),
                       (factory.core_v1().persistentvolumes(), "PersistentVolumeChange"),
                       (factory.storage_v1().storageclasses(), "StorageClassChange")):
        inf.informer().add_event_handler(ResourceEventHandlerFuncs(moved(event), moved(event), None))

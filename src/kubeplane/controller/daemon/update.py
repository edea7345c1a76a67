"""The DaemonSet's rolling update and revision history.

rolling_update replaces old pods within maxUnavailable (delete, and manage creates the new
one) or, with maxSurge, starts the new pod first and deletes the old one once it is available.
construct_history records the template as a ControllerRevision (a strategic merge patch that
restores it, as `kubectl rollout undo` applies), cleanup_history keeps revisionHistoryLimit
old ones.

Upstream: pkg/controller/daemon/update.go
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api import types
from ...api.types import apps_v1, core_v1, meta_v1
from .. import controller_utils as cu
from ..controller_ref_manager import recheck_deletion_timestamp
from ..deployment.util.hash import compute_hash
from ..history import ControllerRevisionControllerRefManager, template_patch
from .util import daemonset_util as util

if TYPE_CHECKING:
    from .daemon_controller import DaemonSetsController


def find_updated_pods_on_node(ds: apps_v1.DaemonSet, pods_on_node: list[core_v1.Pod] | None, hash_: str
                              ) -> tuple[core_v1.Pod | None, core_v1.Pod | None, bool]:
    """(new pod, old pod, ok): ok is False when a node has two new or two old live pods (the
    manage loop prunes them first). Upstream: findUpdatedPodsOnNode"""
    new = old = None
    generation = util.get_template_generation(ds)
    for pod in pods_on_node or []:
        if pod.metadata.deletion_timestamp is not None:
            continue
        if util.is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def updated_desired_node_counts(dsc: DaemonSetsController, ds: apps_v1.DaemonSet, nodes: list[core_v1.Node],
                                node_to_daemon_pods: dict[str, list[core_v1.Pod]]) -> tuple[int, int, int]:
    """(maxSurge, maxUnavailable, desired) over the nodes that should run the pod, every such
    node added to node_to_daemon_pods (empty when it has none). Neither surge nor
    unavailability allowed: one unavailable. Upstream: updatedDesiredNodeCounts"""
    from .daemon_controller import node_should_run_daemon_pod
    desired = 0
    for node in nodes:
        want, _ = node_should_run_daemon_pod(node, ds)
        if not want:
            continue
        desired += 1
        node_to_daemon_pods.setdefault(node.metadata.name or "", [])
    try:
        max_unavailable = util.unavailable_count(ds, desired)
    except ValueError as err:
        raise ValueError(f"invalid value for MaxUnavailable: {err}") from err
    try:
        max_surge = util.surge_count(ds, desired)
    except ValueError as err:
        raise ValueError(f"invalid value for MaxSurge: {err}") from err
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    return max_surge, max_unavailable, desired


async def rolling_update(dsc: DaemonSetsController, ds: apps_v1.DaemonSet, nodes: list[core_v1.Node],
                         hash_: str) -> None:
    """Upstream: rollingUpdate"""
    node_to_daemon_pods = await dsc.get_nodes_to_daemon_pods(ds, False)
    try:
        max_surge, max_unavailable, desired = updated_desired_node_counts(dsc, ds, nodes, node_to_daemon_pods)
    except ValueError as err:
        raise RuntimeError(f"couldn't get unavailable numbers: {err}") from err
    if max_surge == 0:
        await dsc.sync_nodes(ds, _pods_to_replace(dsc, ds, node_to_daemon_pods, hash_, max_unavailable), [], hash_)
        return
    to_delete, to_create = _surge(dsc, ds, node_to_daemon_pods, hash_, max_surge, desired)
    await dsc.sync_nodes(ds, to_delete, to_create, hash_)


def _pods_to_replace(dsc: DaemonSetsController, ds: apps_v1.DaemonSet,
                     node_to_daemon_pods: dict[str, list[core_v1.Pod]], hash_: str, max_unavailable: int) -> list[str]:
    """Without surge: delete just enough old pods to stay within maxUnavailable, and every old
    pod that is unavailable anyway; manage creates their replacements. A node with no pod, or
    both an old and a new one, counts as unavailable (manage is still working there).

    E.g. 10 nodes, maxUnavailable 2, one new pod not yet available: 1 unavailable, so 1 old
    available pod is deleted now, the next once the new pods become available.
    """
    now, min_ready = dsc.clock.now(), ds.spec.min_ready_seconds or 0
    num_unavailable = 0
    allowed: list[str] = []
    candidates: list[str] = []
    for pods in node_to_daemon_pods.values():
        new, old, ok = find_updated_pods_on_node(ds, pods, hash_)
        if not ok or (old is None) == (new is None):
            num_unavailable += 1
        elif new is not None:
            if not cu.is_pod_available(new, min_ready, now):
                num_unavailable += 1
        elif old is not None:
            if not cu.is_pod_available(old, min_ready, now):
                allowed.append(old.metadata.name or "")      # unavailable anyway: replace it
                num_unavailable += 1
            elif num_unavailable < max_unavailable:
                candidates.append(old.metadata.name or "")
    remaining = min(max(max_unavailable - num_unavailable, 0), len(candidates))
    return allowed + candidates[:remaining]


def _surge(dsc: DaemonSetsController, ds: apps_v1.DaemonSet, node_to_daemon_pods: dict[str, list[core_v1.Pod]],
           hash_: str, max_surge: int, desired: int) -> tuple[list[str], list[str]]:
    """With surge: a new pod starts beside each old one (at most maxSurge at a time; at once
    where the old pod is unavailable), and the old pod goes when the new one is available.
    Old pods on nodes that no longer fit go only as more pods than desired are available."""
    from .daemon_controller import node_should_run_daemon_pod
    now, min_ready = dsc.clock.now(), ds.spec.min_ready_seconds or 0
    old_to_delete: list[str] = []
    should_not_run: list[str] = []
    candidates: list[str] = []
    allowed: list[str] = []
    num_surge = num_available = 0
    for node_name, pods in node_to_daemon_pods.items():
        new, old, ok = find_updated_pods_on_node(ds, pods, hash_)
        if not ok:
            num_surge += 1
            continue
        counted = old if old is not None else new
        if counted is not None and cu.is_pod_available(counted, min_ready, now):
            num_available += 1
        if old is None:
            continue
        if new is None:
            node = dsc.node_lister.get(node_name)
            should_run, _ = node_should_run_daemon_pod(node, ds)
            if not cu.is_pod_available(old, min_ready, now):
                if not should_run:
                    old_to_delete.append(old.metadata.name or "")
                else:
                    allowed.append(node_name)
            elif not should_run:
                should_not_run.append(old.metadata.name or "")
            elif num_surge < max_surge:
                candidates.append(node_name)
            continue
        if not cu.is_pod_available(new, min_ready, now):
            num_surge += 1                 # waiting for the new pod
            continue
        old_to_delete.append(old.metadata.name or "")
    # With surge the owner expects full availability: a pod on a node that no longer fits goes
    # only once a pod elsewhere is available in its stead.
    deletable = min(num_available - desired, len(should_not_run))
    for name in should_not_run[:max(deletable, 0)]:
        try:
            dsc.pod_lister.pods(ds.metadata.namespace or "").get(name)
        except errors.NotFound:
            continue
        old_to_delete.append(name)
    remaining = min(max(max_surge - num_surge, 0), len(candidates))
    return old_to_delete, allowed + candidates[:remaining]


# --- history ----------------------------------------------------------------------------------

def get_patch(ds: apps_v1.DaemonSet) -> dict[str, Any]:
    """The strategic merge patch that restores the DaemonSet's template (what a revision holds
    and `kubectl rollout undo` applies), keyed as Go writes it. Upstream: getPatch"""
    return template_patch(types.to_dict(ds.spec.template or core_v1.PodTemplateSpec()))


def match(ds: apps_v1.DaemonSet, history: apps_v1.ControllerRevision) -> bool:
    """The revision holds the DaemonSet's current template. Upstream: Match (compared as JSON
    values: the server may order the stored keys differently)."""
    return bool(history.data == get_patch(ds))


def max_revision(histories: list[apps_v1.ControllerRevision]) -> int:
    """Upstream: maxRevision"""
    return max((h.revision or 0 for h in histories), default=0)


async def controlled_histories(dsc: DaemonSetsController, ds: apps_v1.DaemonSet) -> list[apps_v1.ControllerRevision]:
    """The revisions it controls, adopting orphans its selector matches. Upstream: controlledHistories"""
    selector = cu.selector_from(ds.spec.selector)
    histories = dsc.history_lister.controllerrevisions(ds.metadata.namespace or "").list()

    async def fresh() -> apps_v1.DaemonSet:
        got = await dsc.client.apps_v1().daemonsets(ds.metadata.namespace).get(ds.metadata.name)
        if got.metadata.uid != ds.metadata.uid:
            raise RuntimeError(f"original DaemonSet {ds.metadata.namespace}/{ds.metadata.name} is gone: got uid "
                               f"{got.metadata.uid}, wanted {ds.metadata.uid}")
        return got
    from .daemon_controller import CONTROLLER_KIND
    cm = ControllerRevisionControllerRefManager(dsc.history, ds, selector, CONTROLLER_KIND,
                                                recheck_deletion_timestamp(fresh))
    return await cm.claim_controller_revisions(histories)


async def construct_history(dsc: DaemonSetsController, ds: apps_v1.DaemonSet
                            ) -> tuple[apps_v1.ControllerRevision, list[apps_v1.ControllerRevision]]:
    """(the current revision, the old ones): the revisions matching the template are current
    (duplicates folded into the newest), a new one is recorded when none matches, and the
    current one is renumbered above every old one (a rollback makes an old template newest).
    Upstream: constructHistory"""
    revisions = dsc.client.apps_v1().controllerrevisions(ds.metadata.namespace or "")
    current: list[apps_v1.ControllerRevision] = []
    old: list[apps_v1.ControllerRevision] = []
    for history in await controlled_histories(dsc, ds):
        if util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY not in (history.metadata.labels or {}):
            # the name, not a recomputed hash, so that a hash collision cannot matter
            to_update = history.deep_copy()
            to_update.metadata.labels = {**(to_update.metadata.labels or {}),
                                         util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: to_update.metadata.name or ""}
            history = await revisions.update(to_update)
        (current if match(ds, history) else old).append(history)
    cur_revision = max_revision(old) + 1
    if not current:
        return await snapshot(dsc, ds, cur_revision), old
    cur = await dedup_cur_histories(dsc, ds, current)
    if (cur.revision or 0) < cur_revision:
        to_update = cur.deep_copy()
        to_update.revision = cur_revision
        await revisions.update(to_update)
    return cur, old


async def snapshot(dsc: DaemonSetsController, ds: apps_v1.DaemonSet, revision: int) -> apps_v1.ControllerRevision:
    """Record the template as revision `revision`, named `<ds>-<template hash>`; a name taken
    by another template bumps status.collisionCount (and fails, to retry). Upstream: snapshot"""
    from .daemon_controller import CONTROLLER_KIND
    collision_count = ds.status.collision_count if ds.status else None
    hash_ = compute_hash(ds.spec.template, collision_count)
    name = f"{ds.metadata.name}-{hash_}"
    history = apps_v1.ControllerRevision(
        metadata=meta_v1.ObjectMeta(
            name=name, namespace=ds.metadata.namespace,
            labels={**((ds.spec.template.metadata.labels or {}) if ds.spec.template and ds.spec.template.metadata
                       else {}), util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: hash_},
            annotations=dict(ds.metadata.annotations) if ds.metadata.annotations else None,
            owner_references=[cu.new_controller_ref(ds, CONTROLLER_KIND)]),
        data=get_patch(ds), revision=revision)
    revisions = dsc.client.apps_v1().controllerrevisions(ds.metadata.namespace or "")
    try:
        return await revisions.create(history)
    except errors.AlreadyExists as outer:
        existing = await revisions.get(name)
        if match(ds, existing):
            return existing
        cur_ds = await dsc.client.apps_v1().daemonsets(ds.metadata.namespace).get(ds.metadata.name)
        cur_count = cur_ds.status.collision_count if cur_ds.status else None
        if cur_count != collision_count:
            raise RuntimeError(f"found a stale collision count ({collision_count}, expected {cur_count}) of "
                               f"DaemonSet {ds.metadata.name!r} while processing; will retry until it is updated"
                               ) from outer
        if cur_ds.status is None:
            cur_ds.status = apps_v1.DaemonSetStatus()
        cur_ds.status.collision_count = (cur_count or 0) + 1
        await dsc.client.apps_v1().daemonsets(ds.metadata.namespace).update_status(cur_ds)
        raise


async def dedup_cur_histories(dsc: DaemonSetsController, ds: apps_v1.DaemonSet,
                              cur_histories: list[apps_v1.ControllerRevision]) -> apps_v1.ControllerRevision:
    """Keep the newest of several revisions of the current template, relabel pods of the
    others, delete them. Upstream: dedupCurHistories"""
    if len(cur_histories) == 1:
        return cur_histories[0]
    keep = cur_histories[0]
    for cur in cur_histories:
        if (cur.revision or 0) >= (keep.revision or 0):
            keep = cur
    keep_hash = (keep.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY, "")
    for cur in cur_histories:
        if cur.metadata.name == keep.metadata.name:
            continue
        for pod in await dsc.get_daemon_pods(ds):
            if (pod.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) != keep_hash:
                await dsc.client.core_v1().pods(ds.metadata.namespace or "").patch(
                    pod.metadata.name, {"metadata": {"labels": {util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: keep_hash}}},
                    "merge")
        await dsc.client.apps_v1().controllerrevisions(ds.metadata.namespace or "").delete(cur.metadata.name)
    return keep


async def cleanup_history(dsc: DaemonSetsController, ds: apps_v1.DaemonSet,
                          old: list[apps_v1.ControllerRevision]) -> None:
    """Delete the oldest revisions beyond revisionHistoryLimit, except those a live pod still
    runs. Upstream: cleanupHistory"""
    limit = ds.spec.revision_history_limit if ds.spec.revision_history_limit is not None else 10
    to_kill = len(old) - limit
    if to_kill <= 0:
        return
    node_to_daemon_pods = await dsc.get_nodes_to_daemon_pods(ds, True)
    live = {h for pods in node_to_daemon_pods.values() for p in pods
            if (h := (p.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY))}
    for history in sorted(old, key=lambda h: h.revision or 0):
        if to_kill <= 0:
            break
        if (history.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) in live:
            continue
        await dsc.client.apps_v1().controllerrevisions(ds.metadata.namespace or "").delete(history.metadata.name)
        to_kill -= 1

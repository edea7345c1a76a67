"""Helpers shared by plugins. Upstream: framework/plugins/helper (normalize_score.go, taint.go,
spread.go)."""
from __future__ import annotations

import operator
from typing import Any

from ....api import errors, labels
from ....api.toleration import tolerates_taint
from ....api.types.core_v1 import Pod, Taint, Toleration
from ..interface import MAX_NODE_SCORE, NodeScore, node_column
from ..types import selector_from


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores to [0, max_priority] by the highest one; reverse flips them.

    Example: raw [2, 1, 0], max 100 -> [100, 50, 0]; reversed -> [0, 50, 100]. All zero
    stays zero, or becomes max_priority everywhere when reversed.
    Upstream: helper.DefaultNormalizeScore
    """
    max_count = max([s.score for s in scores], default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score


def tolerations_tolerate_taint(tolerations: list[Toleration], taint: Taint) -> bool:
    return any(tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(taints: list[Taint], tolerations: list[Toleration],
                                    effects: tuple[str, ...]) -> Taint | None:
    """The first taint with one of effects that no toleration tolerates.

    Upstream: v1helper.FindMatchingUntoleratedTaint
    """
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def no_node_counted(handle: Any, aggregate: Any) -> bool:
    """Whether aggregate (a NodeAggregate) counts no node of the handle's snapshot; False
    without a snapshot."""
    lister = getattr(handle, "snapshot_shared_lister", None)
    snapshot = lister() if lister is not None else None
    return snapshot is not None and not aggregate.totals(snapshot)


def passed_unless_counted(handle: Any, aggregate: Any, state: Any, nodes: list[Any]) -> list[bool] | None:
    """Per node of the handle's snapshot: True when aggregate (a NodeAggregate of the nodes a
    Filter may reject, e.g. the cordoned ones) has no contribution from it, so that Filter
    passes it for any pod; None without a snapshot. A plugin's filter_nodes (ours)."""
    lister = getattr(handle, "snapshot_shared_lister", None)
    snapshot = lister() if lister is not None else None
    if snapshot is None:
        return None
    aggregate.totals(snapshot)
    counted = aggregate.per_node
    names = node_column(state, nodes, "name")
    if not counted:
        return [True] * len(names)
    return list(map(operator.not_, map(counted.__contains__, names)))


# (apiVersion, kind) of the controllers whose selector default spreading uses.
RC_KIND = ("v1", "ReplicationController")
RS_KIND = ("apps/v1", "ReplicaSet")
SS_KIND = ("apps/v1", "StatefulSet")


def get_pod_services(service_lister: Any, pod: Pod) -> list[Any]:
    """The Services of the pod's namespace whose selector matches its labels; a Service
    without a selector matches nothing. Upstream: helper.GetPodServices"""
    pod_labels = pod.metadata.labels or {}
    out = []
    for svc in service_lister.services(pod.metadata.namespace or "").list():
        sel = svc.spec.selector if svc.spec is not None else None
        if sel is not None and all(pod_labels.get(k) == v for k, v in sel.items()):
            out.append(svc)
    return out


def default_selector(pod: Pod, services: Any, rcs: Any, rss: Any, sss: Any,
                     owner_selector: Any = None) -> labels.Selector:
    """The selector of the Services, ReplicationController, ReplicaSet or StatefulSet that
    match (own) the pod, merged: () when there are none.

    Example: Service app=web and the pod's ReplicaSet selecting app=web,hash=5d give
    (app=web, app=web, hash=5d) (merged, sorted by key; the same key twice is harmless).
    owner_selector(obj) -> Selector | None converts a workload's spec.selector (the plugin
    passes a memo; default: selector_from).
    Upstream: helper.DefaultSelector
    """
    label_set: dict[str, str] = {}
    if services is not None:
        for svc in get_pod_services(services, pod):
            label_set.update(svc.spec.selector)
    reqs = [labels.Requirement(k, "=", (v,)) for k, v in sorted(label_set.items())]
    owner = next((r for r in pod.metadata.owner_references or () if r.controller), None)
    if owner is None:
        return tuple(reqs)
    key = (owner.api_version, owner.kind)
    ns = pod.metadata.namespace or ""
    if key == RC_KIND and rcs is not None:
        rc = _get(rcs.replicationcontrollers(ns), owner.name)
        if rc is not None and rc.spec is not None:
            label_set.update(rc.spec.selector or {})
            return tuple(labels.Requirement(k, "=", (v,)) for k, v in sorted(label_set.items()))
    elif (key == RS_KIND and rss is not None) or (key == SS_KIND and sss is not None):
        lister = rss.replicasets(ns) if key == RS_KIND else sss.statefulsets(ns)
        obj = _get(lister, owner.name)
        if obj is not None and obj.spec is not None:
            try:
                other = (owner_selector or _spec_selector)(obj)
            except errors.StatusError:
                other = None            # an invalid selector adds nothing (upstream ignores the error)
            if other:
                return tuple(sorted(reqs + list(other), key=_by_key)) if reqs else other
    return tuple(reqs)


def _by_key(r: labels.Requirement) -> str:
    return r.key


def _spec_selector(obj: Any) -> labels.Selector | None:
    return selector_from(obj.spec.selector)


def _get(namespace_lister: Any, name: str | None) -> Any:
    try:
        return namespace_lister.get(name or "")
    except errors.NotFound:
        return None


MAX = MAX_NODE_SCORE

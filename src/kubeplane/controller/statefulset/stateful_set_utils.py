"""Pure helpers of the StatefulSet controller: identities, ordinals, storage, revisions, status.

A StatefulSet's pod `<set>-<ordinal>` keeps its name, its labels
`statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, its hostname and
subdomain (the headless service), and its claims `<template>-<set>-<ordinal>` across
re-creations. Revisions are ControllerRevisions whose data is a strategic merge patch that
restores the pod template (`$patch: replace`).

Upstream: pkg/controller/statefulset/stateful_set_utils.go
"""
from __future__ import annotations

import functools
import logging
import re
from typing import Any, Sequence

from ...api import types
from ...api.types import apps_v1, core_v1, meta_v1
from .. import controller_utils as cu
from ..deployment.util.deployment_util import get_scaled_value_from_int_or_percent
from ..history import new_controller_revision, template_patch

log = logging.getLogger(__name__)

CONTROLLER_KIND = cu.GroupVersionKind("apps", "v1", "StatefulSet")
POD_KIND = cu.GroupVersionKind("", "v1", "Pod")

# Upstream: apps.StatefulSetRevisionLabel, StatefulSetPodNameLabel, PodIndexLabel (k8s.io/api/apps/v1).
STATEFUL_SET_REVISION_LABEL = "controller-revision-hash"
STATEFUL_SET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

PARALLEL_POD_MANAGEMENT = "Parallel"
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
RETAIN = "Retain"
DELETE = "Delete"

_STATEFUL_POD_RE = re.compile(r"^(.*)-([0-9]+)$")


def overlapping_less(a: apps_v1.StatefulSet, b: apps_v1.StatefulSet) -> bool:
    """Older first, then by name (who wins overlapping selectors). Upstream: overlappingStatefulSets.Less"""
    ta, tb = a.metadata.creation_timestamp or "", b.metadata.creation_timestamp or ""
    return a.metadata.name < b.metadata.name if ta == tb else ta < tb


def get_parent_name_and_ordinal(pod: core_v1.Pod) -> tuple[str, int]:
    """("web", 2) for pod web-2; ("", -1) for a name without a trailing ordinal.

    The ordinal must fit an int32, as upstream parses it. Upstream: getParentNameAndOrdinal
    """
    m = _STATEFUL_POD_RE.match(pod.metadata.name or "")
    if m is None:
        return "", -1
    ordinal = int(m.group(2))
    return m.group(1), ordinal if ordinal < 2**31 else -1


def get_ordinal(pod: core_v1.Pod) -> int:
    """Upstream: getOrdinal"""
    return get_parent_name_and_ordinal(pod)[1]


def get_start_ordinal(s: apps_v1.StatefulSet) -> int:
    """spec.ordinals.start, else 0. Upstream: getStartOrdinal"""
    return (s.spec.ordinals.start or 0) if s.spec.ordinals is not None else 0


def get_end_ordinal(s: apps_v1.StatefulSet) -> int:
    """The last ordinal (inclusive): start + replicas - 1. Upstream: getEndOrdinal"""
    return get_start_ordinal(s) + (s.spec.replicas or 0) - 1


def pod_in_ordinal_range(pod: core_v1.Pod, s: apps_v1.StatefulSet) -> bool:
    """Upstream: podInOrdinalRange"""
    ordinal = get_ordinal(pod)
    return get_start_ordinal(s) <= ordinal <= get_end_ordinal(s)


def get_pod_name(s: apps_v1.StatefulSet, ordinal: int) -> str:
    """Upstream: getPodName"""
    return f"{s.metadata.name}-{ordinal}"


def get_persistent_volume_claim_name(s: apps_v1.StatefulSet, claim: core_v1.PersistentVolumeClaim,
                                     ordinal: int) -> str:
    """`<template>-<set>-<ordinal>`, e.g. www-web-0. Upstream: getPersistentVolumeClaimName"""
    return f"{claim.metadata.name}-{s.metadata.name}-{ordinal}"


def is_member_of(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
    """Upstream: isMemberOf"""
    return get_parent_name_and_ordinal(pod)[0] == s.metadata.name


def identity_matches(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
    """Upstream: identityMatches"""
    parent, ordinal = get_parent_name_and_ordinal(pod)
    return (ordinal >= 0 and s.metadata.name == parent and pod.metadata.name == get_pod_name(s, ordinal)
            and pod.metadata.namespace == s.metadata.namespace
            and (pod.metadata.labels or {}).get(STATEFUL_SET_POD_NAME_LABEL) == pod.metadata.name)


def storage_matches(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
    """Every claim template has a volume of that name using the pod's claim. Upstream: storageMatches"""
    ordinal = get_ordinal(pod)
    if ordinal < 0:
        return False
    volumes = {v.name: v for v in (pod.spec.volumes or [])} if pod.spec else {}
    for claim in s.spec.volume_claim_templates or []:
        v = volumes.get(claim.metadata.name)
        if v is None or v.persistent_volume_claim is None or \
                v.persistent_volume_claim.claim_name != get_persistent_volume_claim_name(s, claim, ordinal):
            return False
    return True


def get_persistent_volume_claim_retention_policy(
        s: apps_v1.StatefulSet) -> apps_v1.StatefulSetPersistentVolumeClaimRetentionPolicy:
    """The set's policy, Retain/Retain when unset. Upstream: getPersistentVolumeClaimRetentionPolicy"""
    policy = s.spec.persistent_volume_claim_retention_policy
    if policy is None:
        return apps_v1.StatefulSetPersistentVolumeClaimRetentionPolicy(when_deleted=RETAIN, when_scaled=RETAIN)
    return policy


def matches_ref(ref: meta_v1.OwnerReference, obj: Any, gvk: cu.GroupVersionKind) -> bool:
    """Same name and GVK (the UID is not compared). Upstream: matchesRef"""
    return ref.api_version == gvk.group_version() and ref.kind == gvk.kind and ref.name == obj.metadata.name


def has_unexpected_controller(claim: core_v1.PersistentVolumeClaim, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
    """Under a non-Retain policy: a controller other than this set or pod, or a stale ref to
    either (pods orphaned by an earlier set with the same name). Upstream: hasUnexpectedController"""
    policy = get_persistent_volume_claim_retention_policy(s)
    if policy.when_scaled == RETAIN and policy.when_deleted == RETAIN:
        return False
    for ref in claim.metadata.owner_references or []:
        if matches_ref(ref, s, CONTROLLER_KIND):
            if ref.uid != s.metadata.uid:
                return True
            continue
        if matches_ref(ref, pod, POD_KIND):
            if ref.uid != pod.metadata.uid:
                return True
            continue
        if ref.controller:
            return True
    return False


def has_non_controller_owner(claim: core_v1.PersistentVolumeClaim, s: apps_v1.StatefulSet, pod: core_v1.Pod) -> bool:
    """Upstream: hasNonControllerOwner"""
    return any((r.uid == s.metadata.uid or r.uid == pod.metadata.uid) and not r.controller
               for r in claim.metadata.owner_references or [])


def has_owner_ref(target: Any, owner: Any) -> bool:
    """Upstream: hasOwnerRef (controller or not)."""
    return any(r.uid == owner.metadata.uid for r in target.metadata.owner_references or [])


def has_stale_owner_ref(target: Any, obj: Any, gvk: cu.GroupVersionKind) -> bool:
    """A ref naming obj with another UID. Upstream: hasStaleOwnerRef"""
    for ref in target.metadata.owner_references or []:
        if matches_ref(ref, obj, gvk):
            return ref.uid != obj.metadata.uid
    return False


def is_claim_owner_up_to_date(claim: core_v1.PersistentVolumeClaim, s: apps_v1.StatefulSet,
                              pod: core_v1.Pod) -> bool:
    """Whether the claim's owner refs follow the retention policy:

        whenScaled Retain, whenDeleted Retain: no ref to set or pod
        whenScaled Retain, whenDeleted Delete: a ref to the set only
        whenScaled Delete, whenDeleted Retain: a ref to the pod only once the pod is scaled away
        whenScaled Delete, whenDeleted Delete: the set while the pod is in range, then the pod

    Stale refs or an unexpected controller: True (leave the claim alone).
    Upstream: isClaimOwnerUpToDate
    """
    if has_stale_owner_ref(claim, s, CONTROLLER_KIND) or has_stale_owner_ref(claim, pod, POD_KIND):
        return True
    if has_unexpected_controller(claim, s, pod):
        return not (has_owner_ref(claim, s) or has_owner_ref(claim, pod))
    if has_non_controller_owner(claim, s, pod):
        return False
    want_set, want_pod = _wanted_refs(s, pod)
    return has_owner_ref(claim, s) == want_set and has_owner_ref(claim, pod) == want_pod


def _wanted_refs(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> tuple[bool, bool]:
    """(ref to the set, ref to the pod) the retention policy asks for; unknown policies act as Retain."""
    policy = get_persistent_volume_claim_retention_policy(s)
    scaled_down = not pod_in_ordinal_range(pod, s)
    scaled, deleted = policy.when_scaled, policy.when_deleted
    if scaled == RETAIN and deleted == DELETE:
        return True, False
    if scaled == DELETE and deleted == RETAIN:
        return False, scaled_down
    if scaled == DELETE and deleted == DELETE:
        return not scaled_down, scaled_down
    if not (scaled == RETAIN and deleted == RETAIN):
        log.error("Unknown policy, treating as Retain", extra={"policy": str(policy)})
    return False, False


def update_claim_owner_ref_for_set_and_pod(claim: core_v1.PersistentVolumeClaim, s: apps_v1.StatefulSet,
                                           pod: core_v1.Pod) -> None:
    """Rewrite claim's refs to the set and pod as the policy says (claim is a private copy).

    Upstream: updateClaimOwnerRefForSetAndPod
    """
    unexpected = has_unexpected_controller(claim, s, pod)
    refs = [r for r in claim.metadata.owner_references or []
            if not (matches_ref(r, s, CONTROLLER_KIND) or matches_ref(r, pod, POD_KIND))]
    if not unexpected:
        want_set, want_pod = _wanted_refs(s, pod)
        if want_pod:
            refs = add_controller_ref(refs, pod, POD_KIND)
        if want_set:
            refs = add_controller_ref(refs, s, CONTROLLER_KIND)
    claim.metadata.owner_references = refs


def add_controller_ref(refs: list[meta_v1.OwnerReference], owner: Any,
                       gvk: cu.GroupVersionKind) -> list[meta_v1.OwnerReference]:
    """Upstream: addControllerRef"""
    if any(r.uid == owner.metadata.uid for r in refs):
        return refs
    return [*refs, cu.new_controller_ref(owner, gvk)]


def get_persistent_volume_claims(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> dict[str, core_v1.PersistentVolumeClaim]:
    """The pod's claims by template name: named for the ordinal, in the set's namespace,
    labelled with the template's labels plus the selector's matchLabels. Upstream: getPersistentVolumeClaims"""
    ordinal = get_ordinal(pod)
    claims = {}
    match_labels = (s.spec.selector.match_labels if s.spec.selector else None) or {}
    for template in s.spec.volume_claim_templates or []:
        claim = template.deep_copy()
        claim.metadata = claim.metadata or meta_v1.ObjectMeta()
        claim.metadata.name = get_persistent_volume_claim_name(s, template, ordinal)
        claim.metadata.namespace = s.metadata.namespace
        claim.metadata.labels = {**(claim.metadata.labels or {}), **match_labels}
        claim.api_version, claim.kind = "v1", "PersistentVolumeClaim"
        claims[template.metadata.name] = claim
    return claims


def update_storage(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
    """Point the pod's volumes at its claims, replacing conflicting volumes. Upstream: updateStorage"""
    claims = get_persistent_volume_claims(s, pod)
    new_volumes = [core_v1.Volume(name=name, persistent_volume_claim=core_v1.PersistentVolumeClaimVolumeSource(
        claim_name=claim.metadata.name)) for name, claim in claims.items()]
    new_volumes += [v for v in (pod.spec.volumes or []) if v.name not in claims]
    pod.spec.volumes = new_volumes or None


def init_identity(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
    """updateIdentity plus hostname and subdomain (immutable: set only at creation). Upstream: initIdentity"""
    update_identity(s, pod)
    pod.spec.hostname = pod.metadata.name
    pod.spec.subdomain = s.spec.service_name or None


def update_identity(s: apps_v1.StatefulSet, pod: core_v1.Pod) -> None:
    """Name, namespace and the pod-name and pod-index labels. Upstream: updateIdentity"""
    ordinal = get_ordinal(pod)
    pod.metadata.name = get_pod_name(s, ordinal)
    pod.metadata.namespace = s.metadata.namespace
    pod.metadata.labels = dict(pod.metadata.labels or {})
    pod.metadata.labels[STATEFUL_SET_POD_NAME_LABEL] = pod.metadata.name
    pod.metadata.labels[POD_INDEX_LABEL] = str(ordinal)      # PodIndexLabel: GA since 1.32


def _phase(pod: core_v1.Pod) -> str:
    return (pod.status.phase if pod.status is not None else None) or ""


def is_running_and_ready(pod: core_v1.Pod) -> bool:
    """Upstream: isRunningAndReady"""
    return _phase(pod) == "Running" and cu.is_pod_ready(pod)


def is_running_and_available(pod: core_v1.Pod, min_ready_seconds: int, now: float) -> bool:
    """Upstream: isRunningAndAvailable (podutil.IsPodAvailable at now)"""
    return cu.is_pod_available(pod, min_ready_seconds, now)


def is_created(pod: core_v1.Pod) -> bool:
    """Has a phase: the API server knows it. Upstream: isCreated"""
    return _phase(pod) != ""


def is_pending(pod: core_v1.Pod) -> bool:
    return _phase(pod) == "Pending"


def is_failed(pod: core_v1.Pod) -> bool:
    return _phase(pod) == "Failed"


def is_succeeded(pod: core_v1.Pod) -> bool:
    return _phase(pod) == "Succeeded"


def is_terminating(pod: core_v1.Pod) -> bool:
    """Upstream: isTerminating"""
    return pod.metadata.deletion_timestamp is not None


def is_healthy(pod: core_v1.Pod) -> bool:
    """Running, ready and not terminating. Upstream: isHealthy"""
    return is_running_and_ready(pod) and not is_terminating(pod)


def allows_burst(s: apps_v1.StatefulSet) -> bool:
    """Parallel pod management. Upstream: allowsBurst"""
    return s.spec.pod_management_policy == PARALLEL_POD_MANAGEMENT


def set_pod_revision(pod: core_v1.Pod, revision: str) -> None:
    pod.metadata.labels = dict(pod.metadata.labels or {})
    pod.metadata.labels[STATEFUL_SET_REVISION_LABEL] = revision


def get_pod_revision(pod: core_v1.Pod) -> str:
    """The controller-revision-hash label, "" if none. Upstream: getPodRevision"""
    return (pod.metadata.labels or {}).get(STATEFUL_SET_REVISION_LABEL, "")


def new_stateful_set_pod(s: apps_v1.StatefulSet, ordinal: int) -> core_v1.Pod:
    """A pod for ordinal from the set's template, with identity and storage. Upstream: newStatefulSetPod"""
    pod = cu.get_pod_from_template(s.spec.template, s, cu.new_controller_ref(s, CONTROLLER_KIND))
    pod.metadata.generate_name = None
    pod.metadata.name = get_pod_name(s, ordinal)
    init_identity(s, pod)
    update_storage(s, pod)
    return pod


def new_versioned_stateful_set_pod(current_set: apps_v1.StatefulSet, update_set: apps_v1.StatefulSet,
                                   current_revision: str, update_revision: str, ordinal: int) -> core_v1.Pod:
    """A pod at the current revision below the partition (or below currentReplicas without a
    rollingUpdate), else at the update revision. Upstream: newVersionedStatefulSetPod

    Upstream's condition reads `RollingUpdate && (ru == nil && ord < start+currentReplicas) ||
    (ru != nil && ord < start+partition)`: the second half applies to OnDelete sets too.
    """
    strategy = current_set.spec.update_strategy or apps_v1.StatefulSetUpdateStrategy()
    start = get_start_ordinal(current_set)
    ru = strategy.rolling_update
    current_replicas = (current_set.status.current_replicas or 0) if current_set.status else 0
    if (strategy.type == ROLLING_UPDATE and ru is None and ordinal < start + current_replicas) or \
            (ru is not None and ordinal < start + (ru.partition or 0)):
        pod = new_stateful_set_pod(current_set, ordinal)
        set_pod_revision(pod, current_revision)
        return pod
    pod = new_stateful_set_pod(update_set, ordinal)
    set_pod_revision(pod, update_revision)
    return pod


def get_patch(s: apps_v1.StatefulSet) -> dict[str, Any]:
    """{"spec": {"template": <template>, "$patch": "replace" inside it}}: the revision's data,
    a strategic merge patch restoring the template, keyed as Go writes it. Upstream: getPatch"""
    return template_patch(types.to_dict(s.spec.template) if s.spec.template is not None else {})


def new_revision(s: apps_v1.StatefulSet, revision: int, collision_count: int) -> apps_v1.ControllerRevision:
    """The set's template as a ControllerRevision numbered revision, with the set's annotations.

    Upstream: newRevision
    """
    template_labels = s.spec.template.metadata.labels if s.spec.template and s.spec.template.metadata else None
    cr = new_controller_revision(s, CONTROLLER_KIND, template_labels, get_patch(s), revision, collision_count)
    cr.metadata.annotations = {**(cr.metadata.annotations or {}), **(s.metadata.annotations or {})} or None
    return cr


def revision_templates_semantically_equal(a: apps_v1.ControllerRevision, b: apps_v1.ControllerRevision) -> bool:
    """Whether two revisions restore the same pod template as typed objects, not bytes.

    1.33 wrote `"creationTimestamp": null` into the template's metadata; 1.34 stopped, so the
    same template got a new hash and every StatefulSet rolled on upgrade (#134773). Decoded
    into a PodTemplateSpec, the null and the missing field are the same.
    Upstream: the StatefulSetSemanticRevisionComparison gate (on by default; #135017)
    """
    ta, tb = _template_of(a), _template_of(b)
    return ta is not None and tb is not None and ta == tb


def _template_of(revision: apps_v1.ControllerRevision) -> core_v1.PodTemplateSpec | None:
    try:
        template = revision.data["spec"]["template"]
        return types.from_dict(template, core_v1.PodTemplateSpec)
    except (KeyError, TypeError, ValueError):
        return None


def apply_revision(s: apps_v1.StatefulSet, revision: apps_v1.ControllerRevision) -> apps_v1.StatefulSet:
    """The set with the revision's patch applied (its template as recorded). Upstream: ApplyRevision

    Upstream applies the data as a strategic merge patch. Every revision holds the patch
    get_patch writes (maps to merge down to the template, which carries `$patch: replace`),
    so merging maps and honouring that directive gives the same set; the API server's full
    strategic merge lives a layer above the controllers.
    """
    patched = _merge_replace(types.to_dict(s), revision.data if isinstance(revision.data, dict) else {})
    return types.from_dict(patched, apps_v1.StatefulSet)


def _merge_replace(original: Any, patch: dict[str, Any]) -> dict[str, Any]:
    """Merge patch into original (a new dict): maps merge, other values (lists too) replace,
    null deletes, and a map with `$patch: replace` replaces the original map whole.

    Example: {"spec": {"template": {"$patch": "replace", "spec": X}}} on a set keeps its
    replicas and selector and makes its template exactly {"spec": X}.
    """
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    out = dict(original) if isinstance(original, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = _merge_replace(out.get(k), v)
        else:
            out[k] = v
    return out


def inconsistent_status(s: apps_v1.StatefulSet, status: apps_v1.StatefulSetStatus) -> bool:
    """Whether status differs from the set's in anything the controller writes. Upstream: inconsistentStatus"""
    cur = s.status or apps_v1.StatefulSetStatus()
    return ((status.observed_generation or 0) > (cur.observed_generation or 0)
            or any((getattr(status, f) or 0) != (getattr(cur, f) or 0) for f in _COUNTS)
            or (status.current_revision or "") != (cur.current_revision or "")
            or (status.update_revision or "") != (cur.update_revision or ""))


_COUNTS = ("replicas", "current_replicas", "ready_replicas", "updated_replicas", "available_replicas")


def complete_rolling_update(s: apps_v1.StatefulSet, status: apps_v1.StatefulSetStatus) -> None:
    """Every replica updated and ready: the update revision becomes the current one.

    Upstream: completeRollingUpdate
    """
    want = s.spec.replicas or 0
    if (s.spec.update_strategy is not None and s.spec.update_strategy.type == ROLLING_UPDATE
            and status.updated_replicas == want and status.ready_replicas == want and status.replicas == want):
        status.current_replicas = status.updated_replicas
        status.current_revision = status.update_revision


def ascending_ordinal(pods: Sequence[core_v1.Pod]) -> list[core_v1.Pod]:
    return sorted(pods, key=get_ordinal)


def descending_ordinal(pods: Sequence[core_v1.Pod]) -> list[core_v1.Pod]:
    return sorted(pods, key=get_ordinal, reverse=True)


def get_stateful_set_max_unavailable(max_unavailable: int | str | None, replica_count: int) -> int:
    """maxUnavailable (default 1) scaled on replicas, rounded down, at least 1.

    Example: "10%" of 5 replicas is 0.5, rounded down 0, raised to 1. Upstream: getStatefulSetMaxUnavailable
    """
    n = get_scaled_value_from_int_or_percent(1 if max_unavailable is None else max_unavailable, replica_count, False)
    return max(n, 1)


def _compare_overlapping(a: apps_v1.StatefulSet, b: apps_v1.StatefulSet) -> int:
    return -1 if overlapping_less(a, b) else (1 if overlapping_less(b, a) else 0)


sort_overlapping = functools.cmp_to_key(_compare_overlapping)

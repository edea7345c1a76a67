"""Helpers shared by the workload controllers: expectations, pod control, pod ranking.

Upstream: pkg/controller/controller_utils.go (and the pod helpers of pkg/api/v1/pod/util.go
that the controllers call: IsPodReady, IsPodAvailable). Names are upstream's in snake_case.

Objects handed to these functions usually come from an informer cache: nothing here
modifies a pod or controller it is given; functions that build objects build new ones.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple, Protocol, Sequence

from ..api import errors, labels, types
from ..api.types import core_v1, meta_v1
from ..api.validation.names import name_is_dns_subdomain
from ..client.tools.cache import NAMESPACE_INDEX
from ..client.tools.cache.listers import label_matcher
from ..client.tools.cache.store import deletion_handling_meta_namespace_key_func
from ..utils.clock import REAL_CLOCK, Clock, parse_rfc3339

if TYPE_CHECKING:
    from ..client.clientset import Clientset
    from ..client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# If a watch drops a delete event for a pod, it takes this long before a dormant controller
# waiting for it is woken up anyway (seconds). Upstream: ExpectationsTimeout = 5 * time.Minute.
EXPECTATIONS_TIMEOUT = 300.0

# Event-loop rounds between a key becoming ready in the ReplicaSet/Deployment controllers' work
# queues and its hand-out (QueueOptions.batch_rounds): the pod events already on their way fold
# into the same sync.
# Not upstream's (Go needs none: its informers deliver while a worker wakes, and a busy
# controller-manager folds bursts by itself); no timer, and no more latency than a few turns
# of a loop that is busy.
WORK_QUEUE_BATCH_ROUNDS = 5

# The first slow-start batch creates this many pods. Upstream: SlowStartInitialBatchSize.
SLOW_START_INITIAL_BATCH_SIZE = 1

# Reasons of the pod events (also the ReplicaFailure condition reasons of a ReplicaSet).
FAILED_CREATE_POD_REASON = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON = "SuccessfulCreate"
FAILED_DELETE_POD_REASON = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON = "SuccessfulDelete"

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"

# Pods with a lower cost are deleted first on scale-down (int32, default 0).
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

NAMESPACE_TERMINATING_CAUSE = errors.NAMESPACE_TERMINATING_CAUSE
has_status_cause = errors.has_status_cause

POD_SUCCEEDED, POD_FAILED, POD_PENDING, POD_UNKNOWN, POD_RUNNING = (
    "Succeeded", "Failed", "Pending", "Unknown", "Running")
_POD_PHASE_TO_ORDINAL = {POD_PENDING: 0, POD_UNKNOWN: 1, POD_RUNNING: 2}


# --- keys, owner references --------------------------------------------------------------

# Upstream: KeyFunc = DeletionHandlingMetaNamespaceKeyFunc ("ns/name"; tombstones keep their key).
key_func = deletion_handling_meta_namespace_key_func


def pod_key(pod: core_v1.Pod) -> str:
    """Upstream: PodKey — "<namespace>/<name>", the key expectations track deletions by."""
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


class GroupVersionKind(NamedTuple):
    group: str
    version: str
    kind: str

    def group_version(self) -> str:
        """schema.GroupVersion.String(): "apps/v1", or "v1" for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version


def get_controller_of(obj: Any) -> meta_v1.OwnerReference | None:
    """Upstream: metav1.GetControllerOfNoCopy — the ownerReference with controller=true, if any."""
    for ref in obj.metadata.owner_references or ():
        if ref.controller:
            return ref
    return None


def same_controller_ref(old: Any, cur: Any, cur_ref: meta_v1.OwnerReference | None) -> bool:
    """cur_ref (cur's controller ref) == old's, answered at once when the two objects'
    ownerReferences are equal (nearly every update: the pod handlers ask it per pod event)."""
    return cur.metadata.owner_references == old.metadata.owner_references or cur_ref == get_controller_of(old)


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """Upstream: metav1.IsControlledBy — obj's controller ref points at owner's UID."""
    ref = get_controller_of(obj)
    return ref is not None and ref.uid == owner.metadata.uid


def new_controller_ref(owner: Any, gvk: GroupVersionKind) -> meta_v1.OwnerReference:
    """Upstream: metav1.NewControllerRef — a controller ownerReference that blocks owner deletion."""
    return meta_v1.OwnerReference(api_version=gvk.group_version(), kind=gvk.kind, name=owner.metadata.name,
                                  uid=owner.metadata.uid, controller=True, block_owner_deletion=True)


class AggregateError(Exception):
    """Several errors as one. Upstream: utilerrors.NewAggregate ("msg", or "[a, b]" for several)."""

    def __init__(self, errs: Sequence[BaseException]) -> None:
        self.errs = list(errs)
        msgs = [str(e) for e in self.errs]
        super().__init__(msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")


def new_aggregate(errs: Sequence[BaseException]) -> BaseException | None:
    """None for no errors, the error itself for one, an AggregateError for several."""
    if not errs:
        return None
    return errs[0] if len(errs) == 1 else AggregateError(errs)


# --- expectations ----------------------------------------------------------------------------

@dataclass
class ControlleeExpectations:
    """Creates/deletes one controller still waits to observe. Upstream: ControlleeExpectations."""

    key: str
    add: int
    del_: int
    timestamp: float                    # clock.monotonic() when the expectations were set

    def lower(self, add: int, del_: int) -> None:
        self.add -= add
        self.del_ -= del_

    def fulfilled(self) -> bool:
        """All expected creates and deletes were observed (counts may go below zero)."""
        return self.add <= 0 and self.del_ <= 0

    def get_expectations(self) -> tuple[int, int]:
        return self.add, self.del_


class ControllerExpectations:
    """What each controller (by key) expects to observe before it next manages pods.

    A controller that creates 10 pods sets add=10; every pod-add event lowers it; until it
    reaches 0 (or 5 minutes pass, in case a watch event was lost) syncs skip pod management
    so they don't create the same pods twice from a cache that hasn't caught up.

    _store: controller key -> ControlleeExpectations.
    Invariant: every entry's .key is its dict key and its timestamp is not in the future;
    counts only change by set_expectations (replace), lower/raise_expectations (+/- n).
    Upstream: ControllerExpectations (a cache.Store keyed by ExpKeyFunc).
    """

    def __init__(self, clock: Clock = REAL_CLOCK) -> None:
        self.clock = clock
        self._store: dict[str, ControlleeExpectations] = {}

    def get_expectations(self, controller_key: str) -> ControlleeExpectations | None:
        return self._store.get(controller_key)

    def delete_expectations(self, controller_key: str) -> None:
        self._store.pop(controller_key, None)

    def satisfied_expectations(self, controller_key: str) -> bool:
        """Whether the controller may manage pods now.

        True when it never set expectations, when they are fulfilled, or when they are
        older than EXPECTATIONS_TIMEOUT (a lost watch event must not stall it forever).
        Upstream: SatisfiedExpectations
        """
        exp = self._store.get(controller_key)
        if exp is None or exp.fulfilled():
            return True
        if self._is_expired(exp):
            log.debug("Controller expectations expired", extra={"key": controller_key})
            return True
        return False

    def _is_expired(self, exp: ControlleeExpectations) -> bool:
        return self.clock.monotonic() - exp.timestamp > EXPECTATIONS_TIMEOUT

    def set_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """Replace the controller's expectations and restart their TTL."""
        self._store[controller_key] = ControlleeExpectations(controller_key, add, del_, self.clock.monotonic())

    def expect_creations(self, controller_key: str, adds: int) -> None:
        self.set_expectations(controller_key, adds, 0)

    def expect_deletions(self, controller_key: str, dels: int) -> None:
        self.set_expectations(controller_key, 0, dels)

    def lower_expectations(self, controller_key: str, add: int, del_: int) -> None:
        if (exp := self._store.get(controller_key)) is not None:
            exp.lower(add, del_)

    def raise_expectations(self, controller_key: str, add: int, del_: int) -> None:
        if (exp := self._store.get(controller_key)) is not None:
            exp.lower(-add, -del_)

    def creation_observed(self, controller_key: str) -> None:
        self.lower_expectations(controller_key, 1, 0)

    def deletion_observed(self, controller_key: str) -> None:
        self.lower_expectations(controller_key, 0, 1)

    def _check_invariants(self) -> None:
        now = self.clock.monotonic()
        for key, exp in self._store.items():
            assert exp.key == key, (key, exp)
            assert exp.timestamp <= now, (key, exp, now)


class UIDTrackingControllerExpectations:
    """Expectations that remember *which* pods (by pod key) a controller deletes.

    A graceful delete is observed twice (deletionTimestamp set, then the DELETE event);
    remembering the keys makes each counted exactly once.
    _uids: controller key -> pod keys still expected to be deleted.
    Invariant: a key in _uids[c] has not been observed yet, so exp(c).del_ >= len(_uids[c])
    until the expectations are reset or expire.
    Upstream: UIDTrackingControllerExpectations
    """

    def __init__(self, ce: ControllerExpectations) -> None:
        self.ce = ce
        self._uids: dict[str, set[str]] = {}

    # Delegated unchanged (upstream embeds ControllerExpectationsInterface).
    def get_expectations(self, controller_key: str) -> ControlleeExpectations | None:
        return self.ce.get_expectations(controller_key)

    def satisfied_expectations(self, controller_key: str) -> bool:
        return self.ce.satisfied_expectations(controller_key)

    def expect_creations(self, controller_key: str, adds: int) -> None:
        self.ce.expect_creations(controller_key, adds)

    def creation_observed(self, controller_key: str) -> None:
        self.ce.creation_observed(controller_key)

    def lower_expectations(self, controller_key: str, add: int, del_: int) -> None:
        self.ce.lower_expectations(controller_key, add, del_)

    def get_uids(self, controller_key: str) -> set[str] | None:
        return self._uids.get(controller_key)

    def expect_deletions(self, rc_key: str, deleted_keys: Sequence[str]) -> None:
        """Expect these pod keys to be deleted (replacing any earlier set)."""
        if self._uids.get(rc_key):
            log.error("Clobbering existing delete keys", extra={"key": rc_key, "keys": sorted(self._uids[rc_key])})
        expected = set(deleted_keys)
        self._uids[rc_key] = expected
        self.ce.expect_deletions(rc_key, len(expected))

    def deletion_observed(self, rc_key: str, delete_key: str) -> None:
        """Count delete_key's deletion once, and only if this controller expected it."""
        uids = self._uids.get(rc_key)
        if uids is not None and delete_key in uids:
            self.ce.deletion_observed(rc_key)
            uids.discard(delete_key)

    def delete_expectations(self, rc_key: str) -> None:
        self.ce.delete_expectations(rc_key)
        self._uids.pop(rc_key, None)

    def _check_invariants(self) -> None:
        self.ce._check_invariants()
        for key, uids in self._uids.items():
            exp = self.ce.get_expectations(key)
            if exp is not None and uids:
                assert exp.del_ >= len(uids), (key, exp, uids)


# --- pod control -------------------------------------------------------------------------------

class PodControlInterface(Protocol):
    """How controllers create, delete and patch pods (a seam so tests can count calls)."""

    async def create_pods(self, namespace: str, template: core_v1.PodTemplateSpec, controller_object: Any,
                          controller_ref: meta_v1.OwnerReference) -> None:
        """Create one pod from template, owned by controller_ref; raise on failure."""

    async def delete_pod(self, namespace: str, pod_id: str, obj: Any) -> None:
        """Delete pod pod_id on behalf of obj; NotFound is raised as is."""

    async def patch_pod(self, namespace: str, name: str, data: bytes) -> None:
        """Apply a strategic-merge patch to the pod."""


def validate_controller_ref(ref: meta_v1.OwnerReference | None) -> None:
    """Upstream: validateControllerRef — refuse refs that would not make a proper controller."""
    if ref is None:
        raise ValueError("controllerRef is nil")
    if not ref.api_version:
        raise ValueError("controllerRef has empty APIVersion")
    if not ref.kind:
        raise ValueError("controllerRef has empty Kind")
    if not ref.controller:
        raise ValueError("controllerRef.Controller is not set to true")
    if not ref.block_owner_deletion:
        raise ValueError("controllerRef.BlockOwnerDeletion is not set")


def get_pods_prefix(controller_name: str) -> str:
    """Upstream: getPodsPrefix — "<name>-" when valid as a generateName, else the bare name."""
    prefix = f"{controller_name}-"
    return controller_name if name_is_dns_subdomain(prefix, True) else prefix


def get_pod_from_template(template: core_v1.PodTemplateSpec, parent_object: Any,
                          controller_ref: meta_v1.OwnerReference | None, *, copy_spec: bool = True) -> core_v1.Pod:
    """Build (not create) a pod from template: copied labels, annotations, finalizers and spec,
    generateName "<parent>-", and the controller ref as its only ownerReference.

    copy_spec=False shares template.spec (read-only!) with the pod, for callers that only
    serialize it. Upstream: GetPodFromTemplate
    """
    tmeta = template.metadata or meta_v1.ObjectMeta()
    meta = meta_v1.ObjectMeta(
        labels=dict(tmeta.labels or {}), annotations=dict(tmeta.annotations or {}),
        generate_name=get_pods_prefix(parent_object.metadata.name), finalizers=list(tmeta.finalizers or []))
    if controller_ref is not None:
        meta.owner_references = [controller_ref]
    if template.spec is None:
        spec = core_v1.PodSpec()
    else:
        spec = template.spec.deep_copy() if copy_spec else template.spec
    return core_v1.Pod(metadata=meta, spec=spec)


class RealPodControl:
    """PodControlInterface over a clientset, recording upstream's events on the controller.

    Upstream: RealPodControl
    """

    def __init__(self, client: Clientset, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def create_pods(self, namespace: str, template: core_v1.PodTemplateSpec, controller_object: Any,
                          controller_ref: meta_v1.OwnerReference) -> None:
        """Upstream: CreatePods"""
        await self.create_pods_with_generate_name(namespace, template, controller_object, controller_ref, "")

    create_pods_with_controller_ref = create_pods         # the older upstream name

    async def create_pods_with_generate_name(self, namespace: str, template: core_v1.PodTemplateSpec,
                                             controller_object: Any, controller_ref: meta_v1.OwnerReference,
                                             generate_name: str) -> None:
        """Upstream: CreatePodsWithGenerateName"""
        validate_controller_ref(controller_ref)
        # The pod only goes to create(), which serializes it and never modifies it: it may
        # share the template's spec instead of a deep copy per pod (upstream copies because
        # Go hands the object itself to the client).
        pod = get_pod_from_template(template, controller_object, controller_ref, copy_spec=False)
        if generate_name:
            pod.metadata.generate_name = generate_name
        await self._create_pods(namespace, pod, controller_object)

    async def _create_pods(self, namespace: str, pod: core_v1.Pod, obj: Any) -> None:
        if not pod.metadata.labels:
            raise ValueError("unable to create pods, no labels")
        try:
            new_pod = await self.client.core_v1().pods(namespace).create(pod)
        except errors.StatusError as err:
            if not has_status_cause(err, NAMESPACE_TERMINATING_CAUSE):   # no event spam while ns goes away
                self.recorder.event(obj, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON, f"Error creating: {err}")
            raise
        log.debug("Controller created pod", extra={"controller": obj.metadata.name, "pod": new_pod.metadata.name})
        self.recorder.event(obj, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, f"Created pod: {new_pod.metadata.name}")

    async def delete_pod(self, namespace: str, pod_id: str, obj: Any) -> None:
        """Upstream: DeletePod — NotFound is re-raised untouched (and without an event)."""
        log.debug("Deleting pod", extra={"controller": obj.metadata.name, "pod": f"{namespace}/{pod_id}"})
        try:
            await self.client.core_v1().pods(namespace).delete(pod_id)
        except errors.NotFound:
            raise
        except errors.StatusError as err:
            self.recorder.event(obj, EVENT_TYPE_WARNING, FAILED_DELETE_POD_REASON, f"Error deleting: {err}")
            raise PodDeleteError(f"unable to delete pods: {err}") from err
        self.recorder.event(obj, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, f"Deleted pod: {pod_id}")

    async def patch_pod(self, namespace: str, name: str, data: bytes) -> None:
        """Upstream: PatchPod (strategic merge)."""
        await self.client.core_v1().pods(namespace).patch(name, data, "strategic")


class PodDeleteError(Exception):
    """A pod delete failed for a reason other than NotFound (upstream wraps it the same way)."""


@dataclass
class FakePodControl:
    """A PodControlInterface that records calls instead of making them (for tests).

    create_limit > 0 fails creates beyond that many; err fails every call.
    Upstream: FakePodControl (controller_utils.go)
    """

    templates: list[core_v1.PodTemplateSpec] = field(default_factory=list)
    controller_refs: list[meta_v1.OwnerReference] = field(default_factory=list)
    delete_pod_name: list[str] = field(default_factory=list)
    patches: list[bytes] = field(default_factory=list)
    err: Exception | None = None
    create_limit: int = 0
    create_call_count: int = 0

    async def create_pods(self, namespace: str, template: core_v1.PodTemplateSpec, controller_object: Any,
                          controller_ref: meta_v1.OwnerReference) -> None:
        self.create_call_count += 1
        if self.create_limit and self.create_call_count > self.create_limit:
            raise ValueError(f"not creating pod, limit {self.create_limit} already reached "
                             f"(create call {self.create_call_count})")
        self.templates.append(template)
        self.controller_refs.append(controller_ref)
        if self.err is not None:
            raise self.err

    async def delete_pod(self, namespace: str, pod_id: str, obj: Any) -> None:
        self.delete_pod_name.append(pod_id)
        if self.err is not None:
            raise self.err

    async def patch_pod(self, namespace: str, name: str, data: bytes) -> None:
        self.patches.append(data)
        if self.err is not None:
            raise self.err

    def clear(self) -> None:
        self.templates.clear()
        self.controller_refs.clear()
        self.delete_pod_name.clear()
        self.patches.clear()
        self.create_call_count = 0


# --- slow start ---------------------------------------------------------------------------------

async def slow_start_batch(count: int, initial_batch_size: int,
                           fn: Callable[[], Awaitable[None]]) -> tuple[int, BaseException | None]:
    """Call fn count times in batches of 1, 2, 4, ... that run concurrently; stop after the
    first batch with a failure. Returns (successes, first error or None).

    This keeps a doomed burst (say a quota of 10 while 500 pods are wanted) from sending 500
    requests: count 10, every call after the 5th failing -> batches 1, 2, 4 run (7 calls),
    5 succeed, and the last 3 are never attempted.
    Upstream: slowStartBatch (replica_set.go)
    """
    remaining, successes = count, 0
    batch_size = min(remaining, initial_batch_size)
    while batch_size > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch_size)), return_exceptions=True)
        errs = [r for r in results if isinstance(r, BaseException)]
        for r in errs:
            if not isinstance(r, Exception):          # CancelledError & co. must propagate
                raise r
        successes += batch_size - len(errs)
        if errs:
            return successes, errs[0]
        remaining -= batch_size
        batch_size = min(2 * batch_size, remaining)
    return successes, None


# --- pods by owner ------------------------------------------------------------------------------

# The pod informer's index of pods by their controller's UID; pods without a controller are
# indexed under one orphan key per namespace, so a controller finds its own pods and the ones
# it might adopt without scanning the namespace. Upstream: PodControllerUIDIndex,
# OrphanPodIndexKey, AddPodControllerUIDIndexer, FilterPodsByOwner (controller_utils.go).
POD_CONTROLLER_UID_INDEX = "podControllerUID"
ORPHAN_POD_INDEX_KEY = "_ORPHAN_POD"


def orphan_pod_index_key_for_namespace(namespace: str) -> str:
    return f"{ORPHAN_POD_INDEX_KEY}/{namespace}"


def _pod_controller_uid_index(pod: Any) -> list[str]:
    # get_controller_of, spelt out: the pod cache calls this for every pod event
    for ref in pod.metadata.owner_references or ():
        if ref.controller:
            return [ref.uid or ""]
    return [orphan_pod_index_key_for_namespace(pod.metadata.namespace or "")]


def add_pod_controller_uid_indexer(indexer: Any) -> bool:
    """Index the pod informer by controller UID, once for all controllers sharing it (a filled
    informer is indexed as it is: Indexer.add_indexers); True once the index is there."""
    if POD_CONTROLLER_UID_INDEX not in indexer.get_indexers():
        indexer.add_indexers({POD_CONTROLLER_UID_INDEX: _pod_controller_uid_index})
    return True


def filter_pods_by_owner(indexer: Any, owner: meta_v1.ObjectMeta, include_orphaned_pods: bool) -> list[core_v1.Pod]:
    """The pods controlled by owner and, if asked, the orphans of its namespace (candidates
    for adoption). Without the index (see add_pod_controller_uid_indexer) the namespace is
    scanned for the same pods."""
    keys = [owner.uid or ""]
    if include_orphaned_pods:
        keys.append(orphan_pod_index_key_for_namespace(owner.namespace or ""))
    if POD_CONTROLLER_UID_INDEX in indexer.get_indexers():
        return [pod for key in keys for pod in indexer.by_index(POD_CONTROLLER_UID_INDEX, key)]
    wanted = set(keys)
    return [pod for pod in indexer.by_index(NAMESPACE_INDEX, owner.namespace or "")
            if _pod_controller_uid_index(pod)[0] in wanted]


# --- pod state ---------------------------------------------------------------------------------

def is_pod_active(p: core_v1.Pod) -> bool:
    """Upstream: IsPodActive — not Succeeded/Failed and not being deleted."""
    phase = p.status.phase if p.status is not None else None
    return phase != POD_SUCCEEDED and phase != POD_FAILED and p.metadata.deletion_timestamp is None


def is_pod_terminating(p: core_v1.Pod) -> bool:
    """Upstream: IsPodTerminating — being deleted but not yet in a terminal phase."""
    phase = p.status.phase if p.status is not None else None
    return phase != POD_SUCCEEDED and phase != POD_FAILED and p.metadata.deletion_timestamp is not None


_TERMINAL_PHASES = frozenset((POD_SUCCEEDED, POD_FAILED))


def filter_active_pods(pods: Sequence[core_v1.Pod]) -> list[core_v1.Pod]:
    """Upstream: FilterActivePods (the returned pods are the cache's: read-only).

    is_pod_active inlined: a sync filters every pod of the namespace.
    """
    terminal = _TERMINAL_PHASES
    return [p for p in pods if p.metadata.deletion_timestamp is None
            and (p.status is None or p.status.phase not in terminal)]


def filter_terminating_pods(pods: Sequence[core_v1.Pod]) -> list[core_v1.Pod]:
    """Upstream: FilterTerminatingPods (is_pod_terminating inlined)."""
    terminal = _TERMINAL_PHASES
    return [p for p in pods if p.metadata.deletion_timestamp is not None
            and (p.status is None or p.status.phase not in terminal)]


def count_terminating_pods(pods: Sequence[core_v1.Pod]) -> int:
    """Upstream: CountTerminatingPods"""
    return sum(1 for p in pods if is_pod_terminating(p))


def filter_claimed_pods(controller: Any, selector: Any, pods: Sequence[core_v1.Pod]) -> list[core_v1.Pod]:
    """Pods controlled by controller whose labels still match selector. Upstream: FilterClaimedPods"""
    match = label_matcher(selector)
    return [p for p in pods if is_controlled_by(p, controller) and match(p.metadata.labels)]


def get_pod_ready_condition(pod: core_v1.Pod) -> core_v1.PodCondition | None:
    """Upstream: podutil.GetPodReadyCondition"""
    if pod.status is None:
        return None
    for c in pod.status.conditions or ():
        if c.type == "Ready":
            return c
    return None


def is_pod_ready(pod: core_v1.Pod) -> bool:
    """Upstream: podutil.IsPodReady — the Ready condition is True."""
    c = get_pod_ready_condition(pod)
    return c is not None and c.status == "True"


def is_pod_available(pod: core_v1.Pod, min_ready_seconds: int, now: float) -> bool:
    """Ready, and (minReadySeconds 0, or Ready since strictly before now - minReadySeconds).

    Example: minReadySeconds 10, Ready since 12:00:00 -> available from 12:00:10 exclusive,
    so at exactly 12:00:10 the pod is not yet available.
    Upstream: podutil.IsPodAvailable
    """
    c = get_pod_ready_condition(pod)
    if c is None or c.status != "True":
        return False
    if not min_ready_seconds:
        return True
    return bool(c.last_transition_time) and parse_rfc3339(c.last_transition_time) + min_ready_seconds < now


# --- scale-down ranking ------------------------------------------------------------------------

def _time(value: str | None) -> float | None:
    """A metav1.Time as epoch seconds; None stands for Go's zero time."""
    return _parse_time(value) if value else None


# Pods created or Ready within the same second share these strings: a scale-down ranking
# thousands of pods parses each distinct one once.
_parse_time = functools.lru_cache(maxsize=4096)(parse_rfc3339)


def pod_ready_time(pod: core_v1.Pod) -> float | None:
    """When the pod became Ready (None: not ready, or no lastTransitionTime). Upstream: podReadyTime"""
    c = get_pod_ready_condition(pod)
    if c is not None and c.status == "True":
        return _time(c.last_transition_time)
    return None


def max_container_restarts(pod: core_v1.Pod) -> int:
    """Upstream: maxContainerRestarts"""
    statuses = pod.status.container_statuses if pod.status is not None else None
    return max((c.restart_count or 0 for c in statuses or ()), default=0)


def after_or_zero(t1: float | None, t2: float | None) -> bool:
    """t1 after t2, where the zero time counts as after everything. Upstream: afterOrZero"""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def logarithmic_rank_diff(t1: float, t2: float, now: float) -> int:
    """floor(log2(age in ns)) of t1 minus that of t2 (a non-positive age ranks -1).

    Pods within the same power-of-two age band rank equal, so scale-down picks among them
    by UID instead of always the very newest. Example: ages 2 h and 3 h are 7.2e12 ns and
    1.08e13 ns -> log2 42.7 and 43.3 -> ranks 42 and 43 -> diff -1 (the 2 h one goes first);
    5 h and 8 h (1.8e13, 2.88e13 ns) both rank 44 -> diff 0 -> UID order decides.
    Upstream: logarithmicRankDiff
    """
    d1, d2 = (now - t1) * 1e9, (now - t2) * 1e9
    r1 = int(math.log2(d1)) if d1 > 0 else -1
    r2 = int(math.log2(d2)) if d2 > 0 else -1
    return r1 - r2


def get_deletion_cost_from_pod_annotations(annotations: dict[str, str] | None) -> int:
    """The pod-deletion-cost annotation as int32 (0 when absent or invalid: "+1", "007", "x").

    Upstream: helper.GetDeletionCostFromPodAnnotations (errors there are ignored by callers).
    """
    value = (annotations or {}).get(POD_DELETION_COST)
    if value is None:
        return 0
    if not value or not (value[0] == "-" or value == "0" or "1" <= value[0] <= "9"):
        return 0
    try:
        i = int(value, 10)
    except ValueError:
        return 0
    return i if -(2 ** 31) <= i < 2 ** 31 and value.lstrip("-").isdigit() else 0


def pod_phase_ordinal(pod: core_v1.Pod) -> int:
    """Pending (or none) 0 < Unknown 1 < Running 2: the ranking rules' phase order."""
    return _POD_PHASE_TO_ORDINAL.get(pod.status.phase if pod.status else None, 0)


def active_pods_less(pi: core_v1.Pod, pj: core_v1.Pod) -> bool:
    """Whether pi should be deleted before pj (unranked). Upstream: ActivePods.Less

    ActivePodsWithRanks' rules without deletion cost, rank and log scaling:
    1. unscheduled < scheduled; 2. Pending < Unknown < Running; 3. not ready < ready;
    4. ready for less time < more (zero time first); 5. more restarts first;
    6. newer creation first (zero time first).
    """
    return _ranked_less(_RankFacts.of(pi, 0, False), _RankFacts.of(pj, 0, False), None, False)


def sort_active_pods(pods: list[core_v1.Pod]) -> None:
    """Sort in place, deletion candidates first. Upstream: sort.Sort(ActivePods(pods))"""
    pods[:] = [f.pod for f in _sorted_facts([_RankFacts.of(p, 0, False) for p in pods], None, False)]


@dataclass
class ActivePodsWithRanks:
    """Pods plus a rank each, sortable so that the pods to delete first come first.

    Rules, in turn until one decides:
    1. unscheduled before scheduled; 2. Pending before Unknown before Running;
    3. not ready before ready; 4. lower pod-deletion-cost first; 5. higher rank first
    (rank = related active pods on the same node, so doubled-up nodes are drained first);
    6. both ready: ready for less time first; 7. more container restarts first;
    8. newer creation first. In 6 and 8, with `now` set, times compare by log2 age bands,
    ties broken by UID (pseudo-random among equivalent pods); zero times count as newest.
    Upstream: ActivePodsWithRanks (PodDeletionCost and LogarithmicScaleDown gates on)
    """

    pods: list[core_v1.Pod]
    rank: list[int]
    now: float | None = None                  # epoch seconds; None: compare times without scaling
    pod_deletion_cost: bool = True            # feature gate PodDeletionCost
    logarithmic_scale_down: bool = True       # feature gate LogarithmicScaleDown

    def less(self, i: int, j: int) -> bool:
        """Upstream: ActivePodsWithRanks.Less"""
        return _ranked_less(self._facts(i), self._facts(j), self.now, self.logarithmic_scale_down)

    def sort(self) -> None:
        """Sort pods and ranks together in place (deletion candidates first), by the rules as
        a key (rank_key_func: Less's order where Less is a consistent order), each pod's
        facts read once."""
        facts = _sorted_facts([self._facts(i) for i in range(len(self.pods))], self.now,
                              self.logarithmic_scale_down)
        self.pods[:] = [f.pod for f in facts]
        self.rank[:] = [f.rank for f in facts]

    def first(self, n: int) -> list[core_v1.Pod]:
        """The first n pods of sort()'s order, without ranking every pod by every rule.

        The first five rules (scheduled, phase, ready, deletion cost, rank) order pods as a
        tuple does; the n-th smallest tuple is the cut, and only the pods not beyond it are
        put through all the rules (rank_key_func), of which the n smallest are kept.
        """
        if n >= len(self.pods):
            self.sort()
            return list(self.pods)
        if n <= 0:
            return []
        coarse = [self._coarse(i) for i in range(len(self.pods))]
        cut = heapq.nsmallest(n, coarse)[-1]
        kept = [self._facts(i) for i, c in enumerate(coarse) if c <= cut]
        key = rank_key_func(self.now, self.logarithmic_scale_down)
        return [f.pod for f in heapq.nsmallest(n, kept, key=key)]

    def _coarse(self, i: int) -> tuple[bool, int, bool, int, int]:
        """_RankFacts' first five rules as a tuple that sorts the same way."""
        pod = self.pods[i]
        return (bool(pod.spec.node_name if pod.spec else None),
                _POD_PHASE_TO_ORDINAL.get(pod.status.phase if pod.status else None, 0),
                is_pod_ready(pod),
                get_deletion_cost_from_pod_annotations(pod.metadata.annotations) if self.pod_deletion_cost else 0,
                -self.rank[i])

    def _facts(self, i: int) -> _RankFacts:
        return _RankFacts.of(self.pods[i], self.rank[i], self.pod_deletion_cost)


class _RankFacts(NamedTuple):
    """What the ranking rules read from one pod (cost 0 when the gate is off)."""

    pod: core_v1.Pod
    rank: int
    scheduled: bool
    phase: int
    ready: bool
    cost: int
    ready_time: float | None
    restarts: int
    created: float | None
    uid: str

    @staticmethod
    def of(pod: core_v1.Pod, rank: int, deletion_cost: bool) -> _RankFacts:
        ready = is_pod_ready(pod)
        return _RankFacts(
            pod=pod, rank=rank,
            scheduled=bool(pod.spec.node_name if pod.spec else None),
            phase=_POD_PHASE_TO_ORDINAL.get(pod.status.phase if pod.status else None, 0),
            ready=ready,
            cost=get_deletion_cost_from_pod_annotations(pod.metadata.annotations) if deletion_cost else 0,
            ready_time=pod_ready_time(pod) if ready else None,
            restarts=max_container_restarts(pod),
            created=_time(pod.metadata.creation_timestamp),
            uid=pod.metadata.uid or "")


def _ranked_less(fi: _RankFacts, fj: _RankFacts, now: float | None, logarithmic: bool) -> bool:
    """The ranking rules (see ActivePodsWithRanks) on two pods' facts. Upstream: ActivePodsWithRanks.Less"""
    if fi.scheduled != fj.scheduled:
        return not fi.scheduled
    if fi.phase != fj.phase:
        return fi.phase < fj.phase
    if fi.ready != fj.ready:
        return not fi.ready
    if fi.cost != fj.cost:
        return fi.cost < fj.cost
    if fi.rank != fj.rank:
        return fi.rank > fj.rank
    if fi.ready and fj.ready and fi.ready_time != fj.ready_time:
        return _time_less(fi.ready_time, fj.ready_time, fi, fj, now, logarithmic)
    if fi.restarts != fj.restarts:
        return fi.restarts > fj.restarts
    if fi.created != fj.created:
        return _time_less(fi.created, fj.created, fi, fj, now, logarithmic)
    return False


def _time_less(t1: float | None, t2: float | None, fi: _RankFacts, fj: _RankFacts, now: float | None,
               logarithmic: bool) -> bool:
    if not logarithmic or now is None or t1 is None or t2 is None:
        return after_or_zero(t1, t2)
    rank_diff = logarithmic_rank_diff(t1, t2, now)
    if rank_diff == 0:
        return fi.uid < fj.uid
    return rank_diff < 0


def _sorted_facts(facts: list[_RankFacts], now: float | None, logarithmic: bool) -> list[_RankFacts]:
    """facts sorted stably by rank_key_func's key (which orders as _ranked_less does)."""
    return sorted(facts, key=rank_key_func(now, logarithmic))


RankTailKey = tuple[int, float, int, int, float, str]
RankKey = tuple[bool, int, bool, int, int, int, float, int, int, float, str]


def time_key_func(now: float | None, logarithmic: bool) -> Callable[[float | None], tuple[int, float]]:
    """Rules 6 and 8's order of two times as a sort key: the zero time (None) first, then
    with log scaling (and `now`) the log2 age band (logarithmic_rank_diff), else the time
    itself, later first. Bands are computed once per distinct time."""
    if not logarithmic or now is None:
        return lambda t: (0, 0.0) if t is None else (1, -t)
    bands: dict[float, tuple[int, float]] = {}

    def key(t: float | None) -> tuple[int, float]:
        if t is None:
            return (0, 0.0)
        if (k := bands.get(t)) is None:
            d = (now - t) * 1e9
            k = bands[t] = (1, int(math.log2(d)) if d > 0 else -1)
        return k
    return key


def rank_key_func(now: float | None, logarithmic: bool) -> Callable[[_RankFacts], RankKey]:
    """The scale-down order as a sort key over _RankFacts (smallest is deleted first).

    The rules in turn as tuple fields: scheduled, phase, ready, cost, -rank, then
    rank_tail_key_func's fields. It agrees with upstream's Less on every pair but one kind:
    two Ready pods whose ready times differ but share a log2 band, and whose restarts or
    creation bands differ. Less then takes the UID, and for equal ready times the restarts:
    no order honours both (three such pods can form a cycle, and Go's sort.Sort returns
    what its algorithm happens to produce); the key applies rules 7 and 8 before the UID.
    With times in distinct bands, or without log scaling, it orders exactly as Less
    (sorted() keeps equal pods in their order). Upstream: ActivePodsWithRanks.Less
    """
    tail = rank_tail_key_func(now, logarithmic)
    return lambda f: (f.scheduled, f.phase, f.ready, f.cost, -f.rank, *tail(f))


def rank_tail_key_func(now: float | None, logarithmic: bool) -> Callable[[_RankFacts], RankTailKey]:
    """rank_key_func's fields after the rank: the ready time (Ready pods only), -restarts,
    the creation time (time_key_func's pairs), and with log scaling the UID."""
    time_key = time_key_func(now, logarithmic)
    use_uid = logarithmic and now is not None

    def key(f: _RankFacts) -> RankTailKey:
        rt = time_key(f.ready_time) if f.ready else (0, 0.0)
        ct = time_key(f.created)
        return (rt[0], rt[1], -f.restarts, ct[0], ct[1], f.uid if use_uid else "")
    return key


def pod_rank_facts(pod: core_v1.Pod) -> _RankFacts:
    """What the ranking rules read from pod (deletion cost gate on; rank 0: the key takes
    the rank apart)."""
    return _RankFacts.of(pod, 0, True)


def selector_from(ls: meta_v1.LabelSelector | None) -> Any:
    """A typed LabelSelector as a labels.Selector (None selects nothing). Upstream: LabelSelectorAsSelector"""
    return labels.from_label_selector(types.to_dict(ls) if ls is not None else None)

"""pods/eviction: a delete of a pod that honours the PodDisruptionBudget selecting it.

`kubectl drain` evicts every pod of a node this way and retries a refused eviction (429) every
5 s until the budget allows it. What an eviction does, as upstream's EvictionREST.Create:

1. The Eviction's name must be the URL's; its deleteOptions (and the request's dryRun) are the
   delete's options; admission validates the Eviction (CREATE of pods/eviction).
2. A pod that already caused its disruption (Succeeded, Failed, still Pending, or being
   deleted) is deleted without looking at budgets; a running one pins its resourceVersion, so
   a pod that became ready meanwhile is not deleted behind the budget's back (a conflict
   retries from the start).
3. The budgets selecting the pod: none → delete; two or more → 500 ("This pod has more than one
   PodDisruptionBudget, which the eviction subresource does not support."); one → an unready
   pod is deleted without using the budget when the policy allows it (AlwaysAllow, or
   IfHealthyBudget with currentHealthy >= desiredHealthy > 0), else check-and-decrement:
   429 while the controller has not observed the budget's generation or it allows no
   disruption; otherwise disruptionsAllowed - 1 and disruptedPods[pod] = now are written to
   the budget's status (a conflict re-reads and tries again) before the pod is deleted.
4. The delete first sets the pod's DisruptionTarget condition (reason EvictionByEvictionAPI;
   always, the PodDisruptionConditions gate is GA and gone in 1.37), then deletes it with
   the Eviction's options (graceful as any pod delete). Neither write runs admission again.

Upstream: EvictionREST (pkg/registry/core/pod/storage/eviction.go), its test eviction_test.go,
and pdbhelper (component-helpers, here api/poddisruptionbudget.py).
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ....api import errors, labels
from ....api.poddisruptionbudget import DISRUPTION_BUDGET_CAUSE, update_disruption_allowed_condition
from ....api.resources import ResourceInfo
from ....storage.interface import KeyValue
from ... import admission, objects
from ...delete_options import validate_delete_options
from ...admission.interface import status_forbidden
from ...authentication.user import APISERVER, UserInfo
from ...objects import Obj
from .. import deletion, store
from ..registry import REGISTRY
from .pod import set_pod_condition

if TYPE_CHECKING:
    from ...server import APIServer

# Upstream: MaxDisruptedPodSize — more approved evictions than this not yet seen by the
# disruption controller and the budget refuses further ones.
MAX_DISRUPTED_POD_SIZE = 2000
# Upstream: EvictionsRetry (wait.Backoff{Steps: 20, Duration: 500ms, Factor: 1, Jitter: 0.1}).
EVICTIONS_RETRY_STEPS = 20
EVICTIONS_RETRY_DURATION = 0.5
EVICTIONS_RETRY_JITTER = 0.1

VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def too_many_requests(message: str, retry_after: int, cause: str) -> errors.StatusError:
    """Upstream: errors.NewTooManyRequests(message, retryAfterSeconds) plus a DisruptionBudget cause
    (a positive retryAfterSeconds also becomes the Retry-After header)."""
    details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.StatusError(429, "TooManyRequests", message, details)


def budget_being_processed(pdb_name: str) -> errors.StatusError:
    """Upstream: createTooManyRequestsError — the budget's status is stale; retry in 10 s."""
    return too_many_requests(VIOLATES_BUDGET, 10,
                             f"The disruption budget {pdb_name} is still being processed by the server.")


# --- the request's options ------------------------------------------------------------------

def propagate_dry_run(eviction: Obj, request_dry_run: bool) -> Obj:
    """The delete's options: the Eviction's deleteOptions with the request's dryRun when they
    name none; both set and different is an error. Upstream: propagateDryRun."""
    opts = eviction.get("deleteOptions")
    request = ["All"] if request_dry_run else []
    if not isinstance(opts, dict):
        return {"dryRun": request} if request else {}
    if not opts.get("dryRun"):
        return {**opts, "dryRun": request} if request else dict(opts)
    if request and opts["dryRun"] != request:
        raise errors.InternalError(f"Non-matching dry-run options in request and content: "
                                   f"[{' '.join(request)}] and [{' '.join(opts['dryRun'])}]")
    return dict(opts)


def to_delete_options(o: Obj) -> deletion.DeleteOptions:
    """The store's DeleteOptions, validated as upstream's BeforeDelete does."""
    errs = validate_delete_options(o)
    if errs:
        raise errors.Invalid("meta.k8s.io", "DeleteOptions", "", errs)
    pre = o.get("preconditions") or {}
    return deletion.DeleteOptions(o.get("gracePeriodSeconds"), o.get("propagationPolicy"), o.get("orphanDependents"),
                                  pre.get("uid"), pre.get("resourceVersion"), bool(o.get("dryRun")))


def with_resource_version(opts: deletion.DeleteOptions, rv: str) -> deletion.DeleteOptions:
    """Upstream: setPreconditionsResourceVersion (on a copy)."""
    return deletion.DeleteOptions(opts.grace_period_seconds, opts.propagation_policy, opts.orphan_dependents,
                                  opts.precondition_uid, rv, opts.dry_run)


# --- the pod ------------------------------------------------------------------------------------

def can_ignore_pdb(pod: Obj) -> bool:
    """A pod that already caused (or cannot cause) a disruption. Upstream: canIgnorePDB."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def should_enforce_resource_version(pod: Obj) -> bool:
    """Upstream: shouldEnforceResourceVersion — only a pod that could still become ready."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def is_pod_ready(pod: Obj) -> bool:
    """Upstream: podutil.IsPodReady."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


# --- retries ------------------------------------------------------------------------------------

async def retry_on_error(api: APIServer, should_retry: Callable[[Exception], bool],
                         fn: Callable[[], Awaitable[None]]) -> None:
    """Call fn until it succeeds, fails for good, or EvictionsRetry's 20 attempts are spent
    (the last error is raised). Upstream: retry.OnError(EvictionsRetry, ...)."""
    for step in range(1, EVICTIONS_RETRY_STEPS + 1):
        try:
            return await fn()
        except Exception as e:
            if step == EVICTIONS_RETRY_STEPS or not should_retry(e):
                raise
        await api.clock.sleep(EVICTIONS_RETRY_DURATION * (1 + EVICTIONS_RETRY_JITTER * random.random()))


def is_conflict(e: Exception) -> bool:
    return isinstance(e, errors.StatusError) and e.code == 409


# --- EvictionREST.Create ------------------------------------------------------------------------

async def create(api: APIServer, opts: store.WriteOptions, ri: ResourceInfo, ns: str, name: str,
                 eviction: Obj, attrs: admission.Attributes) -> Obj:
    """Evict pod ns/name (see the module docstring); returns the Success Status, or raises.
    The caller decoded the Eviction and ran mutating admission (attrs)."""
    if (eviction.get("metadata") or {}).get("name", "") != name:
        raise errors.BadRequest("name in URL does not match name in Eviction object")
    original = propagate_dry_run(eviction, opts.dry_run)
    await api.admission.validate(attrs)
    delete_opts = to_delete_options(original)
    pod = await _delete_if_pdb_can_be_ignored(api, ri, ns, name, delete_opts, attrs.user)
    if pod is None:
        return success()
    pdb_name, unhealthy_ok = await check_budget(api, pod, delete_opts.dry_run)
    if unhealthy_ok:
        # Pin the pod's revision: had it become ready since we looked, the budget must count it.
        pinned = with_resource_version(delete_opts, pod["metadata"]["resourceVersion"])
        try:
            await add_condition_and_delete_pod(api, ri, ns, name, pinned, attrs.user)
        except errors.StatusError as e:
            if is_conflict(e) and delete_opts.precondition_rv is None:
                raise budget_being_processed(pdb_name) from e
            raise
        return success()
    await add_condition_and_delete_pod(api, ri, ns, name, delete_opts, attrs.user)
    return success()


def success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def _delete_if_pdb_can_be_ignored(api: APIServer, ri: ResourceInfo, ns: str, name: str,
                                        delete_opts: deletion.DeleteOptions, user: UserInfo) -> Obj | None:
    """Delete the pod at once if it needs no budget; returns it (to check budgets) otherwise.
    Conflicts retry, unless the caller pinned a resourceVersion itself."""
    found: list[Obj] = []

    async def attempt() -> None:
        found.clear()
        kv = await get_pod(api, ri, ns, name)
        if not can_ignore_pdb(kv.obj):
            found.append(kv.obj)
            return
        opts = delete_opts
        if should_enforce_resource_version(kv.obj) and delete_opts.precondition_rv is None:
            opts = with_resource_version(delete_opts, kv.obj["metadata"]["resourceVersion"])
        await add_condition_and_delete_pod(api, ri, ns, name, opts, user)

    should_retry = is_conflict if delete_opts.precondition_rv is None else (lambda e: False)
    await retry_on_error(api, should_retry, attempt)
    return found[0] if found else None


async def get_pod(api: APIServer, ri: ResourceInfo, ns: str, name: str) -> KeyValue:
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    return kv


async def check_budget(api: APIServer, pod: Obj, dry_run: bool) -> tuple[str, bool]:
    """Use the budget of the pod, if any: returns (its name, whether the pod is evicted as
    unhealthy without using the budget). Raises 429 when the budget allows no disruption."""
    ns, pod_name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    pdbs = await pod_disruption_budgets(api, pod)
    if len(pdbs) > 1:
        raise errors.StatusError(500, "", MULTIPLE_BUDGETS)
    if not pdbs:
        return "", False
    pdb = pdbs[0]
    name = pdb["metadata"]["name"]
    if not is_pod_ready(pod):
        if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return name, True
        status = pdb.get("status") or {}
        if status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0) > 0:
            return name, True       # the application is not disrupted: an unready pod may go

    async def attempt() -> None:
        current = pdb if not refreshed else await _get_pdb(api, ns, name)
        refreshed.append(True)
        await check_and_decrement(api, pod_name, current, dry_run)

    refreshed: list[bool] = []
    await retry_on_error(api, is_conflict, attempt)
    return name, False


async def pod_disruption_budgets(api: APIServer, pod: Obj) -> list[Obj]:
    """The budgets in the pod's namespace whose valid selector matches it, with policy/v1's
    meaning: a null selector matches no pod, an empty one every pod. Upstream: getPodDisruptionBudgets."""
    ri = pdb_info()
    ns = pod["metadata"]["namespace"]
    kvs, _ = await api.storage.list(f"{ri.prefix}{ns}/")
    pod_labels = pod["metadata"].get("labels") or {}
    out = []
    for kv in kvs:
        try:
            sel = labels.from_label_selector((kv.obj.get("spec") or {}).get("selector"))
        except errors.StatusError:
            continue                                   # an invalid selector matches no pod
        if sel is not None and labels.matches(sel, pod_labels):
            out.append(kv.obj)
    return out


async def _get_pdb(api: APIServer, ns: str, name: str) -> Obj:
    kv = await api.storage.get(pdb_info().key(ns, name))
    if kv is None:
        raise errors.NotFound("policy", "poddisruptionbudgets", name)
    return kv.obj


async def check_and_decrement(api: APIServer, pod_name: str, pdb: Obj, dry_run: bool) -> None:
    """Take one disruption from the budget, or refuse. Upstream: checkAndDecrement."""
    meta, status = pdb["metadata"], pdb.get("status") or {}
    name = meta["name"]
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        raise budget_being_processed(name)
    allowed = status.get("disruptionsAllowed", 0)
    if allowed < 0:
        raise status_forbidden("policy", "poddisruptionbudget", name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise status_forbidden("policy", "poddisruptionbudget", name,
                               "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        raise too_many_requests(VIOLATES_BUDGET, 0, f"The disruption budget {name} needs "
                                f"{status.get('desiredHealthy', 0)} healthy pods and has "
                                f"{status.get('currentHealthy', 0)} currently")
    if dry_run:
        return
    new = {**pdb, "status": {**status, "disruptionsAllowed": allowed - 1,
                             "conditions": list(status.get("conditions") or [])}}
    if allowed - 1 == 0:
        update_disruption_allowed_condition(new["status"], api.now())
    # Tell the disruption controller this pod is about to go, so it does not count it as healthy
    # meanwhile; it drops the entry once the pod is deleted, or after 2 minutes if it never is.
    new["status"]["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: api.now()}
    ri = pdb_info()
    await store.update(api, store.WriteOptions(user=APISERVER), ri, new, pdb,
                       int(meta["resourceVersion"]), "status", [])


async def add_condition_and_delete_pod(api: APIServer, ri: ResourceInfo, ns: str, name: str,
                                       opts: deletion.DeleteOptions, user: UserInfo) -> None:
    """Set the pod's DisruptionTarget condition, then delete it (a dry run only deletes, which
    writes nothing). The options' preconditions hold for the condition's write too; a pinned
    resourceVersion then moves to the revision that write made. Upstream: addConditionAndDeletePod."""
    if not opts.dry_run:
        kv = await get_pod(api, ri, ns, name)
        meta = kv.obj["metadata"]
        if opts.precondition_uid and opts.precondition_uid != meta.get("uid"):
            raise errors.Conflict("", "Pod", name, f"the UID in the precondition ({opts.precondition_uid}) does not "
                                  f"match the UID in record ({meta.get('uid')}). The object might have been deleted "
                                  "and then recreated")
        if opts.precondition_rv and opts.precondition_rv != meta.get("resourceVersion"):
            raise errors.Conflict("", "Pod", name, f"the ResourceVersion in the precondition ({opts.precondition_rv}) "
                                  f"does not match the ResourceVersion in record ({meta.get('resourceVersion')}). "
                                  "The object might have been modified")
        pod = objects.mutable_copy(kv)
        set_pod_condition(pod, "DisruptionTarget", "True", api.now(), "EvictionByEvictionAPI",
                          "Eviction API: evicting")
        stored, _ = await store.update(api, store.WriteOptions(), ri, pod, kv.obj, kv.mod_revision, "status", [],
                                       admit=False)
        if opts.precondition_rv is not None:
            opts = with_resource_version(opts, stored["metadata"]["resourceVersion"])
    kv = await get_pod(api, ri, ns, name)
    await deletion.delete(api, user, ri, kv, opts, validate=False)


def pdb_info() -> ResourceInfo:
    ri = REGISTRY.lookup("policy", "v1", "poddisruptionbudgets")
    assert ri is not None
    return ri

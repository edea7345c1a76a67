"""ResourceQuota: a write that would take a namespace over one of its quotas is refused, and one
that fits is charged to the quotas' `status.used` before it is stored.

    pods "web-2" is forbidden: exceeded quota: compute, requested: requests.cpu=500m,
    used: requests.cpu=1800m, limited: requests.cpu=2

Charging happens here, at admission, so two creates racing for the last unit of a quota cannot
both pass: each request re-reads the namespace's quotas, checks itself against them and writes
the new usage with the resourceVersion it read (a conflict re-reads and re-checks the quotas that
failed, up to 3 more times). Requests in one namespace are evaluated one at a time, as
upstream's per-namespace work queue does, so they do not conflict with each other, only with
the resource quota controller's recalculations. A request that is refused later in the chain, or
whose write fails, stays charged until the controller's next full recalculation, as upstream.

Cost when there is nothing to do: a namespace without quotas costs one in-memory key count
(no list, no decode); requests no evaluator charges (pod updates, subresources) cost a dict
lookup.

Quotas are read from storage under upstream's key (/registry/resourcequotas/<ns>/<name>): the
kind need not be served for the plugin to enforce what is stored there.

Upstream: QuotaAdmission.Validate (staging/src/k8s.io/apiserver/pkg/admission/plugin/
resourcequota/admission.go) and quotaEvaluator.checkQuotas/checkRequest (controller.go). Not
implemented: the admission configuration's limitedResources (default: none).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .... import storage as st
from ....api import errors
from ....quota import resources as q
from ....quota.evaluator.core import IGNORED_RESOURCES, new_registry
from ....quota.generic import Evaluator, QuotaConstraintError
from ....quota.resources import ResourceList
from ..chain import register
from ._index import PrefixIndex
from ..interface import Attributes, Obj, Operation, Plugin
from ..interface import forbidden

if TYPE_CHECKING:
    from ...server import APIServer

log = logging.getLogger(__name__)

PREFIX = "/registry/resourcequotas/"
# Upstream: checkQuotas(quotas, admissionAttributes, 3).
UPDATE_RETRIES = 3
PARSED_CACHE_SIZE = 10_000
CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


@dataclass
class QuotaState:
    """One stored quota: its key and revision, and status.hard/used parsed."""
    key: str
    revision: int
    obj: Obj
    hard: ResourceList
    used: ResourceList
    new_used: ResourceList | None = None      # the usage this request would leave

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @classmethod
    def from_kv(cls, kv: st.KeyValue) -> QuotaState | None:
        status = kv.obj.get("status") or {}
        try:
            return cls(kv.key, kv.mod_revision, kv.obj, q.parse_list(status.get("hard")),
                       q.parse_list(status.get("used")))
        except ValueError:       # only a write straight to storage can store a malformed quantity
            log.warning("Ignoring resource quota with a malformed quantity", extra={"key": kv.key})
            return None


@dataclass
class _NamespaceLocks:
    """One lock per namespace with requests in flight, dropped when the last one is done."""
    locks: dict[str, tuple[asyncio.Lock, int]] = field(default_factory=dict)

    @asynccontextmanager
    async def hold(self, ns: str) -> AsyncIterator[None]:
        lock, users = self.locks.get(ns) or (asyncio.Lock(), 0)
        self.locks[ns] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self.locks[ns]
            if users == 1:
                del self.locks[ns]
            else:
                self.locks[ns] = (lock, users - 1)


@register
class ResourceQuota(Plugin):
    NAME = "ResourceQuota"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    VALIDATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.registry = new_registry(api.clock)
        self._namespaces = _NamespaceLocks()
        # (group, resource) -> its evaluator, None for the ignored ones: one lookup per request
        self._evaluators: dict[tuple[str, str], Evaluator | None] = {}
        self._parsed: dict[str, QuotaState] = {}         # key -> the last version parsed
        self.index = PrefixIndex(api.storage, PREFIX)    # which namespaces have quotas at all

    def evaluator_for(self, group: str, resource: str) -> Evaluator | None:
        gr = (group, resource)
        if gr not in self._evaluators:
            self._evaluators[gr] = None if gr in IGNORED_RESOURCES else self.registry.get_or_count(group, resource)
        return self._evaluators[gr]

    def validate_now(self, a: Attributes) -> bool:
        """Done when there is nothing to evaluate, or no quota in the namespace (the common case)."""
        if not a.namespace or self.index.has_now(a.namespace) is False:    # (the index first: no calls after it)
            return True
        evaluator = self._evaluators.get((a.group, a.resource)) or self.evaluator_for(a.group, a.resource)
        return evaluator is None or not evaluator.handles(a)

    async def validate(self, a: Attributes) -> None:
        """Upstream: QuotaAdmission.Validate + quotaEvaluator.Evaluate. Namespaces themselves
        are cluster-scoped (no a.namespace), so their creation is never evaluated."""
        if not a.namespace:
            return
        evaluator = self._evaluators.get((a.group, a.resource)) or self.evaluator_for(a.group, a.resource)
        if evaluator is None or not evaluator.handles(a):
            return
        if not await self.index.has(a.namespace):
            return                                   # the common case: no quota in the namespace
        prefix = f"{PREFIX}{a.namespace}/"
        async with self._namespaces.hold(a.namespace):
            await self.check_quotas(a, evaluator, prefix)

    async def list_quotas(self, prefix: str) -> list[QuotaState]:
        kvs, _ = await self.api.storage.list(prefix)
        return [s for kv in kvs if (s := self.quota_state(kv)) is not None]

    def quota_state(self, kv: st.KeyValue) -> QuotaState | None:
        """The parsed quota, from a cache of the last version seen per key (every request in
        the namespace reads the same few quotas; a write makes a new revision)."""
        cached = self._parsed.get(kv.key)
        if cached is None or cached.revision != kv.mod_revision:
            cached = QuotaState.from_kv(kv)
            if cached is None:
                return None
            if len(self._parsed) >= PARSED_CACHE_SIZE:
                self._parsed.clear()
            self._parsed[kv.key] = cached
        return dataclasses.replace(cached, new_used=None)

    async def check_quotas(self, a: Attributes, evaluator: Evaluator, prefix: str) -> None:
        """Check the request against every quota of the namespace and write the usage it adds.

        1. check (raises the 403 when over); nothing changed or a dry run: done;
        2. write each changed quota with the revision read; all written: done;
        3. a conflict: re-read the quotas that failed and go to 1 with only those (the others are
           charged already), at most UPDATE_RETRIES times; then the conflict is the answer.
        Upstream: quotaEvaluator.checkQuotas.
        """
        quotas = await self.list_quotas(prefix)
        for retry in range(UPDATE_RETRIES + 1):
            check_request(quotas, a, evaluator)
            changed = [s for s in quotas if s.new_used is not None and not q.equals(s.new_used, s.used)]
            if not changed or a.dry_run:
                return
            failed = [s for s in changed if not await self.update_used(s)]
            if not failed:
                return
            if retry == UPDATE_RETRIES:
                raise errors.Conflict("", "resourcequotas", failed[0].name, CONFLICT)
            names = {s.name for s in failed}
            quotas = [s for s in await self.list_quotas(prefix) if s.name in names]
        raise AssertionError("unreachable")

    async def update_used(self, s: QuotaState) -> bool:
        """Write s.new_used as status.used if the quota is unchanged since read; False if not."""
        assert s.new_used is not None
        status = {**(s.obj.get("status") or {}), "used": q.to_json(s.new_used)}
        try:
            await self.api.storage.update(s.key, {**s.obj, "status": status}, expected_revision=s.revision)
        except (st.RevisionMismatch, st.KeyNotFound):
            return False
        return True


def check_request(quotas: list[QuotaState], a: Attributes, evaluator: Evaluator) -> None:
    """Set new_used on each quota the request is charged to; raise the 403 if it does not fit.

    Upstream: CheckRequest (controller.go), without limitedResources.
    """
    for s in quotas:
        s.new_used = None
    obj = a.obj or {}
    interesting: list[QuotaState] = []
    for s in quotas:
        if not evaluator.matches(s.obj, obj):
            continue
        restricted = evaluator.matching_resources(s.hard)
        try:
            evaluator.constraints(restricted, obj)
        except QuotaConstraintError as e:
            raise forbidden(a, f"failed quota: {s.name}: {e}") from None
        if any(name not in s.used for name in restricted if name in s.hard):
            raise forbidden(a, f"status unknown for quota: {s.name}, resources: "
                               f"{q.pretty_print_resource_names(restricted)}")
        interesting.append(s)
    if not interesting:
        return
    usage = evaluator.usage(obj)
    if negative := q.is_negative(usage):
        raise forbidden(a, f"quota usage is negative for resource(s): {q.pretty_print_resource_names(negative)}")
    deltas = {id(s): usage for s in interesting}
    if a.operation is Operation.UPDATE:
        _update_deltas(a, evaluator, interesting, usage, deltas)
    for s in interesting:
        delta = q.remove_zeros(deltas[id(s)])
        if delta:
            s.new_used = _charge(a, s, delta)


def _update_deltas(a: Attributes, evaluator: Evaluator, interesting: list[QuotaState], usage: ResourceList,
                   deltas: dict[int, ResourceList]) -> None:
    """On update, charge only the growth over what the stored object used, for quotas that
    covered the stored object too (a "create on update" pays in full)."""
    old = a.old_obj
    if old is None:
        raise forbidden(a, "unable to get previous usage since prior version of object was not found")
    if not (old.get("metadata") or {}).get("resourceVersion"):
        return
    delta = q.subtract_with_non_negative_result(usage, evaluator.usage(old))
    for s in interesting:
        if evaluator.matches(s.obj, old):
            deltas[id(s)] = delta


def _charge(a: Attributes, s: QuotaState, delta: ResourceList) -> ResourceList:
    """The quota's usage with delta added; the 403 if that passes a hard limit (a status write
    is charged without the check, as upstream)."""
    requested = q.mask(delta, s.hard)
    new_used = q.add(s.used, requested)
    if a.subresource != "status":
        allowed, exceeded = q.less_than_or_equal(q.mask(new_used, requested), s.hard)
        if not allowed:
            raise forbidden(a, f"exceeded quota: {s.name}, requested: {q.pretty_print(q.mask(requested, exceeded))}, "
                               f"used: {q.pretty_print(q.mask(s.used, exceeded))}, "
                               f"limited: {q.pretty_print(q.mask(s.hard, exceeded))}")
    return new_used

"""MutatingAdmissionWebhook: the matching mutating webhooks asked in order, their JSONPatches applied.

Upstream: mutatingDispatcher.Dispatch and callAttrMutatingHook (plugin/webhook/mutating/
dispatcher.go), webhookReinvokeContext (reinvocationcontext.go), the plugin (plugin.go).

Each webhook sees the object as the previous ones left it. A patch is applied to the object,
the result decoded as the kind's typed object (a wrong type is an internal error, as upstream's
decode) and defaulted; the validation that follows admission checks what the webhooks made.

Reinvocation (upstream's reinvoker, admission/reinvocation.go): when a webhook changed the
object, the mutating chain runs once more — the in-tree plugins before this one (so a container
a webhook injected gets LimitRanger's defaults and the ServiceAccount token mount), then the
webhooks to reinvoke: the IfNeeded ones called before the last change, or all IfNeeded ones
called if the in-tree plugins changed the object. A webhook not called in the first round is
not called in the second.
"""
from __future__ import annotations

import copy
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ....api import errors
from ... import objects
from ...patch.jsonpatch import json_patch, validate_json_patch
from ...registry.registry import REGISTRY
from ..chain import register
from ..interface import Attributes
from ..patched import decode_and_default
from . import metrics
from .errors import ErrCallingWebhook, ErrWebhookRejection, service_unavailable
from .generic import DONE, Webhook
from .predicates import internal_error
from .request import AdmissionResponse, Invocation, object_for, unversioned
from .source import WebhookAccessor

log = logging.getLogger(__name__)

Obj = dict[str, Any]

PLUGIN_NAME = "MutatingAdmissionWebhook"
# Upstream: the audit annotation prefixes of mutating/dispatcher.go
PATCH_AUDIT_ANNOTATION_PREFIX = "patch.webhook.admission.k8s.io/"
MUTATION_AUDIT_ANNOTATION_PREFIX = "mutation.webhook.admission.k8s.io/"
FAILED_OPEN_PREFIX = "failed-open." + MUTATION_AUDIT_ANNOTATION_PREFIX


@dataclass(slots=True)
class _ReinvokeContext:
    """Upstream: webhookReinvokeContext — the IfNeeded webhooks called before the last change
    (to call again if anything changes after them) and those to call again."""
    previously_invoked: set[str] = field(default_factory=set)
    reinvoke: set[str] = field(default_factory=set)
    should_reinvoke: bool = False         # a webhook changed the object: upstream's SetShouldReinvoke

    def require_reinvoking_previously_invoked(self) -> None:
        self.reinvoke |= self.previously_invoked
        self.previously_invoked = set()


@register
class MutatingAdmissionWebhook(Webhook):
    NAME = PLUGIN_NAME
    MUTATING = True
    MUTATING_HOOKS = True
    RESOURCE = "mutatingwebhookconfigurations"

    def admit(self, a: Attributes) -> Awaitable[None]:  # type: ignore[override]
        """Upstream: Plugin.Admit -> Webhook.Dispatch, and the reinvocation round. The hot path,
        nothing configured, returns DONE: no coroutine."""
        hooks = self.hooks_now(a)
        return DONE if hooks == [] else self._admit(a, hooks)

    async def _admit(self, a: Attributes, hooks: list[WebhookAccessor] | None) -> None:
        if hooks is None:
            hooks = await self.hooks_for(a)
        if not hooks:
            return
        rc = _ReinvokeContext()
        await self._dispatch(hooks, a, rc, 0)
        if rc.should_reinvoke:
            await self._reinvoke(hooks, a, rc)

    async def _reinvoke(self, hooks: list[WebhookAccessor], a: Attributes, rc: _ReinvokeContext) -> None:
        """Upstream: reinvoker.Admit's second round, as the chain would run it."""
        last_webhook_output = copy.deepcopy(a.obj)
        for p in self.api.admission.admitters(a):
            if p is self:
                break
            await p.admit(a)
        if a.obj != last_webhook_output:        # upstream: IsOutputChangedSinceLastWebhookInvocation
            rc.require_reinvoking_previously_invoked()
        if rc.reinvoke:
            await self._dispatch(hooks, a, rc, 1)

    async def _dispatch(self, hooks: list[WebhookAccessor], a: Attributes, rc: _ReinvokeContext, rnd: int) -> None:
        """Upstream: mutatingDispatcher.Dispatch (one round)."""
        for i, h in enumerate(hooks):
            inv = await self.should_call_hook(h, a)
            if inv is None or (rnd == 1 and h.uid not in rc.reinvoke):
                continue
            started = time.perf_counter()
            changed = False
            try:
                changed = await self._call_mutating(h, inv, a, rnd, i)
            except ErrCallingWebhook as e:
                metrics.observe(h.name, "admit", a, started, rejected=not h.ignore_failures, code=e.status.code,
                                error_type="calling_webhook_error")
                self.failed_calling(h, e, a, f"{FAILED_OPEN_PREFIX}round_{rnd}_index_{i}")
            except ErrWebhookRejection as e:
                metrics.observe(h.name, "admit", a, started, rejected=True, code=e.status.code, error_type="no_error")
                raise e.status from None
            except errors.StatusError:
                metrics.observe(h.name, "admit", a, started, rejected=True, code=0,
                                error_type="apiserver_internal_error")
                raise
            else:
                metrics.observe(h.name, "admit", a, started, rejected=False, code=200)
            if changed:
                rc.require_reinvoking_previously_invoked()
                rc.should_reinvoke = True
            if h.reinvoke_if_needed:
                rc.previously_invoked.add(h.uid)

    async def _call_mutating(self, h: WebhookAccessor, inv: Invocation, a: Attributes, rnd: int, idx: int) -> bool:
        """Upstream: callAttrMutatingHook — ask, then apply the patch; whether the object changed."""
        changed = False
        try:
            resp = await self.call_hook(h, inv, a)
            changed = self._apply_patch(h, inv, resp, a, rnd, idx)
        finally:
            a.audit_annotations[f"{MUTATION_AUDIT_ANNOTATION_PREFIX}round_{rnd}_index_{idx}"] = orjson.dumps(
                {"configuration": h.configuration_name, "webhook": h.name, "mutated": changed}).decode()
        return changed

    def _apply_patch(self, h: WebhookAccessor, inv: Invocation, resp: AdmissionResponse, a: Attributes, rnd: int,
                     idx: int) -> bool:
        if not resp.patch:
            return False
        try:
            ops = orjson.loads(resp.patch)
            validate_json_patch(ops)
        except (orjson.JSONDecodeError, errors.StatusError) as e:
            raise ErrCallingWebhook(h.name, f"received undecodable patch in webhook response: {_text(e)}",
                                    service_unavailable("error decoding patch in webhook response")) from None
        if not ops:
            return False
        if a.obj is None:
            raise internal_error(f"admission webhook {errors.go_quote(h.name)} attempted to modify the object, "
                                 "which is not supported for this operation")
        if resp.patch_type != "JSONPatch":
            raise ErrCallingWebhook(h.name, f'unsupported patch type "{resp.patch_type}"',
                                    service_unavailable("error decoding patch in webhook response"))
        try:
            patched = json_patch(object_for(a, inv) or {}, ops)
        except errors.StatusError as e:
            raise internal_error(_text(e)) from None
        patched = unversioned(patched, a.obj)      # patched as the webhook's kind: back to admission's
        self._decode(patched, a)
        if len(resp.patch) > _SIZE_CHECK_PATCH_BYTES:
            _check_size(patched, a)
        changed = patched != a.obj
        a.audit_annotations[f"{PATCH_AUDIT_ANNOTATION_PREFIX}round_{rnd}_index_{idx}"] = orjson.dumps(
            {"configuration": h.configuration_name, "webhook": h.name, "patch": ops, "patchType": "JSONPatch"}).decode()
        # The store holds a.obj: change it in place (replacing nested values, never sharing the
        # stored object's: json_patch worked on a deep copy).
        a.obj.clear()
        a.obj.update(patched)
        return changed

    def _decode(self, patched: Obj, a: Attributes) -> None:
        """Upstream: the patched JSON decoded into the kind's Go type (an error is internal),
        then defaulted. Its kind and apiVersion must stay the request's."""
        assert a.obj is not None
        if patched.get("apiVersion") != a.obj.get("apiVersion") or patched.get("kind") != a.obj.get("kind"):
            raise internal_error(f"the patched object's apiVersion and kind must remain "
                                 f"{a.obj.get('apiVersion')}, Kind={a.obj.get('kind')}")
        if type_err := decode_and_default(patched, a):
            raise internal_error(type_err)


# A patch this large may have grown the object past what the store takes: weigh the result
# (smaller patches cannot add enough; the store's own check covers the request's body).
_SIZE_CHECK_PATCH_BYTES = 64 * 1024


def _check_size(patched: Obj, a: Attributes) -> None:
    """The patched object must still fit the store (upstream: etcd refuses it when it is
    written, "etcdserver: request is too large"; here the store's 413 before it is written)."""
    d = REGISTRY.lookup(a.group, a.version, a.resource)
    if d is not None:
        objects.check_stored_size(patched, d, drop_managed_fields=False)


def _text(e: Exception) -> str:
    detail = getattr(e, "detail", None)
    return str(detail) if detail else str(e)

"""What both webhook plugins share: which webhooks a request calls, and calling one.

Upstream: Webhook.ShouldCallHook and Webhook.Dispatch (plugin/webhook/generic/webhook.go), the
dispatchers' callHook (mutating/dispatcher.go, validating/dispatcher.go).
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, cast

import orjson

from ....api import errors
from ...registry.registry import REGISTRY
from ..equivalent import EquivalentResourceRegistry
from ..interface import Attributes, Operation, Plugin, status_forbidden
from . import matchconditions, rules
from .authentication import load_webhook_admission
from .client import CallError, ClientConfigError, ClientManager
from .errors import ErrCallingWebhook, ErrWebhookRejection, new_dry_run_unsupported_err, service_unavailable, \
    to_status_err
from .predicates import internal_error, match_namespace_selector, match_object_selector
from .request import (
    AdmissionResponse, InvalidResponse, Invocation, create_v1_admission_review, new_uid, object_for, old_object_for,
    request_kind, verify_admission_response,
)
from .rules import match_rules
from .source import WebhookAccessor, WebhookSource

if TYPE_CHECKING:
    from ...server import APIServer

log = logging.getLogger(__name__)

Obj = dict[str, Any]

_REVIEW_VERSIONS = ("v1", "v1beta1")


class _Done:
    """An awaitable that is done at once: a plugin with no webhook to call returns it instead
    of a coroutine (the chain awaits every plugin on every write: this saves creating one)."""

    def __await__(self) -> Iterator[None]:
        return iter(())


DONE = cast(Awaitable[None], _Done())


class Webhook(Plugin):
    """An admission plugin calling the webhooks of one configuration kind. Upstream: Webhook."""
    OPERATIONS = frozenset(Operation)
    RESOURCE: ClassVar[str] = ""          # the configurations' resource
    MUTATING_HOOKS: ClassVar[bool] = False

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self._source: WebhookSource | None = None
        # the credentials per webhook host: --admission-control-config-file's entry for this plugin
        config_file = getattr(api.options, "admission_control_config_file", None)
        self.client = ClientManager(api, load_webhook_admission(config_file, self.NAME))
        self.CONFIG_PREFIX = self._definition().prefix      # type: ignore[misc]  # per kind, known once registered
        # matchPolicy Equivalent's mapper (a test seam: upstream's tables register their own)
        self.equivalents: EquivalentResourceRegistry | None = None      # None: the registry's

    async def close(self) -> None:
        await self.client.close()
        if self._source is not None:
            self._source.stop()

    def dormant(self) -> bool | None:
        """No webhook configured (None until the configurations are listed): the chain skips
        the plugin until one is written."""
        source = self._source
        hooks = source.webhooks() if source is not None else None
        return None if hooks is None else not hooks

    def hooks_now(self, a: Attributes) -> list[WebhookAccessor] | None:
        """The webhooks that may apply to a, without waiting: [] when none can (nothing
        configured, or a request no webhook may see: rules.is_excluded), None when the configurations must be listed first (hooks_for).
        The common case — nothing configured — costs one look at the configurations' watch."""
        source = self._source
        hooks = source.webhooks() if source is not None else None
        if not hooks:
            return hooks
        return [] if rules.is_excluded(a, request_kind(a)[0]) else hooks

    async def hooks_for(self, a: Attributes) -> list[WebhookAccessor]:
        """hooks_now, listing the configurations first when needed."""
        hooks = self.hooks_now(a)
        if hooks is None:
            if self._source is None:
                self._source = WebhookSource(self.api.storage, self.CONFIG_PREFIX)
            await self._source.sync()
            hooks = self.hooks_now(a) or []
        return hooks

    def _definition(self) -> Any:
        d = REGISTRY.for_resource(rules.ADMISSION_GROUP, self.RESOURCE)
        assert d is not None
        return d

    async def should_call_hook(self, h: WebhookAccessor, a: Attributes) -> Invocation | None:
        """Upstream: ShouldCallHook — the invocation if h is to be called for a, None if not;
        raises the request's refusal (a selector's or a match condition's error)."""
        ns_match, ns_err = await match_namespace_selector(self.api, h.namespace_selector, a)
        if not ns_match and ns_err is None:
            return None
        obj_match, obj_err = match_object_selector(h.object_selector, a)
        if not obj_match and obj_err is None:
            return None
        inv = self._match_rules(h, a)
        if inv is None:
            return None
        if ns_err is not None:
            raise ns_err
        if obj_err is not None:
            raise obj_err
        if h.match_conditions:
            from ...cel.activation import REQUEST_RESOURCE, request_resource
            activation = {"object": object_for(a, inv) if a.operation is not Operation.DELETE else None,
                          "oldObject": old_object_for(a, inv), "authorizer": self.api.authorizer, "user": a.user,
                          REQUEST_RESOURCE: request_resource(a),
                          "request": create_v1_admission_review("", a, inv)["request"]}
            result = matchconditions.match(h.match_conditions, activation, h.ignore_failures)
            if result.error:
                raise status_forbidden(a.group, a.resource, a.name, result.error)
            if not result.matches:
                return None
        return inv

    def _match_rules(self, h: WebhookAccessor, a: Attributes) -> Invocation | None:
        """Upstream: ShouldCallHook's rules — as the request is, then (matchPolicy Equivalent)
        as each equivalent resource, earlier rules first."""
        return match_rules(h.rules, a, h.equivalent, self.equivalents)

    async def call_hook(self, h: WebhookAccessor, inv: Invocation, a: Attributes) -> AdmissionResponse:
        """Upstream: callHook / callAttrMutatingHook up to the answer — ask the webhook, record
        its audit annotations and warnings, raise its refusal (ErrWebhookRejection) or the
        failure to ask it (ErrCallingWebhook; failurePolicy decides what it becomes)."""
        if a.dry_run:
            side_effects = h.hook.get("sideEffects")
            if side_effects is None:
                raise ErrCallingWebhook(h.name, "Webhook SideEffects is nil",
                                        errors.BadRequest("Webhook SideEffects is nil"))
            if side_effects not in ("None", "NoneOnDryRun"):
                raise new_dry_run_unsupported_err(h.name)
        version = next((v for v in h.hook.get("admissionReviewVersions") or () if v in _REVIEW_VERSIONS), None)
        if version is None:
            raise ErrCallingWebhook(
                h.name, "could not create admission objects: webhook does not accept known AdmissionReview versions",
                errors.BadRequest("error creating admission objects"))
        uid = new_uid()
        review = create_v1_admission_review(uid, a, inv)
        review["apiVersion"] = f"admission.k8s.io/{version}"
        try:
            body = orjson.dumps(review)
        except (TypeError, orjson.JSONEncodeError) as e:
            raise ErrCallingWebhook(h.name, f"could not create admission objects: {e}",
                                    errors.BadRequest("error creating admission objects")) from None
        cc = h.hook.get("clientConfig")
        try:
            answer = await self.client.post(cc if isinstance(cc, dict) else {}, body, h.timeout)
        except ClientConfigError as e:
            raise ErrCallingWebhook(h.name, f"could not get REST client: {e}", internal_error(str(e))) from None
        except CallError as e:
            raise ErrCallingWebhook(h.name, f"failed to call webhook: {e.message}", e.status) from None
        try:
            if version == "v1":
                resp = verify_admission_response(uid, self.MUTATING_HOOKS, answer)
            else:
                resp = _verify_v1beta1(answer, self.MUTATING_HOOKS)
        except InvalidResponse as e:
            raise ErrCallingWebhook(h.name, f"received invalid webhook response: {e}",
                                    service_unavailable("error validating webhook response")) from None
        for k, v in resp.audit_annotations.items():
            a.audit_annotations.setdefault(f"{h.name}/{k}", v)
        a.warnings.extend(resp.warnings)
        if not resp.allowed:
            raise ErrWebhookRejection(to_status_err(h.name, resp.result))
        return resp

    def failed_calling(self, h: WebhookAccessor, err: ErrCallingWebhook, a: Attributes, annotation_key: str) -> None:
        """failurePolicy Ignore lets the request on (recorded as the failed-open audit annotation
        annotation_key); Fail refuses it with an internal error naming the failure."""
        if h.ignore_failures:
            log.warning("Failed calling webhook, failing open %s: %s", h.name, err)
            a.audit_annotations.setdefault(annotation_key, h.name)
            return
        log.warning("Failed calling webhook, failing closed %s: %s", h.name, err)
        raise internal_error(str(err))


def _verify_v1beta1(review: Any, mutating: bool) -> AdmissionResponse:
    """Upstream: VerifyAdmissionResponse's v1beta1 case (no uid or kind check; a patch is JSONPatch)."""
    if not isinstance(review, dict) or not isinstance(review.get("response"), dict):
        raise InvalidResponse("webhook response was absent")
    r = dict(review["response"])
    r["uid"] = "-"
    resp = verify_admission_response("-", False, {**review, "apiVersion": "admission.k8s.io/v1",
                                                  "kind": "AdmissionReview",
                                                  "response": {**r, "patch": None, "patchType": None}})
    if mutating and r.get("patch") is not None:
        resp2 = verify_admission_response("-", True, {**review, "apiVersion": "admission.k8s.io/v1",
                                                      "kind": "AdmissionReview",
                                                      "response": {**r, "patchType": "JSONPatch"}})
        resp.patch, resp.patch_type = resp2.patch, resp2.patch_type
    return resp

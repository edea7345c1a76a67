"""ValidatingAdmissionWebhook: every matching validating webhook asked at once; any refusal refuses.

Upstream: validatingDispatcher.Dispatch (plugin/webhook/validating/dispatcher.go) and the
plugin (validating/plugin.go). The webhooks that match are called concurrently; the request is
refused with the first error in webhook order (upstream takes the first to arrive, which
depends on timing), a failed call counting as allowed under failurePolicy Ignore.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable

from ....api import errors
from ..chain import register
from ..interface import Attributes
from . import metrics
from .errors import ErrCallingWebhook, ErrWebhookRejection
from .generic import DONE, Webhook
from .predicates import internal_error
from .request import Invocation
from .source import WebhookAccessor

log = logging.getLogger(__name__)

PLUGIN_NAME = "ValidatingAdmissionWebhook"
# Upstream: ValidatingAuditAnnotationFailedOpenKeyPrefix
FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"


@register
class ValidatingAdmissionWebhook(Webhook):
    NAME = PLUGIN_NAME
    VALIDATING = True
    RESOURCE = "validatingwebhookconfigurations"

    def validate(self, a: Attributes) -> Awaitable[None]:  # type: ignore[override]
        """Upstream: Plugin.Validate -> Webhook.Dispatch. The hot path, nothing configured,
        returns DONE: no coroutine."""
        hooks = self.hooks_now(a)
        return DONE if hooks == [] else self._dispatch(a, hooks)

    async def _dispatch(self, a: Attributes, hooks: list[WebhookAccessor] | None) -> None:
        """Upstream: validatingDispatcher.Dispatch."""
        if hooks is None:
            hooks = await self.hooks_for(a)
        relevant: list[tuple[WebhookAccessor, Invocation]] = []
        for h in hooks:
            inv = await self.should_call_hook(h, a)
            if inv is not None:
                relevant.append((h, inv))
        if not relevant:
            return
        results = await asyncio.gather(*(self._call(h, inv, a, i) for i, (h, inv) in enumerate(relevant)))
        for err in results:
            if err is not None:
                raise err

    async def _call(self, h: WebhookAccessor, inv: Invocation, a: Attributes, idx: int) -> errors.StatusError | None:
        """One webhook's verdict: None (allowed, or failed open) or the error to refuse with."""
        started = time.perf_counter()
        try:
            await self.call_hook(h, inv, a)
        except ErrCallingWebhook as e:
            metrics.observe(h.name, "validating", a, started, rejected=not h.ignore_failures,
                            code=e.status.code, error_type="calling_webhook_error")
            try:
                self.failed_calling(h, e, a, f"{FAILED_OPEN_PREFIX}round_0_index_{idx}")
            except errors.StatusError as refused:
                return refused
            return None
        except ErrWebhookRejection as e:
            metrics.observe(h.name, "validating", a, started, rejected=True, code=e.status.code, error_type="no_error")
            log.info("rejected by webhook %r: %s", h.name, e.status.message)
            return e.status
        except errors.StatusError as e:
            metrics.observe(h.name, "validating", a, started, rejected=True, code=0,
                            error_type="apiserver_internal_error")
            return e
        except Exception as e:    # a bug of ours: upstream recovers the panic the same way
            log.exception("validating webhook %s", h.name)
            if h.ignore_failures:
                a.audit_annotations.setdefault(f"{FAILED_OPEN_PREFIX}round_0_index_{idx}", h.name)
                return None
            return internal_error(f"{PLUGIN_NAME}/{h.name} has panicked: {e}")
        metrics.observe(h.name, "validating", a, started, rejected=False, code=200)
        return None

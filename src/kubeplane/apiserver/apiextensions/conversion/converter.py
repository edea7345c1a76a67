"""A CRD's converter: the versions it may convert between, over the CRD's strategy.

None rewrites the apiVersion (nopConverter); Webhook asks the CRD's webhook
(webhook_converter.py). Either way an object from or to a version the CRD does not list is
refused first, as crConverter.ConvertToVersion refuses it.

A failure is a ConversionError: a 500 without a reason, whose message is upstream's error
text (upstream's storage codec returns a plain error, which ErrorToAPIStatus answers so).

Upstream: CRConverterFactory.NewConverter, crConverter.ConvertToVersion, nopConverter.Convert
(apiextensions-apiserver pkg/apiserver/conversion/converter.go, nop_converter.go).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ....api import errors
from . import metrics
from .webhook_converter import WebhookConverter, WebhookError, gvk_string

if TYPE_CHECKING:
    from ...admission.webhook.client import ClientManager

Obj = dict[str, Any]


class ConversionError(errors.StatusError):
    """A conversion that failed: upstream answers the codec's plain error as a 500 with no reason."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "", message)


class CRConverter:
    """Converts custom objects of one CRD between its versions (served or not).

    `webhook`: the CRD's webhook converter; None: the None strategy (the apiVersion rewritten)."""

    def __init__(self, group: str, versions: set[str], webhook: WebhookConverter | None = None) -> None:
        self.group, self.versions, self.webhook = group, versions, webhook

    def _valid(self, api_version: Any) -> bool:
        return isinstance(api_version, str) and api_version.rpartition("/")[::2] in \
            {(self.group, v) for v in self.versions}

    async def convert(self, objs: list[Obj], to_version: str, list_kind: str = "") -> list[Obj]:
        """objs in to_version (the converter may change and return its inputs: pass copies).
        `list_kind`: objs are the items of that list (one review for all, as upstream converts
        an UnstructuredList), else objs is one object. Upstream: crConverter.ConvertToVersion"""
        to_gv = f"{self.group}/{to_version}"
        if to_version not in self.versions:
            raise ConversionError(f"request to convert CR to an invalid group/version: {to_gv}")
        if list_kind:
            for i, o in enumerate(objs):
                if not self._valid(o.get("apiVersion")):
                    raise ConversionError(f"request to convert CR list failed, list index {i} has invalid "
                                          f"group/version: {o.get('apiVersion') or ''}")
        elif objs and not self._valid(objs[0].get("apiVersion")):
            raise ConversionError(f"request to convert CR from an invalid group/version: "
                                  f"{objs[0].get('apiVersion') or ''}")
        if self.webhook is None or (not list_kind and objs and _is_empty(objs[0])):
            for o in objs:                  # upstream: nopConverter.Convert
                o["apiVersion"] = to_gv
            return objs
        in_gv = to_gv if list_kind else str(objs[0].get("apiVersion") or "")
        in_gvk = gvk_string(in_gv, list_kind or objs[0].get("kind"))
        started, ok = time.perf_counter(), False
        try:
            out = await self.webhook.convert(objs, to_gv, in_gvk, bool(list_kind))
            ok = True
            return out
        except WebhookError as e:
            raise ConversionError(str(e)) from None
        finally:    # upstream's converterMetric: input and target versions, unless equal (a list)
            metrics.observe_crd(self.webhook.name, in_gv.rpartition("/")[2], to_version, ok,
                                time.perf_counter() - started)


def _is_empty(obj: Obj) -> bool:
    """An object of apiVersion and kind only is never sent (upstream: isEmptyUnstructuredObject)."""
    return len(obj) == 2 and "apiVersion" in obj and "kind" in obj


def new_converter(crd: Obj, clients: ClientManager | None) -> CRConverter:
    """The converter of crd's spec.conversion (None when absent). Upstream: NewConverter"""
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    versions = {str(v.get("name", "")) for v in spec.get("versions") or [] if isinstance(v, dict)}
    group = str(spec.get("group", ""))
    conversion = spec.get("conversion") if isinstance(spec.get("conversion"), dict) else {}
    assert isinstance(conversion, dict)
    if conversion.get("strategy") != "Webhook" or clients is None:
        return CRConverter(group, versions)
    webhook = conversion.get("webhook") if isinstance(conversion.get("webhook"), dict) else {}
    assert isinstance(webhook, dict)
    cc = webhook.get("clientConfig") if isinstance(webhook.get("clientConfig"), dict) else {}
    review_versions = [v for v in webhook.get("conversionReviewVersions") or [] if isinstance(v, str)]
    name = str((crd.get("metadata") or {}).get("name", ""))
    return CRConverter(group, versions, WebhookConverter(name, dict(cc or {}), review_versions, clients))

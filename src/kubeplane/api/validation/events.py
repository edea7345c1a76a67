"""events.k8s.io/v1 Event validation: upstream's strict ValidateEventCreate/Update.

Upstream validates the internal core.Event that both Event APIs convert to, so error
paths use the internal (core/v1) names: `involvedObject` for `regarding`, `message` for
`note`, `source` for `deprecatedSource`, `count` for `deprecatedCount`.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m
from .names import name_is_dns_subdomain

Obj = dict[str, Any]

# events.k8s.io/v1 field -> internal field, for the fields validation looks at.
_INTERNAL = {"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
             "deprecatedCount": "count", "deprecatedFirstTimestamp": "firstTimestamp",
             "deprecatedLastTimestamp": "lastTimestamp"}


def to_internal(ev: Obj) -> Obj:
    """Rename events.k8s.io/v1 fields to their core names (enough for validation)."""
    return {_INTERNAL.get(k, k): v for k, v in ev.items()}


def validate_event(ev: Obj) -> list[FieldError]:
    """Upstream: ValidateEventCreate for events.k8s.io/v1 (legacy rules, then the strict ones)."""
    e = to_internal(ev)
    meta = e.get("metadata") or {}
    errs = core.validate_core_event(e)
    errs += m.validate_object_meta(meta, True, name_is_dns_subdomain)
    series = e.get("series")
    if series is not None:
        if (series.get("count") or 0) < 2:
            errs.append(errors.invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(errors.required("series.lastObservedTime"))
    if not e.get("eventTime"):
        errs.append(errors.required("eventTime"))
    if e.get("type") not in ("Normal", "Warning"):
        errs.append(errors.invalid("type", "", f"has invalid value: {e.get('type') or ''}"))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if e.get(key):
            errs.append(errors.invalid(key, "", "needs to be unset"))
    if (e.get("source") or {}).get("component") or (e.get("source") or {}).get("host"):
        errs.append(errors.invalid("source", "", "needs to be unset"))
    return errs


_IMMUTABLE = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
              "reason", "type", "eventTime", "action", "related", "reportingController", "reportingInstance")


def validate_event_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateEventUpdate for events.k8s.io/v1 (only series and metadata may change)."""
    n, o = to_internal(new), to_internal(old)
    errs = core.validate_core_event(n)
    errs += m.validate_object_meta_update(n.get("metadata") or {}, o.get("metadata") or {})
    for key in _IMMUTABLE:
        errs += m.immutable(n.get(key), o.get(key), key)
    return errs

"""core/v1 Events (also served as events.k8s.io/v1: events/event.py). Upstream:
pkg/registry/core/event (strategy.go)."""
from __future__ import annotations

from ....api import labels
from ....api.errors import FieldError
from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition, meta_update
from ..registry import register
from ..strategy import CreateOnUpdateStrategy, Obj


def validate_event(ev: Obj) -> list[FieldError]:
    """The legacy rules; the generic path-segment name check only if those pass."""
    return validation.validate_core_event(ev) or validation.validate_core_event_meta(ev)


def validate_event_update(new: Obj, old: Obj) -> list[FieldError]:
    return validation.validate_core_event(new) or meta_update(new, old)


_OBJECT_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
# Upstream: the Event field label conversion (pkg/apis/core/v1/conversion.go).
EVENT_FIELDS = {
    **labels.META_FIELDS,
    **{f"involvedObject.{k}": labels.path("involvedObject", k) for k in _OBJECT_FIELDS},
    "reason": labels.path("reason"), "reportingComponent": labels.path("reportingComponent"),
    "source": labels.path("source", "component"), "type": labels.path("type"),
}

EVENTS = register(ResourceDefinition(
    "", "v1", "Event", "events", "event", True, "io.k8s.api.core.v1.Event",
    short_names=("ev",),
    strategy=CreateOnUpdateStrategy(),
    validate=validate_event, validate_update=validate_event_update,
    columns=columns.event_columns, printer=printers.print_event,
    field_selectors=EVENT_FIELDS,
))

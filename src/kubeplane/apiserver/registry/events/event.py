"""events.k8s.io/v1 Events: the same storage as core/v1 Events (/registry/events/), converted
on the way in and out (to_storage/from_storage, applied by handlers/common.py input_obj and
output_obj), as upstream serves both from
one store. Upstream: pkg/registry/core/event and pkg/apis/events/v1 (field label conversion)."""
from __future__ import annotations

from ....api import conversion, labels
from ....api.validation import events as validation
from ...tables import columns, printers
from ..core.event import EVENT_FIELDS
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy

# The events.k8s.io/v1 names of the core Event fields.
EVENTS_V1_FIELDS = {
    **labels.META_FIELDS,
    **{f"regarding.{k}": EVENT_FIELDS[f"involvedObject.{k}"]
       for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
    "reason": EVENT_FIELDS["reason"], "reportingController": EVENT_FIELDS["reportingComponent"],
    "type": EVENT_FIELDS["type"],
}

EVENTS = register(ResourceDefinition(
    "events.k8s.io", "v1", "Event", "events", "event", True, "io.k8s.api.events.v1.Event",
    short_names=("ev",),
    strategy=CreateOnUpdateStrategy(),
    validate=validation.validate_event, validate_update=validation.validate_event_update,
    columns=columns.event_columns,           # the same internal printer upstream
    printer=printers.print_events_v1_event,
    field_selectors=EVENTS_V1_FIELDS,
    to_storage=conversion.event_events_v1_to_core, from_storage=conversion.event_core_to_events_v1,
))

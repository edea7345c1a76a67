"""core/v1 Events (also served as events.k8s.io/v1: events/event.py). Upstream:
pkg/registry/core/event (strategy.go)."""
from __future__ import annotations

from ....api import labels
from ....api.errors import FieldError
from ....api.validation import core as validation
from ....api.validation.memo import MAX_ENTRIES
from ....api.validation.names import is_path_segment_name
from ...tables import columns, printers
from ..definition import ResourceDefinition, meta_update
from ..registry import register
from ..strategy import CreateOnUpdateStrategy, Obj


def validate_event(ev: Obj) -> list[FieldError]:
    """The legacy rules; the generic path-segment name check only if those pass.

    A recorder's Event (~4 per pod) is answered by _plainly_valid without running them: its
    namespace is one already found valid, the involved object's is the same, its name is a
    plain path segment and its metadata carries nothing else to check.
    """
    if _plainly_valid(ev):
        return []
    errs = validation.validate_core_event(ev) or validation.validate_core_event_meta(ev)
    if not errs:
        ns = ev["metadata"].get("namespace")
        if type(ns) is str and ns:
            if len(_VALID_NAMESPACES) >= MAX_ENTRIES:
                _VALID_NAMESPACES.clear()
            _VALID_NAMESPACES.add(ns)
    return errs


# Namespaces of Events that passed the full rules: both of its checks (IsDNS1123Subdomain in
# legacyValidateEvent, IsDNS1123Label in the ObjectMeta check) depend on nothing else.
_VALID_NAMESPACES: set[str] = set()


def _plainly_valid(ev: Obj) -> bool:
    """Whether the full rules certainly find no error: no eventTime (the legacy branch), an
    involvedObject in the Event's namespace (one that passed before), a path-segment name
    (is_path_segment_name), no generation and none of the metadata maps."""
    meta, involved = ev.get("metadata"), ev.get("involvedObject")
    if type(meta) is not dict or type(involved) is not dict or ev.get("eventTime"):
        return False
    ns, name = meta.get("namespace"), meta.get("name")
    if ns not in _VALID_NAMESPACES or involved.get("namespace") != ns or type(name) is not str or not name:
        return False
    if is_path_segment_name(name) or meta.get("generation") is not None:
        return False
    return (meta.get("labels") is None and meta.get("annotations") is None and meta.get("ownerReferences") is None
            and meta.get("finalizers") is None and meta.get("managedFields") is None)


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

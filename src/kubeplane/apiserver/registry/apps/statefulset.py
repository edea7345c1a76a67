"""StatefulSets. Upstream: pkg/registry/apps/statefulset (strategy.go; /scale: handlers/subresources.py)."""
from __future__ import annotations

from ....api import labels
from ....api.defaulting import apps as defaults
from ....api.resources import SCALE, STATUS
from ....api.validation import apps as validation
from ...tables import apps as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class StatefulSetStrategy(Strategy):
    """Status reset on create and update, generation follows spec; a /status write keeps the
    spec only (statefulSetStatusStrategy.PrepareForUpdate does not copy labels)."""
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Status = StatefulSetStatus{}: Go writes its non-omitempty counts."""
        super().prepare_for_create(obj)
        obj["status"] = {"availableReplicas": 0, "replicas": 0}


STATEFULSETS = register(ResourceDefinition(
    "apps", "v1", "StatefulSet", "statefulsets", "statefulset", True, "io.k8s.api.apps.v1.StatefulSet",
    short_names=("sts",), categories=("all",), subresources=(STATUS("StatefulSet"), SCALE),
    strategy=StatefulSetStrategy(),
    defaulter=defaults.set_defaults_stateful_set,
    validate=validation.validate_stateful_set, validate_update=validation.validate_stateful_set_update,
    validate_status_update=validation.validate_stateful_set_status_update,
    warnings=validation.stateful_set_warnings,
    columns=tables.stateful_set_columns, printer=tables.print_stateful_set,
    # The apps/v1 StatefulSet field label conversion accepts status.successful (a field a
    # StatefulSet does not have: it selects as the empty string).
    field_selectors={**labels.META_FIELDS, "status.successful": labels.path("status", "successful")},
))

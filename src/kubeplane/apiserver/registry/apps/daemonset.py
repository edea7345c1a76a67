"""DaemonSets. Upstream: pkg/registry/apps/daemonset (strategy.go) and the apps/v1 conversion
of spec.templateGeneration to the deprecated.daemonset.template.generation annotation."""
from __future__ import annotations

from ....api.defaulting import apps as defaults
from ....api.resources import STATUS
from ....api.validation import apps as validation
from ...tables import apps as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy

# appsv1.DeprecatedTemplateGeneration: apps/v1 shows the internal spec.templateGeneration here.
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
# Status = DaemonSetStatus{}: the counts Go writes without omitempty.
ZERO_STATUS = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}


def _template_generation(obj: Obj) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _set_template_generation(obj: Obj, generation: int) -> None:
    meta = obj["metadata"]
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][TEMPLATE_GENERATION] = str(generation)


class DaemonSetStrategy(Strategy):
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: daemonSetStrategy.PrepareForCreate (templateGeneration starts at 1)."""
        super().prepare_for_create(obj)
        obj["status"] = dict(ZERO_STATUS)
        _set_template_generation(obj, max(_template_generation(obj), 1))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: daemonSetStrategy.PrepareForUpdate: a template change bumps
        templateGeneration and generation, any other spec change generation only."""
        super().prepare_for_update(new, old)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            _set_template_generation(new, _template_generation(old) + 1)
        elif TEMPLATE_GENERATION in ((new["metadata"].get("annotations")) or {}):
            _set_template_generation(new, _template_generation(new))


DAEMONSETS = register(ResourceDefinition(
    "apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, "io.k8s.api.apps.v1.DaemonSet",
    short_names=("ds",), categories=("all",), subresources=(STATUS("DaemonSet"),),
    strategy=DaemonSetStrategy(),
    defaulter=defaults.set_defaults_daemon_set,
    validate=validation.validate_daemon_set, validate_update=validation.validate_daemon_set_update,
    validate_status_update=validation.validate_daemon_set_status_update,
    columns=tables.daemon_set_columns, printer=tables.print_daemon_set,
))

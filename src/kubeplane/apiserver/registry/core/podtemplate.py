"""PodTemplates. Upstream: pkg/registry/core/podtemplate (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import core_controllers as defaults
from ....api.validation import core as validation
from ...tables import core_controllers as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class PodTemplateStrategy(Strategy):
    """Upstream: podTemplateStrategy — generation 1 on create, +1 when the template changes."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        gen = old["metadata"].get("generation", 0)
        new["metadata"]["generation"] = gen + 1 if new.get("template") != old.get("template") else gen


PODTEMPLATES = register(ResourceDefinition(
    "", "v1", "PodTemplate", "podtemplates", "podtemplate", True, "io.k8s.api.core.v1.PodTemplate",
    strategy=PodTemplateStrategy(),
    defaulter=defaults.set_defaults_pod_template, defaults_outside_spec=True,
    validate=validation.validate_pod_template, validate_update=validation.validate_pod_template_update,
    columns=tables.pod_template_columns, printer=tables.print_pod_template,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))

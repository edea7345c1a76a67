"""Services: the definition and strategy. Upstream: pkg/registry/core/service/strategy.go."""
from __future__ import annotations

from .....api import defaults, labels
from .....api.resources import PROXY, STATUS
from .....api.validation import core as validation
from ....tables import columns, printers
from ...definition import ResourceDefinition
from ...registry import register
from ...strategy import Obj, StatusStrategy
from .type_fields import drop_type_dependent_fields


class ServiceStrategy(StatusStrategy):
    allow_create_on_update = True

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        drop_type_dependent_fields(new, old)


SERVICES = register(ResourceDefinition(
    "", "v1", "Service", "services", "service", True, "io.k8s.api.core.v1.Service",
    short_names=("svc",), categories=("all",), subresources=(PROXY("Service"), STATUS("Service")),
    verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
    strategy=ServiceStrategy(),
    defaulter=defaults.set_defaults_service,
    validate=validation.validate_service, validate_update=validation.validate_service_update,
    columns=columns.service_columns, printer=printers.print_service,
    returns_deleted_object=True,      # upstream: the service REST's Delete answers the object
    field_selectors={**labels.META_FIELDS, "spec.clusterIP": labels.path("spec", "clusterIP"),
                     "spec.type": labels.path("spec", "type")},
))

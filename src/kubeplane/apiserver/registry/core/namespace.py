"""Namespaces. Upstream: pkg/registry/core/namespace (strategy.go; the delete and /finalize
behaviour are registry/deletion.py's _delete_namespace and handlers/subresources.py, /finalize
through the generic store.update_object with this strategy's prepare_for_update, which keeps
the status as upstream's namespaceFinalizeStrategy)."""
from __future__ import annotations

from ....api import defaults, labels
from ....api.resources import STATUS, Subresource
from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition, meta_update
from ..registry import register
from ..strategy import Obj, StatusStrategy


class NamespaceStrategy(StatusStrategy):
    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: namespaceStrategy.PrepareForCreate — Active, with the `kubernetes` finalizer."""
        obj["status"] = {"phase": "Active"}
        defaults.namespace_finalizers_on_create(obj)


NAMESPACES = register(ResourceDefinition(
    "", "v1", "Namespace", "namespaces", "namespace", False, "io.k8s.api.core.v1.Namespace",
    short_names=("ns",), subresources=(STATUS("Namespace"), Subresource("finalize", "Namespace", ("update",), handler="finalize")),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    strategy=NamespaceStrategy(),
    defaulter=defaults.set_defaults_namespace, defaults_outside_spec=True,
    validate=validation.validate_namespace, validate_update=meta_update,
    validate_status_update=validation.validate_namespace_status_update,
    validate_subresource_update={"finalize": lambda new, old: validation.validate_namespace_finalizers(
        (new.get("spec") or {}).get("finalizers") or [])},
    columns=columns.namespace_columns, printer=printers.print_namespace,
    field_selectors={**labels.NAME_FIELD, "status.phase": labels.path("status", "phase")},
    returns_deleted_object=True, openapi_delete_status=True,
))

"""RuntimeClasses. Upstream: pkg/registry/node/runtimeclass (strategy.go: no status, no
generation; handler immutable)."""
from __future__ import annotations

from ....api.validation import scheduling as validation
from ...tables import scheduling as tables
from ..definition import ResourceDefinition
from ..registry import register

RUNTIME_CLASSES = register(ResourceDefinition(
    "node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", "runtimeclass", False, "io.k8s.api.node.v1.RuntimeClass",
    validate=validation.validate_runtime_class, validate_update=validation.validate_runtime_class_update,
    columns=tables.runtime_class_columns, printer=tables.print_runtime_class,
))

"""PriorityClasses, and the built-in system-node-critical / system-cluster-critical classes the
API server creates at start. Upstream: pkg/registry/scheduling/priorityclass (strategy.go: no
status, no generation; the "scheduling/bootstrap-system-priority-classes" post-start hook in
rest/storage_scheduling.go, which creates the missing ones and leaves existing ones alone).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....api.defaulting import scheduling as defaulting
from ....api.validation import scheduling as validation
from ...tables import scheduling as tables
from ..definition import ResourceDefinition
from ..registry import register

if TYPE_CHECKING:
    from ...server import APIServer

PRIORITY_CLASSES = register(ResourceDefinition(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False,
    "io.k8s.api.scheduling.v1.PriorityClass",
    short_names=("pc",),
    defaulter=defaulting.set_defaults_priority_class, defaults_outside_spec=True,   # preemptionPolicy: top level
    validate=validation.validate_priority_class, validate_update=validation.validate_priority_class_update,
    columns=tables.priority_class_columns, printer=tables.print_priority_class,
))


async def bootstrap_system_priority_classes(api: APIServer) -> None:
    """Create the system priority classes that do not exist yet (through the write pipeline,
    so they are defaulted and validated like any other)."""
    from .. import store
    for spc in validation.SYSTEM_PRIORITY_CLASSES:
        if await api.storage.get(PRIORITY_CLASSES.key("", spc["name"])) is not None:
            continue
        obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": spc["name"]},
               "value": spc["value"], "description": spc["description"]}
        await store.create(api, store.WriteOptions(), PRIORITY_CLASSES, "", obj, [])

"""Nodes. Upstream: pkg/registry/core/node (strategy.go)."""
from __future__ import annotations

from ....api import defaults, labels
from ....api.resources import PROXY, STATUS
from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import StatusStrategy

NODES = register(ResourceDefinition(
    "", "v1", "Node", "nodes", "node", False, "io.k8s.api.core.v1.Node",
    short_names=("no",), subresources=(PROXY("Node"), STATUS("Node")),
    strategy=StatusStrategy(),
    defaulter=defaults.set_defaults_node, defaults_outside_spec=True,
    validate=validation.validate_node, validate_update=validation.validate_node_update,
    columns=columns.node_columns, printer=printers.print_node,
    field_selectors={**labels.NAME_FIELD, "spec.unschedulable": labels.flag("spec", "unschedulable")},
))

"""FlowSchemas and PriorityLevelConfigurations (stored, defaulted and validated; API priority and
fairness itself and the bootstrap configuration objects are not here).
Upstream: pkg/registry/flowcontrol/{flowschema,prioritylevelconfiguration}/strategy.go (status
subresource, generation follows spec)."""
from __future__ import annotations

from ....api.defaulting import flowcontrol as defaulting
from ....api.resources import STATUS
from ....api.validation import flowcontrol as validation
from ...tables import flowcontrol as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy

GROUP = "flowcontrol.apiserver.k8s.io"


class FlowControlStrategy(Strategy):
    has_status = True
    sets_generation = True


FLOW_SCHEMAS = register(ResourceDefinition(
    GROUP, "v1", "FlowSchema", "flowschemas", "flowschema", False, "io.k8s.api.flowcontrol.v1.FlowSchema",
    subresources=(STATUS("FlowSchema"),),
    strategy=FlowControlStrategy(),
    defaulter=defaulting.set_defaults_flow_schema,
    validate=validation.validate_flow_schema, validate_update=validation.validate_flow_schema_update,
    columns=tables.flow_schema_columns, printer=tables.print_flow_schema,
))

PRIORITY_LEVEL_CONFIGURATIONS = register(ResourceDefinition(
    GROUP, "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", "prioritylevelconfiguration", False,
    "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
    subresources=(STATUS("PriorityLevelConfiguration"),),
    strategy=FlowControlStrategy(),
    defaulter=defaulting.set_defaults_priority_level_configuration,
    validate=validation.validate_priority_level_configuration,
    validate_update=validation.validate_priority_level_configuration_update,
    columns=tables.priority_level_columns, printer=tables.print_priority_level,
))

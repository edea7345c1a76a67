"""ComponentStatuses: get and list only, answered from health checks, nothing stored.

Upstream: pkg/registry/core/componentstatus (rest.go) probes the scheduler's and the
controller-manager's /healthz and each etcd server. kubeplane runs them in process: the
answer is apiserver/handlers/componentstatus.py's, from the API server's named health checks.
"""
from __future__ import annotations

from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register

COMPONENT_STATUSES = register(ResourceDefinition(
    "", "v1", "ComponentStatus", "componentstatuses", "componentstatus", False,
    "io.k8s.api.core.v1.ComponentStatus",
    short_names=("cs",), verbs=("get", "list"),
    columns=tables.component_status_columns, printer=tables.print_component_status,
    deprecation_warning="v1 ComponentStatus is deprecated in v1.19+",
))

"""ResourceQuotas. Upstream: pkg/registry/core/resourcequota (strategy.go: status reset on
create, /status writes only status). The quota controller keeps status.used current."""
from __future__ import annotations

from ....api.resources import STATUS
from ....api.validation import core as validation
from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class ResourceQuotaStrategy(Strategy):
    has_status = True


RESOURCE_QUOTAS = register(ResourceDefinition(
    "", "v1", "ResourceQuota", "resourcequotas", "resourcequota", True, "io.k8s.api.core.v1.ResourceQuota",
    short_names=("quota",), subresources=(STATUS("ResourceQuota"),),
    strategy=ResourceQuotaStrategy(),
    validate=validation.validate_resource_quota, validate_update=validation.validate_resource_quota_update,
    validate_status_update=validation.validate_resource_quota_status_update,
    columns=tables.resource_quota_columns, printer=tables.print_resource_quota,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
